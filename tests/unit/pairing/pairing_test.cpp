// Pairings of BN254 and BLS12-381: tower arithmetic, bilinearity,
// non-degeneracy, order r, multi-pairing = product of pairings, and
// e(alpha, beta) against snarkjs's vk_alphabeta_12 of the bundled fixtures.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/test_support.hpp"
#include "unit/pairing/curve_test_points.hpp"
#include "zkfleet/groth16/verifier.hpp"
#include "zkfleet/snarkjs/json_reader.hpp"
#include "zkfleet/pairing/pairing.hpp"

namespace {

namespace curve = zkfleet::curve;
namespace ff = zkfleet::ff;
namespace groth16 = zkfleet::groth16;
namespace io = zkfleet::io;
namespace pairing = zkfleet::pairing;
namespace zt = zkfleet::testing;
using zt::RandomField;
using zt::RandomScalar;
using zt::RandomSubgroupPoint;

template <class C>
class PairingTest : public ::testing::Test {};
using Curves = ::testing::Types<curve::Bn254, curve::Bls12_381>;
class CurveNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, curve::Bn254> ? "Bn254" : "Bls12_381";
  }
};
TYPED_TEST_SUITE(PairingTest, Curves, CurveNames);

template <class C>
typename C::Fq2 RandomFq2(std::mt19937_64& rng) {
  return typename C::Fq2{RandomField<typename C::Fq>(rng), RandomField<typename C::Fq>(rng)};
}
template <class C>
ff::Fp6<typename pairing::PairingParams<C>::Tower> RandomFq6(std::mt19937_64& rng) {
  return {RandomFq2<C>(rng), RandomFq2<C>(rng), RandomFq2<C>(rng)};
}
template <class C>
pairing::Gt<C> RandomFq12(std::mt19937_64& rng) {
  return {RandomFq6<C>(rng), RandomFq6<C>(rng)};
}

template <class Fr>
std::array<uint64_t, 4> Limbs(const Fr& s) {
  std::array<uint64_t, 4> l{};
  s.to_canonical(l.data());
  return l;
}

TYPED_TEST(PairingTest, TowerArithmetic) {
  using C = TypeParam;
  using Fq6 = ff::Fp6<typename pairing::PairingParams<C>::Tower>;
  using Fq12 = pairing::Gt<C>;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 20; ++i) {
    const Fq6 a = RandomFq6<C>(rng), b = RandomFq6<C>(rng), c = RandomFq6<C>(rng);
    EXPECT_EQ(a.sqr(), a * a);
    EXPECT_EQ((a + b) * c, a * c + b * c);
    EXPECT_EQ(a * b, b * a);
    EXPECT_EQ(a * a.inverse(), Fq6::one());
    const auto z = Fq6::zero();
    EXPECT_EQ(a.mul_by_01(b.c0, b.c1), (a * Fq6{b.c0, b.c1, z.c0}));
    EXPECT_EQ(a.mul_by_1(b.c1), (a * Fq6{z.c0, b.c1, z.c0}));
    // v^3 = xi
    const Fq6 v{z.c0, C::Fq2::one(), z.c0};
    EXPECT_EQ(v * v * v, (Fq6{pairing::PairingParams<C>::Tower::xi(), z.c0, z.c0}));

    const Fq12 x = RandomFq12<C>(rng), y = RandomFq12<C>(rng), w = RandomFq12<C>(rng);
    EXPECT_EQ(x.sqr(), x * x);
    EXPECT_EQ((x + y) * w, x * w + y * w);
    EXPECT_EQ(x * x.inverse(), Fq12::one());
    EXPECT_EQ((x * y) * w, x * (y * w));
    const auto& o = y.c0;
    EXPECT_EQ(x.mul_by_014(o.c0, o.c1, o.c2), (x * Fq12{Fq6{o.c0, o.c1, z.c0}, Fq6{z.c0, o.c2, z.c0}}));
    EXPECT_EQ(x.mul_by_034(o.c0, o.c1, o.c2), (x * Fq12{Fq6{o.c0, z.c0, z.c0}, Fq6{o.c1, o.c2, z.c0}}));
  }
}

TYPED_TEST(PairingTest, FrobeniusIsPowerOfP) {
  using C = TypeParam;
  using Fq = typename C::Fq;
  std::mt19937_64 rng(12);
  uint64_t p[Fq::kLimbs];
  Fq::modulus_limbs(p);
  for (int i = 0; i < 3; ++i) {
    const auto x = RandomFq12<C>(rng);
    auto xp = x;
    for (int k = 1; k <= 3; ++k) {
      xp = xp.pow(p, Fq::kLimbs);
      EXPECT_EQ(x.frobenius(k), xp) << "k = " << k;
    }
    EXPECT_EQ(x.frobenius(2).frobenius(2).frobenius(2), x.conjugate());  // p^6
  }
}

TYPED_TEST(PairingTest, CyclotomicSquareMatchesSquareInTheCyclotomicSubgroup) {
  using C = TypeParam;
  std::mt19937_64 rng(13);
  for (int i = 0; i < 10; ++i) {
    const auto x = RandomFq12<C>(rng);
    auto f = x.conjugate() * x.inverse();  // x^(p^6 - 1)
    f = f.frobenius(2) * f;                // ^(p^2 + 1)
    EXPECT_EQ(f.cyclotomic_sqr(), f.sqr());
    EXPECT_EQ(f.conjugate() * f, pairing::Gt<C>::one());
    EXPECT_EQ(f.cyclotomic_pow(0x1234567u), f.pow(std::array<uint64_t, 1>{0x1234567u}.data(), 1));
  }
}

TYPED_TEST(PairingTest, BilinearWithRandomScalars) {
  using C = TypeParam;
  using Fr = typename C::Fr;
  std::mt19937_64 rng(14);
  const auto p = RandomSubgroupPoint<typename C::G1>(rng);
  const auto q = RandomSubgroupPoint<typename C::G2>(rng);
  const auto e = pairing::Pairing<C>(p, q);
  for (int i = 0; i < 4; ++i) {
    const Fr a = RandomScalar<Fr>(rng), b = RandomScalar<Fr>(rng);
    const auto ap = zt::Mul(p, a);
    const auto bq = zt::Mul(q, b);
    const auto ab = Limbs(a * b);
    EXPECT_EQ(pairing::Pairing<C>(ap, bq), e.pow(ab.data(), 4));
    const auto al = Limbs(a);
    EXPECT_EQ(pairing::Pairing<C>(ap, q), e.pow(al.data(), 4));
    EXPECT_EQ(pairing::Pairing<C>(p, zt::Mul(q, a)), e.pow(al.data(), 4));
  }
  // e(P1 + P2, Q) = e(P1, Q) e(P2, Q)
  const auto p2 = RandomSubgroupPoint<typename C::G1>(rng);
  const auto sum = curve::to_affine(curve::add_mixed(curve::Jacobian<typename C::G1>::from_affine(p), p2));
  EXPECT_EQ(pairing::Pairing<C>(sum, q), e * pairing::Pairing<C>(p2, q));
}

TYPED_TEST(PairingTest, NonDegenerateAndOfOrderR) {
  using C = TypeParam;
  using Fr = typename C::Fr;
  std::mt19937_64 rng(15);
  uint64_t r[4];
  Fr::modulus_limbs(r);
  const auto g = pairing::Pairing<C>(C::G1::generator(), C::G2::generator());
  EXPECT_FALSE(g.is_one());
  EXPECT_TRUE(g.pow(r, 4).is_one());
  for (int i = 0; i < 3; ++i) {
    const auto e = pairing::Pairing<C>(RandomSubgroupPoint<typename C::G1>(rng), RandomSubgroupPoint<typename C::G2>(rng));
    EXPECT_FALSE(e.is_one());
    EXPECT_TRUE(e.pow(r, 4).is_one());
  }
  // Infinity on either side gives 1.
  EXPECT_TRUE(pairing::Pairing<C>(pairing::G1Affine<C>::infinity(), C::G2::generator()).is_one());
  EXPECT_TRUE(pairing::Pairing<C>(C::G1::generator(), pairing::G2Affine<C>::infinity()).is_one());
}

TYPED_TEST(PairingTest, MultiPairingIsTheProductOfPairings) {
  using C = TypeParam;
  std::mt19937_64 rng(16);
  for (int n : {1, 2, 4, 5}) {
    std::vector<pairing::G1G2Pair<C>> pairs;
    auto product = pairing::Gt<C>::one();
    for (int i = 0; i < n; ++i) {
      pairs.push_back({RandomSubgroupPoint<typename C::G1>(rng), RandomSubgroupPoint<typename C::G2>(rng)});
      product *= pairing::Pairing<C>(pairs.back().p, pairs.back().q);
    }
    const auto span = std::span<const pairing::G1G2Pair<C>>(pairs);
    EXPECT_EQ(pairing::FinalExponentiation<C>(pairing::MillerLoop<C>(span)), product) << "n = " << n;
    EXPECT_FALSE(pairing::PairingProductIsOne<C>(span));
    // Append the inverse of the product: e(-P1, Q1)...e(-Pn, Qn).
    const size_t m = pairs.size();
    for (size_t i = 0; i < m; ++i) pairs.push_back({curve::neg(pairs[i].p), pairs[i].q});
    EXPECT_TRUE(pairing::PairingProductIsOne<C>(std::span<const pairing::G1G2Pair<C>>(pairs)));
  }
  // e(aP, Q) e(-P, aQ) == 1
  const auto a = RandomScalar<typename C::Fr>(rng);
  const auto p = RandomSubgroupPoint<typename C::G1>(rng);
  const auto q = RandomSubgroupPoint<typename C::G2>(rng);
  const pairing::G1G2Pair<C> pq[2] = {{zt::Mul(p, a), q}, {curve::neg(p), zt::Mul(q, a)}};
  EXPECT_TRUE(pairing::PairingProductIsOne<C>(std::span<const pairing::G1G2Pair<C>>(pq, 2)));
}

TYPED_TEST(PairingTest, AlphaBetaMatchesSnarkjsFixtures) {
  using C = TypeParam;
  const std::string name = std::is_same_v<C, curve::Bn254> ? "bn128_k12" : "bls12381_k12";
  const std::string path = zt::Fixture(name, "verification_key.json");
  const auto vk = io::ReadVerificationKeyJson(path);
  const auto ab = groth16::AlphaBeta(vk);
  // Compare with the file's own vk_alphabeta_12 by re-serialising.
  const std::string json = io::VerificationKeyJson(vk, ab);
  EXPECT_EQ(json, zt::ReadFile(path));
}

TYPED_TEST(PairingTest, SubgroupChecks) {
  using C = TypeParam;
  std::mt19937_64 rng(17);
  EXPECT_TRUE(curve::InPrimeOrderSubgroup(C::G1::generator()));
  EXPECT_TRUE(curve::InPrimeOrderSubgroup(C::G2::generator()));
  EXPECT_TRUE(curve::InPrimeOrderSubgroup(RandomSubgroupPoint<typename C::G2>(rng)));
  const auto bad2 = zt::NonSubgroupPoint<typename C::G2>(rng);
  EXPECT_TRUE(curve::is_on_curve(bad2));
  EXPECT_FALSE(curve::InPrimeOrderSubgroup(bad2));
  if constexpr (std::is_same_v<C, curve::Bls12_381>) {
    const auto bad1 = zt::NonSubgroupPoint<typename C::G1>(rng);
    EXPECT_TRUE(curve::is_on_curve(bad1));
    EXPECT_FALSE(curve::InPrimeOrderSubgroup(bad1));
  } else {
    // Cofactor 1: every point on the curve is in G1.
    EXPECT_TRUE(curve::InPrimeOrderSubgroup(zt::RandomCurvePoint<typename C::G1>(rng)));
  }
}

// The fast endomorphism tests agree with [r]P == O on subgroup points, on
// random curve points (almost never in the subgroup), and on their sums.
TYPED_TEST(PairingTest, FastSubgroupChecksMatchTheDefinition) {
  using C = TypeParam;
  std::mt19937_64 rng(19);
  auto check = [](const auto& p) {
    EXPECT_EQ(curve::InPrimeOrderSubgroup(p), curve::InPrimeOrderSubgroupSlow(p));
    return curve::InPrimeOrderSubgroupSlow(p);
  };
  int members = 0, others = 0;
  for (int i = 0; i < 8; ++i) {
    members += check(RandomSubgroupPoint<typename C::G1>(rng));
    members += check(RandomSubgroupPoint<typename C::G2>(rng));
    others += !check(zt::RandomCurvePoint<typename C::G2>(rng));
    const auto g1 = zt::RandomCurvePoint<typename C::G1>(rng);
    (check(g1) ? members : others) += 1;
    // cofactor-cleared-looking mixtures: subgroup point + non-member
    const auto mix = curve::to_affine(curve::add_mixed(
        curve::Jacobian<typename C::G2>::from_affine(RandomSubgroupPoint<typename C::G2>(rng)),
        zt::NonSubgroupPoint<typename C::G2>(rng)));
    others += !check(mix);
  }
  EXPECT_EQ(members, (std::is_same_v<C, curve::Bn254> ? 24 : 16));
  EXPECT_EQ(others, (std::is_same_v<C, curve::Bn254> ? 16 : 24));
  EXPECT_TRUE(curve::InPrimeOrderSubgroup(curve::Affine<typename C::G2>::infinity()));
}

}  // namespace
