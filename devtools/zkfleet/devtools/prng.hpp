// Deterministic pseudo-random numbers for reproducible fixtures.
//
// xoshiro256** (Blackman & Vigna), seeded through splitmix64. Both are fully
// specified integer recipes, so a seed gives the same stream on every
// compiler and platform (std:: distributions do not promise that). NOT a
// cryptographic generator: use it for circuit shapes and for test keys made
// with an explicit --seed, never for real toxic waste.
//
// Thread-safety: a Prng is a plain value; give each thread its own.
#pragma once

#include <cstdint>

namespace zkfleet::devtools {

class Prng {
 public:
  explicit Prng(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& word : s_) word = SplitMix64(x);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // A number in [0, bound), bound >= 1, by multiply-shift (Lemire). The bias
  // is below bound / 2^64: irrelevant for fixture shapes.
  uint64_t Below(uint64_t bound) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * bound) >> 64);
  }

  // True with probability percent / 100.
  bool Percent(uint32_t percent) { return Below(100) < percent; }

  // A uniformly random element of the field F (an ff::Fp), by rejection
  // sampling of kModulusBits-bit integers.
  template <class F>
  F FieldElement() {
    uint64_t limbs[F::kLimbs];
    const int top_bits = F::kModulusBits - 64 * (F::kLimbs - 1);
    for (;;) {
      for (uint64_t& limb : limbs) limb = Next();
      if (top_bits < 64) limbs[F::kLimbs - 1] &= (uint64_t{1} << top_bits) - 1;
      if (F::is_below_modulus(limbs)) return F::from_canonical(limbs);
    }
  }

  static uint64_t SplitMix64(uint64_t& state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t s_[4];
};

}  // namespace zkfleet::devtools
