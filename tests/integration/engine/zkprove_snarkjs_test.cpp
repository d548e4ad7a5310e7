// zkprove against the reference peer: every bundled fixture proves and
// snarkjs verifies it; with r and s forced, our proof equals snarkjs's byte
// for byte; a witness with a wrong value is refused (zkprove verifies before
// writing), and with --verify off yields a proof snarkjs rejects.
#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "testutil/test_support.hpp"
#include "zkfleet/engine/proving_key.hpp"

namespace zkfleet {
namespace {

using testing::Fixture;
using testing::Quote;
using testing::RunCommand;
using testing::TempDir;

const char* kFixtures[] = {"bn128_k12", "bls12381_k12"};

std::string Zkprove() { return std::string(ZKFLEET_BINARY_DIR) + "/cmd/zkprove/zkprove"; }

class ZkproveSnarkjs : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ASSERT_TRUE(testing::RequireSnarkjs()); }
};

TEST_P(ZkproveSnarkjs, ProofVerifiesAndPublicSignalsMatch) {
  TempDir dir;
  const std::string fx = GetParam();
  auto run = RunCommand(Quote(Zkprove()) + " " + Fixture(fx, "circuit_final.zkey") + " " + Fixture(fx, "witness.wtns") +
                        " " + dir.file("proof.json") + " " + dir.file("public.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(testing::ReadFile(dir.file("public.json")), testing::ReadFile(Fixture(fx, "public.json")));
  std::string out;
  EXPECT_TRUE(testing::SnarkjsVerify(Fixture(fx, "verification_key.json"), dir.file("public.json"),
                                     dir.file("proof.json"), &out))
      << out;
}

// Same r and s as snarkjs (forced through its RNG): identical proof.json.
TEST_P(ZkproveSnarkjs, BitExactWithSnarkjsForSameBlinding) {
  TempDir dir;
  const std::string fx = GetParam();
  const std::string curve = fx.substr(0, fx.find('_'));
  const uint64_t r_value = 0x1234567890abcdefULL, s_value = 0x0fedcba987654321ULL;
  auto run = RunCommand("node " + Quote(std::string(ZKFLEET_SOURCE_DIR) + "/tests/tools/snarkjs_prove_forced.mjs") + " " +
                        curve + " " + Fixture(fx, "circuit_final.zkey") + " " + Fixture(fx, "witness.wtns") + " " +
                        std::to_string(r_value) + " " + std::to_string(s_value) + " " + dir.file("snarkjs.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  auto key = engine::ProvingKey::Load(Fixture(fx, "circuit_final.zkey"), {engine::Backend::kCpu});
  engine::ProveOptions options;
  options.r = std::array<uint8_t, 32>{};
  options.s = std::array<uint8_t, 32>{};
  std::memcpy(options.r->data(), &r_value, 8);
  std::memcpy(options.s->data(), &s_value, 8);
  engine::Proof proof = key->Prove(engine::Witness::FromFile(Fixture(fx, "witness.wtns")), options);
  EXPECT_EQ(proof.proof_json, testing::ReadFile(dir.file("snarkjs.json")));
}

// A witness whose values were tampered with still has the right shape, so a
// proof comes out of the prover (as with snarkjs), but zkprove verifies before
// writing: exit 1, the line "witness does not satisfy circuit <zkey stem>",
// no output files. With --verify off (benchmarks) the proof is written and
// snarkjs rejects it -- the check, not the input, is what refuses it.
TEST_P(ZkproveSnarkjs, TamperedWitnessIsRefusedAndNothingIsWritten) {
  TempDir dir;
  const std::string fx = GetParam();
  std::string wtns = testing::ReadFile(Fixture(fx, "witness.wtns"));
  // Change the last private signal by flipping its lowest bit.
  wtns[wtns.size() - 32] ^= 1;
  testing::WriteFile(dir.file("bad.wtns"), wtns);
  const std::string args = Fixture(fx, "circuit_final.zkey") + " " + dir.file("bad.wtns") + " " +
                           dir.file("proof.json") + " " + dir.file("public.json");
  auto run = RunCommand(Quote(Zkprove()) + " " + args);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output.rfind("zkprove: error: witness does not satisfy circuit circuit_final", 0), 0u) << run.output;
  EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("proof.json")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("public.json")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("proof.json.tmp")));

  run = RunCommand(Quote(Zkprove()) + " --verify off " + args);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Same public signals: only the proof can make the verifier say no.
  EXPECT_EQ(testing::ReadFile(dir.file("public.json")), testing::ReadFile(Fixture(fx, "public.json")));
  EXPECT_TRUE(testing::SnarkjsRejects(Fixture(fx, "verification_key.json"), dir.file("public.json"),
                                      dir.file("proof.json")));
}

// Fault injection (test-only ZKFLEET_FAULT_INJECT=msm:1 corrupts pi_a's MSM
// result in the next proof): unchecked, the corrupt proof is written and
// snarkjs rejects it; checked (the default), zkprove notices, proves again on
// the CPU reference path, writes that proof (snarkjs accepts it), exits 0 and
// warns about the engine fault.
TEST_P(ZkproveSnarkjs, InjectedMsmFaultIsCaughtAndReproved) {
  TempDir dir;
  const std::string fx = GetParam();
  const std::string args = Fixture(fx, "circuit_final.zkey") + " " + Fixture(fx, "witness.wtns") + " " +
                           dir.file("proof.json") + " " + dir.file("public.json");
  auto run = RunCommand("ZKFLEET_FAULT_INJECT=msm:1 " + Quote(Zkprove()) + " --backend cpu --verify off " + args);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(testing::SnarkjsRejects(Fixture(fx, "verification_key.json"), dir.file("public.json"),
                                      dir.file("proof.json")))
      << "the injected fault did not corrupt the proof";

  run = RunCommand("ZKFLEET_FAULT_INJECT=msm:1 " + Quote(Zkprove()) + " --backend cpu " + args);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("zkprove: warning: engine fault on backend cpu"), std::string::npos) << run.output;
  std::string out;
  EXPECT_TRUE(testing::SnarkjsVerify(Fixture(fx, "verification_key.json"), dir.file("public.json"),
                                     dir.file("proof.json"), &out))
      << out;

  run = RunCommand("ZKFLEET_FAULT_INJECT=bogus " + Quote(Zkprove()) + " --backend cpu " + args);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("ZKFLEET_FAULT_INJECT"), std::string::npos) << run.output;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ZkproveSnarkjs, ::testing::ValuesIn(kFixtures));

}  // namespace
}  // namespace zkfleet

namespace zkfleet {
namespace {

// The developers' full fixture set (../shared/fixtures beside the checkout:
// 2^12 and 2^14 circuits for both curves) when it is there.
TEST(SharedFixtures, EveryFixtureProvesAndVerifies) {
  const std::filesystem::path shared = std::filesystem::path(ZKFLEET_SOURCE_DIR) / ".." / "shared" / "fixtures";
  if (!std::filesystem::exists(shared)) GTEST_SKIP() << "no " << shared << " on this machine (only on developers' hosts)";
  ASSERT_TRUE(testing::RequireSnarkjs());
  int proved = 0;
  for (const auto& entry : std::filesystem::directory_iterator(shared)) {
    const auto zkey = entry.path() / "circuit_final.zkey";
    if (!std::filesystem::exists(zkey)) continue;
    SCOPED_TRACE(entry.path().string());
    testing::TempDir dir;
    auto run = testing::RunCommand(testing::Quote(Zkprove()) + " " + zkey.string() + " " +
                                   (entry.path() / "witness.wtns").string() + " " + dir.file("proof.json") + " " +
                                   dir.file("public.json"));
    ASSERT_EQ(run.exit_code, 0) << run.output;
    std::string out;
    EXPECT_TRUE(testing::SnarkjsVerify((entry.path() / "verification_key.json").string(), dir.file("public.json"),
                                       dir.file("proof.json"), &out))
        << out;
    ++proved;
  }
  EXPECT_GT(proved, 0);
}

}  // namespace
}  // namespace zkfleet
