// Square roots in Fp for p ≡ 3 (mod 4) and in Fp2 = Fp[u]/(u^2 + 1) over
// such a p (BLS12-381's Fq and Fq2), and the "lexicographically largest"
// order zcash's point compression uses. Host code: point decompression when
// reading files, not a hot path.
//
//   Sqrt(a, &r)   true and r with r^2 == a when a is a square; false
//                 otherwise (r untouched). Every root is checked by squaring
//                 it back, so a wrong exponent can only make Sqrt say "no".
//
// Fp: r = a^((p+1)/4). Fp2, the "complex method" (Adj, Rodríguez-Henríquez,
// "Square root computation over even extension fields", eprint 2012/685): with a = a0 + a1·u and a1 != 0, alpha = sqrt(a0^2 + a1^2) in Fp,
// delta = (a0 ± alpha)/2 (the sign that makes it a square), x0 = sqrt(delta),
// x1 = a1 / (2·x0), r = x0 + x1·u.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "zkfleet/ff/fp2.hpp"
#include "zkfleet/ff/word_ops.hpp"

namespace zkfleet::ff {

namespace sqrt_detail {

// (p + 1) / 4 for p ≡ 3 (mod 4): p + 1 has no carry out of the top limb
// (p < R/2), then a two-bit right shift.
template <class F>
void QuarterOfPPlusOne(uint64_t* out) {
  uint64_t p1[F::kLimbs];
  uint64_t carry = 1;
  for (int i = 0; i < F::kLimbs; ++i) {
    p1[i] = F::modulus_limb(i) + carry;
    carry = (carry && p1[i] == 0) ? 1 : 0;
  }
  for (int i = 0; i < F::kLimbs; ++i) {
    const uint64_t hi = i + 1 < F::kLimbs ? p1[i + 1] : 0;
    out[i] = (p1[i] >> 2) | (hi << 62);
  }
}

}  // namespace sqrt_detail

template <class F>
bool Sqrt(const F& a, F* root) {
  static_assert((F::modulus_limb(0) & 3) == 3, "Sqrt(Fp) needs p ≡ 3 (mod 4)");
  uint64_t e[F::kLimbs];
  sqrt_detail::QuarterOfPPlusOne<F>(e);
  const F r = a.pow(e, F::kLimbs);
  if (r.sqr() != a) return false;
  *root = r;
  return true;
}

template <class F>
bool Sqrt(const Fp2<F>& a, Fp2<F>* root) {
  F x0, x1;
  if (a.c1.is_zero()) {
    // a is in Fp: either it has a root in Fp, or -a does and the root is
    // sqrt(-a)·u (u^2 = -1). Every element of Fp is a square in Fp2.
    if (Sqrt(a.c0, &x0)) {
      x1 = F::zero();
    } else {
      if (!Sqrt(a.c0.neg(), &x1)) return false;  // cannot happen for a field with u^2 = -1
      x0 = F::zero();
    }
  } else {
    F alpha;
    if (!Sqrt(a.c0.sqr() + a.c1.sqr(), &alpha)) return false;  // the norm is not a square: neither is a
    const F half = F::from_uint(2).inverse();
    F delta = (a.c0 + alpha) * half;
    if (!Sqrt(delta, &x0)) {
      delta = (a.c0 - alpha) * half;
      if (!Sqrt(delta, &x0)) return false;
    }
    // x0 != 0 here: delta = 0 would mean a0 = ±alpha, so a1^2 = 0.
    x1 = a.c1 * x0.dbl().inverse();
  }
  const Fp2<F> r{x0, x1};
  if (r.sqr() != a) return false;
  *root = r;
  return true;
}

// zcash's order (bls12_381 crate, Fp::lexicographically_largest): the
// canonical value is > (p - 1)/2, i.e. it is larger than its negation.
template <class F>
bool LexicographicallyLargest(const F& a) {
  uint64_t v[F::kLimbs], neg[F::kLimbs], diff[F::kLimbs];
  a.to_canonical(v);
  a.neg().to_canonical(neg);
  // v > neg  <=>  neg - v borrows.
  return detail::sub_n<F::kLimbs>(diff, neg, v) != 0;
}

// Fp2: decided by c1, or by c0 when c1 is zero (Fp2::lexicographically_largest).
template <class F>
bool LexicographicallyLargest(const Fp2<F>& a) {
  if (!a.c1.is_zero()) return LexicographicallyLargest(a.c1);
  return LexicographicallyLargest(a.c0);
}

}  // namespace zkfleet::ff
