// groth16::Verify / PreparedVerifier and the snarkjs JSON readers: every
// failure class gets its status, the key from a .zkey equals snarkjs's
// verification_key.json, and malformed JSON only ever throws zkfleet::Error.
#include <atomic>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testutil/test_support.hpp"
#include "unit/pairing/curve_test_points.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/groth16/verifier.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/snarkjs/json_writer.hpp"
#include "zkfleet/snarkjs/json_reader.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace {

namespace zt = zkfleet::testing;
namespace groth16 = zkfleet::groth16;
namespace io = zkfleet::io;
using groth16::VerifyStatus;
using json = nlohmann::json;

struct Files {
  std::string vk, pub, proof;
};

class VerifierTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::string Fx(const char* file) const { return zt::Fixture(GetParam(), file); }
  groth16::VerificationKey Vk() const { return io::ReadVerificationKeyJson(Fx("verification_key.json")); }
  std::vector<groth16::BigInt> Pub() const { return io::ReadPublicSignalsJson(Fx("public.json")); }
  groth16::Proof Proof() const { return io::ReadProofJson(Fx("proof.json")); }
  bool Bls() const { return std::string(GetParam()).starts_with("bls"); }
};

TEST_P(VerifierTest, FixtureProofVerifies) {
  const auto vk = Vk();
  const auto res = groth16::Verify(vk, Pub(), Proof());
  EXPECT_TRUE(res.ok()) << res.reason;
  const groth16::PreparedVerifier prepared(vk);
  EXPECT_TRUE(prepared.Verify(Pub(), Proof()).ok());
  EXPECT_EQ(prepared.key().n_public, 2u);
}

// PreparedVerifier::Verify from several threads at once, valid and invalid
// inputs interleaved (meant for the tsan preset too).
TEST_P(VerifierTest, PreparedVerifierIsThreadSafe) {
  const groth16::PreparedVerifier prepared(Vk());
  const auto pub = Pub();
  const auto proof = Proof();
  auto bad = pub;
  bad[0][0] ^= 1;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        const bool expect = (t + i) % 2 == 0;
        if (prepared.Verify(expect ? pub : bad, proof).ok() != expect) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_P(VerifierTest, KeyFromZkeyEqualsSnarkjsJson) {
  const auto zkey = io::ZkeyFile::Open(Fx("circuit_final.zkey"));
  const auto vk = groth16::VerificationKeyFromZkey(zkey);
  EXPECT_EQ(io::VerificationKeyJson(vk, groth16::AlphaBeta(vk)), zt::ReadFile(Fx("verification_key.json")));
}

TEST_P(VerifierTest, EveryFailureHasItsStatus) {
  const auto vk = Vk();
  const auto pub = Pub();
  const auto proof = Proof();
  const auto& primes = io::PrimesOf(vk.curve);
  groth16::BigInt r{}, q{};
  std::memcpy(r.data(), primes.r, primes.n8r);
  std::memcpy(q.data(), primes.q, primes.n8q);
  auto status = [&](const groth16::VerificationKey& k, const std::vector<groth16::BigInt>& s, const groth16::Proof& p) {
    const auto res = groth16::Verify(k, s, p);
    EXPECT_EQ(res.ok(), res.reason.empty());
    EXPECT_EQ(res.reason.find('\n'), std::string::npos);
    return res.status;
  };

  auto s = pub;
  s.pop_back();
  EXPECT_EQ(status(vk, s, proof), VerifyStatus::kBadPublicSignals);
  s = pub;
  s.push_back({});
  EXPECT_EQ(status(vk, s, proof), VerifyStatus::kBadPublicSignals);
  s = pub;
  s[0] = r;
  EXPECT_EQ(status(vk, s, proof), VerifyStatus::kBadPublicSignals);
  s = pub;
  s[0][0] ^= 1;
  EXPECT_EQ(status(vk, s, proof), VerifyStatus::kInvalidProof);

  auto p = proof;
  p.curve = Bls() ? zkfleet::io::Curve::kBn254 : zkfleet::io::Curve::kBls12_381;
  EXPECT_EQ(status(vk, pub, p), VerifyStatus::kCurveMismatch);
  p = proof;
  p.a.x[0] ^= 1;
  EXPECT_EQ(status(vk, pub, p), VerifyStatus::kBadProofPoint);
  p = proof;
  p.b.y1 = q;
  EXPECT_EQ(status(vk, pub, p), VerifyStatus::kBadProofPoint);
  p = proof;
  std::swap(p.a, p.c);
  EXPECT_EQ(status(vk, pub, p), VerifyStatus::kInvalidProof);
  p = proof;
  p.c.infinity = true;
  EXPECT_EQ(status(vk, pub, p), VerifyStatus::kInvalidProof);

  // A G2 point on the curve, outside the subgroup.
  std::mt19937_64 rng(5);
  auto set_g2 = [](groth16::G2Point& out, const auto& pt) {
    pt.x.c0.to_canonical(out.x0.data());
    pt.x.c1.to_canonical(out.x1.data());
    pt.y.c0.to_canonical(out.y0.data());
    pt.y.c1.to_canonical(out.y1.data());
  };
  p = proof;
  if (Bls()) {
    set_g2(p.b, zt::NonSubgroupPoint<zkfleet::curve::Bls12_381G2>(rng));
  } else {
    set_g2(p.b, zt::NonSubgroupPoint<zkfleet::curve::Bn254G2>(rng));
  }
  auto res = groth16::Verify(vk, pub, p);
  EXPECT_EQ(res.status, VerifyStatus::kBadProofPoint);
  EXPECT_NE(res.reason.find("subgroup"), std::string::npos) << res.reason;
  if (Bls()) {
    p = proof;
    const auto a = zt::NonSubgroupPoint<zkfleet::curve::Bls12_381G1>(rng);
    a.x.to_canonical(p.a.x.data());
    a.y.to_canonical(p.a.y.data());
    res = groth16::Verify(vk, pub, p);
    EXPECT_EQ(res.status, VerifyStatus::kBadProofPoint);
    EXPECT_NE(res.reason.find("subgroup"), std::string::npos) << res.reason;
  }

  // Bad keys.
  auto k = vk;
  k.ic.pop_back();
  EXPECT_EQ(status(k, pub, proof), VerifyStatus::kBadKey);
  k = vk;
  if (Bls()) {
    set_g2(k.gamma2, zt::NonSubgroupPoint<zkfleet::curve::Bls12_381G2>(rng));
  } else {
    set_g2(k.gamma2, zt::NonSubgroupPoint<zkfleet::curve::Bn254G2>(rng));
  }
  EXPECT_EQ(status(k, pub, proof), VerifyStatus::kBadKey);
  EXPECT_THROW(groth16::PreparedVerifier{k}, zkfleet::Error);
  k = vk;
  k.alpha1.y[0] ^= 1;
  EXPECT_EQ(status(k, pub, proof), VerifyStatus::kBadKey);
  EXPECT_THROW(groth16::PreparedVerifier{k}, zkfleet::Error);
  EXPECT_THROW(groth16::AlphaBeta(k), zkfleet::Error);
  k = vk;
  k.delta2.infinity = true;
  EXPECT_EQ(status(k, pub, proof), VerifyStatus::kBadKey);
  k = vk;
  k.delta2 = vk.gamma2;  // a valid key, for another circuit
  EXPECT_EQ(status(k, pub, proof), VerifyStatus::kInvalidProof);
}

TEST_P(VerifierTest, ReaderAcceptsWhatSnarkjsAccepts) {
  json p = json::parse(zt::ReadFile(Fx("proof.json")));
  auto hex = [](const json& dec) {
    const auto v = io::ParseBigIntString(dec.get<std::string>(), "x");
    std::string h;
    for (size_t i = v.size(); i-- > 0;) {
      char buf[17];
      std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v[i]));
      h += buf;
    }
    return "0x" + h;
  };
  p.erase("protocol");
  p.erase("curve");
  p["pi_a"] = json::array({hex(p["pi_a"][0]), hex(p["pi_a"][1])});  // 2 coordinates, hex
  p["pi_b"].erase(2);
  const auto proof = io::ParseProofJson(p.dump(), "proof");
  EXPECT_FALSE(proof.curve.has_value());
  EXPECT_TRUE(groth16::Verify(Vk(), Pub(), proof).ok());
  // JSON numbers and hex strings as signals.
  const auto s = io::ParsePublicSignalsJson(R"([1, "2", "0x3", "0X0a"])", "public");
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0][0], 1u);
  EXPECT_EQ(s[1][0], 2u);
  EXPECT_EQ(s[2][0], 3u);
  EXPECT_EQ(s[3][0], 10u);
}

// Random damage to real files: the readers return or throw zkfleet::Error,
// never anything else.
TEST_P(VerifierTest, MalformedJsonOnlyThrowsZkfleetError) {
  const std::string texts[3] = {zt::ReadFile(Fx("verification_key.json")), zt::ReadFile(Fx("proof.json")),
                                zt::ReadFile(Fx("public.json"))};
  const char* alphabet = "0123456789x[]{},:\"-. abnlufe";
  std::mt19937_64 rng(99);
  int threw = 0;
  for (int i = 0; i < 1500; ++i) {
    const int which = i % 3;
    std::string t = texts[which];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % t.size();
      switch (rng() % 4) {
        case 0: t[pos] = alphabet[rng() % 28]; break;
        case 1: t.erase(pos, 1 + rng() % 20); break;
        case 2: t = t.substr(0, pos) + alphabet[rng() % 28] + t.substr(pos); break;
        default: t.resize(pos); break;
      }
      if (t.empty()) t.push_back('x');
    }
    try {
      if (which == 0) io::ParseVerificationKeyJson(t, "vk");
      if (which == 1) io::ParseProofJson(t, "proof");
      if (which == 2) io::ParsePublicSignalsJson(t, "public");
    } catch (const zkfleet::Error& e) {
      ++threw;
      EXPECT_NE(std::string(e.what()), "");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a zkfleet::Error: " << e.what() << "\ninput: " << t;
    }
  }
  EXPECT_GT(threw, 500);
}

// A synthetic key with known discrete logs, so that a valid proof can be made
// for any public signals: IC_i = k_i·G1, alpha = a·G1, beta = b·G2,
// gamma = g·G2, delta = d·G2, A = x·G1, B = y·G2 and C = c·G1 with
// c = (xy - ab - g·(k_0 + sum s_i k_i)) / d. Exercises the MSM of both
// paths (4-bit one-shot and 8-bit prepared windows) with 70 full-size,
// zero, one and r-1 signals.
template <class C>
void SyntheticKeyTest(zkfleet::io::Curve curve_id) {
  using Fr = typename C::Fr;
  using G1 = typename C::G1;
  using G2 = typename C::G2;
  std::mt19937_64 rng(2024);
  auto g1 = [](const Fr& k) { return zt::Mul(G1::generator(), k); };
  auto g2 = [](const Fr& k) { return zt::Mul(G2::generator(), k); };
  auto big = [](const auto& f) {
    groth16::BigInt v{};
    f.to_canonical(v.data());
    return v;
  };
  auto set1 = [&](groth16::G1Point& out, const auto& p) {
    out.x = big(p.x);
    out.y = big(p.y);
  };
  auto set2 = [&](groth16::G2Point& out, const auto& p) {
    out.x0 = big(p.x.c0);
    out.x1 = big(p.x.c1);
    out.y0 = big(p.y.c0);
    out.y1 = big(p.y.c1);
  };
  const int n = 70;
  const Fr a = zt::RandomScalar<Fr>(rng), b = zt::RandomScalar<Fr>(rng), g = zt::RandomScalar<Fr>(rng),
           d = zt::RandomScalar<Fr>(rng), x = zt::RandomScalar<Fr>(rng), y = zt::RandomScalar<Fr>(rng);
  groth16::VerificationKey vk;
  vk.curve = curve_id;
  vk.n_public = n;
  set1(vk.alpha1, g1(a));
  set2(vk.beta2, g2(b));
  set2(vk.gamma2, g2(g));
  set2(vk.delta2, g2(d));
  std::vector<Fr> k(n + 1), sig(n);
  std::vector<groth16::BigInt> signals(n);
  Fr v = Fr::zero();
  for (int i = 0; i <= n; ++i) {
    k[i] = zt::RandomScalar<Fr>(rng);
    vk.ic.emplace_back();
    set1(vk.ic.back(), g1(k[i]));
    if (i == 0) {
      v = k[0];
      continue;
    }
    sig[i - 1] = i % 7 == 1 ? Fr::zero() : i % 7 == 2 ? Fr::one() : i % 7 == 3 ? Fr::zero() - Fr::one()
                                                                                 : zt::RandomScalar<Fr>(rng);
    signals[i - 1] = big(sig[i - 1]);
    v += sig[i - 1] * k[i];
  }
  const Fr c = (x * y - a * b - g * v) * d.inverse();
  groth16::Proof proof;
  set1(proof.a, g1(x));
  set2(proof.b, g2(y));
  set1(proof.c, g1(c));
  const groth16::PreparedVerifier prepared(vk);
  auto res = groth16::Verify(vk, signals, proof);
  EXPECT_TRUE(res.ok()) << res.reason;
  res = prepared.Verify(signals, proof);
  EXPECT_TRUE(res.ok()) << res.reason;
  for (int i : {0, 1, 2, 3, 40, n - 1}) {
    auto bad = signals;
    bad[i] = big(sig[i] + Fr::one());
    EXPECT_EQ(groth16::Verify(vk, bad, proof).status, VerifyStatus::kInvalidProof) << i;
    EXPECT_EQ(prepared.Verify(bad, proof).status, VerifyStatus::kInvalidProof) << i;
  }
}

TEST(SyntheticKey, Bn254ValidProofForManyPublicSignals) {
  SyntheticKeyTest<zkfleet::curve::Bn254>(zkfleet::io::Curve::kBn254);
}
TEST(SyntheticKey, Bls12_381ValidProofForManyPublicSignals) {
  SyntheticKeyTest<zkfleet::curve::Bls12_381>(zkfleet::io::Curve::kBls12_381);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VerifierTest, ::testing::Values("bn128_k12", "bls12381_k12"));

TEST(SnarkjsJsonReader, RejectsBadShapesWithClearMessages) {
  const std::vector<std::pair<std::string, std::string>> bad_proofs = {
      {"", "not valid JSON"},
      {"[]", "must be a JSON object"},
      {"{}", "missing \"pi_a\""},
      {R"({"pi_a": 5, "pi_b": [], "pi_c": []})", "pi_a must be a G1 point"},
      {R"({"pi_a": ["1","2","3"], "pi_b": [], "pi_c": []})", "third coordinate"},
      {R"({"pi_a": ["1","-2"], "pi_b": [], "pi_c": []})", "not a number"},
      {R"({"pi_a": ["1",2.5], "pi_b": [], "pi_c": []})", "must be a decimal string"},
      {R"({"pi_a": ["1","2"], "pi_b": [["1","2"],["3"]], "pi_c": ["1","2"]})", "Fq2 pair"},
      {R"({"pi_a": ["1","2"], "pi_b": [["1","2"],["3","4"]], "pi_c": ["1","2"], "curve": "bn256x"})",
       "unsupported curve"},
      {R"({"pi_a": ["1","2"], "pi_b": [["1","2"],["3","4"]], "pi_c": ["1","2"], "protocol": "plonk"})",
       "not groth16"},
      {R"({"pi_a": ["0x","2"], "pi_b": [["1","2"],["3","4"]], "pi_c": ["1","2"]})", "not a number"},
      {R"({"pi_a": [")" + std::string(120, '9') + R"(","2"], "pi_b": [["1","2"],["3","4"]], "pi_c": ["1","2"]})",
       "too large"},
  };
  for (const auto& [text, message] : bad_proofs) {
    try {
      io::ParseProofJson(text, "proof.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const zkfleet::Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("proof.json"), std::string::npos) << e.what();
    }
  }
  json vk = json::parse(zt::ReadFile(zt::Fixture("bn128_k12", "verification_key.json")));
  vk["nPublic"] = 3;
  EXPECT_THROW(io::ParseVerificationKeyJson(vk.dump(), "vk"), zkfleet::Error);
  vk["nPublic"] = 2;
  vk["curve"] = "BLS12-381";
  EXPECT_EQ(io::ParseVerificationKeyJson(vk.dump(), "vk").curve, zkfleet::io::Curve::kBls12_381);
  vk["curve"] = "alt_bn128";
  EXPECT_EQ(io::ParseVerificationKeyJson(vk.dump(), "vk").curve, zkfleet::io::Curve::kBn254);
  vk.erase("IC");
  EXPECT_THROW(io::ParseVerificationKeyJson(vk.dump(), "vk"), zkfleet::Error);
  EXPECT_THROW(io::ParsePublicSignalsJson("{\"a\": 1}", "public"), zkfleet::Error);
  EXPECT_THROW(io::ParsePublicSignalsJson("[-1]", "public"), zkfleet::Error);
  EXPECT_THROW(io::ReadProofJson("/nonexistent/proof.json"), zkfleet::Error);
}

}  // namespace
