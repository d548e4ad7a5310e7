// ZkeyWriter: rewriting a snarkjs key from its parts reproduces it, and
// snarkjs reads keys written with the default (empty) transcript.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "formats_test_util.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::io {
namespace {

using testing::Bytes;
using testing::Container;
using testing::ExpectError;
using testing::Fixture;
using testing::ScratchDir;

ZkeyHeaderData HeaderOf(const ZkeyFile& key) {
  ZkeyHeaderData h;
  h.curve = key.curve();
  h.n_vars = key.n_vars();
  h.n_public = key.n_public();
  h.domain_size = key.domain_size();
  h.n_coeffs = key.n_coeffs();
  h.alpha1 = {key.alpha1(), key.g1_size()};
  h.beta1 = {key.beta1(), key.g1_size()};
  h.beta2 = {key.beta2(), key.g2_size()};
  h.gamma2 = {key.gamma2(), key.g2_size()};
  h.delta1 = {key.delta1(), key.g1_size()};
  h.delta2 = {key.delta2(), key.g2_size()};
  return h;
}

std::span<const uint8_t> Points(PointArray p, size_t point_size) { return {p.data, p.count * point_size}; }

// Writes sections 3..9 of `key` through `w`, streaming the H points in
// chunks to exercise Append.
void CopyBody(const ZkeyFile& key, ZkeyWriter& w) {
  w.WriteSection(kZkeyIc, Points(key.ic(), key.g1_size()));
  w.WriteSection(kZkeyCoeffs, {key.coeffs(), key.n_coeffs() * key.coeff_record_size()});
  w.WriteSection(kZkeyA, Points(key.a(), key.g1_size()));
  w.WriteSection(kZkeyB1, Points(key.b1(), key.g1_size()));
  w.WriteSection(kZkeyB2, Points(key.b2(), key.g2_size()));
  w.WriteSection(kZkeyC, Points(key.c(), key.g1_size()));
  w.BeginSection(kZkeyH);
  const std::span<const uint8_t> h = Points(key.h(), key.g1_size());
  for (size_t pos = 0; pos < h.size(); pos += 1000) w.Append(h.subspan(pos, std::min<size_t>(1000, h.size() - pos)));
  w.EndSection();
}

class ZkeyWriterTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ZkeyWriterTest, RewritingAFixtureIsByteIdentical) {
  ScratchDir dir;
  const std::string original_path = Fixture(GetParam(), "circuit_final.zkey");
  const ZkeyFile key = ZkeyFile::Open(original_path);
  const Bytes original = testing::ReadBytes(original_path);
  const std::string out = dir.File("copy.zkey");
  ZkeyWriter w(out, HeaderOf(key));
  CopyBody(key, w);
  w.WriteSection(kZkeyContributions, Container::Split(original).Payload(10));
  w.Finish();
  EXPECT_TRUE(testing::ReadBytes(out) == original);  // the fixture's sections are in order 1..10
}

TEST_P(ZkeyWriterTest, DefaultTranscriptIsEmpty) {
  ScratchDir dir;
  const ZkeyFile key = ZkeyFile::Open(Fixture(GetParam(), "circuit_final.zkey"));
  const std::string out = dir.File("copy.zkey");
  ZkeyWriter w(out, HeaderOf(key));
  CopyBody(key, w);
  w.Finish();
  Container c = Container::Split(testing::ReadBytes(out));
  EXPECT_EQ(c.Payload(10), Bytes(68, 0));
  const ZkeyFile reread = ZkeyFile::Open(out);
  EXPECT_EQ(reread.n_coeffs(), key.n_coeffs());
}

// snarkjs exports the same verification key from a key with the empty
// transcript as from the original.
TEST_P(ZkeyWriterTest, SnarkjsReadsWrittenKey) {
  ASSERT_TRUE(testing::RequireSnarkjs());
  ScratchDir dir;
  const ZkeyFile key = ZkeyFile::Open(Fixture(GetParam(), "circuit_final.zkey"));
  const std::string out = dir.File("copy.zkey");
  ZkeyWriter w(out, HeaderOf(key));
  CopyBody(key, w);
  w.Finish();
  const std::string vk_path = dir.File("vk.json");
  const auto [status, output] =
      testing::RunCommand(testing::SnarkjsPath() + " zkey export verificationkey " + out + " " + vk_path);
  ASSERT_EQ(status, 0) << output;
  EXPECT_EQ(nlohmann::json::parse(testing::ReadText(vk_path)),
            nlohmann::json::parse(testing::ReadText(Fixture(GetParam(), "verification_key.json"))));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ZkeyWriterTest, ::testing::Values("bn128_k12", "bls12381_k12"));

TEST(ZkeyWriterMisuseTest, SectionsOutOfOrderOrOfWrongSize) {
  ScratchDir dir;
  const ZkeyFile key = ZkeyFile::Open(Fixture("bn128_k12", "circuit_final.zkey"));
  const std::string out = dir.File("bad.zkey");
  {
    ZkeyWriter w(out, HeaderOf(key));
    ExpectError([&] { w.BeginSection(kZkeyA); }, ErrorCode::kInvalidArgument, {"expected section 3 next, got 5"});
    ExpectError([&] { w.WriteSection(kZkeyIc, Bytes(10)); }, ErrorCode::kInvalidArgument, {"declared 192 bytes"});
  }
  {
    ZkeyWriter w(out, HeaderOf(key));
    w.WriteSection(kZkeyIc, Points(key.ic(), key.g1_size()));
    ExpectError([&] { w.Finish(); }, ErrorCode::kInvalidArgument, {"Finish() before section 4"});
  }
  EXPECT_FALSE(std::filesystem::exists(out));

  ZkeyHeaderData h = HeaderOf(key);
  h.beta2 = h.beta2.first(10);
  ExpectError([&] { ZkeyWriter w(out, h); }, ErrorCode::kInvalidArgument, {"beta2 must be 128 bytes, got 10"});
  h = HeaderOf(key);
  h.domain_size = 100;
  ExpectError([&] { ZkeyWriter w(out, h); }, ErrorCode::kInvalidArgument, {"domain_size must be a power of two"});
}

}  // namespace
}  // namespace zkfleet::io
