// Uniform non-zero BLS12-381 scalars from a seed, the same on every
// platform (std::mt19937_64 is fully specified; rejection sampling, no
// std:: distribution). Where a seed must reproduce its scalars exactly: the
// synthetic circuit's values (constraint_system.hpp) and the seeded
// parameters' toxic waste (devtools/zkfleet/devtools/seeded_parameters.hpp).
// Anyone who knows the seed knows the scalars: never for secrets.
//
// Thread-safety: a plain value; give each thread its own.
#pragma once

#include <cstdint>
#include <random>

#include "zkfleet/ff/bls12_381.hpp"

namespace zkfleet::bellman {

class SeededScalars {
 public:
  using Fr = ff::Bls12_381Fr;

  explicit SeededScalars(uint64_t seed) : rng_(seed) {}

  // The next scalar: four 64-bit draws, the top limb cut to r's bit length,
  // redrawn until it is below r and not zero.
  Fr Next() {
    for (;;) {
      uint64_t limbs[4];
      for (auto& l : limbs) l = rng_();
      limbs[3] &= (uint64_t{1} << (Fr::kModulusBits - 192)) - 1;
      if (Fr::is_below_modulus(limbs) && (limbs[0] | limbs[1] | limbs[2] | limbs[3])) return Fr::from_canonical(limbs);
    }
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace zkfleet::bellman
