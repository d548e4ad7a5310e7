// BatchInverse: n field inversions for the price of one (Montgomery's
// trick), the one helper behind every batch conversion to affine form (host
// and device) and the CPU MSM's batch-affine additions.
//
// Thread-safety: pure function over caller-owned arrays.
#pragma once

#include <cstddef>

#include "zkfleet/ff/hd.hpp"

namespace zkfleet::ff {

// values[i] <- 1 / values[i] for i < n; zeros stay zero (they take no part).
// scratch: n elements, overwritten. One inversion and 3 multiplications per
// non-zero element.
template <class F>
ZK_HD void BatchInverse(F* values, F* scratch, size_t n) {
  // Forward: scratch[i] = product of the non-zero values before i.
  F product = F::one();
  for (size_t i = 0; i < n; ++i) {
    scratch[i] = product;
    if (!values[i].is_zero()) product = product * values[i];
  }
  // Backward: peel one value at a time off the inverted total product.
  F inv = product.inverse();
  for (size_t i = n; i-- > 0;) {
    if (values[i].is_zero()) continue;
    const F value = values[i];
    values[i] = inv * scratch[i];
    inv = inv * value;
  }
}

}  // namespace zkfleet::ff
