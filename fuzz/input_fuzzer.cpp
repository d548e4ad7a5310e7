// Fuzzes what reads a job's input.json: the worker's parser into the witness
// generator's request (witgen::BuildGeneratorRequest: JavaScript's BigInt
// rules, mod p, for BN254 and BLS12-381) and the broker's check of a SUBMIT's
// inputs (wire::InputJsonProblem). Both see bytes from any client.
//
// An accepted input must make a well-formed request: the header, then per
// signal a name and values each below the prime, and nothing after.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_common.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/witgen/input_json.hpp"

namespace {

using zkfleet::fuzz::Check;

uint32_t U32(const std::vector<uint8_t>& r, size_t& at) {
  Check(at + 4 <= r.size(), "truncated request");
  uint32_t v;
  std::memcpy(&v, r.data() + at, 4);
  at += 4;
  return v;
}

void CheckRequest(const std::vector<uint8_t>& r, const uint8_t* prime, uint32_t n8) {
  size_t at = 0;
  Check(r.size() >= 16 && std::memcmp(r.data(), "ZKWI", 4) == 0, "magic");
  at = 4;
  Check(U32(r, at) == 1, "version");
  Check(U32(r, at) == n8 / 4, "n32");
  const uint32_t signals = U32(r, at);
  for (uint32_t s = 0; s < signals; ++s) {
    const uint32_t name = U32(r, at);
    Check(at + name <= r.size(), "name");
    at += name;
    const uint32_t count = U32(r, at);
    Check(at + uint64_t{count} * n8 <= r.size(), "values");
    for (uint32_t i = 0; i < count; ++i, at += n8) {
      Check(zkfleet::io::LessThanLe(r.data() + at, prime, n8), "value >= prime");
    }
  }
  Check(at == r.size(), "bytes after the last signal");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  for (zkfleet::io::Curve curve : {zkfleet::io::Curve::kBn254, zkfleet::io::Curve::kBls12_381}) {
    const zkfleet::io::CurvePrimes& primes = zkfleet::io::PrimesOf(curve);
    std::vector<uint8_t> request;
    zkfleet::witgen::InputError error;
    if (zkfleet::witgen::BuildGeneratorRequest(json, {primes.r, primes.n8r}, request, error)) {
      Check(error.message.empty(), "accepted with an error");
      CheckRequest(request, primes.r, primes.n8r);
    } else {
      Check(!error.message.empty(), "refused without a reason");
    }
  }
  (void)zkfleet::wire::InputJsonProblem(json);
  return 0;
}
