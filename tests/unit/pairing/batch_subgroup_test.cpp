// The batched BN254 G2 subgroup test (groth16/batch_subgroup.hpp): the facts
// its soundness rests on (the twist's group order r·h with h = 2q - r, and
// h's smallest prime factor 10069), and its answers on sets of G2 points with
// one bad point anywhere -- random curve points and points whose only defect
// is a component of small order (10069, 5864401, 1875725156269), the hardest
// case for a random linear combination.
#include <cmath>
#include <cstring>
#include <string>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "unit/pairing/curve_test_points.hpp"
#include "zkfleet/common/error.hpp"
#include "unit/pairing/small_order_points.hpp"
#include "zkfleet/groth16/batch_subgroup.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet {
namespace {

using G2 = curve::Bn254G2;
using Affine = curve::Affine<G2>;
namespace zt = testing;

std::vector<uint8_t> AsBytes(const std::vector<Affine>& points) {
  std::vector<uint8_t> bytes(points.size() * sizeof(Affine) + 1);
  // One byte in: the zkey's points need not be aligned.
  if (!points.empty()) std::memcpy(bytes.data() + 1, points.data(), points.size() * sizeof(Affine));
  return bytes;
}

// n points of G2, cheaply: running sums of two random members (all distinct).
std::vector<Affine> SubgroupPoints(size_t n, std::mt19937_64& rng) {
  const Affine a = zt::RandomSubgroupPoint<G2>(rng), b = zt::RandomSubgroupPoint<G2>(rng);
  std::vector<curve::Jacobian<G2>> sums{curve::Jacobian<G2>::from_affine(a)};
  for (size_t i = 1; i < n; ++i) sums.push_back(curve::add_mixed(sums.back(), i % 2 ? b : a));
  std::vector<Affine> points(n);
  curve::batch_to_affine(sums.data(), points.data(), n);
  return points;
}

bool AllIn(const std::vector<Affine>& points, cpu::ThreadPool& pool, groth16::BatchSubgroupOptions options = {}) {
  const std::vector<uint8_t> bytes = AsBytes(points);
  return groth16::Bn254G2AllInSubgroup(bytes.data() + 1, points.size(), pool, options);
}

// h = 2q - r has no prime factor below 10069 and 10069 divides it; every point
// of the twist is killed by r·h (its group order), and h itself is the order
// of the non-G2 part: [h]P is in G2 for any P.
TEST(BatchSubgroup, CofactorFactsTheBoundRestsOn) {
  const zt::Limbs h = zt::Bn254G2Cofactor();
  for (uint64_t d = 2; d < 10069; ++d) {
    bool prime = true;
    for (uint64_t k = 2; k * k <= d && prime; ++k) prime = d % k != 0;
    if (prime) {
      EXPECT_NE(zt::ModSmall(h, d), 0u) << "h has the factor " << d;
    }
  }
  EXPECT_EQ(zt::ModSmall(h, 10069), 0u);
  EXPECT_EQ(zt::ModSmall(h, 5864401), 0u);
  EXPECT_EQ(zt::ModSmall(h, 1875725156269), 0u);
  std::mt19937_64 rng(41);
  for (int i = 0; i < 3; ++i) {
    const Affine p = zt::RandomCurvePoint<G2>(rng);
    const auto hp = curve::scalar_mul(curve::Jacobian<G2>::from_affine(p), h.data(), 4);
    EXPECT_FALSE(hp.is_infinity());
    EXPECT_TRUE(curve::InPrimeOrderSubgroupSlow(curve::to_affine(hp)));
  }
}

TEST(BatchSubgroup, GoodSetsPass) {
  std::mt19937_64 rng(42);
  for (int threads : {1, 3}) {
    cpu::ThreadPool pool(threads);
    for (size_t n : {size_t{1}, size_t{300}, size_t{4500}}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, " + std::to_string(n) + " points");
      std::vector<Affine> points = SubgroupPoints(n, rng);
      for (size_t i = 3; i < n; i += 7) points[i] = Affine::infinity();
      // A point and its negation, and one point many times: the additions'
      // doubling and cancelling cases.
      if (n > 2) {
        points[1] = points[0];
        points[2] = curve::neg(points[0]);
      }
      EXPECT_TRUE(AllIn(points, pool));
    }
  }
  cpu::ThreadPool pool(2);
  EXPECT_TRUE(AllIn({}, pool));
  EXPECT_TRUE(AllIn(std::vector<Affine>(600, Affine::infinity()), pool));
  std::vector<Affine> same(3000, zt::RandomSubgroupPoint<G2>(rng));
  EXPECT_TRUE(AllIn(same, pool));
}

// One bad point among good ones, first, last, in the middle of a later chunk;
// bad by a random non-G2 part or by a small-order component only.
TEST(BatchSubgroup, OneBadPointAnywhereFails) {
  std::mt19937_64 rng(43);
  cpu::ThreadPool pool(2);
  const std::vector<Affine> good = SubgroupPoints(5000, rng);
  ASSERT_TRUE(AllIn(good, pool));
  std::vector<Affine> bad_points = {zt::NonSubgroupPoint<G2>(rng)};
  for (uint64_t order : {uint64_t{10069}, uint64_t{5864401}, uint64_t{1875725156269}}) {
    bad_points.push_back(zt::WithSmallOrderPart(zt::RandomSubgroupPoint<G2>(rng), order, rng));
  }
  for (const Affine& bad : bad_points) {
    ASSERT_TRUE(curve::is_on_curve(bad));
    ASSERT_FALSE(curve::InPrimeOrderSubgroupSlow(bad));
    for (size_t at : {size_t{0}, size_t{2500}, size_t{4999}}) {
      SCOPED_TRACE("bad point at " + std::to_string(at));
      std::vector<Affine> points = good;
      points[at] = bad;
      EXPECT_FALSE(AllIn(points, pool));
    }
    EXPECT_FALSE(AllIn({bad}, pool));
  }
  // Two points whose small-order parts cancel in the plain sum (t and -t) are
  // still caught: each round weighs them with independent coefficients.
  const Affine g = zt::RandomSubgroupPoint<G2>(rng);
  const Affine with_t = zt::WithSmallOrderPart(g, 10069, rng);
  const Affine t = curve::to_affine(curve::add_mixed(curve::Jacobian<G2>::from_affine(with_t), curve::neg(g)));
  std::vector<Affine> points = good;
  points[10] = with_t;
  points[20] = curve::to_affine(curve::add_mixed(curve::Jacobian<G2>::from_affine(good[20]), curve::neg(t)));
  EXPECT_FALSE(AllIn(points, pool));
}

// Each plan the chooser takes for some size gives the same answers: one
// thread summing 33000 points (12 bits, 11 rounds), 1500 (8 bits, 17 rounds)
// and 3 (6 bits, 22 rounds).
TEST(BatchSubgroup, EveryPlanPassesAndFailsAlike) {
  std::mt19937_64 rng(45);
  cpu::ThreadPool pool(1);
  const std::pair<size_t, int> sizes_and_bits[] = {{33000, 12}, {1500, 8}, {3, 6}};
  for (const auto& [n, bits] : sizes_and_bits) {
    SCOPED_TRACE(std::to_string(n) + " points");
    ASSERT_EQ(groth16::BatchSubgroupPlanFor(n, groth16::kBn254G2BatchSecurityBits).bits, bits);
    std::vector<Affine> points = SubgroupPoints(n, rng);
    points[n / 2] = Affine::infinity();
    EXPECT_TRUE(AllIn(points, pool));
    points[n - 1] = zt::WithSmallOrderPart(points[n - 1], 10069, rng);
    EXPECT_FALSE(AllIn(points, pool));
  }
}

// The chooser: every plan reaches the security asked for (rounds times the
// bits one round is worth, by the 10069 bound), takes the cheapest digits by
// its cost model, and moves to more bits as slices grow.
TEST(BatchSubgroup, PlansReachTheirSecurityAtTheLeastCost) {
  for (uint64_t n : {uint64_t{3}, uint64_t{1500}, uint64_t{15600}, uint64_t{33000}, uint64_t{1} << 22}) {
    for (int security : {1, 64, groth16::kBn254G2BatchSecurityBits}) {
      SCOPED_TRACE(std::to_string(n) + " points, " + std::to_string(security) + " bits");
      const groth16::BatchSubgroupPlan plan = groth16::BatchSubgroupPlanFor(n, security);
      EXPECT_GE(plan.rounds * plan.round_bits(), security);
      EXPECT_LT((plan.rounds - 1) * plan.round_bits(), security) << "a round more than needed";
      for (int bits = 6; bits <= 13; ++bits) {
        groth16::BatchSubgroupPlan other{bits, 0};
        other.rounds = static_cast<int>(std::ceil(security / other.round_bits()));
        EXPECT_LE(plan.cost(n), other.cost(n)) << bits << " bits would be cheaper";
      }
    }
  }
  // A digit of b <= 13 bits is worth b bits a round (2^13 < 10069).
  EXPECT_DOUBLE_EQ((groth16::BatchSubgroupPlan{10, 0}.round_bits()), 10.0);
  EXPECT_DOUBLE_EQ((groth16::BatchSubgroupPlan{13, 0}.round_bits()), 13.0);
  // A key's B2 of 31k points on the 2-core box: 15.6k a thread.
  const groth16::BatchSubgroupPlan key = groth16::BatchSubgroupPlanFor(15600, groth16::kBn254G2BatchSecurityBits);
  EXPECT_EQ(key.bits, 10);
  EXPECT_EQ(key.rounds, 13);
  EXPECT_GT(groth16::BatchSubgroupPlanFor(1u << 22, 130).bits, groth16::BatchSubgroupPlanFor(1500, 130).bits);
  EXPECT_THROW(groth16::BatchSubgroupPlanFor(100, 0), Error);
}

// With a test seed the coefficients, and so the answers, are reproducible
// whatever the threads while the points are one chunk (the plan, and so the
// coefficients, depends on the points a thread sums); the security is a
// parameter.
TEST(BatchSubgroup, TestSeedIsReproducible) {
  std::mt19937_64 rng(44);
  std::vector<Affine> points = SubgroupPoints(700, rng);
  points[123] = zt::WithSmallOrderPart(points[123], 10069, rng);
  uint8_t seed[32] = {7};
  groth16::BatchSubgroupOptions options;
  options.test_seed = seed;
  cpu::ThreadPool one(1), three(3);
  EXPECT_FALSE(AllIn(points, one, options));
  EXPECT_FALSE(AllIn(points, three, options));
  options.security_bits = 1;  // one round
  EXPECT_EQ(AllIn(points, one, options), AllIn(points, three, options));
  options.security_bits = 0;
  EXPECT_THROW(AllIn(points, one, options), Error);
  options.security_bits = 257;
  EXPECT_THROW(AllIn(points, one, options), Error);
  EXPECT_THROW(AllIn({}, one, options), Error) << "no points: still a bad argument";
}

}  // namespace
}  // namespace zkfleet
