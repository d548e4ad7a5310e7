// BLS12-381 (snarkjs "bls12381") base field Fq (6 limbs) and scalar field Fr
// (4 limbs). Constants: spec §1.1 / §1.2; tests/unit/ff recomputes every one
// with GMP.
#pragma once

#include <cstdint>

#include "zkfleet/ff/field.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::ff {

struct Bls12_381FqParams {
  static constexpr int kLimbs = 6;
  static constexpr int kModulusBits = 381;
  static constexpr uint64_t kInv = 0x89f3fffcfffcfffdULL;  // -q^-1 mod 2^64
  // q = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
  ZK_HD static constexpr uint64_t modulus(int i) {
    constexpr uint64_t kQ[6] = {0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL, 0x6730d2a0f6b0f624ULL,
                                0x64774b84f38512bfULL, 0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL};
    return kQ[i];
  }
  ZK_HD static constexpr uint64_t r_mod_p(int i) {
    constexpr uint64_t kR[6] = {0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL,
                                0x77ce585370525745ULL, 0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL};
    return kR[i];
  }
  ZK_HD static constexpr uint64_t r2_mod_p(int i) {
    constexpr uint64_t kR2[6] = {0xf4df1f341c341746ULL, 0x0a76e6a609d104f1ULL, 0x8de5476c4c95b6d5ULL,
                                 0x67eb88a9939d83c0ULL, 0x9a793e85b519952dULL, 0x11988fe592cae3aaULL};
    return kR2[i];
  }
};

struct Bls12_381FrParams {
  static constexpr int kLimbs = 4;
  static constexpr int kModulusBits = 255;
  static constexpr uint64_t kInv = 0xfffffffeffffffffULL;  // -r^-1 mod 2^64
  static constexpr int kTwoAdicity = 32;                    // r - 1 = 2^32 · odd
  static constexpr uint64_t kRootOfUnityBase = 5;           // smallest non-residue
  // r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
  ZK_HD static constexpr uint64_t modulus(int i) {
    constexpr uint64_t kP[4] = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL,
                                0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};
    return kP[i];
  }
  ZK_HD static constexpr uint64_t r_mod_p(int i) {
    constexpr uint64_t kR[4] = {0x00000001fffffffeULL, 0x5884b7fa00034802ULL,
                                0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL};
    return kR[i];
  }
  ZK_HD static constexpr uint64_t r2_mod_p(int i) {
    constexpr uint64_t kR2[4] = {0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL,
                                 0x05d314967254398fULL, 0x0748d9d99f59ff11ULL};
    return kR2[i];
  }
};

using Bls12_381Fq = Fp<Bls12_381FqParams>;
using Bls12_381Fr = Fp<Bls12_381FrParams>;

}  // namespace zkfleet::ff
