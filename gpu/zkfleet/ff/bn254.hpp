// BN254 (snarkjs "bn128", alt_bn128) base field Fq and scalar field Fr.
// Constants: spec §1.1 / §1.2; tests/unit/ff recomputes every one with GMP.
#pragma once

#include <cstdint>

#include "zkfleet/ff/field.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::ff {

struct Bn254FqParams {
  static constexpr int kLimbs = 4;
  static constexpr int kModulusBits = 254;
  static constexpr uint64_t kInv = 0x87d20782e4866389ULL;  // -q^-1 mod 2^64
  // q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
  ZK_HD static constexpr uint64_t modulus(int i) {
    constexpr uint64_t kQ[4] = {0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL,
                                0xb85045b68181585dULL, 0x30644e72e131a029ULL};
    return kQ[i];
  }
  ZK_HD static constexpr uint64_t r_mod_p(int i) {
    constexpr uint64_t kR[4] = {0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL,
                                0x666ea36f7879462cULL, 0x0e0a77c19a07df2fULL};
    return kR[i];
  }
  ZK_HD static constexpr uint64_t r2_mod_p(int i) {
    constexpr uint64_t kR2[4] = {0xf32cfc5b538afa89ULL, 0xb5e71911d44501fbULL,
                                 0x47ab1eff0a417ff6ULL, 0x06d89f71cab8351fULL};
    return kR2[i];
  }
};

struct Bn254FrParams {
  static constexpr int kLimbs = 4;
  static constexpr int kModulusBits = 254;
  static constexpr uint64_t kInv = 0xc2e1f593efffffffULL;  // -r^-1 mod 2^64
  static constexpr int kTwoAdicity = 28;                    // r - 1 = 2^28 · odd
  static constexpr uint64_t kRootOfUnityBase = 5;           // smallest non-residue
  // r = 21888242871839275222246405745257275088548364400416034343698204186575808495617
  ZK_HD static constexpr uint64_t modulus(int i) {
    constexpr uint64_t kP[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL,
                                0xb85045b68181585dULL, 0x30644e72e131a029ULL};
    return kP[i];
  }
  ZK_HD static constexpr uint64_t r_mod_p(int i) {
    constexpr uint64_t kR[4] = {0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL,
                                0x666ea36f7879462eULL, 0x0e0a77c19a07df2fULL};
    return kR[i];
  }
  ZK_HD static constexpr uint64_t r2_mod_p(int i) {
    constexpr uint64_t kR2[4] = {0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL,
                                 0x8c49833d53bb8085ULL, 0x0216d0b17f4e44a5ULL};
    return kR2[i];
  }
};

using Bn254Fq = Fp<Bn254FqParams>;
using Bn254Fr = Fp<Bn254FrParams>;

}  // namespace zkfleet::ff
