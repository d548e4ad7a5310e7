// BN254 (snarkjs "bn128") curve configurations.
//   G1: y^2 = x^3 + 3 over Fq, generator (1, 2).
//   G2: y^2 = x^3 + 3/(9+u) over Fq2 = Fq[u]/(u^2+1) (the D-type twist).
// Constants: spec §1.3; the tests check that the generators are on the curve,
// have order r, and that G2's equals vk_gamma_2 of the fixtures.
#pragma once

#include <cstdint>

#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/bn254.hpp"
#include "zkfleet/ff/fp2.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::curve {

struct Bn254G1 {
  using Field = ff::Bn254Fq;
  using Scalar = ff::Bn254Fr;
  ZK_HD static Field b() { return Field::from_uint(3); }
  ZK_HD static Affine<Bn254G1> generator();
};

struct Bn254G2 {
  using Field = ff::Fp2<ff::Bn254Fq>;
  using Scalar = ff::Bn254Fr;
  // b2 = 3/(9+u), canonical limbs.
  ZK_HD static Field b() {
    constexpr uint64_t kC0[4] = {0x3267e6dc24a138e5ULL, 0xb5b4c5e559dbefa3ULL,
                                 0x81be18991be06ac3ULL, 0x2b149d40ceb8aaaeULL};
    constexpr uint64_t kC1[4] = {0xe4a2bd0685c315d2ULL, 0xa74fa084e52d1852ULL,
                                 0xcd2cafadeed8fdf4ULL, 0x009713b03af0fed4ULL};
    return Field{ff::Bn254Fq::from_canonical(kC0), ff::Bn254Fq::from_canonical(kC1)};
  }
  ZK_HD static Affine<Bn254G2> generator();
};

ZK_HD Affine<Bn254G1> Bn254G1::generator() {
  return Affine<Bn254G1>{Field::from_uint(1), Field::from_uint(2)};
}

ZK_HD Affine<Bn254G2> Bn254G2::generator() {
  using Fq = ff::Bn254Fq;
  constexpr uint64_t kX0[4] = {0x46debd5cd992f6edULL, 0x674322d4f75edaddULL,
                               0x426a00665e5c4479ULL, 0x1800deef121f1e76ULL};
  constexpr uint64_t kX1[4] = {0x97e485b7aef312c2ULL, 0xf1aa493335a9e712ULL,
                               0x7260bfb731fb5d25ULL, 0x198e9393920d483aULL};
  constexpr uint64_t kY0[4] = {0x4ce6cc0166fa7daaULL, 0xe3d1e7690c43d37bULL,
                               0x4aab71808dcb408fULL, 0x12c85ea5db8c6debULL};
  constexpr uint64_t kY1[4] = {0x55acdadcd122975bULL, 0xbc4b313370b38ef3ULL,
                               0xec9e99ad690c3395ULL, 0x090689d0585ff075ULL};
  return Affine<Bn254G2>{Field{Fq::from_canonical(kX0), Fq::from_canonical(kX1)},
                         Field{Fq::from_canonical(kY0), Fq::from_canonical(kY1)}};
}

// The curve as a whole, for code templated on "which curve".
struct Bn254 {
  using Fq = ff::Bn254Fq;
  using Fr = ff::Bn254Fr;
  using Fq2 = ff::Fp2<ff::Bn254Fq>;
  using G1 = Bn254G1;
  using G2 = Bn254G2;
  static constexpr const char* kName = "bn128";  // as in snarkjs JSON
};

}  // namespace zkfleet::curve
