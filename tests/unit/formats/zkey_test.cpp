// ZkeyFile on the snarkjs fixtures, and its rejection of damaged keys.
#include "zkfleet/zkey/zkey.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gmp_oracle.hpp"
#include "formats_test_util.hpp"

namespace zkfleet::io {
namespace {

using testing::Bytes;
using testing::Container;
using testing::ExpectError;
using testing::Fixture;
using testing::MontgomeryToDecimal;
using testing::PutU32;
using testing::ScratchDir;

struct FixtureInfo {
  const char* dir;
  io::Curve curve;
  uint32_t n8q;
  uint32_t n_constraints;
};

class ZkeyFixtureTest : public ::testing::TestWithParam<FixtureInfo> {};

TEST_P(ZkeyFixtureTest, HeaderValues) {
  const FixtureInfo& fx = GetParam();
  const std::string path = Fixture(fx.dir, "circuit_final.zkey");
  const ZkeyFile key = ZkeyFile::Open(path);
  EXPECT_EQ(key.path(), path);
  EXPECT_EQ(key.curve(), fx.curve);
  EXPECT_EQ(key.n8q(), fx.n8q);
  EXPECT_EQ(key.n8r(), 32u);
  EXPECT_EQ(key.n_vars(), 4095u);
  EXPECT_EQ(key.n_public(), 2u);
  EXPECT_EQ(key.domain_size(), 4096u);
  EXPECT_EQ(key.g1_size(), 2u * fx.n8q);
  EXPECT_EQ(key.g2_size(), 4u * fx.n8q);
  EXPECT_EQ(key.coeff_record_size(), 44u);

  // Counts and positions, against an independent split of the container.
  const Bytes bytes = testing::ReadBytes(path);
  Container c = Container::Split(bytes);
  EXPECT_EQ(key.n_coeffs(), (c.Payload(4).size() - 4) / 44);
  EXPECT_EQ(key.ic().count, 3u);
  EXPECT_EQ(key.a().count, 4095u);
  EXPECT_EQ(key.b1().count, 4095u);
  EXPECT_EQ(key.b2().count, 4095u);
  EXPECT_EQ(key.c().count, 4095u - 3);
  EXPECT_EQ(key.h().count, 4096u);
  const auto same = [](const uint8_t* p, const Bytes& b, size_t n) { return std::memcmp(p, b.data(), n) == 0; };
  EXPECT_TRUE(same(key.h().data, c.Payload(9), c.Payload(9).size()));
  EXPECT_TRUE(same(key.b2().data, c.Payload(7), c.Payload(7).size()));
  EXPECT_TRUE(same(key.c().data, c.Payload(8), c.Payload(8).size()));
  EXPECT_TRUE(same(key.coeffs(), Bytes(c.Payload(4).begin() + 4, c.Payload(4).end()), key.n_coeffs() * 44));
}

// The header points and IC, decoded from Montgomery form with GMP, are what
// snarkjs exported into verification_key.json.
TEST_P(ZkeyFixtureTest, PointsMatchVerificationKey) {
  const FixtureInfo& fx = GetParam();
  const ZkeyFile key = ZkeyFile::Open(Fixture(fx.dir, "circuit_final.zkey"));
  const auto vk = nlohmann::json::parse(testing::ReadText(Fixture(fx.dir, "verification_key.json")));
  EXPECT_EQ(vk["curve"], io::CurveName(key.curve()));
  EXPECT_EQ(vk["nPublic"], key.n_public());

  const size_t n8 = key.n8q();
  const auto coord = [&](const uint8_t* point, int i) { return MontgomeryToDecimal(point + i * n8, key.q(), n8); };
  const auto expect_g1 = [&](const uint8_t* point, const nlohmann::json& j) {
    EXPECT_EQ(coord(point, 0), j[0]);
    EXPECT_EQ(coord(point, 1), j[1]);
  };
  const auto expect_g2 = [&](const uint8_t* point, const nlohmann::json& j) {
    EXPECT_EQ(coord(point, 0), j[0][0]);  // x.c0
    EXPECT_EQ(coord(point, 1), j[0][1]);  // x.c1
    EXPECT_EQ(coord(point, 2), j[1][0]);
    EXPECT_EQ(coord(point, 3), j[1][1]);
  };
  expect_g1(key.alpha1(), vk["vk_alpha_1"]);
  expect_g2(key.beta2(), vk["vk_beta_2"]);
  expect_g2(key.gamma2(), vk["vk_gamma_2"]);
  expect_g2(key.delta2(), vk["vk_delta_2"]);
  ASSERT_EQ(vk["IC"].size(), key.ic().count);
  for (uint64_t i = 0; i < key.ic().count; ++i) expect_g1(key.ic().data + i * key.g1_size(), vk["IC"][i]);
}

// Spec §4.3: besides the R1CS terms, A holds one extra term per public
// signal s (and the constant): row m + s, signal s.
TEST_P(ZkeyFixtureTest, CoefficientsHoldThePublicInputRows) {
  const FixtureInfo& fx = GetParam();
  const ZkeyFile key = ZkeyFile::Open(Fixture(fx.dir, "circuit_final.zkey"));
  std::vector<uint32_t> extra_signals;
  uint64_t b_terms = 0;
  for (uint64_t i = 0; i < key.n_coeffs(); ++i) {
    const CoeffRecord rec = key.coeff(i);
    if (rec.matrix == 1) ++b_terms;
    if (rec.row >= fx.n_constraints) {
      EXPECT_EQ(rec.matrix, 0u);
      EXPECT_EQ(rec.row - fx.n_constraints, rec.signal);
      extra_signals.push_back(rec.signal);
    }
  }
  EXPECT_EQ(extra_signals, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_GT(b_terms, 0u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ZkeyFixtureTest,
                         ::testing::Values(FixtureInfo{"bn128_k12", io::Curve::kBn254, 32, 4093},
                                           FixtureInfo{"bls12381_k12", io::Curve::kBls12_381, 48, 4093}),
                         [](const auto& info) { return std::string(info.param.dir); });

// ----------------------------------------------------------------------------
// Damaged keys, made from the bn128 fixture in a scratch directory.

class BadZkeyTest : public ::testing::Test {
 protected:
  BadZkeyTest() : original_(testing::ReadBytes(Fixture("bn128_k12", "circuit_final.zkey"))) {}

  // Writes `bytes` as bad.zkey and expects Open() to fail with `code` and a
  // message naming the file and containing `parts`.
  void ExpectOpenFails(const Bytes& bytes, ErrorCode code, std::vector<std::string> parts) {
    const std::string path = dir_.Put("bad.zkey", bytes);
    parts.push_back(path);
    ExpectError([&] { ZkeyFile::Open(path); }, code, parts);
  }
  Bytes Cut(size_t size) const { return Bytes(original_.begin(), original_.begin() + size); }
  Container Split() const { return Container::Split(original_); }

  ScratchDir dir_;
  Bytes original_;
};

TEST_F(BadZkeyTest, SplitAndJoinIsIdentity) { EXPECT_EQ(Split().Join(), original_); }

TEST_F(BadZkeyTest, MissingFile) {
  const std::string path = dir_.File("nope.zkey");
  ExpectError([&] { ZkeyFile::Open(path); }, ErrorCode::kNotFound, {path});
}

TEST_F(BadZkeyTest, EmptyFile) { ExpectOpenFails({}, ErrorCode::kBadFormat, {"file is empty"}); }

TEST_F(BadZkeyTest, WrongMagic) {
  ExpectOpenFails(testing::ReadBytes(Fixture("bn128_k12", "witness.wtns")), ErrorCode::kBadFormat,
                  {"magic: expected \"zkey\", found \"wtns\""});
}

TEST_F(BadZkeyTest, TruncatedInsideContainerHeader) {
  ExpectOpenFails(Cut(6), ErrorCode::kBadFormat, {"truncated", "header needs 12 bytes, the file has 6"});
}

TEST_F(BadZkeyTest, TruncatedInsideSectionTable) {
  // Section 1's payload is bytes 24..28; section 2's table entry starts at 28.
  ExpectOpenFails(Cut(33), ErrorCode::kBadFormat, {"truncated", "entry 1 of 10 at offset 28", "ends at 33"});
}

TEST_F(BadZkeyTest, TruncatedInsideHeaderPayload) {
  ExpectOpenFails(Cut(100), ErrorCode::kBadFormat, {"truncated", "section 2", "offset 40", "size 660", "ends at 100"});
}

TEST_F(BadZkeyTest, TruncatedInsidePointPayload) {
  const size_t a_offset = 798432;  // section 5 payload in this fixture
  ExpectOpenFails(Cut(a_offset + 1000), ErrorCode::kBadFormat,
                  {"truncated", "section 5", "offset 798432", "ends at " + std::to_string(a_offset + 1000)});
}

TEST_F(BadZkeyTest, TruncatedByOneByte) {
  ExpectOpenFails(Cut(original_.size() - 1), ErrorCode::kBadFormat, {"truncated", "section 10"});
}

TEST_F(BadZkeyTest, PlonkKeyIsUnsupported) {
  Container c = Split();
  PutU32(c.Payload(1), 0, 2);
  ExpectOpenFails(c.Join(), ErrorCode::kUnsupported, {"not a Groth16 zkey (protocol 2 = plonk"});
}

TEST_F(BadZkeyTest, UnknownProtocolIsBadFormat) {
  Container c = Split();
  PutU32(c.Payload(1), 0, 7);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"protocol", "expected 1 (groth16), found 7"});
}

TEST_F(BadZkeyTest, PointSectionOfWrongSize) {
  Container c = Split();
  c.Payload(5).resize(c.Payload(5).size() + 64);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat,
                  {"section 5 (A points): size: expected 262080", "nVars 4095", "found 262144"});
}

TEST_F(BadZkeyTest, HeaderNVarsDisagreesWithSections) {
  Container c = Split();
  PutU32(c.Payload(2), 72, 4096);  // nVars
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"section 5 (A points): size: expected 262144", "nVars 4096", "found 262080"});
}

TEST_F(BadZkeyTest, HeaderSectionOfWrongSize) {
  Container c = Split();
  c.Payload(2).push_back(0);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"groth16 header", "size: expected 660 bytes, found 661"});
}

TEST_F(BadZkeyTest, CoefficientCountDisagreesWithSection) {
  Container c = Split();
  PutU32(c.Payload(4), 0, testing::GetU32(c.Payload(4), 0) + 1);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"section 4 (coefficients): size", "nCoeffs"});
}

TEST_F(BadZkeyTest, DomainNotPowerOfTwo) {
  Container c = Split();
  PutU32(c.Payload(2), 80, 4095);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"domainSize: expected a power of two, found 4095"});
}

TEST_F(BadZkeyTest, NPublicAboveNVars) {
  Container c = Split();
  PutU32(c.Payload(2), 76, 5000);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"nVars: expected >= nPublic + 1 = 5001, found 4095"});
}

TEST_F(BadZkeyTest, UnknownCurve) {
  Container c = Split();
  c.Payload(2)[4] ^= 0x10;  // low byte of q
  ExpectOpenFails(c.Join(), ErrorCode::kUnsupported, {"q: unknown base field", "bn128, bls12381"});
}

TEST_F(BadZkeyTest, ScalarPrimeOfAnotherCurve) {
  Container c = Split();
  c.Payload(2)[40] ^= 0x10;  // low byte of r
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"r: expected the bn128 scalar field"});
}

TEST_F(BadZkeyTest, HeaderPointCoordinateNotReduced) {
  Container c = Split();
  std::fill(c.Payload(2).begin() + 84, c.Payload(2).begin() + 84 + 32, 0xff);  // alpha1.x
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"alpha1 coordinate 0: expected < q"});
}

TEST_F(BadZkeyTest, CoefficientRowOutsideDomain) {
  Container c = Split();
  PutU32(c.Payload(4), 4 + 10 * 44 + 4, 4096);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat,
                  {"record 10 at file offset " + std::to_string(916 + 4 + 10 * 44),
                   "row: expected < domainSize 4096, found 4096"});
}

TEST_F(BadZkeyTest, CoefficientMatrixNotAOrB) {
  Container c = Split();
  PutU32(c.Payload(4), 4 + 3 * 44, 2);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"record 3", "matrix: expected 0 (A) or 1 (B), found 2"});
}

TEST_F(BadZkeyTest, CoefficientSignalOutsideWitness) {
  Container c = Split();
  PutU32(c.Payload(4), 4 + 7 * 44 + 8, 4095);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"record 7", "signal: expected < nVars 4095, found 4095"});
}

TEST_F(BadZkeyTest, CoefficientValueNotReduced) {
  Container c = Split();
  std::fill(c.Payload(4).begin() + 4 + 12, c.Payload(4).begin() + 4 + 44, 0xff);
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"record 0", "value: expected < r"});
}

TEST_F(BadZkeyTest, DuplicatedSection) {
  Container c = Split();
  c.sections.push_back({4, c.Payload(4)});
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"section 4 (coefficients) appears more than once"});
}

TEST_F(BadZkeyTest, MissingSection) {
  Container c = Split();
  std::erase_if(c.sections, [](const auto& s) { return s.first == 9; });
  ExpectOpenFails(c.Join(), ErrorCode::kBadFormat, {"missing section 9 (H points)"});
}

TEST_F(BadZkeyTest, SectionOrderDoesNotMatter) {
  // `groth16 setup` writes 1, 2, 4, 3, 9, 8, 5, 6, 7, 10 (spec §2).
  Container c = Split();
  Container reordered = c;
  reordered.sections.clear();
  for (uint32_t id : {1, 2, 4, 3, 9, 8, 5, 6, 7, 10}) reordered.sections.push_back({id, c.Payload(id)});
  const std::string path = dir_.Put("reordered.zkey", reordered.Join());
  const ZkeyFile key = ZkeyFile::Open(path);
  EXPECT_EQ(key.n_vars(), 4095u);
  EXPECT_EQ(std::memcmp(key.h().data, c.Payload(9).data(), c.Payload(9).size()), 0);
}

}  // namespace
}  // namespace zkfleet::io
