// Fuzzes the .r1cs reader (io::ParseR1cs, the parser that ReadR1cs also
// uses; zkfleet-dev reads circuits with it).
//
// An accepted system must be self-consistent: 3 * nConstraints + 1
// non-decreasing offsets ending at the number of terms, every wire below
// nWires, every coefficient below the prime, one label per wire. Every
// linear combination is then read through R1cs::lc() so that ASan sees
// each term.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/r1cs/r1cs.hpp"

namespace {

using zkfleet::fuzz::Check;
using zkfleet::io::R1cs;

void CheckAccepted(const R1cs& r) {
  const zkfleet::io::R1csHeader& h = r.header;
  Check(h.prime.size() == h.n8, "prime size");
  Check(r.lc_start.size() == 3 * uint64_t{h.n_constraints} + 1, "lc_start size");
  Check(r.lc_start.front() == 0 && r.lc_start.back() == r.n_terms(), "lc_start ends");
  Check(r.term_coeff.size() == r.n_terms() * h.n8, "term_coeff size");
  Check(r.wire_labels.size() == h.n_wires, "wire_labels size");
  for (uint32_t c = 0; c < h.n_constraints; ++c) {
    for (int part = 0; part < 3; ++part) {
      const size_t k = 3 * size_t{c} + part;
      Check(r.lc_start[k] <= r.lc_start[k + 1], "lc_start decreasing");
      const zkfleet::io::LinearCombination lc = r.lc(c, part);
      for (size_t t = 0; t < lc.size; ++t) {
        Check(lc.wires[t] < h.n_wires, "wire >= nWires");
        Check(zkfleet::io::LessThanLe(lc.coeffs + t * h.n8, h.prime.data(), h.n8), "coefficient >= prime");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const R1cs r = zkfleet::io::ParseR1cs({data, size}, "fuzz.r1cs");
    CheckAccepted(r);
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {zkfleet::ErrorCode::kBadFormat, zkfleet::ErrorCode::kUnsupported});
  }
  return 0;
}
