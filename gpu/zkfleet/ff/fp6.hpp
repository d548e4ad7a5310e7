// Fp6<T>: the cubic extension Fq2[v]/(v^3 - xi) of a pairing tower, host code.
// T (see zkfleet/ff/tower.hpp) gives the base types and the non-residue:
//   using Fq, Fq2;  static Fq2 mul_by_xi(const Fq2&);
// BN254: xi = 9 + u; BLS12-381: xi = 1 + u (the towers snarkjs/ffjavascript
// and arkworks use, so coefficients line up with snarkjs's Fq12 output).
// An element is c0 + c1·v + c2·v^2.
//
// Thread-safety: plain value type, like Fp and Fp2.
#pragma once

namespace zkfleet::ff {

template <class T>
struct Fp6 {
  using Tower = T;
  using Fq2 = typename T::Fq2;

  Fq2 c0, c1, c2;

  static Fp6 zero() { return Fp6{Fq2::zero(), Fq2::zero(), Fq2::zero()}; }
  static Fp6 one() { return Fp6{Fq2::one(), Fq2::zero(), Fq2::zero()}; }

  bool is_zero() const { return c0.is_zero() && c1.is_zero() && c2.is_zero(); }
  bool operator==(const Fp6& o) const { return c0 == o.c0 && c1 == o.c1 && c2 == o.c2; }
  bool operator!=(const Fp6& o) const { return !(*this == o); }

  Fp6 operator+(const Fp6& o) const { return Fp6{c0 + o.c0, c1 + o.c1, c2 + o.c2}; }
  Fp6 operator-(const Fp6& o) const { return Fp6{c0 - o.c0, c1 - o.c1, c2 - o.c2}; }
  Fp6 operator-() const { return Fp6{c0.neg(), c1.neg(), c2.neg()}; }
  Fp6& operator+=(const Fp6& o) { return *this = *this + o; }
  Fp6& operator-=(const Fp6& o) { return *this = *this - o; }
  Fp6& operator*=(const Fp6& o) { return *this = *this * o; }
  Fp6 dbl() const { return Fp6{c0.dbl(), c1.dbl(), c2.dbl()}; }

  // Karatsuba over the three coefficients: 6 Fq2 multiplications.
  Fp6 operator*(const Fp6& o) const {
    const Fq2 v0 = c0 * o.c0, v1 = c1 * o.c1, v2 = c2 * o.c2;
    Fp6 r;
    r.c0 = v0 + T::mul_by_xi((c1 + c2) * (o.c1 + o.c2) - v1 - v2);
    r.c1 = (c0 + c1) * (o.c0 + o.c1) - v0 - v1 + T::mul_by_xi(v2);
    r.c2 = (c0 + c2) * (o.c0 + o.c2) - v0 - v2 + v1;
    return r;
  }

  // Chung-Hasan SQR2: 2 Fq2 multiplications and 3 squarings.
  Fp6 sqr() const {
    const Fq2 s0 = c0.sqr();
    const Fq2 ab = c0 * c1;
    const Fq2 s1 = ab.dbl();
    const Fq2 s2 = (c0 - c1 + c2).sqr();
    const Fq2 bc = c1 * c2;
    const Fq2 s3 = bc.dbl();
    const Fq2 s4 = c2.sqr();
    Fp6 r;
    r.c0 = s0 + T::mul_by_xi(s3);
    r.c1 = s1 + T::mul_by_xi(s4);
    r.c2 = s1 + s2 + s3 - s0 - s4;
    return r;
  }

  // Multiplication by v: (c0, c1, c2) -> (xi·c2, c0, c1).
  Fp6 mul_by_v() const { return Fp6{T::mul_by_xi(c2), c0, c1}; }

  // Multiplication by an Fq2 scalar.
  Fp6 mul_by_fq2(const Fq2& s) const { return Fp6{c0 * s, c1 * s, c2 * s}; }

  // this · (b0 + b1·v): 5 Fq2 multiplications (sparse line factors).
  Fp6 mul_by_01(const Fq2& b0, const Fq2& b1) const {
    const Fq2 a_a = c0 * b0, b_b = c1 * b1;
    Fp6 r;
    r.c0 = T::mul_by_xi((c1 + c2) * b1 - b_b) + a_a;
    r.c1 = (b0 + b1) * (c0 + c1) - a_a - b_b;
    r.c2 = (c0 + c2) * b0 - a_a + b_b;
    return r;
  }

  // this · (b1·v): 3 Fq2 multiplications.
  Fp6 mul_by_1(const Fq2& b1) const { return Fp6{T::mul_by_xi(c2 * b1), c0 * b1, c1 * b1}; }

  // 1/x; the inverse of 0 is 0.
  Fp6 inverse() const {
    const Fq2 t0 = c0.sqr() - T::mul_by_xi(c1 * c2);
    const Fq2 t1 = T::mul_by_xi(c2.sqr()) - c0 * c1;
    const Fq2 t2 = c1.sqr() - c0 * c2;
    const Fq2 norm = c0 * t0 + T::mul_by_xi(c2 * t1 + c1 * t2);
    const Fq2 inv = norm.inverse();
    return Fp6{t0 * inv, t1 * inv, t2 * inv};
  }
};

}  // namespace zkfleet::ff
