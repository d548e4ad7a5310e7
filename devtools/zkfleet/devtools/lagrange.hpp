// Lagrange basis evaluations at a point, for the insecure setup.
//
// Every Lagrange polynomial of a (coset of a) power-of-two domain
// x_i = g·ω^i, i < n, evaluated at tau has the form
//   ℓ_i(τ) = (τ^n − g^n)/(n·g^n) · x_i/(τ − x_i),
// so all of them cost O(n) multiplications and one inversion per block
// (Montgomery's batch-inversion trick).
//
// Thread-safety: pure functions; the pool may be shared.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::devtools {

// out[i] = scale · x_i / (tau − x_i) with x_i = g·ω^i, for i < count.
// tau must not be one of the x_i (the caller checks tau^n != g^n).
template <class Fr>
std::vector<Fr> ScaledCosetFractions(const Fr& tau, const Fr& g, const Fr& omega, size_t count, const Fr& scale,
                                     cpu::ThreadPool& pool) {
  std::vector<Fr> out(count);
  constexpr size_t kBlock = 4096;
  const size_t blocks = (count + kBlock - 1) / kBlock;
  pool.RunTasks(blocks, [&](size_t b) {
    const size_t begin = b * kBlock, end = std::min(count, begin + kBlock);
    const uint64_t start_exp[1] = {begin};
    Fr x = g * omega.pow(start_exp, 1);  // x_begin
    // Forward: xs and prefix products of the denominators tau − x_i.
    std::vector<Fr> xs(end - begin), prefix(end - begin);
    Fr product = Fr::one();
    for (size_t i = begin; i < end; ++i) {
      xs[i - begin] = x;
      prefix[i - begin] = product;
      product *= tau - x;
      x *= omega;
    }
    // Backward: peel one denominator at a time off the inverted product.
    Fr inv = product.inverse();
    for (size_t i = end; i-- > begin;) {
      const Fr denominator_inv = inv * prefix[i - begin];
      inv *= tau - xs[i - begin];
      out[i] = scale * xs[i - begin] * denominator_inv;
    }
  });
  return out;
}

// x^e for a 64-bit exponent.
template <class Fr>
Fr PowU64(const Fr& x, uint64_t e) {
  const uint64_t limbs[1] = {e};
  return x.pow(limbs, 1);
}

}  // namespace zkfleet::devtools
