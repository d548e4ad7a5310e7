// bellperson's evaluation domain over BLS12-381's scalar field (bellperson
// src/domain.rs, blstrs): the primitive 2^k-th root of unity is
// ROOT_OF_UNITY = 7^((r-1)/2^32) squared 32-k times, i.e. 7^((r-1)/2^k), and
// the coset is shifted by the multiplicative generator 7. (snarkjs uses base
// 5 and the odd coset instead: ff::Fp::root_of_unity, ntt/cpu_ntt.hpp.)
// A prover and its parameters must agree on both, or no proof verifies.
#pragma once

#include <cstdint>

#include "zkfleet/ff/bls12_381.hpp"

namespace zkfleet::bellman {

inline constexpr uint64_t kMultiplicativeGenerator = 7;

// 7^((r-1)/2^log_n), for 0 <= log_n <= 32.
inline ff::Bls12_381Fr DomainRoot(int log_n) {
  using Fr = ff::Bls12_381Fr;
  uint64_t e[4];
  for (int i = 0; i < 4; ++i) e[i] = Fr::modulus_limb(i);
  e[0] -= 1;  // r is odd
  for (int s = 0; s < log_n; ++s) {  // e >>= 1
    for (int i = 0; i < 4; ++i) e[i] = (e[i] >> 1) | (i < 3 ? e[i + 1] << 63 : 0);
  }
  return Fr::from_uint(kMultiplicativeGenerator).pow(e, 4);
}

}  // namespace zkfleet::bellman
