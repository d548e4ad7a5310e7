// Key validation at load (groth16/key_validation.hpp): every point of a .zkey
// -- header points and sections IC, A, B1, B2, C, H -- is refused when a
// coordinate is >= q, when it is off the curve, or when it is outside the
// prime-order subgroup (G2 on both curves, G1 on BLS12-381), with an error
// naming the section and the index. The bundled fixtures pass.
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testutil/test_support.hpp"
#include "unit/pairing/curve_test_points.hpp"
#include "unit/pairing/small_order_points.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/groth16/key_validation.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet {
namespace {

struct KeyBytes {
  std::string bytes;
  io::ZkeyFile View() const {
    return io::ZkeyFile::Parse({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "test.zkey");
  }
  // Offset of `p` (a pointer into View()'s bytes) in `bytes`.
  size_t OffsetOf(const io::ZkeyFile& view, const uint8_t* p) const {
    (void)view;
    return static_cast<size_t>(p - reinterpret_cast<const uint8_t*>(bytes.data()));
  }
};

KeyBytes Load(const char* fixture) { return {testing::ReadFile(testing::Fixture(fixture, "circuit_final.zkey"))}; }

// The error ValidateZkeyPoints raises for `key`, or "" when it accepts it.
std::string ValidationError(const KeyBytes& key) {
  try {
    groth16::ValidateZkeyPoints(key.View(), 2);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadFormat);
    return e.what();
  }
  return "";
}

template <class P>
void Put(KeyBytes& key, size_t offset, const P& point) {
  std::memcpy(key.bytes.data() + offset, static_cast<const void*>(&point), sizeof(P));
}

TEST(KeyValidation, BundledFixturesPass) {
  for (const char* fx : {"bn128_k12", "bls12381_k12"}) {
    SCOPED_TRACE(fx);
    EXPECT_EQ(ValidationError(Load(fx)), "");
  }
}

// One coordinate bit flipped in point `index` of each section, one section at
// a time: named section, named index, "not on the curve".
TEST(KeyValidation, OffCurvePointInEachSectionIsNamed) {
  for (const char* fx : {"bn128_k12", "bls12381_k12"}) {
    const KeyBytes good = Load(fx);
    const io::ZkeyFile view = good.View();
    struct Case {
      const char* name;
      io::PointArray points;
      size_t point_size;
    } cases[] = {{"IC", view.ic(), view.g1_size()}, {"A", view.a(), view.g1_size()},
                 {"B1", view.b1(), view.g1_size()}, {"B2", view.b2(), view.g2_size()},
                 {"C", view.c(), view.g1_size()},   {"H", view.h(), view.g1_size()}};
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(fx) + " section " + c.name);
      ASSERT_GT(c.points.count, 1u);
      const size_t index = c.points.count - 1;
      KeyBytes bad = good;
      // Lowest bit of y's lowest limb (y.c0 for G2): stays < q, leaves the curve.
      const size_t y_offset = c.point_size / 2;
      bad.bytes[good.OffsetOf(view, c.points.data) + index * c.point_size + y_offset] ^= 1;
      const std::string error = ValidationError(bad);
      EXPECT_NE(error.find(std::string("section ") + c.name + " point " + std::to_string(index) + " "),
                std::string::npos)
          << error;
      EXPECT_NE(error.find("not on the curve"), std::string::npos) << error;
    }
    // A header point.
    KeyBytes bad = good;
    bad.bytes[good.OffsetOf(view, view.delta2()) + view.g2_size() / 2] ^= 1;
    const std::string error = ValidationError(bad);
    EXPECT_NE(error.find("header point delta2: point is not on the curve"), std::string::npos) << error;
  }
}

TEST(KeyValidation, CoordinateNotBelowQIsNamed) {
  const KeyBytes good = Load("bn128_k12");
  const io::ZkeyFile view = good.View();
  KeyBytes bad = good;
  // x of A[2] := q (the raw Montgomery encoding must be < q).
  std::memcpy(bad.bytes.data() + good.OffsetOf(view, view.a().data) + 2 * view.g1_size(), view.q(), view.n8q());
  const std::string error = ValidationError(bad);
  EXPECT_NE(error.find("section A point 2 "), std::string::npos) << error;
  EXPECT_NE(error.find("not below the base field modulus q"), std::string::npos) << error;
}

// On the curve but outside the prime-order subgroup: G2 on BN254, G1 and G2
// on BLS12-381 (BN254's G1 has cofactor 1: every curve point is in it).
TEST(KeyValidation, NonSubgroupPointsAreNamed) {
  std::mt19937_64 rng(12);
  {
    const KeyBytes good = Load("bn128_k12");
    const io::ZkeyFile view = good.View();
    KeyBytes bad = good;
    Put(bad, good.OffsetOf(view, view.b2().data) + 7 * view.g2_size(),
        testing::NonSubgroupPoint<curve::Bn254G2>(rng));
    const std::string error = ValidationError(bad);
    EXPECT_NE(error.find("section B2 point 7 "), std::string::npos) << error;
    EXPECT_NE(error.find("not in the prime-order subgroup"), std::string::npos) << error;
  }
  {
    const KeyBytes good = Load("bls12381_k12");
    const io::ZkeyFile view = good.View();
    KeyBytes bad = good;
    Put(bad, good.OffsetOf(view, view.h().data) + 100 * view.g1_size(),
        testing::NonSubgroupPoint<curve::Bls12_381G1>(rng));
    std::string error = ValidationError(bad);
    EXPECT_NE(error.find("section H point 100 "), std::string::npos) << error;
    EXPECT_NE(error.find("not in the prime-order subgroup"), std::string::npos) << error;

    bad = good;
    Put(bad, good.OffsetOf(view, view.beta2()), testing::NonSubgroupPoint<curve::Bls12_381G2>(rng));
    error = ValidationError(bad);
    EXPECT_NE(error.find("header point beta2: point is not in the prime-order subgroup"), std::string::npos) << error;
  }
}

// Every group with a subgroup test, in a header point and in a section: BN254
// G2 (gamma2; B2, batched), BLS12-381 G1 (alpha1; IC, A) and G2 (B2). BN254's
// G1 has cofactor 1.
TEST(KeyValidation, NonSubgroupPointsAreNamedInEveryGroup) {
  std::mt19937_64 rng(21);
  {
    const KeyBytes good = Load("bn128_k12");
    const io::ZkeyFile view = good.View();
    KeyBytes bad = good;
    Put(bad, good.OffsetOf(view, view.gamma2()), testing::NonSubgroupPoint<curve::Bn254G2>(rng));
    std::string error = ValidationError(bad);
    EXPECT_NE(error.find("header point gamma2: point is not in the prime-order subgroup"), std::string::npos) << error;
    bad = good;
    Put(bad, good.OffsetOf(view, view.b2().data) + (view.b2().count - 1) * view.g2_size(),
        testing::NonSubgroupPoint<curve::Bn254G2>(rng));
    error = ValidationError(bad);
    EXPECT_NE(error.find("section B2 point " + std::to_string(view.b2().count - 1) + " "), std::string::npos) << error;
    EXPECT_NE(error.find("not in the prime-order subgroup"), std::string::npos) << error;
  }
  {
    const KeyBytes good = Load("bls12381_k12");
    const io::ZkeyFile view = good.View();
    KeyBytes bad = good;
    Put(bad, good.OffsetOf(view, view.alpha1()), testing::NonSubgroupPoint<curve::Bls12_381G1>(rng));
    std::string error = ValidationError(bad);
    EXPECT_NE(error.find("header point alpha1: point is not in the prime-order subgroup"), std::string::npos) << error;
    // (H is above; B1 and C run the code A does, after checking more points.)
    for (const char* section : {"IC", "A"}) {
      SCOPED_TRACE(section);
      const io::PointArray points = std::string(section) == "A" ? view.a() : view.ic();
      bad = good;
      Put(bad, good.OffsetOf(view, points.data) + 1 * view.g1_size(), testing::NonSubgroupPoint<curve::Bls12_381G1>(rng));
      error = ValidationError(bad);
      EXPECT_NE(error.find(std::string("section ") + section + " point 1 "), std::string::npos) << error;
      EXPECT_NE(error.find("not in the prime-order subgroup"), std::string::npos) << error;
    }
    bad = good;
    Put(bad, good.OffsetOf(view, view.b2().data) + 300 * view.g2_size(), testing::NonSubgroupPoint<curve::Bls12_381G2>(rng));
    error = ValidationError(bad);
    EXPECT_NE(error.find("section B2 point 300 "), std::string::npos) << error;
    EXPECT_NE(error.find("not in the prime-order subgroup"), std::string::npos) << error;
  }
}

// BN254 B2 points outside G2 only by a component of small order (the orders
// of h = 2q - r's three smallest prime factors, 10069 the hardest case for
// the batched test): each one is refused and named.
TEST(KeyValidation, SmallOrderComponentsInB2AreNamed) {
  std::mt19937_64 rng(22);
  const KeyBytes good = Load("bn128_k12");
  const io::ZkeyFile view = good.View();
  const size_t base = good.OffsetOf(view, view.b2().data);
  for (uint64_t order : {uint64_t{10069}, uint64_t{5864401}, uint64_t{1875725156269}}) {
    SCOPED_TRACE("order " + std::to_string(order));
    KeyBytes bad = good;
    Put(bad, base + 1234 * view.g2_size(),
        testing::WithSmallOrderPart(testing::RandomSubgroupPoint<curve::Bn254G2>(rng), order, rng));
    const std::string error = ValidationError(bad);
    EXPECT_NE(error.find("section B2 point 1234 "), std::string::npos) << error;
    EXPECT_NE(error.find("not in the prime-order subgroup"), std::string::npos) << error;
  }
}

// In BN254's B2 (curve checks first, then the batched subgroup test) the
// lowest bad index is still the one reported, whatever its defect.
TEST(KeyValidation, LowestBadIndexInBatchedB2) {
  std::mt19937_64 rng(23);
  const KeyBytes good = Load("bn128_k12");
  const io::ZkeyFile view = good.View();
  const size_t base = good.OffsetOf(view, view.b2().data);
  const auto off_curve = [&](KeyBytes& key, size_t index) {
    Put(key, base + index * view.g2_size(), testing::RandomSubgroupPoint<curve::Bn254G2>(rng));
    key.bytes[base + index * view.g2_size() + view.g2_size() / 2] ^= 1;
  };
  const auto outside = [&](KeyBytes& key, size_t index) {
    Put(key, base + index * view.g2_size(),
        testing::WithSmallOrderPart(testing::RandomSubgroupPoint<curve::Bn254G2>(rng), 10069, rng));
  };
  KeyBytes bad = good;
  off_curve(bad, 100);
  outside(bad, 300);
  std::string error = ValidationError(bad);
  EXPECT_NE(error.find("section B2 point 100 "), std::string::npos) << error;
  EXPECT_NE(error.find("not on the curve"), std::string::npos) << error;

  bad = good;
  outside(bad, 100);
  off_curve(bad, 300);
  error = ValidationError(bad);
  EXPECT_NE(error.find("section B2 point 100 "), std::string::npos) << error;
  EXPECT_NE(error.find("not in the prime-order subgroup"), std::string::npos) << error;

  bad = good;
  outside(bad, 2000);
  outside(bad, 700);
  error = ValidationError(bad);
  EXPECT_NE(error.find("section B2 point 700 "), std::string::npos) << error;
}

// The lowest bad index is reported, whatever thread finds a bad point first.
TEST(KeyValidation, LowestBadIndexIsReported) {
  const KeyBytes good = Load("bls12381_k12");
  const io::ZkeyFile view = good.View();
  KeyBytes bad = good;
  const size_t base = good.OffsetOf(view, view.h().data);
  for (size_t i : {3000u, 1000u, 4000u}) bad.bytes[base + i * view.g1_size() + view.g1_size() / 2] ^= 1;
  const std::string error = ValidationError(bad);
  EXPECT_NE(error.find("section H point 1000 "), std::string::npos) << error;
}

// ProvingKey::Load refuses such a key (validation is on by default) and loads
// it with validate_key off.
TEST(KeyValidation, LoadRefusesBadKeyByDefault) {
  testing::TempDir dir;
  const KeyBytes good = Load("bn128_k12");
  const io::ZkeyFile view = good.View();
  KeyBytes bad = good;
  bad.bytes[good.OffsetOf(view, view.b1().data) + 5 * view.g1_size() + view.g1_size() / 2] ^= 1;
  testing::WriteFile(dir.file("bad.zkey"), bad.bytes);
  try {
    engine::ProvingKey::Load(dir.file("bad.zkey"), {engine::Backend::kCpu, 2});
    ADD_FAILURE() << "a key with an off-curve B1 point was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadFormat);
    EXPECT_NE(std::string(e.what()).find("bad.zkey: section B1 point 5 "), std::string::npos) << e.what();
  }
  engine::EngineOptions unchecked{engine::Backend::kCpu, 2};
  unchecked.validate_key = false;
  EXPECT_NO_THROW(engine::ProvingKey::Load(dir.file("bad.zkey"), unchecked));
}

}  // namespace
}  // namespace zkfleet
