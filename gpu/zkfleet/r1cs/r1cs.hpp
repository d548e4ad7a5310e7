// .r1cs constraint systems as circom writes them (spec §6), for tests and for
// tools that synthesise zkeys from a circuit.
//
// Constraints are stored flat: linear combination k (k = 3*c + 0/1/2 for the
// A/B/C parts of constraint c) owns the terms [lc_start[k], lc_start[k+1]) of
// term_wire / term_coeff. Coefficients are n8 bytes LE, normal form (< prime).
//
// Ownership: R1cs owns its data (copied out of the file).
// Thread-safety: a const R1cs may be shared; the functions keep no state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace zkfleet::io {

struct R1csHeader {
  uint32_t n8 = 0;
  std::vector<uint8_t> prime;  // n8 bytes LE
  uint32_t n_wires = 0;        // = zkey nVars, including the constant wire 0
  uint32_t n_pub_out = 0;
  uint32_t n_pub_in = 0;
  uint32_t n_prv_in = 0;
  uint64_t n_labels = 0;
  uint32_t n_constraints = 0;

  bool operator==(const R1csHeader&) const = default;
};

// One linear combination: `size` terms, wire ids and n8-byte coefficients.
struct LinearCombination {
  size_t size;
  const uint32_t* wires;
  const uint8_t* coeffs;  // size * n8 bytes
};

struct R1cs {
  R1csHeader header;
  std::vector<uint64_t> lc_start;   // 3 * n_constraints + 1 offsets into the term arrays
  std::vector<uint32_t> term_wire;
  std::vector<uint8_t> term_coeff;  // n8 bytes per term
  std::vector<uint64_t> wire_labels;  // section 3: label id of each wire

  // Part `part` (0 = A, 1 = B, 2 = C) of constraint `c`.
  LinearCombination lc(uint32_t c, int part) const {
    const size_t k = 3 * size_t{c} + part;
    return {lc_start[k + 1] - lc_start[k], term_wire.data() + lc_start[k],
            term_coeff.data() + lc_start[k] * header.n8};
  }
  size_t n_terms() const { return term_wire.size(); }

  bool operator==(const R1cs&) const = default;
};

// Reads and validates an .r1cs file: container (version 1), header
// (n8 multiple of 8 in [8, 64], exact size), constraints (exact size, every
// wire < nWires, every coefficient < prime), wire labels (nWires u64).
// Custom-gate sections (PLONK only) are rejected as kUnsupported. Throws
// zkfleet::Error naming the file and field.
R1cs ReadR1cs(const std::string& path);
R1cs ParseR1cs(std::span<const uint8_t> bytes, const std::string& name);

// Writes `r1cs` to `path` in circom's layout and section order (2, 1, 3), so
// that `snarkjs r1cs info` and `snarkjs wtns check` accept it. Throws
// kInvalidArgument when the arrays are inconsistent, kIo on write failure.
void WriteR1cs(const std::string& path, const R1cs& r1cs);

}  // namespace zkfleet::io
