// Prime-order subgroup membership for G1 and G2 of BN254 and BLS12-381, host
// code.
//
//   InPrimeOrderSubgroup(P)        fast test; P must be on the curve (the
//                                  caller checks); infinity is a member
//   InPrimeOrderSubgroupSlow(P)    the definition, [r]P == O (tests, reference)
//
// BN254's G1 has cofactor 1, so every point on the curve is a member. The
// other three groups have large cofactors and use endomorphism tests, each a
// scalar multiplication by a 64-bit (or 128-bit) value instead of by r:
//   * BLS12-381 G1: phi(P) == -[x^2]P with phi(x, y) = (beta·x, y), beta a
//     cube root of unity (Bowe, eprint 2019/814; Scott, eprint 2021/1130 §6,
//     proof in 2022/352);
//   * BLS12-381 G2: psi(Q) == [x]Q (Scott, eprint 2021/1130 §4);
//   * BN254 G2: [x+1]Q + psi([x]Q) + psi^2([x]Q) == psi^3([2x]Q) (El Housni,
//     Guillevic, Piellard, eprint 2022/348 §3, §5.1);
// where psi is the untwist-Frobenius-twist endomorphism. The constants (beta,
// psi's coefficients) are derived on first use from the field and checked
// against the generators, not copied from tables.
//
// Thread-safety: pure functions; the constants are function-local statics
// (initialised once, thread-safely).
#pragma once

#include <cstdint>
#include <type_traits>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/tower.hpp"

namespace zkfleet::curve {

namespace subgroup_detail {

inline constexpr uint64_t kBn254X = 4965661367192848881ULL;  // BN parameter x > 0
inline constexpr uint64_t kBls12_381X = 0xd201000000010000ULL;  // |x|, x < 0

template <class Cfg>
Jacobian<Cfg> MulU64(const Jacobian<Cfg>& p, uint64_t k) {
  return scalar_mul(p, &k, 1);
}

// psi on the twist: (conj(x)·c1, conj(y)·c2). D-type twist (BN254):
// c1 = xi^((p-1)/3), c2 = xi^((p-1)/2); M-type (BLS12-381): their inverses.
template <class Cfg, class Tower, bool kDType>
struct Psi {
  using Fq2 = typename Tower::Fq2;
  Fq2 c1, c2;
  static const Psi& Get() {
    static const Psi psi = [] {
      const auto& g = Tower::frobenius().gamma[1];
      Psi s;
      s.c1 = kDType ? g[2] : g[2].inverse();
      s.c2 = kDType ? g[3] : g[3].inverse();
      return s;
    }();
    return psi;
  }
  Jacobian<Cfg> operator()(const Jacobian<Cfg>& p) const {
    return Jacobian<Cfg>{p.x.conjugate() * c1, p.y.conjugate() * c2, p.z.conjugate()};
  }
};

using Bn254Psi = Psi<Bn254G2, ff::Bn254Tower, true>;
using Bls12_381Psi = Psi<Bls12_381G2, ff::Bls12_381Tower, false>;

// beta with phi(P) = (beta·x, y) = -[x^2]P on BLS12-381's G1: one of the two
// primitive cube roots of unity, the one that fits the generator.
inline const ff::Bls12_381Fq& Bls12_381Beta() {
  static const ff::Bls12_381Fq beta = [] {
    using Fq = ff::Bls12_381Fq;
    uint64_t e[Fq::kLimbs];  // (q - 1) / 3
    unsigned __int128 rem = 0;
    for (int i = Fq::kLimbs - 1; i >= 0; --i) {
      const unsigned __int128 cur = (rem << 64) | (Fq::modulus_limb(i) - (i == 0 ? 1 : 0));
      e[i] = static_cast<uint64_t>(cur / 3);
      rem = cur % 3;
    }
    Fq b = Fq::one();
    for (uint64_t g = 2; b == Fq::one(); ++g) b = Fq::from_uint(g).pow(e, Fq::kLimbs);
    const auto gen = Jacobian<Bls12_381G1>::from_affine(Bls12_381G1::generator());
    const auto minus_x2 = neg(MulU64(MulU64(gen, kBls12_381X), kBls12_381X));
    const Jacobian<Bls12_381G1> phi{gen.x * b, gen.y, gen.z};
    return equal(phi, minus_x2) ? b : b.sqr();
  }();
  return beta;
}

}  // namespace subgroup_detail

template <class Cfg>
bool InPrimeOrderSubgroupSlow(const Affine<Cfg>& p) {
  if (p.is_infinity()) return true;
  using Fr = typename Cfg::Scalar;
  uint64_t r[Fr::kLimbs];
  Fr::modulus_limbs(r);
  return scalar_mul(Jacobian<Cfg>::from_affine(p), r, Fr::kLimbs).is_infinity();
}

template <class Cfg>
bool InPrimeOrderSubgroup(const Affine<Cfg>& p) {
  using namespace subgroup_detail;
  if (p.is_infinity()) return true;
  const auto j = Jacobian<Cfg>::from_affine(p);
  if constexpr (std::is_same_v<Cfg, Bn254G1>) {
    return true;  // cofactor 1
  } else if constexpr (std::is_same_v<Cfg, Bls12_381G1>) {
    const Jacobian<Cfg> phi{j.x * Bls12_381Beta(), j.y, j.z};
    return equal(phi, neg(MulU64(MulU64(j, kBls12_381X), kBls12_381X)));
  } else if constexpr (std::is_same_v<Cfg, Bls12_381G2>) {
    // psi(Q) == [x]Q = -[|x|]Q
    return equal(Bls12_381Psi::Get()(j), neg(MulU64(j, kBls12_381X)));
  } else if constexpr (std::is_same_v<Cfg, Bn254G2>) {
    const auto& psi = Bn254Psi::Get();
    const auto xq = MulU64(j, kBn254X);
    const auto psi_xq = psi(xq);
    const auto lhs = add(add(add(xq, j), psi_xq), psi(psi_xq));
    const auto rhs = psi(psi(psi(dbl(xq))));
    return equal(lhs, rhs);
  } else {
    return InPrimeOrderSubgroupSlow(p);
  }
}

}  // namespace zkfleet::curve
