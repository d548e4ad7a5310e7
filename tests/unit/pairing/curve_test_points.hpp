// Test helpers for pairing and verifier tests: random scalars and points,
// square roots in Fq and Fq2 (q = 3 mod 4 for both curves), and points that
// are on the curve but outside the prime-order subgroup.
#pragma once

#include <cstdint>
#include <random>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/curve/subgroup.hpp"
#include "zkfleet/ff/tower.hpp"

namespace zkfleet::testing {

// A uniformly random element of F (reduced from 64·kLimbs random bits).
template <class F>
F RandomField(std::mt19937_64& rng) {
  uint64_t l[F::kLimbs];
  for (auto& x : l) x = rng();
  return F::from_canonical(l);
}

// (q + k) >> s for the base field of F, as limbs (k small, may be negative).
template <class F>
void ShiftedModulus(int64_t add, int shift, uint64_t* out) {
  unsigned __int128 carry = 0;
  for (int i = 0; i < F::kLimbs; ++i) {
    const uint64_t addend = i == 0 ? static_cast<uint64_t>(add) : (add < 0 ? ~uint64_t{0} : 0);
    const unsigned __int128 t = static_cast<unsigned __int128>(F::modulus_limb(i)) + addend + carry;
    out[i] = static_cast<uint64_t>(t);
    carry = t >> 64;
  }
  for (int i = 0; i < F::kLimbs; ++i) {
    out[i] = (out[i] >> shift) | (i + 1 < F::kLimbs && shift ? out[i + 1] << (64 - shift) : 0);
  }
}

// sqrt in Fq (q = 3 mod 4); false when a is not a square.
template <class F>
bool Sqrt(const F& a, F& out) {
  uint64_t e[F::kLimbs];
  ShiftedModulus<F>(1, 2, e);  // (q+1)/4
  out = a.pow(e, F::kLimbs);
  return out.sqr() == a;
}

// sqrt in Fq2 (Adj-Rodriguez-Henriquez, eprint 2012/685, algorithm 9).
template <class F>
bool Sqrt(const ff::Fp2<F>& a, ff::Fp2<F>& out) {
  using Fq2 = ff::Fp2<F>;
  uint64_t e34[F::kLimbs], e12[F::kLimbs];
  ShiftedModulus<F>(-3, 2, e34);  // (q-3)/4
  ShiftedModulus<F>(-1, 1, e12);  // (q-1)/2
  const Fq2 a1 = ff::tower_detail::Pow(a, e34, F::kLimbs);
  const Fq2 alpha = a1.sqr() * a;
  const Fq2 a0 = alpha.conjugate() * alpha;
  const Fq2 minus_one = Fq2::one().neg();
  if (a0 == minus_one) return false;
  const Fq2 x0 = a1 * a;
  if (alpha == minus_one) {
    out = Fq2{x0.c1.neg(), x0.c0};  // u·x0
  } else {
    out = ff::tower_detail::Pow(Fq2::one() + alpha, e12, F::kLimbs) * x0;
  }
  return out.sqr() == a;
}

// A random point on the curve y^2 = x^3 + b (any subgroup).
template <class Cfg>
curve::Affine<Cfg> RandomCurvePoint(std::mt19937_64& rng) {
  using Field = typename Cfg::Field;
  for (;;) {
    Field x;
    if constexpr (requires { x.c0; }) {
      x = Field{RandomField<typename Field::Base>(rng), RandomField<typename Field::Base>(rng)};
    } else {
      x = RandomField<Field>(rng);
    }
    Field y;
    if (Sqrt(x.sqr() * x + Cfg::b(), y)) return curve::Affine<Cfg>{x, y};
  }
}

// On the curve, not in the prime-order subgroup.
template <class Cfg>
curve::Affine<Cfg> NonSubgroupPoint(std::mt19937_64& rng) {
  for (;;) {
    auto p = RandomCurvePoint<Cfg>(rng);
    if (!curve::InPrimeOrderSubgroupSlow(p)) return p;  // the definition, not the fast test
  }
}

// A random scalar < r as canonical limbs.
template <class Fr>
Fr RandomScalar(std::mt19937_64& rng) {
  return RandomField<Fr>(rng);
}

template <class Cfg>
curve::Affine<Cfg> Mul(const curve::Affine<Cfg>& p, const typename Cfg::Scalar& s) {
  uint64_t l[Cfg::Scalar::kLimbs];
  s.to_canonical(l);
  return curve::to_affine(curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(p), l, Cfg::Scalar::kLimbs));
}

// A random point of the prime-order subgroup: s·generator.
template <class Cfg>
curve::Affine<Cfg> RandomSubgroupPoint(std::mt19937_64& rng) {
  return Mul(Cfg::generator(), RandomScalar<typename Cfg::Scalar>(rng));
}

}  // namespace zkfleet::testing
