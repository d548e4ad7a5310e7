// Many independent affine additions sharing one field inversion.
//
// Adding two affine points needs 1/(x2 − x1). Doing n such additions at once
// with Montgomery's trick costs one inversion plus 3 multiplications per
// addition for the inverses, so an addition costs about 6 multiplications
// instead of the 11 of a mixed Jacobian addition. Fixed-base multiplication
// of many scalars (fixed_base.hpp) is a long series of such rounds.
//
// Thread-safety: pure function on caller-owned arrays.
#pragma once

#include <cstddef>

#include "zkfleet/curve/point.hpp"

namespace zkfleet::devtools {

// acc[i] += add[i] for i < n. Either side may be infinity (all-zero), and
// P + P and P + (−P) are handled (by a slow path that is rare in practice).
// scratch must hold n field elements; acc and add must not overlap.
template <class Cfg>
void BatchAddAffine(curve::Affine<Cfg>* acc, const curve::Affine<Cfg>* add, size_t n,
                    typename Cfg::Field* scratch) {
  using F = typename Cfg::Field;
  // The common case: both finite with different x, so x2 − x1 is invertible.
  const auto generic = [&](size_t i) {
    return !add[i].is_infinity() && !acc[i].is_infinity() && acc[i].x != add[i].x;
  };
  // Forward: scratch[i] = product of the denominators before i.
  F product = F::one();
  for (size_t i = 0; i < n; ++i) {
    if (!generic(i)) continue;
    scratch[i] = product;
    product *= add[i].x - acc[i].x;
  }
  // Backward: peel one denominator at a time off the inverted product.
  F inv = product.inverse();
  for (size_t i = n; i-- > 0;) {
    if (!generic(i)) {
      if (add[i].is_infinity()) continue;
      if (acc[i].is_infinity()) {
        acc[i] = add[i];
      } else if (acc[i].y == add[i].y) {  // P + P
        acc[i] = curve::to_affine(curve::dbl(curve::Jacobian<Cfg>::from_affine(acc[i])));
      } else {  // P + (−P)
        acc[i] = curve::Affine<Cfg>::infinity();
      }
      continue;
    }
    const F dx = add[i].x - acc[i].x;
    const F dx_inv = inv * scratch[i];
    inv *= dx;
    const F lambda = (add[i].y - acc[i].y) * dx_inv;
    const F x3 = lambda.sqr() - acc[i].x - add[i].x;
    acc[i].y = lambda * (acc[i].x - x3) - acc[i].y;
    acc[i].x = x3;
  }
}

}  // namespace zkfleet::devtools
