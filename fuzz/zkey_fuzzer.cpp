// Fuzzes the Groth16 .zkey reader (io::ZkeyFile::Parse, the in-memory half
// of ZkeyFile::Open) and the container parser it uses (io::BinFile).
//
// Accepted keys must keep the promises ZkeyFile documents: every point array
// and coefficient record lies inside the input, and the records index inside
// the matrices. Reading every byte the accessors hand out lets ASan catch a
// size check that is off.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace {

using zkfleet::fuzz::Check;
using zkfleet::io::PointArray;
using zkfleet::io::ZkeyFile;

// Sums the bytes of `n` bytes at `p` (a read ASan checks).
uint32_t Touch(const uint8_t* p, uint64_t n) {
  uint32_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += p[i];
  return sum;
}

void CheckAccepted(const ZkeyFile& key, const uint8_t* data, size_t size) {
  const auto inside = [&](const uint8_t* p, uint64_t n) {
    return p >= data && p <= data + size && n <= static_cast<uint64_t>(data + size - p);
  };
  const uint64_t g1 = key.g1_size(), g2 = key.g2_size();
  const struct {
    PointArray points;
    uint64_t point_size;
  } arrays[] = {{key.ic(), g1}, {key.a(), g1}, {key.b1(), g1}, {key.b2(), g2}, {key.c(), g1}, {key.h(), g1}};
  uint32_t sum = 0;
  for (const auto& [points, point_size] : arrays) {
    Check(inside(points.data, points.count * point_size), "point array outside the input");
    sum += Touch(points.data, points.count * point_size);
  }
  for (const uint8_t* header_point : {key.alpha1(), key.beta1(), key.delta1()}) {
    Check(inside(header_point, g1), "header G1 point outside the input");
  }
  for (const uint8_t* header_point : {key.beta2(), key.gamma2(), key.delta2()}) {
    Check(inside(header_point, g2), "header G2 point outside the input");
  }
  Check(key.ic().count == uint64_t{key.n_public()} + 1, "IC count != nPublic + 1");
  Check(key.n_vars() >= uint64_t{key.n_public()} + 1, "nVars < nPublic + 1");
  Check(inside(key.coeffs(), uint64_t{key.n_coeffs()} * key.coeff_record_size()), "coefficients outside the input");
  for (uint64_t i = 0; i < key.n_coeffs(); ++i) {
    const zkfleet::io::CoeffRecord rec = key.coeff(i);
    Check(rec.matrix <= 1 && rec.row < key.domain_size() && rec.signal < key.n_vars(), "coefficient record out of range");
    sum += Touch(rec.value, key.n8r());
  }
  // Keep the reads from being optimised away.
  volatile uint32_t sink = sum;
  (void)sink;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ZkeyFile key = ZkeyFile::Parse({data, size}, "fuzz.zkey");
    CheckAccepted(key, data, size);
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {zkfleet::ErrorCode::kBadFormat, zkfleet::ErrorCode::kUnsupported});
  }
  return 0;
}
