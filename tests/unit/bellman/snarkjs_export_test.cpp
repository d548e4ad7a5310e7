// `snarkjs zkey export bellman` against the bellman readers: the exported
// file of the BLS12-381 fixture key must hold the zkey's own points.
//
// What snarkjs 0.7 writes (src/zkey_export_bellman.js) and how it differs
// from a bellperson .params:
//   * the layout is phase2's MPCParameters, not a bare .params: the .params
//     body, then the 64-byte cs_hash, a u32 count and the contributions, so
//     ReadParameters reports trailing bytes and ReadMpcParameters reads it;
//   * a, b_g1, b_g2 hold one point per variable (n_vars each, zkey sections
//     5-7 as they are), points at infinity included, where bellperson keeps
//     only the variables with A- or B-density (inputs always in a);
//   * those points at infinity are 96 (192) zero bytes without the infinity
//     flag (ffjavascript's batchLEMtoU), which the zcash decoders and
//     bellperson refuse: reading needs ReadOptions::zero_is_infinity;
//   * h is n - 1 points, l and ic as bellperson's (zkey sections 8 and 3).
#include <gtest/gtest.h>

#include <cstring>

#include "bellman_test_util.hpp"
#include "testutil/test_support.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::bellman {
namespace {

using namespace testing;
using zkfleet::testing::Quote;
using zkfleet::testing::RunCommand;
using zkfleet::testing::TempDir;

const std::string kFixture = std::string(ZKFLEET_FIXTURES_DIR) + "/bls12381_k12";

// The zkey's encodings: little-endian Montgomery limbs, x ‖ y, G2 c0 before
// c1, all zero = infinity (which is also our in-memory infinity).
Fq ZkeyFq(const uint8_t* p) {
  uint64_t limbs[6];
  std::memcpy(limbs, p, sizeof limbs);
  return Fq::from_mont(limbs);
}
G1Affine ZkeyG1(const uint8_t* p) { return G1Affine{ZkeyFq(p), ZkeyFq(p + 48)}; }
G2Affine ZkeyG2(const uint8_t* p) {
  return G2Affine{Fq2{ZkeyFq(p), ZkeyFq(p + 48)}, Fq2{ZkeyFq(p + 96), ZkeyFq(p + 144)}};
}
std::vector<G1Affine> ZkeyG1s(const io::PointArray& a) {
  std::vector<G1Affine> out;
  for (uint64_t i = 0; i < a.count; ++i) out.push_back(ZkeyG1(a.data + 96 * i));
  return out;
}
std::vector<G2Affine> ZkeyG2s(const io::PointArray& a) {
  std::vector<G2Affine> out;
  for (uint64_t i = 0; i < a.count; ++i) out.push_back(ZkeyG2(a.data + 192 * i));
  return out;
}

class SnarkjsExportBellman : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
    exported_ = dir_.file("circuit.params");
    const auto r = RunCommand(Quote(zkfleet::testing::SnarkjsPath()) + " zkey export bellman " +
                              Quote(kFixture + "/circuit_final.zkey") + " " + Quote(exported_));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  ThreadPool pool_{2};
  TempDir dir_;
  std::string exported_;
};

TEST_F(SnarkjsExportBellman, HoldsTheZkeysPoints) {
  const MpcParameters mpc = ReadMpcParameters(exported_, pool_, {.zero_is_infinity = true});
  const Parameters& p = mpc.params;
  const io::ZkeyFile zkey = io::ZkeyFile::Open(kFixture + "/circuit_final.zkey");

  EXPECT_TRUE(SamePoint(p.vk.alpha_g1, ZkeyG1(zkey.alpha1())));
  EXPECT_TRUE(SamePoint(p.vk.beta_g1, ZkeyG1(zkey.beta1())));
  EXPECT_TRUE(SamePoint(p.vk.beta_g2, ZkeyG2(zkey.beta2())));
  EXPECT_TRUE(SamePoint(p.vk.gamma_g2, ZkeyG2(zkey.gamma2())));
  EXPECT_TRUE(SamePoint(p.vk.delta_g1, ZkeyG1(zkey.delta1())));
  EXPECT_TRUE(SamePoint(p.vk.delta_g2, ZkeyG2(zkey.delta2())));
  EXPECT_TRUE(SamePoints(p.vk.ic, ZkeyG1s(zkey.ic())));
  EXPECT_TRUE(SamePoints(p.l, ZkeyG1s(zkey.c())));
  EXPECT_TRUE(SamePoints(p.a, ZkeyG1s(zkey.a())));
  EXPECT_TRUE(SamePoints(p.b_g1, ZkeyG1s(zkey.b1())));
  EXPECT_TRUE(SamePoints(p.b_g2, ZkeyG2s(zkey.b2())));
  EXPECT_EQ(p.h.size(), zkey.domain_size() - 1);
  EXPECT_EQ(p.a.size(), zkey.n_vars());  // one per variable, unlike bellperson
  EXPECT_EQ(p.vk.ic.size(), zkey.n_public() + 1u);

  // The MPC tail: the zkey's contributions (section 10) carried over.
  EXPECT_GE(mpc.contributions.size(), 1u);
  for (const MpcContribution& c : mpc.contributions) {
    EXPECT_FALSE(c.delta_after.is_infinity());
    EXPECT_FALSE(c.r_delta.is_infinity());
  }
  EXPECT_TRUE(SamePoint(mpc.contributions.back().delta_after, p.vk.delta_g1));

  // The differences from a bellperson .params, each pinned (one export per
  // test: it takes seconds).
  // Not a bare .params: the MPC tail follows b_g2.
  try {
    ReadParameters(exported_, pool_, {.zero_is_infinity = true});
    ADD_FAILURE() << "read as a bare .params";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trailing bytes after b_g2"), std::string::npos) << e.what();
  }
  // Points at infinity as zero bytes, refused by the zcash decoding: the
  // first is a[164] in this key (a variable in no A term).
  EXPECT_TRUE(p.a[164].is_infinity());
  try {
    ReadMpcParameters(exported_, pool_);
    ADD_FAILURE() << "zero bytes accepted as a point";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), exported_ + ": a[164]: not on the curve");
  }
}

TEST_F(SnarkjsExportBellman, VerifyingKeyMatchesVerificationKeyJson) {
  const MpcParameters mpc = ReadMpcParameters(exported_, pool_, {.zero_is_infinity = true});
  const engine::VerificationKey ours = ToEngineKey(mpc.params.vk);
  const engine::VerificationKey json = engine::ReadVerificationKeyJson(kFixture + "/verification_key.json");
  EXPECT_EQ(ours.curve, json.curve);
  EXPECT_EQ(ours.n_public, json.n_public);
  EXPECT_TRUE(SameG1(ours.alpha1, json.alpha1));
  EXPECT_TRUE(SameG2(ours.beta2, json.beta2));
  EXPECT_TRUE(SameG2(ours.gamma2, json.gamma2));
  EXPECT_TRUE(SameG2(ours.delta2, json.delta2));
  ASSERT_EQ(ours.ic.size(), json.ic.size());
  for (size_t i = 0; i < ours.ic.size(); ++i) EXPECT_TRUE(SameG1(ours.ic[i], json.ic[i])) << i;

  // And the fixture's snarkjs proof verifies against the converted key (the
  // bellman and snarkjs equations are the same).
  const engine::ProofPoints proof = engine::ReadProofJson(kFixture + "/proof.json");
  const std::vector<engine::BigInt> inputs = engine::ReadPublicSignalsJson(kFixture + "/public.json");
  const engine::VerifyResult result = engine::Verify(ours, inputs, proof);
  EXPECT_TRUE(result.ok()) << result.reason;
  // Through bellman's proof encoding as well.
  const engine::VerifyResult again = engine::Verify(ours, inputs, DecodeProof(EncodeProof(proof), "proof"));
  EXPECT_TRUE(again.ok()) << again.reason;
}

}  // namespace
}  // namespace zkfleet::bellman
