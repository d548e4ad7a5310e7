// Test helpers: BN254 G2 points that are on the twist but outside G2 only by a
// component of small order. The twist has r·h points with h = 2q - r =
// 10069 · 5864401 · 1875725156269 · (a 177-bit prime), so for a divisor ell
// of h, [r·h/ell]R has order ell or 1 for any point R.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <stdexcept>

#include "unit/pairing/curve_test_points.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::testing {

using Limbs = std::array<uint64_t, 4>;  // little-endian

// h = 2q - r for BN254.
inline Limbs Bn254G2Cofactor() {
  Limbs h{};
  unsigned __int128 borrow = 0, carry = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned __int128 twice = (static_cast<unsigned __int128>(ff::Bn254Fq::modulus_limb(i)) << 1) + carry;
    carry = twice >> 64;
    const unsigned __int128 q2 = static_cast<uint64_t>(twice);
    const unsigned __int128 sub = static_cast<unsigned __int128>(ff::Bn254Fr::modulus_limb(i)) + borrow;
    h[i] = static_cast<uint64_t>(q2 - sub);
    borrow = q2 < sub ? 1 : 0;
  }
  return h;
}

// x mod d, for d < 2^63.
inline uint64_t ModSmall(const Limbs& x, uint64_t d) {
  unsigned __int128 rem = 0;
  for (int i = 3; i >= 0; --i) rem = ((rem << 64) | x[i]) % d;
  return static_cast<uint64_t>(rem);
}

// x / d, for d < 2^63.
inline Limbs DivSmall(const Limbs& x, uint64_t d) {
  Limbs q{};
  unsigned __int128 rem = 0;
  for (int i = 3; i >= 0; --i) {
    const unsigned __int128 cur = (rem << 64) | x[i];
    q[i] = static_cast<uint64_t>(cur / d);
    rem = cur % d;
  }
  return q;
}

// A point of order exactly `order` (a prime dividing h) on the BN254 twist.
inline curve::Affine<curve::Bn254G2> SmallOrderPoint(uint64_t order, std::mt19937_64& rng) {
  using G2 = curve::Bn254G2;
  if (ModSmall(Bn254G2Cofactor(), order) != 0) throw std::invalid_argument("SmallOrderPoint: order does not divide h");
  const Limbs cofactor_part = DivSmall(Bn254G2Cofactor(), order);
  uint64_t r[4];
  ff::Bn254Fr::modulus_limbs(r);
  for (;;) {
    const auto random = curve::Jacobian<G2>::from_affine(RandomCurvePoint<G2>(rng));
    const auto t = curve::scalar_mul(curve::scalar_mul(random, r, 4), cofactor_part.data(), 4);
    if (t.is_infinity()) continue;  // probability 1/order
    const uint64_t ell[1] = {order};
    if (!curve::scalar_mul(t, ell, 1).is_infinity()) continue;  // not a divisor of h: never
    return curve::to_affine(t);
  }
}

// g + t with t of order `order`: on the curve, in G2 exactly when g's part is.
inline curve::Affine<curve::Bn254G2> WithSmallOrderPart(const curve::Affine<curve::Bn254G2>& g, uint64_t order,
                                                          std::mt19937_64& rng) {
  using G2 = curve::Bn254G2;
  return curve::to_affine(curve::add_mixed(curve::Jacobian<G2>::from_affine(g), SmallOrderPoint(order, rng)));
}

}  // namespace zkfleet::testing
