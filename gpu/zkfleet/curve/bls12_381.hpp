// BLS12-381 (snarkjs "bls12381") curve configurations.
//   G1: y^2 = x^3 + 4 over Fq.
//   G2: y^2 = x^3 + 4(1+u) over Fq2 = Fq[u]/(u^2+1) (the M-type twist).
// Generators are the standard ones (IETF pairing-friendly-curves draft, zkcrypto);
// the tests check them against vk_gamma_2 of the fixtures, the curve equation
// and the group order r.
#pragma once

#include <cstdint>

#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/fp2.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::curve {

struct Bls12_381G1 {
  using Field = ff::Bls12_381Fq;
  using Scalar = ff::Bls12_381Fr;
  ZK_HD static Field b() { return Field::from_uint(4); }
  ZK_HD static Affine<Bls12_381G1> generator();
};

struct Bls12_381G2 {
  using Field = ff::Fp2<ff::Bls12_381Fq>;
  using Scalar = ff::Bls12_381Fr;
  ZK_HD static Field b() {
    const ff::Bls12_381Fq four = ff::Bls12_381Fq::from_uint(4);
    return Field{four, four};  // 4 + 4u
  }
  ZK_HD static Affine<Bls12_381G2> generator();
};

ZK_HD Affine<Bls12_381G1> Bls12_381G1::generator() {
  constexpr uint64_t kX[6] = {0xfb3af00adb22c6bbULL, 0x6c55e83ff97a1aefULL, 0xa14e3a3f171bac58ULL,
                              0xc3688c4f9774b905ULL, 0x2695638c4fa9ac0fULL, 0x17f1d3a73197d794ULL};
  constexpr uint64_t kY[6] = {0x0caa232946c5e7e1ULL, 0xd03cc744a2888ae4ULL, 0x00db18cb2c04b3edULL,
                              0xfcf5e095d5d00af6ULL, 0xa09e30ed741d8ae4ULL, 0x08b3f481e3aaa0f1ULL};
  return Affine<Bls12_381G1>{Field::from_canonical(kX), Field::from_canonical(kY)};
}

ZK_HD Affine<Bls12_381G2> Bls12_381G2::generator() {
  using Fq = ff::Bls12_381Fq;
  constexpr uint64_t kX0[6] = {0xd48056c8c121bdb8ULL, 0x0bac0326a805bbefULL, 0xb4510b647ae3d177ULL,
                               0xc6e47ad4fa403b02ULL, 0x260805272dc51051ULL, 0x024aa2b2f08f0a91ULL};
  constexpr uint64_t kX1[6] = {0xe5ac7d055d042b7eULL, 0x334cf11213945d57ULL, 0xb5da61bbdc7f5049ULL,
                               0x596bd0d09920b61aULL, 0x7dacd3a088274f65ULL, 0x13e02b6052719f60ULL};
  constexpr uint64_t kY0[6] = {0xe193548608b82801ULL, 0x923ac9cc3baca289ULL, 0x6d429a695160d12cULL,
                               0xadfd9baa8cbdd3a7ULL, 0x8cc9cdc6da2e351aULL, 0x0ce5d527727d6e11ULL};
  constexpr uint64_t kY1[6] = {0xaaa9075ff05f79beULL, 0x3f370d275cec1da1ULL, 0x267492ab572e99abULL,
                               0xcb3e287e85a763afULL, 0x32acd2b02bc28b99ULL, 0x0606c4a02ea734ccULL};
  return Affine<Bls12_381G2>{Field{Fq::from_canonical(kX0), Fq::from_canonical(kX1)},
                             Field{Fq::from_canonical(kY0), Fq::from_canonical(kY1)}};
}

// The curve as a whole, for code templated on "which curve".
struct Bls12_381 {
  using Fq = ff::Bls12_381Fq;
  using Fr = ff::Bls12_381Fr;
  using Fq2 = ff::Fp2<ff::Bls12_381Fq>;
  using G1 = Bls12_381G1;
  using G2 = Bls12_381G2;
  static constexpr const char* kName = "bls12381";  // as in snarkjs JSON
};

}  // namespace zkfleet::curve
