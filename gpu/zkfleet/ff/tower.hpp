// The Fq2 -> Fq6 -> Fq12 towers of BN254 and BLS12-381, host code:
//   Fq6  = Fq2[v]/(v^3 - xi),  Fq12 = Fq6[w]/(w^2 - v),
//   BN254: xi = 9 + u;  BLS12-381: xi = 1 + u.
// The same towers as ffjavascript/wasmcurves (snarkjs), arkworks and gnark,
// so an Fq12 value's coefficients are directly comparable with snarkjs's
// vk_alphabeta_12.
//
// The Frobenius coefficients gamma_k[j] = xi^(j·(p^k - 1)/6) (k = 1, 2, 3;
// j = 0..5; w^(p^k) = gamma_k[1]·w) are computed once, on first use, from xi
// and p rather than copied from tables.
//
// Thread-safety: Frobenius() initialises a function-local static (thread-safe
// in C++11); everything else is pure.
#pragma once

#include <array>
#include <cstdint>

#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"
#include "zkfleet/ff/fp2.hpp"

namespace zkfleet::ff {

namespace tower_detail {

// x^e in Fq2 for a little-endian multi-limb exponent.
template <class Fq2>
Fq2 Pow(const Fq2& x, const uint64_t* e, int limbs) {
  Fq2 r = Fq2::one();
  for (int i = limbs - 1; i >= 0; --i) {
    for (int b = 63; b >= 0; --b) {
      r = r.sqr();
      if ((e[i] >> b) & 1) r = r * x;
    }
  }
  return r;
}

template <class Fq2>
struct FrobeniusTable {
  // gamma[k][j] = xi^(j (p^k - 1)/6), k = 0..3 (k = 0 unused, all ones).
  std::array<std::array<Fq2, 6>, 4> gamma;
};

// Builds the table from xi: g = xi^((p-1)/6) (p = 1 mod 6 for both curves),
// gamma_1[j] = g^j, gamma_2[j] = gamma_1[j]·conj(gamma_1[j]) (= g^(j(1+p))),
// gamma_3[j] = gamma_2[j]·gamma_1[j] (= g^(j(1+p+p^2)), using g^(p^2) = g).
template <class Fq2>
FrobeniusTable<Fq2> MakeFrobeniusTable(const Fq2& xi) {
  using Fq = typename Fq2::Base;
  constexpr int n = Fq::kLimbs;
  uint64_t e[n];
  // (p - 1) / 6 by long division from the top limb.
  unsigned __int128 rem = 0;
  for (int i = n - 1; i >= 0; --i) {
    const uint64_t limb = Fq::modulus_limb(i) - (i == 0 ? 1 : 0);  // p is odd: no borrow
    const unsigned __int128 cur = (rem << 64) | limb;
    e[i] = static_cast<uint64_t>(cur / 6);
    rem = cur % 6;
  }
  FrobeniusTable<Fq2> t;
  const Fq2 g = Pow(xi, e, n);
  for (int j = 0; j < 6; ++j) {
    t.gamma[0][j] = Fq2::one();
    t.gamma[1][j] = j == 0 ? Fq2::one() : t.gamma[1][j - 1] * g;
    t.gamma[2][j] = t.gamma[1][j] * t.gamma[1][j].conjugate();
    t.gamma[3][j] = t.gamma[2][j] * t.gamma[1][j];
  }
  return t;
}

}  // namespace tower_detail

struct Bn254Tower {
  using Fq = Bn254Fq;
  using Fq2 = Fp2<Bn254Fq>;
  // (9 + u)(a + b u) = (9a - b) + (a + 9b) u
  static Fq2 mul_by_xi(const Fq2& x) {
    const Fq a8 = x.c0.dbl().dbl().dbl(), b8 = x.c1.dbl().dbl().dbl();
    return Fq2{a8 + x.c0 - x.c1, b8 + x.c1 + x.c0};
  }
  static Fq2 xi() { return Fq2{Fq::from_uint(9), Fq::one()}; }
  static const tower_detail::FrobeniusTable<Fq2>& frobenius() {
    static const auto table = tower_detail::MakeFrobeniusTable(xi());
    return table;
  }
};

struct Bls12_381Tower {
  using Fq = Bls12_381Fq;
  using Fq2 = Fp2<Bls12_381Fq>;
  // (1 + u)(a + b u) = (a - b) + (a + b) u
  static Fq2 mul_by_xi(const Fq2& x) { return Fq2{x.c0 - x.c1, x.c0 + x.c1}; }
  static Fq2 xi() { return Fq2{Fq::one(), Fq::one()}; }
  static const tower_detail::FrobeniusTable<Fq2>& frobenius() {
    static const auto table = tower_detail::MakeFrobeniusTable(xi());
    return table;
  }
};

}  // namespace zkfleet::ff
