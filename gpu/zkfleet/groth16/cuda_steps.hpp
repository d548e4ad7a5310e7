// Per-thread bodies of the prover's pointwise kernels (host/device, so that
// tests can run them on the CPU): evaluating A and B on the domain from the
// compressed rows, C = A·B, and the H scalars p = a'·b' - c' (spec §8.1, §8.3).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "zkfleet/ff/hd.hpp"

namespace zkfleet::cuda::prover {

// One matrix's coefficients grouped by row (row r's terms are
// [start[r], start[r+1])). coef is stored as coef·R² (zkey section 4), so a
// Montgomery product with a raw witness value gives Montgomery(coef·w).
template <class Fr>
struct DeviceRows {
  const uint32_t* start;
  const Fr* coef;
  const uint32_t* signal;
};

template <class Fr>
ZK_HD Fr EvaluateRow(const DeviceRows<Fr>& rows, uint32_t row, const uint32_t* witness_words) {
  Fr acc = Fr::zero();
  const uint32_t end = rows.start[row + 1];
  for (uint32_t t = rows.start[row]; t < end; ++t) {
    acc += Fr::mont_mul_raw(rows.coef[t], witness_words + 8 * static_cast<uint64_t>(rows.signal[t]));
  }
  return acc;
}

// a[row], b[row], c[row] = A(w)[row], B(w)[row], their product.
template <class Fr>
ZK_HD void EvaluateRowsStep(uint32_t row, const DeviceRows<Fr>& a_rows, const DeviceRows<Fr>& b_rows,
                            const uint32_t* witness_words, Fr* a, Fr* b, Fr* c) {
  const Fr av = EvaluateRow(a_rows, row, witness_words);
  const Fr bv = EvaluateRow(b_rows, row, witness_words);
  a[row] = av;
  b[row] = bv;
  c[row] = av * bv;
}

// scalars[8i..8i+8) = canonical(a[i]·b[i] - c[i]).
template <class Fr>
ZK_HD void HScalarStep(uint64_t i, const Fr* a, const Fr* b, const Fr* c, uint32_t* scalars) {
  const Fr p = a[i] * b[i] - c[i];
  uint32_t words[Fr::kWords];
  p.to_canonical(words);
  ZK_UNROLL for (int k = 0; k < Fr::kWords; ++k) scalars[8 * i + k] = words[k];
}

// bellperson's H on the coset (assignment prover): a = (a·b - c)·z_inv,
// z_inv = 1/Z on the coset (a constant there).
template <class Fr>
ZK_HD void CosetQuotientStep(uint64_t i, Fr* a, const Fr* b, const Fr* c, Fr z_inv) {
  a[i] = (a[i] * b[i] - c[i]) * z_inv;
}

// The MSM's scalar i: value i in canonical form, 8 words.
template <class Fr>
ZK_HD void CanonicalScalarStep(uint64_t i, const Fr* values, uint32_t* scalars) {
  uint32_t words[Fr::kWords];
  values[i].to_canonical(words);
  ZK_UNROLL for (int k = 0; k < Fr::kWords; ++k) scalars[8 * i + k] = words[k];
}

}  // namespace zkfleet::cuda::prover
