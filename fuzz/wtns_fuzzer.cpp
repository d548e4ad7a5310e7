// Fuzzes the .wtns reader (io::Witness::FromBytes, the parser that
// Witness::FromFile also uses; the worker feeds it the witness bytes of every
// Job it receives) and CheckWitnessMatches, which runs right after it.
//
// An accepted witness must hold what Witness promises (w[0] = 1, every value
// below the prime) and survive a round trip through io::WtnsBytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/wtns/witness.hpp"
#include "zkfleet/wtns/wtns_writer.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace {

using zkfleet::ErrorCode;
using zkfleet::io::Witness;
using zkfleet::fuzz::Check;

void CheckAccepted(const Witness& w) {
  const uint32_t n8 = w.n8();
  Check(w.prime().size() == n8 && w.count() >= 1, "header fields");
  Check(w.values()[0] == 1, "w[0] != 1");
  for (uint64_t i = 0; i < w.count(); ++i) {
    Check(zkfleet::io::LessThanLe(w.values() + i * n8, w.prime().data(), n8), "value >= prime");
  }

  // Writing it back and reading that again gives the same witness.
  const std::string bytes = zkfleet::io::WtnsBytes(n8, w.prime(), {w.values(), uint64_t{w.count()} * n8});
  const Witness again = Witness::FromBytes(bytes, "round trip");
  Check(again.n8() == n8 && again.count() == w.count() && again.prime() == w.prime(), "round trip header");
  Check(std::equal(w.values(), w.values() + uint64_t{w.count()} * n8, again.values()), "round trip values");

  // The check the worker runs next, against both curves' scalar fields.
  for (zkfleet::io::Curve curve : {zkfleet::io::Curve::kBn254, zkfleet::io::Curve::kBls12_381}) {
    const zkfleet::io::CurvePrimes& primes = zkfleet::io::PrimesOf(curve);
    try {
      zkfleet::io::CheckWitnessMatches(w, {primes.r, primes.n8r}, w.count(), "fuzz.zkey");
    } catch (const zkfleet::Error& e) {
      zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kMismatch});
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const Witness w = Witness::FromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.wtns");
    CheckAccepted(w);
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kBadFormat, ErrorCode::kUnsupported});
  }
  return 0;
}
