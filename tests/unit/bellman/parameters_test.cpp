// bellperson's .vk/.params files and 192-byte proofs
// (zkfleet/bellman/parameters.hpp): round trips, every kind of malformed
// file, and proofs the engine's verifier checks against a converted key.
#include "zkfleet/bellman/parameters.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "bellman_test_util.hpp"
#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"

namespace zkfleet::bellman {
namespace {

using namespace testing;
using zkfleet::testing::ReadFile;
using zkfleet::testing::TempDir;

std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// Where each field of a .params with these counts starts.
struct Layout {
  struct Field {
    std::string name;
    size_t begin, end;   // [begin, end): the count (arrays) and the points
    size_t point_bytes;  // 0 for the vk's single points
  };
  std::vector<Field> fields;
  size_t size = 0;

  explicit Layout(const Parameters& p) {
    const std::pair<const char*, size_t> fixed[] = {{"alpha_g1", 96}, {"beta_g1", 96},  {"beta_g2", 192},
                                                    {"gamma_g2", 192}, {"delta_g1", 96}, {"delta_g2", 192}};
    for (const auto& [name, bytes] : fixed) Add(name, bytes, 0);
    Add("ic", 4 + 96 * p.vk.ic.size(), 96);
    Add("h", 4 + 96 * p.h.size(), 96);
    Add("l", 4 + 96 * p.l.size(), 96);
    Add("a", 4 + 96 * p.a.size(), 96);
    Add("b_g1", 4 + 96 * p.b_g1.size(), 96);
    Add("b_g2", 4 + 192 * p.b_g2.size(), 192);
  }
  void Add(const std::string& name, size_t bytes, size_t point_bytes) {
    fields.push_back({name, size, size + bytes, point_bytes});
    size += bytes;
  }
  const Field& Get(const std::string& name) const {
    for (const Field& f : fields) {
      if (f.name == name) return f;
    }
    throw std::out_of_range(name);
  }
  // Offset of point i of an array.
  size_t Point(const std::string& name, size_t i) const {
    const Field& f = Get(name);
    return f.begin + 4 + i * f.point_bytes;
  }
};

class BellmanParameters : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(7);
    params_ = SmallParameters(rng);
    path_ = dir_.file("x.params");
    WriteParameters(path_, params_, pool_);
    bytes_ = Bytes(ReadFile(path_));
  }

  // ParseParameters must throw kBadFormat with `expected` in the message.
  void ExpectBad(const std::vector<uint8_t>& bytes, const std::string& expected, const ReadOptions& options = {}) {
    try {
      ParseParameters(bytes, "x.params", pool_, options);
      ADD_FAILURE() << "accepted; expected: " << expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadFormat) << e.what();
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
          << "message: " << e.what() << "\nexpected: " << expected;
    }
  }
  // The file with `p` written over the point at `offset`.
  std::vector<uint8_t> WithG1(size_t offset, const G1Affine& p) const {
    std::vector<uint8_t> out = bytes_;
    EncodeG1Uncompressed(p, out.data() + offset);
    return out;
  }

  ThreadPool pool_{2};
  TempDir dir_;
  Parameters params_;
  std::string path_;
  std::vector<uint8_t> bytes_;
};

TEST_F(BellmanParameters, WriteThenReadIsIdentical) {
  const Layout layout(params_);
  EXPECT_EQ(bytes_.size(), layout.size);
  const Parameters back = ReadParameters(path_, pool_);
  EXPECT_TRUE(SameParameters(back, params_));
  EXPECT_TRUE(back.a[1].is_infinity());
  // The file begins with the .vk, byte for byte.
  const std::vector<uint8_t> vk = SerializeVerifyingKey(params_.vk);
  ASSERT_LE(vk.size(), bytes_.size());
  EXPECT_TRUE(std::equal(vk.begin(), vk.end(), bytes_.begin()));
  // Written through a temporary: nothing else is left in the directory.
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) entries += entry.exists();
  EXPECT_EQ(entries, 1u);
  // Unchecked reads give the same points.
  EXPECT_TRUE(SameParameters(ParseParameters(bytes_, "x.params", pool_, {.check_points = false}), params_));
}

TEST_F(BellmanParameters, VerifyingKeyWriteThenReadIsIdentical) {
  const std::string vk_path = dir_.file("x.vk");
  WriteVerifyingKey(vk_path, params_.vk);
  EXPECT_EQ(Bytes(ReadFile(vk_path)), SerializeVerifyingKey(params_.vk));
  EXPECT_TRUE(SameKey(ReadVerifyingKey(vk_path, pool_), params_.vk));
  // Overwriting replaces the file whole.
  std::mt19937_64 rng(8);
  VerifyingKey other = SmallParameters(rng, 5).vk;
  WriteVerifyingKey(vk_path, other);
  EXPECT_TRUE(SameKey(ReadVerifyingKey(vk_path, pool_), other));
}

TEST_F(BellmanParameters, VerifyingKeyRejectsTrailingBytesAndEmptyIc) {
  std::vector<uint8_t> vk = SerializeVerifyingKey(params_.vk);
  vk.push_back(0);
  EXPECT_THROW(
      {
        try {
          ParseVerifyingKey(vk, "x.vk", pool_);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("x.vk: 1 trailing bytes after ic"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  VerifyingKey empty = params_.vk;
  empty.ic.clear();
  EXPECT_THROW(ParseVerifyingKey(SerializeVerifyingKey(empty), "x.vk", pool_), Error);
}

TEST_F(BellmanParameters, WriteErrorsNameThePath) {
  const std::string bad = dir_.file("no-such-dir/x.params");
  try {
    WriteParameters(bad, params_, pool_);
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  EXPECT_THROW(WriteVerifyingKey(bad, params_.vk), Error);
}

TEST_F(BellmanParameters, TruncatedAnywhereFailsNamingTheField) {
  const Layout layout(params_);
  for (size_t cut = 0; cut < bytes_.size(); ++cut) {
    // The field holding the first missing byte.
    const Layout::Field* field = nullptr;
    for (const Layout::Field& f : layout.fields) {
      if (cut >= f.begin && cut < f.end) field = &f;
    }
    ASSERT_NE(field, nullptr);
    const std::vector<uint8_t> truncated(bytes_.begin(), bytes_.begin() + cut);
    try {
      // Unchecked: the structure is what is under test (and it is faster).
      ParseParameters(truncated, "x.params", pool_, {.check_points = false});
      ADD_FAILURE() << "accepted a file cut at " << cut;
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kBadFormat);
      const std::string msg = e.what();
      const bool named = field->point_bytes == 0
                             ? msg.find("x.params: truncated in " + field->name + ":") == 0
                             : msg.find("x.params: truncated in " + field->name + " count:") == 0 ||
                                   msg.find("x.params: " + field->name + ": count ") == 0;
      ASSERT_TRUE(named) << "cut at " << cut << " (in " << field->name << "): " << msg;
    }
  }
}

TEST_F(BellmanParameters, TrailingBytesFail) {
  std::vector<uint8_t> longer = bytes_;
  longer.push_back(0);
  ExpectBad(longer, "x.params: 1 trailing bytes after b_g2");
}

TEST_F(BellmanParameters, CountLargerThanTheFileFails) {
  const Layout layout(params_);
  std::vector<uint8_t> bad = bytes_;
  const size_t at = layout.Get("l").begin;
  bad[at] = bad[at + 1] = bad[at + 2] = bad[at + 3] = 0xff;
  ExpectBad(bad, "x.params: l: count 4294967295 needs 412316860320 bytes");
}

TEST_F(BellmanParameters, BadFlagsNameTheSectionAndIndex) {
  const Layout layout(params_);
  std::vector<uint8_t> bad = bytes_;
  bad[layout.Point("l", 2)] |= kCompressionFlag;
  ExpectBad(bad, "x.params: l[2]: bad flag bits");
  bad = bytes_;
  bad[layout.Point("b_g2", 3)] |= kSortFlag;
  ExpectBad(bad, "x.params: b_g2[3]: bad flag bits");
  // Flags are checked even when the points are not.
  ExpectBad(bad, "x.params: b_g2[3]: bad flag bits", {.check_points = false});
  bad = bytes_;
  bad[layout.Get("gamma_g2").begin] |= kInfinityFlag;
  ExpectBad(bad, "x.params: gamma_g2: infinity flag with nonzero bits");
}

TEST_F(BellmanParameters, CoordinateNotBelowQFails) {
  const Layout layout(params_);
  std::vector<uint8_t> bad = bytes_;
  // x = 2^381 - 1 (every bit below the flags): far above q.
  const size_t at = layout.Point("h", 1);
  bad[at] = 0x1f;
  std::fill(bad.begin() + at + 1, bad.begin() + at + 48, 0xff);
  ExpectBad(bad, "x.params: h[1]: coordinate not below q");
  ExpectBad(bad, "x.params: h[1]: coordinate not below q", {.check_points = false});
}

TEST_F(BellmanParameters, PointOffTheCurveFails) {
  const Layout layout(params_);
  const G1Affine p = params_.l[3];
  ExpectBad(WithG1(layout.Point("l", 3), G1Affine{p.x, p.y + Fq::one()}), "x.params: l[3]: not on the curve");
  // Only the check rejects it: unchecked reads take it.
  EXPECT_NO_THROW(
      ParseParameters(WithG1(layout.Point("l", 3), G1Affine{p.x, p.y + Fq::one()}), "x", pool_, {.check_points = false}));
  // The lowest bad index is the one reported.
  std::vector<uint8_t> two = WithG1(layout.Point("l", 3), G1Affine{p.x, p.y + Fq::one()});
  EncodeG1Uncompressed(G1Affine{params_.l[1].x, params_.l[1].y + Fq::one()}, two.data() + layout.Point("l", 1));
  ExpectBad(two, "x.params: l[1]: not on the curve");
  // A vk point.
  std::vector<uint8_t> vk_bad = bytes_;
  const G2Affine d = params_.vk.delta_g2;
  EncodeG2Uncompressed(G2Affine{d.x, d.y + Fq2::one()}, vk_bad.data() + layout.Get("delta_g2").begin);
  ExpectBad(vk_bad, "x.params: delta_g2: not on the curve");
}

TEST_F(BellmanParameters, PointOutsideTheSubgroupFails) {
  Parameters bad = params_;
  bad.a[4] = G1OutsideSubgroup();
  const std::string a_path = dir_.file("a.params");
  WriteParameters(a_path, bad, pool_);
  try {
    ReadParameters(a_path, pool_);
    ADD_FAILURE() << "accepted a point outside the subgroup";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), a_path + ": a[4]: not in the prime-order subgroup");
  }
  EXPECT_NO_THROW(ReadParameters(a_path, pool_, {.check_points = false}));

  bad = params_;
  bad.b_g2[2] = G2OutsideSubgroup();
  const std::string b_path = dir_.file("b.params");
  WriteParameters(b_path, bad, pool_);
  ExpectBad(Bytes(ReadFile(b_path)), "x.params: b_g2[2]: not in the prime-order subgroup");

  bad = params_;
  bad.vk.ic[2] = G1OutsideSubgroup();
  WriteParameters(b_path, bad, pool_);
  ExpectBad(Bytes(ReadFile(b_path)), "x.params: ic[2]: not in the prime-order subgroup");
}

TEST_F(BellmanParameters, StructureErrors) {
  const std::string path = dir_.file("s.params");
  Parameters bad = params_;
  bad.b_g2.pop_back();
  WriteParameters(path, bad, pool_);
  ExpectBad(Bytes(ReadFile(path)), "x.params: b_g1 has 4 points but b_g2 has 3");

  bad = params_;
  bad.h.pop_back();  // 6 + 1 is not a power of two
  WriteParameters(path, bad, pool_);
  ExpectBad(Bytes(ReadFile(path)), "x.params: h: 6 points, not a power of two minus one");

  bad = params_;
  bad.vk.ic.clear();
  WriteParameters(path, bad, pool_);
  ExpectBad(Bytes(ReadFile(path)), "x.params: ic: empty");

  // h of 2^k - 1 points for other k are fine, 0 included (a domain of one).
  for (size_t n_h : {0, 1, 3, 15}) {
    std::mt19937_64 rng(n_h);
    const Parameters ok = SmallParameters(rng, 1, n_h, 0, 0, 0);
    WriteParameters(path, ok, pool_);
    EXPECT_TRUE(SameParameters(ReadParameters(path, pool_), ok)) << n_h;
  }
}

TEST_F(BellmanParameters, MissingFileIsNotFound) {
  try {
    ReadParameters(dir_.file("none.params"), pool_);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

// ---- proofs -----------------------------------------------------------------

engine::ProofPoints RandomProof(std::mt19937_64& rng) {
  engine::ProofPoints p;
  p.a = ToEngineG1(RandomG1(rng));
  p.b = ToEngineG2(RandomG2(rng));
  p.c = ToEngineG1(RandomG1(rng));
  return p;
}

void ExpectBadProof(std::span<const uint8_t> bytes, const std::string& expected) {
  try {
    DecodeProofs(bytes, "p.proof");
    ADD_FAILURE() << "accepted; expected: " << expected;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadFormat);
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(BellmanProof, RoundTrip) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 6; ++i) {
    const engine::ProofPoints p = RandomProof(rng);
    const auto bytes = EncodeProof(p);
    EXPECT_NE(bytes[0] & kCompressionFlag, 0);
    EXPECT_NE(bytes[48] & kCompressionFlag, 0);
    EXPECT_NE(bytes[144] & kCompressionFlag, 0);
    const engine::ProofPoints back = DecodeProof(bytes, "p.proof");
    EXPECT_TRUE(SameG1(back.a, p.a));
    EXPECT_TRUE(SameG2(back.b, p.b));
    EXPECT_TRUE(SameG1(back.c, p.c));
    ASSERT_TRUE(back.curve.has_value());
    EXPECT_EQ(*back.curve, engine::Curve::kBls12_381);
  }
}

TEST(BellmanProof, ManyPartitions) {
  std::mt19937_64 rng(10);
  std::vector<engine::ProofPoints> proofs;
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 3; ++i) {
    proofs.push_back(RandomProof(rng));
    const auto one = EncodeProof(proofs.back());
    bytes.insert(bytes.end(), one.begin(), one.end());
  }
  const auto back = DecodeProofs(bytes, "p.proof");
  ASSERT_EQ(back.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(SameG2(back[i].b, proofs[i].b));

  std::vector<uint8_t> bad = bytes;
  bad[kProofBytes + 144] &= static_cast<uint8_t>(~kCompressionFlag);  // proof 1's C uncompressed
  ExpectBadProof(bad, "p.proof: proof[1].c: bad flag bits");
  ExpectBadProof(std::span(bytes).first(0), "p.proof: 0 bytes is not a non-empty multiple of 192 (one proof per partition)");
  ExpectBadProof(std::span(bytes).first(200),
                 "p.proof: 200 bytes is not a non-empty multiple of 192 (one proof per partition)");
}

TEST(BellmanProof, RejectsBadPoints) {
  std::mt19937_64 rng(11);
  engine::ProofPoints p = RandomProof(rng);
  auto bytes = EncodeProof(p);
  EXPECT_THROW(DecodeProof(std::span(bytes).first(191), "p.proof"), Error);

  p.b = ToEngineG2(G2OutsideSubgroup());
  bytes = EncodeProof(p);
  try {
    DecodeProof(bytes, "p.proof");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.proof: proof.b: not in the prime-order subgroup");
  }
  // bellperson refuses the identity in a proof.
  p = RandomProof(rng);
  p.a = engine::G1Point{.infinity = true};
  bytes = EncodeProof(p);
  EXPECT_EQ(bytes[0], 0xc0);
  try {
    DecodeProof(bytes, "p.proof");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "p.proof: proof.a: point at infinity");
  }
}

// A key and proof made from known discrete logs: with A = a·G1, B = b·G2
// and C = (a·b - alpha·beta - IC(x)·gamma)/delta · G1 the bellman equation
// e(A,B) = e(alpha,beta)·e(IC(x),gamma)·e(C,delta) holds. The engine's
// verifier must accept it through ToEngineKey and the proof encoding, and
// reject it for another public input.
TEST(BellmanProof, EngineVerifierAcceptsThroughToEngineKey) {
  std::mt19937_64 rng(12);
  const Fr alpha = RandomFr(rng), beta = RandomFr(rng), gamma = RandomFr(rng), delta = RandomFr(rng);
  const Fr u0 = RandomFr(rng), u1 = RandomFr(rng), u2 = RandomFr(rng);
  const Fr x1 = Fr::from_uint(12345), x2 = RandomFr(rng);
  const Fr a = RandomFr(rng), b = RandomFr(rng);
  const Fr ic_x = u0 + x1 * u1 + x2 * u2;
  const Fr c = (a * b - alpha * beta - ic_x * gamma) * delta.inverse();

  VerifyingKey vk;
  vk.alpha_g1 = G1Mul(alpha);
  vk.beta_g1 = G1Mul(beta);
  vk.beta_g2 = G2Mul(beta);
  vk.gamma_g2 = G2Mul(gamma);
  vk.delta_g1 = G1Mul(delta);
  vk.delta_g2 = G2Mul(delta);
  vk.ic = {G1Mul(u0), G1Mul(u1), G1Mul(u2)};
  engine::ProofPoints proof;
  proof.a = ToEngineG1(G1Mul(a));
  proof.b = ToEngineG2(G2Mul(b));
  proof.c = ToEngineG1(G1Mul(c));

  // Through the file formats too.
  ThreadPool pool(2);
  const VerifyingKey vk_back = ParseVerifyingKey(SerializeVerifyingKey(vk), "k.vk", pool);
  const engine::ProofPoints proof_back = DecodeProof(EncodeProof(proof), "p.proof");
  const engine::VerificationKey key = ToEngineKey(vk_back);
  EXPECT_EQ(key.curve, engine::Curve::kBls12_381);
  EXPECT_EQ(key.n_public, 2u);

  auto to_big = [](const Fr& f) {
    engine::BigInt v{};
    f.to_canonical(v.data());
    return v;
  };
  const std::vector<engine::BigInt> inputs = {to_big(x1), to_big(x2)};
  const engine::VerifyResult ok = engine::Verify(key, inputs, proof_back);
  EXPECT_TRUE(ok.ok()) << ok.reason;
  const std::vector<engine::BigInt> wrong = {to_big(x1 + Fr::one()), to_big(x2)};
  EXPECT_EQ(engine::Verify(key, wrong, proof_back).status, engine::VerifyStatus::kInvalidProof);
}

}  // namespace
}  // namespace zkfleet::bellman
