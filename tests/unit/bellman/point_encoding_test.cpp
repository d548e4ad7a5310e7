// The zcash BLS12-381 point encodings (zkfleet/bellman/point_encoding.hpp)
// and the square roots under them (zkfleet/ff/sqrt.hpp).
#include "zkfleet/bellman/point_encoding.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>

#include "bellman_test_util.hpp"
#include "zkfleet/ff/sqrt.hpp"

namespace zkfleet::bellman {
namespace {

using namespace testing;


// q as 48 big-endian bytes.
std::array<uint8_t, 48> QBytes() {
  std::array<uint8_t, 48> out{};
  for (int i = 0; i < 6; ++i) {
    for (int b = 0; b < 8; ++b) out[48 - 8 * (i + 1) + b] = static_cast<uint8_t>(Fq::modulus_limb(i) >> (56 - 8 * b));
  }
  return out;
}

TEST(BellmanSqrt, FqRootsOfSquaresAndNoRootOfMinusOne) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 20; ++i) {
    const Fq a = Fq::from_uint(rng()) * Fq::from_uint(rng());
    Fq r;
    ASSERT_TRUE(ff::Sqrt(a.sqr(), &r));
    EXPECT_TRUE(r == a || r == a.neg());
  }
  Fq r;
  EXPECT_FALSE(ff::Sqrt(Fq::one().neg(), &r));  // q ≡ 3 (mod 4)
  ASSERT_TRUE(ff::Sqrt(Fq::zero(), &r));
  EXPECT_TRUE(r.is_zero());
}

TEST(BellmanSqrt, Fq2RootsOfSquaresAndNoRootOfOnePlusU) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 20; ++i) {
    // Include elements of Fq (c1 = 0) and of Fq·u (c0 = 0): the special cases.
    const Fq c0 = i % 3 == 1 ? Fq::zero() : Fq::from_uint(rng()) * Fq::from_uint(rng());
    const Fq c1 = i % 3 == 2 ? Fq::zero() : Fq::from_uint(rng()) * Fq::from_uint(rng());
    const Fq2 a{c0, c1};
    Fq2 r;
    ASSERT_TRUE(ff::Sqrt(a.sqr(), &r)) << i;
    EXPECT_TRUE(r == a || r == a.neg()) << i;
  }
  // The norm of 1 + u is 2, a non-square mod q (q ≡ 3 mod 8).
  Fq2 r;
  EXPECT_FALSE(ff::Sqrt(Fq2{Fq::one(), Fq::one()}, &r));
  // Every element of Fq is a square in Fq2, -1 included: sqrt(-1) = ±u.
  ASSERT_TRUE(ff::Sqrt(Fq2{Fq::one().neg(), Fq::zero()}, &r));
  EXPECT_TRUE(r.c0.is_zero());
}

TEST(BellmanSqrt, LexicographicOrder) {
  const Fq one = Fq::one();
  EXPECT_FALSE(ff::LexicographicallyLargest(one));
  EXPECT_TRUE(ff::LexicographicallyLargest(one.neg()));
  EXPECT_FALSE(ff::LexicographicallyLargest(Fq::zero()));
  // (q-1)/2 is not larger than its negation (q+1)/2; (q+1)/2 is.
  const Fq half = Fq::from_uint(2).inverse();  // (q+1)/2
  EXPECT_TRUE(ff::LexicographicallyLargest(half));
  EXPECT_FALSE(ff::LexicographicallyLargest(half.neg()));
  // Fq2: c1 decides; c0 only when c1 is zero.
  EXPECT_TRUE(ff::LexicographicallyLargest(Fq2{one, one.neg()}));
  EXPECT_FALSE(ff::LexicographicallyLargest(Fq2{one.neg(), one}));
  EXPECT_TRUE(ff::LexicographicallyLargest(Fq2{one.neg(), Fq::zero()}));
  EXPECT_FALSE(ff::LexicographicallyLargest(Fq2{one, Fq::zero()}));
}

// The generators' compressed encodings, as in the zcash spec and the
// bls12_381 crate's tests: y of both is the smaller root (no sort bit).
TEST(BellmanPointEncoding, GeneratorsEncodeAsInTheZcashSpec) {
  const auto g1 = Hex(
      "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb");
  const auto g2 = Hex(
      "93e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e"
      "024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8");
  const auto g1_y = Hex(
      "08b3f481e3aaa0f1a09e30ed741d8ae4fcf5e095d5d00af600db18cb2c04b3edd03cc744a2888ae40caa232946c5e7e1");
  uint8_t buf[kG2UncompressedBytes];
  EncodeG1Compressed(curve::Bls12_381G1::generator(), buf);
  EXPECT_EQ(std::vector<uint8_t>(buf, buf + 48), g1);
  EncodeG1Uncompressed(curve::Bls12_381G1::generator(), buf);
  std::vector<uint8_t> x(g1);
  x[0] &= 0x1f;
  EXPECT_EQ(std::vector<uint8_t>(buf, buf + 48), x);
  EXPECT_EQ(std::vector<uint8_t>(buf + 48, buf + 96), g1_y);
  EncodeG2Compressed(curve::Bls12_381G2::generator(), buf);
  EXPECT_EQ(std::vector<uint8_t>(buf, buf + 96), g2);
  // The negation has the other root: the sort bit.
  EncodeG1Compressed(curve::neg(curve::Bls12_381G1::generator()), buf);
  EXPECT_EQ(buf[0], 0xb7);
  EncodeG2Compressed(curve::neg(curve::Bls12_381G2::generator()), buf);
  EXPECT_EQ(buf[0], 0xb3);
  // And both decode back.
  G1Affine p;
  ASSERT_EQ(DecodeG1Compressed(g1.data(), &p), PointError::kOk);
  EXPECT_TRUE(SamePoint(p, curve::Bls12_381G1::generator()));
  G2Affine q;
  ASSERT_EQ(DecodeG2Compressed(g2.data(), &q), PointError::kOk);
  EXPECT_TRUE(SamePoint(q, curve::Bls12_381G2::generator()));
}

TEST(BellmanPointEncoding, G1RoundTripsBothForms) {
  std::mt19937_64 rng(3);
  std::vector<G1Affine> points = {G1Affine::infinity(), curve::Bls12_381G1::generator()};
  for (int i = 0; i < 12; ++i) {
    points.push_back(RandomG1(rng));
    points.push_back(curve::neg(points.back()));  // the other sort bit
  }
  int sorted = 0;
  for (const G1Affine& p : points) {
    uint8_t u[kG1UncompressedBytes], c[kG1CompressedBytes];
    EncodeG1Uncompressed(p, u);
    EncodeG1Compressed(p, c);
    sorted += (c[0] & kSortFlag) != 0;
    G1Affine back;
    ASSERT_EQ(DecodeG1Uncompressed(u, &back), PointError::kOk);
    EXPECT_TRUE(SamePoint(back, p));
    ASSERT_EQ(DecodeG1Compressed(c, &back), PointError::kOk);
    EXPECT_TRUE(SamePoint(back, p));
  }
  EXPECT_EQ(sorted, 12);  // exactly one of p, -p is the larger root
}

TEST(BellmanPointEncoding, G2RoundTripsBothForms) {
  std::mt19937_64 rng(4);
  std::vector<G2Affine> points = {G2Affine::infinity(), curve::Bls12_381G2::generator()};
  for (int i = 0; i < 8; ++i) {
    points.push_back(RandomG2(rng));
    points.push_back(curve::neg(points.back()));
  }
  int sorted = 0;
  for (const G2Affine& p : points) {
    uint8_t u[kG2UncompressedBytes], c[kG2CompressedBytes];
    EncodeG2Uncompressed(p, u);
    EncodeG2Compressed(p, c);
    sorted += (c[0] & kSortFlag) != 0;
    G2Affine back;
    ASSERT_EQ(DecodeG2Uncompressed(u, &back), PointError::kOk);
    EXPECT_TRUE(SamePoint(back, p));
    ASSERT_EQ(DecodeG2Compressed(c, &back), PointError::kOk);
    EXPECT_TRUE(SamePoint(back, p));
  }
  EXPECT_EQ(sorted, 8);
}

TEST(BellmanPointEncoding, InfinityEncodings) {
  uint8_t u[kG2UncompressedBytes], c[kG2CompressedBytes];
  EncodeG1Uncompressed(G1Affine::infinity(), u);
  EXPECT_EQ(u[0], 0x40);
  for (size_t i = 1; i < kG1UncompressedBytes; ++i) ASSERT_EQ(u[i], 0) << i;
  EncodeG1Compressed(G1Affine::infinity(), c);
  EXPECT_EQ(c[0], 0xc0);
  for (size_t i = 1; i < kG1CompressedBytes; ++i) ASSERT_EQ(c[i], 0) << i;
  EncodeG2Uncompressed(G2Affine::infinity(), u);
  EXPECT_EQ(u[0], 0x40);
  for (size_t i = 1; i < kG2UncompressedBytes; ++i) ASSERT_EQ(u[i], 0) << i;
  EncodeG2Compressed(G2Affine::infinity(), c);
  EXPECT_EQ(c[0], 0xc0);
  for (size_t i = 1; i < kG2CompressedBytes; ++i) ASSERT_EQ(c[i], 0) << i;
}

TEST(BellmanPointEncoding, RejectsBadFlagCombinations) {
  const G1Affine g = curve::Bls12_381G1::generator();
  uint8_t u[kG1UncompressedBytes], c[kG1CompressedBytes];
  G1Affine out;
  EncodeG1Uncompressed(g, u);
  u[0] |= kCompressionFlag;  // an uncompressed point saying "compressed"
  EXPECT_EQ(DecodeG1Uncompressed(u, &out), PointError::kBadFlags);
  EncodeG1Uncompressed(g, u);
  u[0] |= kSortFlag;  // the sort bit has no meaning uncompressed
  EXPECT_EQ(DecodeG1Uncompressed(u, &out), PointError::kBadFlags);
  EncodeG1Compressed(g, c);
  c[0] &= static_cast<uint8_t>(~kCompressionFlag);
  EXPECT_EQ(DecodeG1Compressed(c, &out), PointError::kBadFlags);

  // Infinity with anything else set.
  EncodeG1Uncompressed(G1Affine::infinity(), u);
  u[95] = 1;
  EXPECT_EQ(DecodeG1Uncompressed(u, &out), PointError::kBadInfinity);
  EncodeG1Uncompressed(g, u);
  u[0] |= kInfinityFlag;  // infinity bit on a real point
  EXPECT_EQ(DecodeG1Uncompressed(u, &out), PointError::kBadInfinity);
  EncodeG1Compressed(G1Affine::infinity(), c);
  c[0] |= kSortFlag;
  EXPECT_EQ(DecodeG1Compressed(c, &out), PointError::kBadInfinity);
  EncodeG1Compressed(G1Affine::infinity(), c);
  c[0] |= 0x01;  // a bit of x below the flags
  EXPECT_EQ(DecodeG1Compressed(c, &out), PointError::kBadInfinity);

  const G2Affine g2 = curve::Bls12_381G2::generator();
  uint8_t u2[kG2UncompressedBytes], c2[kG2CompressedBytes];
  G2Affine out2;
  EncodeG2Uncompressed(g2, u2);
  u2[0] |= kCompressionFlag;
  EXPECT_EQ(DecodeG2Uncompressed(u2, &out2), PointError::kBadFlags);
  EncodeG2Compressed(g2, c2);
  c2[0] &= static_cast<uint8_t>(~kCompressionFlag);
  EXPECT_EQ(DecodeG2Compressed(c2, &out2), PointError::kBadFlags);
  EncodeG2Compressed(G2Affine::infinity(), c2);
  c2[60] = 1;
  EXPECT_EQ(DecodeG2Compressed(c2, &out2), PointError::kBadInfinity);
}

TEST(BellmanPointEncoding, RejectsCoordinatesNotBelowQ) {
  const auto q = QBytes();
  uint8_t u[kG1UncompressedBytes], c[kG1CompressedBytes];
  G1Affine out;
  EncodeG1Uncompressed(curve::Bls12_381G1::generator(), u);
  std::copy(q.begin(), q.end(), u + 48);  // y = q
  EXPECT_EQ(DecodeG1Uncompressed(u, &out), PointError::kNotCanonical);
  std::copy(q.begin(), q.end(), c);  // x = q
  c[0] |= kCompressionFlag;
  EXPECT_EQ(DecodeG1Compressed(c, &out), PointError::kNotCanonical);

  // G2: x.c0 (the second coordinate block) = q.
  uint8_t u2[kG2UncompressedBytes];
  G2Affine out2;
  EncodeG2Uncompressed(curve::Bls12_381G2::generator(), u2);
  std::copy(q.begin(), q.end(), u2 + 48);
  EXPECT_EQ(DecodeG2Uncompressed(u2, &out2), PointError::kNotCanonical);
}

TEST(BellmanPointEncoding, RejectsPointsOffTheCurve) {
  const G1Affine g = curve::Bls12_381G1::generator();
  const G1Affine off{g.x, g.y + Fq::one()};
  uint8_t u[kG1UncompressedBytes];
  G1Affine out;
  EncodeG1Uncompressed(off, u);
  EXPECT_EQ(DecodeG1Uncompressed(u, &out), PointError::kNotOnCurve);
  EXPECT_EQ(DecodeG1Uncompressed(u, &out, {.curve_and_subgroup = false}), PointError::kOk);  // the check is the one

  // Compressed: an x whose x^3 + 4 has no square root.
  uint8_t c[kG1CompressedBytes];
  for (uint64_t k = 1;; ++k) {
    const Fq x = Fq::from_uint(k);
    Fq y;
    if (ff::Sqrt(x.sqr() * x + curve::Bls12_381G1::b(), &y)) continue;
    EncodeG1Compressed(G1Affine{x, Fq::one()}, c);
    break;
  }
  EXPECT_EQ(DecodeG1Compressed(c, &out), PointError::kNotOnCurve);

  const G2Affine g2 = curve::Bls12_381G2::generator();
  uint8_t u2[kG2UncompressedBytes];
  G2Affine out2;
  EncodeG2Uncompressed(G2Affine{g2.x, g2.y + Fq2::one()}, u2);
  EXPECT_EQ(DecodeG2Uncompressed(u2, &out2), PointError::kNotOnCurve);

  // (0, 0) without the infinity bit is no point, though in memory it is
  // the engine's infinity: refused even unchecked, unless asked for.
  uint8_t zero[kG1UncompressedBytes] = {};
  EXPECT_EQ(DecodeG1Uncompressed(zero, &out), PointError::kNotOnCurve);
  EXPECT_EQ(DecodeG1Uncompressed(zero, &out, {.curve_and_subgroup = false}), PointError::kNotOnCurve);
  ASSERT_EQ(DecodeG1Uncompressed(zero, &out, {.zero_is_infinity = true}), PointError::kOk);
  EXPECT_TRUE(out.is_infinity());
}

TEST(BellmanPointEncoding, RejectsPointsOutsideTheSubgroup) {
  const G1Affine p = G1OutsideSubgroup();
  ASSERT_TRUE(curve::is_on_curve(p));
  uint8_t u[kG1UncompressedBytes], c[kG1CompressedBytes];
  G1Affine out;
  EncodeG1Uncompressed(p, u);
  EncodeG1Compressed(p, c);
  EXPECT_EQ(DecodeG1Uncompressed(u, &out), PointError::kNotInSubgroup);
  EXPECT_EQ(DecodeG1Compressed(c, &out), PointError::kNotInSubgroup);
  ASSERT_EQ(DecodeG1Compressed(c, &out, {.curve_and_subgroup = false}), PointError::kOk);
  EXPECT_TRUE(SamePoint(out, p));

  const G2Affine q = G2OutsideSubgroup();
  ASSERT_TRUE(curve::is_on_curve(q));
  uint8_t u2[kG2UncompressedBytes], c2[kG2CompressedBytes];
  G2Affine out2;
  EncodeG2Uncompressed(q, u2);
  EncodeG2Compressed(q, c2);
  EXPECT_EQ(DecodeG2Uncompressed(u2, &out2), PointError::kNotInSubgroup);
  EXPECT_EQ(DecodeG2Compressed(c2, &out2), PointError::kNotInSubgroup);
  ASSERT_EQ(DecodeG2Compressed(c2, &out2, {.curve_and_subgroup = false}), PointError::kOk);
  EXPECT_TRUE(SamePoint(out2, q));
}

}  // namespace
}  // namespace zkfleet::bellman
