// The CPU Pippenger MSM against double-and-add, for G1 and G2 of both
// curves, on random scalars mixed with the special cases the bucket method
// treats apart: 0, 1, r-1, repeated bases and the point at infinity.
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "zkfleet/msm/cpu_msm.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"

namespace zkfleet::cpu {
namespace {

template <class Cfg>
struct MsmCase {
  std::vector<curve::Affine<Cfg>> bases;
  std::vector<uint8_t> scalars;  // 32 bytes each, canonical LE
};

template <class Cfg>
MsmCase<Cfg> MakeCase(size_t n, uint64_t seed) {
  using Fr = typename Cfg::Scalar;
  std::mt19937_64 rng(seed);
  MsmCase<Cfg> c;
  c.scalars.resize(n * 32);
  const auto g = curve::Jacobian<Cfg>::from_affine(Cfg::generator());
  for (size_t i = 0; i < n; ++i) {
    // Bases: small random multiples of the generator; every 7th repeats the
    // previous base and every 11th is the point at infinity.
    if (i % 11 == 5) {
      c.bases.push_back(curve::Affine<Cfg>::infinity());
    } else if (i % 7 == 3 && i > 0) {
      c.bases.push_back(c.bases.back());
    } else {
      uint64_t k[1] = {rng() | 1};
      c.bases.push_back(curve::to_affine(curve::scalar_mul(g, k, 1)));
    }
    uint64_t s[4];
    switch (i % 6) {
      case 0: s[0] = s[1] = s[2] = s[3] = 0; break;   // zero
      case 1: s[0] = 1; s[1] = s[2] = s[3] = 0; break;  // one
      case 2:                                           // r - 1
        Fr::modulus_limbs(s);
        s[0] -= 1;
        break;
      default: {  // random field element
        uint64_t raw[4] = {rng(), rng(), rng(), rng() >> 3};
        Fr::from_mont(raw).to_canonical(s);  // reduces any 253-bit value into range
      }
    }
    std::memcpy(&c.scalars[i * 32], s, 32);
  }
  return c;
}

template <class Cfg>
void CheckAgainstNaive(size_t n, int threads) {
  ThreadPool pool(threads);
  auto c = MakeCase<Cfg>(n, n * 31 + threads);
  auto fast = Msm<Cfg>(c.bases.data(), c.scalars.data(), 32, n, pool);
  auto slow = MsmNaive<Cfg>(c.bases.data(), c.scalars.data(), 32, n);
  EXPECT_TRUE(curve::equal(fast, slow)) << "n=" << n << " threads=" << threads;
}

TEST(CpuMsm, Bn254G1MatchesNaive) {
  for (size_t n : {0, 1, 2, 3, 6, 17, 100, 513}) CheckAgainstNaive<curve::Bn254G1>(n, 2);
  CheckAgainstNaive<curve::Bn254G1>(300, 1);
  CheckAgainstNaive<curve::Bn254G1>(300, 5);
}

TEST(CpuMsm, Bn254G2MatchesNaive) {
  for (size_t n : {1, 2, 6, 40, 200}) CheckAgainstNaive<curve::Bn254G2>(n, 2);
}

TEST(CpuMsm, Bls12_381G1MatchesNaive) {
  for (size_t n : {1, 2, 6, 40, 300}) CheckAgainstNaive<curve::Bls12_381G1>(n, 3);
}

TEST(CpuMsm, Bls12_381G2MatchesNaive) {
  for (size_t n : {1, 6, 60}) CheckAgainstNaive<curve::Bls12_381G2>(n, 2);
}

// Sizes where the planner picks affine buckets with batched inversion
// (collisions, doublings and P + (-P) inside a bucket are exercised by the
// repeated bases and the r-1 scalars).
TEST(CpuMsm, AffineBucketPathMatchesNaive) {
  ASSERT_TRUE(msm_detail::ChooseWindow(4000).affine);
  ASSERT_TRUE(msm_detail::ChooseWindow(1500, 130.0).affine);  // G2: cheaper relative inversion
  CheckAgainstNaive<curve::Bn254G1>(4000, 2);
  CheckAgainstNaive<curve::Bn254G2>(1500, 2);
  CheckAgainstNaive<curve::Bls12_381G2>(1500, 2);
}

TEST(CpuMsm, AllZeroAndAllOneScalars) {
  ThreadPool pool(2);
  auto c = MakeCase<curve::Bn254G1>(64, 7);
  std::vector<uint8_t> zeros(64 * 32, 0), ones(64 * 32, 0);
  for (size_t i = 0; i < 64; ++i) ones[i * 32] = 1;
  EXPECT_TRUE(Msm<curve::Bn254G1>(c.bases.data(), zeros.data(), 32, 64, pool).is_infinity());
  auto sum = curve::Jacobian<curve::Bn254G1>::infinity();
  for (auto& b : c.bases) sum = curve::add_mixed(sum, b);
  EXPECT_TRUE(curve::equal(Msm<curve::Bn254G1>(c.bases.data(), ones.data(), 32, 64, pool), sum));
}

// The sum of one-valued scalars' points (OnesSum: affine pairs, batched
// inversions, blocks of 4096): across blocks, with pairs of equal points
// (doubling), of a point and its negation (they cancel) and an odd count.
template <class Cfg>
void CheckOnesSum(size_t n, double inversion_cost) {
  auto c = MakeCase<Cfg>(n, 99 + n);
  std::vector<curve::Affine<Cfg>> points;
  for (const auto& b : c.bases) {
    if (!b.is_infinity()) points.push_back(b);
  }
  for (size_t i = 0; i + 1 < points.size(); i += 10) points[i + 1] = points[i];  // P + P
  for (size_t i = 4; i + 1 < points.size(); i += 10) {                          // P + (-P)
    points[i + 1] = points[i];
    points[i + 1].y = points[i + 1].y.neg();
  }
  msm_detail::OnesSum<Cfg> ones(inversion_cost);
  auto expected = curve::Jacobian<Cfg>::infinity();
  for (const auto& p : points) {
    ones.Add(p);
    expected = curve::add_mixed(expected, p);
  }
  EXPECT_TRUE(curve::equal(curve::to_jacobian(ones.Finish()), expected)) << "n=" << n;
}

TEST(CpuMsm, OnesAreSummedByAffinePairsAcrossBlocks) {
  for (size_t n : {1, 2, 3, 300, 4097, 9001}) CheckOnesSum<curve::Bn254G1>(n, 380.0);
  CheckOnesSum<curve::Bn254G2>(4500, 130.0);
  CheckOnesSum<curve::Bls12_381G1>(5000, 380.0);
  // Through the MSM: all-one scalars over repeated bases and infinities.
  ThreadPool pool(2);
  auto c = MakeCase<curve::Bn254G1>(9000, 5);
  std::vector<uint8_t> ones(9000 * 32, 0);
  for (size_t i = 0; i < 9000; ++i) ones[i * 32] = 1;
  auto sum = curve::Jacobian<curve::Bn254G1>::infinity();
  for (auto& b : c.bases) sum = curve::add_mixed(sum, b);
  EXPECT_TRUE(curve::equal(Msm<curve::Bn254G1>(c.bases.data(), ones.data(), 32, 9000, pool), sum));
}

// Window-digit recoding must reconstruct the scalar for every width.
TEST(CpuMsm, SignedDigitsReconstructScalar) {
  std::mt19937_64 rng(3);
  for (int c = 2; c <= 16; ++c) {
    const int windows = (256 + c - 1) / c;
    for (int trial = 0; trial < 50; ++trial) {
      uint64_t s[4] = {rng(), rng(), rng(), rng() >> 1};  // < 2^255
      std::vector<int32_t> d(windows);
      msm_detail::SignedDigits(s, c, windows, d.data(), 1);
      // Reconstruct with 128-bit-chunk arithmetic: sum d_w 2^(wc) as limbs.
      __int128 acc[5] = {0, 0, 0, 0, 0};
      for (int w = 0; w < windows; ++w) {
        EXPECT_LE(d[w], 1 << (c - 1));
        EXPECT_GT(d[w], -(1 << (c - 1)));
        int bit = w * c;
        __int128 v = static_cast<__int128>(d[w]) << (bit % 64);
        acc[bit / 64] += v;
      }
      uint64_t out[4];
      __int128 carry = 0;
      for (int i = 0; i < 4; ++i) {
        __int128 t = acc[i] + carry;
        out[i] = static_cast<uint64_t>(t);
        carry = (t - static_cast<__int128>(out[i])) >> 64;  // arithmetic, exact
      }
      EXPECT_EQ(carry + acc[4], 0) << "c=" << c;
      for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], s[i]) << "c=" << c << " limb " << i;
    }
  }
}

}  // namespace
}  // namespace zkfleet::cpu
