// Fp12<T>: the quadratic extension Fq6[w]/(w^2 - v) of a pairing tower (see
// zkfleet/ff/tower.hpp), the target group's field, host code. An element is
// c0 + c1·w with c0, c1 in Fq6; in the basis of powers of w it is
//   c0.c0 + c1.c0·w + c0.c1·w^2 + c1.c1·w^3 + c0.c2·w^4 + c1.c2·w^5.
// snarkjs prints Fq12 values (vk_alphabeta_12) as
//   [[c0.c0, c0.c1, c0.c2], [c1.c0, c1.c1, c1.c2]], each Fq2 as [a, b].
//
// Besides the field operations this has what pairings need: sparse products
// with line values (mul_by_014 / mul_by_034), Frobenius maps, and the
// Granger-Scott squaring valid on the cyclotomic subgroup (elements of norm 1,
// i.e. anything after the easy part of the final exponentiation).
//
// Thread-safety: plain value type; frobenius() reads T's immutable table.
#pragma once

#include <cstdint>

#include "zkfleet/ff/fp6.hpp"

namespace zkfleet::ff {

template <class T>
struct Fp12 {
  using Tower = T;
  using Fq2 = typename T::Fq2;
  using Fq6 = Fp6<T>;

  Fq6 c0, c1;

  static Fp12 zero() { return Fp12{Fq6::zero(), Fq6::zero()}; }
  static Fp12 one() { return Fp12{Fq6::one(), Fq6::zero()}; }

  bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
  bool is_one() const { return *this == one(); }
  bool operator==(const Fp12& o) const { return c0 == o.c0 && c1 == o.c1; }
  bool operator!=(const Fp12& o) const { return !(*this == o); }

  Fp12 operator+(const Fp12& o) const { return Fp12{c0 + o.c0, c1 + o.c1}; }
  Fp12 operator-(const Fp12& o) const { return Fp12{c0 - o.c0, c1 - o.c1}; }
  Fp12& operator*=(const Fp12& o) { return *this = *this * o; }

  // Karatsuba: 3 Fq6 multiplications.
  Fp12 operator*(const Fp12& o) const {
    const Fq6 aa = c0 * o.c0, bb = c1 * o.c1;
    return Fp12{aa + bb.mul_by_v(), (c0 + c1) * (o.c0 + o.c1) - aa - bb};
  }

  // Complex squaring: 2 Fq6 multiplications.
  Fp12 sqr() const {
    const Fq6 ab = c0 * c1;
    const Fq6 c0n = (c0 + c1) * (c0 + c1.mul_by_v()) - ab - ab.mul_by_v();
    return Fp12{c0n, ab.dbl()};
  }

  // x^(p^6): c0 - c1·w. On the cyclotomic subgroup this is the inverse.
  Fp12 conjugate() const { return Fp12{c0, -c1}; }

  // 1/x = (c0 - c1 w)/(c0^2 - v c1^2); the inverse of 0 is 0.
  Fp12 inverse() const {
    const Fq6 t = (c0.sqr() - c1.sqr().mul_by_v()).inverse();
    return Fp12{c0 * t, -(c1 * t)};
  }

  // this · (o0 + o1·v + o4·v·w): the shape of a line value on an M-type
  // twist (BLS12-381). 13 Fq2 multiplications instead of 18.
  Fp12 mul_by_014(const Fq2& o0, const Fq2& o1, const Fq2& o4) const {
    const Fq6 aa = c0.mul_by_01(o0, o1);
    const Fq6 bb = c1.mul_by_1(o4);
    const Fq6 mixed = (c1 + c0).mul_by_01(o0, o1 + o4);
    return Fp12{bb.mul_by_v() + aa, mixed - aa - bb};
  }

  // this · (o0 + (o3 + o4·v)·w): the shape of a line value on a D-type twist
  // (BN254).
  Fp12 mul_by_034(const Fq2& o0, const Fq2& o3, const Fq2& o4) const {
    const Fq6 aa = c0.mul_by_fq2(o0);
    const Fq6 bb = c1.mul_by_01(o3, o4);
    const Fq6 mixed = (c0 + c1).mul_by_01(o0 + o3, o4);
    return Fp12{bb.mul_by_v() + aa, mixed - aa - bb};
  }

  // x^(p^k) for k in 0..3 (k = 6 is conjugate()).
  Fp12 frobenius(int k) const {
    const auto& g = T::frobenius().gamma[k];
    auto f = [k](const Fq2& a) { return (k & 1) ? a.conjugate() : a; };
    Fp12 r;
    r.c0.c0 = f(c0.c0);
    r.c0.c1 = f(c0.c1) * g[2];
    r.c0.c2 = f(c0.c2) * g[4];
    r.c1.c0 = f(c1.c0) * g[1];
    r.c1.c1 = f(c1.c1) * g[3];
    r.c1.c2 = f(c1.c2) * g[5];
    return r;
  }

  // Granger-Scott squaring; only valid for elements of the cyclotomic
  // subgroup (x^(p^6+1) = 1). Views the element as three Fq4 = Fq2[y]/(y^2-xi)
  // coefficients (c0.c0, c1.c1), (c1.c0, c0.c2), (c0.c1, c1.c2).
  Fp12 cyclotomic_sqr() const {
    auto fq4_sqr = [](const Fq2& a, const Fq2& b, Fq2& out0, Fq2& out1) {
      const Fq2 ab = a * b;
      out0 = (a + b) * (a + T::mul_by_xi(b)) - ab - T::mul_by_xi(ab);
      out1 = ab.dbl();
    };
    Fq2 z0 = c0.c0, z4 = c0.c1, z3 = c0.c2, z2 = c1.c0, z1 = c1.c1, z5 = c1.c2;
    Fq2 t0, t1, t2, t3, t4, t5;
    fq4_sqr(z0, z1, t0, t1);
    fq4_sqr(z2, z3, t2, t3);
    fq4_sqr(z4, z5, t4, t5);
    z0 = (t0 - z0).dbl() + t0;
    z1 = (t1 + z1).dbl() + t1;
    const Fq2 t5xi = T::mul_by_xi(t5);
    z2 = (t5xi + z2).dbl() + t5xi;
    z3 = (t4 - z3).dbl() + t4;
    z4 = (t2 - z4).dbl() + t2;
    z5 = (t3 + z5).dbl() + t3;
    Fp12 r;
    r.c0.c0 = z0;
    r.c0.c1 = z4;
    r.c0.c2 = z3;
    r.c1.c0 = z2;
    r.c1.c1 = z1;
    r.c1.c2 = z5;
    return r;
  }

  // x^e on the cyclotomic subgroup for a 64-bit exponent e.
  Fp12 cyclotomic_pow(uint64_t e) const {
    Fp12 r = one();
    bool started = false;
    for (int b = 63; b >= 0; --b) {
      if (started) r = r.cyclotomic_sqr();
      if ((e >> b) & 1) {
        r = started ? r * *this : *this;
        started = true;
      }
    }
    return r;
  }

  // x^e for a little-endian multi-limb exponent (any element; slow, tests).
  Fp12 pow(const uint64_t* e, int limbs) const {
    Fp12 r = one();
    for (int i = limbs - 1; i >= 0; --i) {
      for (int b = 63; b >= 0; --b) {
        r = r.sqr();
        if ((e[i] >> b) & 1) r = r * *this;
      }
    }
    return r;
  }
};

}  // namespace zkfleet::ff
