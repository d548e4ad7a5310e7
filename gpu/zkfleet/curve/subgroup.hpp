// Prime-order subgroup membership for G1 and G2 of BN254 and BLS12-381.
//
//   InPrimeOrderSubgroup(P)   P is on the curve (checked by the caller) and
//                             r·P = O; infinity counts as a member.
//
// BN254's G1 has cofactor 1, so every point on the curve is a member and the
// G1 check is free; the other three groups have large cofactors. The test is
// the plain definition, [r]P == O by double-and-add (about 0.1-0.3 ms for G2
// on one core): simple and obviously right; endomorphism-based tests (Scott,
// eprint 2021/1130) would be ~4x faster.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <type_traits>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::curve {

template <class Cfg>
bool InPrimeOrderSubgroup(const Affine<Cfg>& p) {
  if constexpr (std::is_same_v<Cfg, Bn254G1>) {
    return true;  // cofactor 1
  } else {
    if (p.is_infinity()) return true;
    using Fr = typename Cfg::Scalar;
    uint64_t r[Fr::kLimbs];
    Fr::modulus_limbs(r);
    return scalar_mul(Jacobian<Cfg>::from_affine(p), r, Fr::kLimbs).is_infinity();
  }
}

}  // namespace zkfleet::curve
