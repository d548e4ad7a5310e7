// FixedBaseTable: every multiplication agrees with plain double-and-add
// (curve::scalar_mul) for G1 and G2 of both curves, across window widths and
// for the scalars where signed digits carry (0, 1, r-1, 2^k - 1, ...).
#include <gtest/gtest.h>

#include <vector>

#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/devtools/batch_affine.hpp"
#include "zkfleet/devtools/fixed_base.hpp"
#include "zkfleet/devtools/prng.hpp"

namespace zkfleet::devtools {
namespace {

template <class Cfg>
class FixedBaseTest : public ::testing::Test {};

using Groups = ::testing::Types<curve::Bn254G1, curve::Bn254G2, curve::Bls12_381G1, curve::Bls12_381G2>;
TYPED_TEST_SUITE(FixedBaseTest, Groups);

// Scalars that exercise every digit path: zero, small values, r - 1, runs of
// ones (a carry through every window), one bit per window, random values.
template <class Fr>
std::vector<Fr> InterestingScalars() {
  std::vector<Fr> out = {Fr::zero(), Fr::one(), Fr::from_uint(2), Fr::one().neg(), Fr::from_uint(2).neg()};
  uint64_t limbs[4] = {~0ULL, ~0ULL, ~0ULL, (1ULL << 60) - 1};  // 2^252 - 1
  out.push_back(Fr::from_canonical(limbs));
  for (int bit = 0; bit < 252; bit += 7) {
    uint64_t one_bit[4] = {};
    one_bit[bit / 64] = 1ULL << (bit % 64);
    out.push_back(Fr::from_canonical(one_bit));
    uint64_t below[4] = {};  // 2^bit - 1
    for (int i = 0; i < bit; ++i) below[i / 64] |= 1ULL << (i % 64);
    out.push_back(Fr::from_canonical(below));
  }
  Prng prng(5);
  for (int i = 0; i < 12; ++i) out.push_back(prng.FieldElement<Fr>());
  return out;
}

TYPED_TEST(FixedBaseTest, AgreesWithDoubleAndAdd) {
  using Cfg = TypeParam;
  using Fr = typename Cfg::Scalar;
  using Jacobian = curve::Jacobian<Cfg>;
  cpu::ThreadPool pool(2);
  const auto g = Cfg::generator();
  const std::vector<Fr> scalars = InterestingScalars<Fr>();
  std::vector<Jacobian> expected;
  for (const Fr& k : scalars) {
    uint64_t limbs[4];
    k.to_canonical(limbs);
    expected.push_back(curve::scalar_mul(Jacobian::from_affine(g), limbs, 4));
  }
  for (int w : {2, 3, 5, 8, 11}) {
    const FixedBaseTable<Cfg> table(g, w, pool);
    EXPECT_GE(table.windows() * w, Fr::kModulusBits + 1);
    for (size_t i = 0; i < scalars.size(); ++i) {
      ASSERT_TRUE(curve::equal(table.Multiply(scalars[i]), expected[i])) << "window " << w << " scalar #" << i;
    }
    std::vector<curve::Affine<Cfg>> many(scalars.size());
    table.MultiplyMany(scalars, many.data(), pool);
    for (size_t i = 0; i < scalars.size(); ++i) {
      const auto want = curve::to_affine(expected[i]);
      ASSERT_TRUE(many[i].x == want.x && many[i].y == want.y) << "window " << w << " scalar #" << i;
      ASSERT_TRUE(curve::is_on_curve(many[i]));
    }
    EXPECT_TRUE(many[0].is_infinity());  // 0·G is stored as all zeros
  }
}

// Every special case of the batched affine addition, mixed with ordinary
// additions in one batch, against the complete Jacobian addition.
TYPED_TEST(FixedBaseTest, BatchAddAffineHandlesEverySpecialCase) {
  using Cfg = TypeParam;
  using Affine = curve::Affine<Cfg>;
  using Jacobian = curve::Jacobian<Cfg>;
  const Jacobian g = Jacobian::from_affine(Cfg::generator());
  const Affine p = curve::to_affine(curve::dbl(g));                 // 2G
  const Affine q = curve::to_affine(curve::add(curve::dbl(curve::dbl(g)), g));  // 5G
  const Affine inf = Affine::infinity();
  //                         generic  P+P  inf+Q  P+(-P)  Q+inf  inf+inf  generic
  std::vector<Affine> acc = {p,       p,   inf,   p,      q,     inf,     q};
  const std::vector<Affine> add = {q, p,   q,     curve::neg(p), inf, inf, p};
  std::vector<Jacobian> want;
  for (size_t i = 0; i < acc.size(); ++i) {
    want.push_back(curve::add(Jacobian::from_affine(acc[i]), Jacobian::from_affine(add[i])));
  }
  std::vector<typename Cfg::Field> scratch(acc.size());
  BatchAddAffine(acc.data(), add.data(), acc.size(), scratch.data());
  for (size_t i = 0; i < acc.size(); ++i) {
    const Affine w = curve::to_affine(want[i]);
    EXPECT_TRUE(acc[i].x == w.x && acc[i].y == w.y) << "case " << i;
  }
  EXPECT_TRUE(acc[3].is_infinity());
  EXPECT_TRUE(acc[5].is_infinity());
}

TEST(FixedBase, MultiplyManySpansSeveralBlocks) {
  using Cfg = curve::Bn254G1;
  using Fr = Cfg::Scalar;
  cpu::ThreadPool pool(2);
  const FixedBaseTable<Cfg> table(Cfg::generator(), 6, pool);
  Prng prng(9);
  std::vector<Fr> scalars(2500);
  for (size_t i = 0; i < scalars.size(); ++i) scalars[i] = i % 5 == 0 ? Fr::zero() : prng.FieldElement<Fr>();
  std::vector<curve::Affine<Cfg>> out(scalars.size());
  table.MultiplyMany(scalars, out.data(), pool);
  for (size_t i = 0; i < scalars.size(); i += 97) {
    const auto want = curve::to_affine(table.Multiply(scalars[i]));
    EXPECT_TRUE(out[i].x == want.x && out[i].y == want.y) << i;
    EXPECT_EQ(out[i].is_infinity(), i % 5 == 0) << i;
  }
}

TEST(FixedBase, WindowGrowsWithTheNumberOfScalars) {
  EXPECT_LE(ChooseFixedBaseWindow(1, 254), 4);
  EXPECT_LE(ChooseFixedBaseWindow(1000, 254), 10);
  EXPECT_EQ(ChooseFixedBaseWindow(size_t{1} << 22, 254), 16);  // capped
  int last = 0;
  for (size_t n = 1; n < (size_t{1} << 24); n *= 4) {
    const int w = ChooseFixedBaseWindow(n, 255);
    EXPECT_GE(w, last);
    last = w;
  }
}

}  // namespace
}  // namespace zkfleet::devtools
