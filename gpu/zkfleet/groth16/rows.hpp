// The A and B matrices of a .zkey (section 4) grouped by row, as both provers
// evaluate them: compressed sparse rows, one matrix at a time.
//
//   const std::vector<uint32_t> start = RowStarts(zkey, m);   // n + 1 offsets
//   ... size the terms to start.back() ...
//   PlaceByRow(zkey, m, start, [&](uint32_t slot, const io::CoeffRecord& rec) { ... });
//
// Row r's terms are the slots [start[r], start[r + 1]), in file order. The
// CPU key keeps them as (coefficient, signal) pairs, the CUDA key as two
// arrays it uploads.
//
// Thread-safety: pure functions of the zkey; the two matrices may be built
// on two threads at once.
#pragma once

#include <cstdint>
#include <vector>

#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::groth16 {

// start[r] = the number of matrix m's records in rows < r, for r <= n.
inline std::vector<uint32_t> RowStarts(const io::ZkeyFile& zkey, uint32_t matrix) {
  const size_t n = zkey.domain_size();
  std::vector<uint32_t> start(n + 1, 0);
  for (uint64_t i = 0; i < zkey.n_coeffs(); ++i) {
    const io::CoeffRecord rec = zkey.coeff(i);
    if (rec.matrix == matrix) start[rec.row + 1]++;
  }
  for (size_t r = 0; r < n; ++r) start[r + 1] += start[r];
  return start;
}

// Calls place(slot, record) for each of matrix m's records, slot being its
// place in row order (RowStarts' `start`).
template <class Place>
void PlaceByRow(const io::ZkeyFile& zkey, uint32_t matrix, const std::vector<uint32_t>& start, Place&& place) {
  std::vector<uint32_t> next(start.begin(), start.end() - 1);
  for (uint64_t i = 0; i < zkey.n_coeffs(); ++i) {
    const io::CoeffRecord rec = zkey.coeff(i);
    if (rec.matrix == matrix) place(next[rec.row]++, rec);
  }
}

}  // namespace zkfleet::groth16
