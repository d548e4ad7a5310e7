// Fp2<F>: the quadratic extension F[u]/(u^2 + 1), the field of G2 coordinates
// for both BN254 and BLS12-381 (u^2 = -1 in both). An element is c0 + c1·u,
// each coefficient in F's Montgomery form; snarkjs stores G2 coordinates in
// the same (c0, c1) order.
//
// Thread-safety: plain value type, like Fp.
#pragma once

#include "zkfleet/ff/hd.hpp"

namespace zkfleet::ff {

template <class F>
struct Fp2 {
  using Base = F;
  static constexpr int kLimbs = 2 * F::kLimbs;  // limbs of both coefficients
  static constexpr int kBytes = 2 * F::kBytes;

  F c0, c1;

  ZK_HD static constexpr Fp2 zero() { return Fp2{F::zero(), F::zero()}; }
  ZK_HD static constexpr Fp2 one() { return Fp2{F::one(), F::zero()}; }

  ZK_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  ZK_HD bool operator==(const Fp2& o) const { return c0 == o.c0 && c1 == o.c1; }
  ZK_HD bool operator!=(const Fp2& o) const { return !(*this == o); }

  ZK_HD Fp2 operator+(const Fp2& o) const { return Fp2{c0 + o.c0, c1 + o.c1}; }
  ZK_HD Fp2 operator-(const Fp2& o) const { return Fp2{c0 - o.c0, c1 - o.c1}; }
  // Karatsuba: 3 base multiplications.
  // (a0 + a1 u)(b0 + b1 u) = (a0 b0 - a1 b1) + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
  ZK_HD Fp2 operator*(const Fp2& o) const {
    const F v0 = c0 * o.c0;
    const F v1 = c1 * o.c1;
    const F mixed = (c0 + c1) * (o.c0 + o.c1);
    return Fp2{v0 - v1, mixed - v0 - v1};
  }
  ZK_HD Fp2 operator-() const { return neg(); }
  ZK_HD Fp2& operator+=(const Fp2& o) { return *this = *this + o; }
  ZK_HD Fp2& operator-=(const Fp2& o) { return *this = *this - o; }
  ZK_HD Fp2& operator*=(const Fp2& o) { return *this = *this * o; }

  // (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: 2 base multiplications.
  ZK_HD Fp2 sqr() const {
    const F cross = c0 * c1;
    return Fp2{(c0 + c1) * (c0 - c1), cross.dbl()};
  }
  ZK_HD Fp2 dbl() const { return Fp2{c0.dbl(), c1.dbl()}; }
  ZK_HD Fp2 neg() const { return Fp2{c0.neg(), c1.neg()}; }
  ZK_HD Fp2 conjugate() const { return Fp2{c0, c1.neg()}; }
  ZK_HD Fp2 mul_by_base(const F& s) const { return Fp2{c0 * s, c1 * s}; }

  // 1/(a0 + a1 u) = (a0 - a1 u) / (a0^2 + a1^2); the inverse of 0 is 0.
  ZK_HD Fp2 inverse() const {
    const F norm_inv = (c0.sqr() + c1.sqr()).inverse();
    return Fp2{c0 * norm_inv, (c1 * norm_inv).neg()};
  }
};

}  // namespace zkfleet::ff
