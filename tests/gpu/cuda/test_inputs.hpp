// Random MSM/NTT inputs for the CUDA tests (host only, deterministic seeds).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::cuda::testing {

// A uniformly random canonical integer below Fr's modulus, as 4 limbs.
template <class Fr>
void RandomBelowModulus(std::mt19937_64& rng, uint64_t out[4]) {
  for (;;) {
    for (int i = 0; i < 4; ++i) out[i] = rng();
    const int top_bits = Fr::kModulusBits - 192;
    if (top_bits < 64) out[3] &= (uint64_t{1} << top_bits) - 1;
    if (Fr::is_below_modulus(out)) return;
  }
}

template <class Fr>
Fr RandomElement(std::mt19937_64& rng) {
  uint64_t limbs[4];
  RandomBelowModulus<Fr>(rng, limbs);
  return Fr::from_mont(limbs);  // any value < p is a valid Montgomery form
}

// n scalars (32 bytes each, canonical LE): random, with the special values
// the MSM must handle sprinkled in: 0, 1, 2, r-1, r-2, and repeats.
template <class Fr>
std::vector<uint8_t> RandomScalars(size_t n, uint64_t seed, bool specials = true) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(n * 32);
  for (size_t i = 0; i < n; ++i) {
    uint64_t s[4];
    RandomBelowModulus<Fr>(rng, s);
    std::memcpy(&out[i * 32], s, 32);
  }
  if (!specials || n < 2) return out;
  uint64_t r_minus[4];
  for (int i = 0; i < 4; ++i) r_minus[i] = Fr::modulus_limb(i);
  auto put = [&](size_t i, const uint64_t v[4]) { std::memcpy(&out[i * 32], v, 32); };
  const size_t specials_every = n >= 64 ? 16 : 2;
  for (size_t i = 0; i < n; i += specials_every) {
    uint64_t v[4] = {0, 0, 0, 0};
    switch ((i / specials_every) % 7) {
      case 0: break;                                   // zero
      case 1: v[0] = 1; break;                         // one
      case 2: v[0] = 2; break;
      case 3: std::memcpy(v, r_minus, 32); v[0] -= 1; break;  // r - 1
      case 4: std::memcpy(v, r_minus, 32); v[0] -= 2; break;  // r - 2
      case 5: std::memcpy(v, &out[0], 32); break;      // repeat of scalar 0
      case 6: v[0] = 1; break;
    }
    put(i, v);
  }
  return out;
}

// n affine points: T_a[i % k] + T_b[i / k] from two tables of k random
// multiples of the generator (distinct with overwhelming probability), then
// some repeated points and some points at infinity (all-zero).
template <class Cfg, class Fr>
std::vector<curve::Affine<Cfg>> RandomPoints(size_t n, uint64_t seed, cpu::ThreadPool& pool, bool specials = true) {
  using A = curve::Affine<Cfg>;
  using J = curve::Jacobian<Cfg>;
  std::mt19937_64 rng(seed);
  size_t k = 1;
  while (k * k < n) k *= 2;
  std::vector<A> table_a(k), table_b(k);
  const J g = J::from_affine(Cfg::generator());
  std::vector<uint64_t> multipliers(2 * k * 4);
  for (size_t i = 0; i < 2 * k; ++i) RandomBelowModulus<Fr>(rng, &multipliers[4 * i]);
  std::vector<J> jt(2 * k);
  pool.ParallelFor(2 * k, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) jt[i] = curve::scalar_mul(g, &multipliers[4 * i], 4);
  });
  std::vector<A> at(2 * k);
  curve::batch_to_affine(jt.data(), at.data(), 2 * k);
  for (size_t i = 0; i < k; ++i) {
    table_a[i] = at[i];
    table_b[i] = at[k + i];
  }
  std::vector<A> out(n);
  pool.ParallelFor(n, [&](size_t lo, size_t hi) {
    std::vector<J> sums(hi - lo);
    for (size_t i = lo; i < hi; ++i) sums[i - lo] = curve::add_mixed(J::from_affine(table_a[i % k]), table_b[i / k]);
    curve::batch_to_affine(sums.data(), out.data() + lo, hi - lo);
  });
  if (specials && n >= 4) {
    for (size_t i = 3; i < n; i += 37) out[i] = A::infinity();
    for (size_t i = 5; i < n; i += 41) out[i] = out[1];  // repeated base
  }
  return out;
}

}  // namespace zkfleet::cuda::testing
