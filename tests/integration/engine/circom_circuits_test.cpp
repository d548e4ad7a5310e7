// Circuits the test makes itself with circom2 + snarkjs (a power-8 ptau,
// groth16 setup, one contribution), proved by zkprove with random, all-zero
// and all-one inputs, for both curves; snarkjs must verify every proof.
#include <filesystem>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "testutil/test_support.hpp"

namespace zkfleet {
namespace {

using testing::Quote;
using testing::RunCommand;
using testing::TempDir;

// Multiplications mixing private inputs, a public input and a bit
// decomposition, so witnesses hold many 0/1 values and the A, B and C
// linear combinations all carry several terms.
constexpr const char* kCircuit = R"(pragma circom 2.0.0;
template Mix(N) {
    signal input x[N];
    signal input k;
    signal output out;
    signal sq[N];
    signal acc[N + 1];
    signal bits[8];
    var lc = 0;
    for (var i = 0; i < 8; i++) {
        bits[i] <-- (k >> i) & 1;
        bits[i] * (bits[i] - 1) === 0;
        lc += bits[i] * (1 << i);
    }
    acc[0] <== lc + 1;
    for (var i = 0; i < N; i++) {
        sq[i] <== (x[i] + k) * (x[i] - 3 * k + 7);
        acc[i + 1] <== acc[i] * sq[i] + x[i];
    }
    out <== acc[N];
}
component main {public [k]} = Mix(40);
)";

std::string Bin(const std::string& tool) { return Quote(std::string(ZKFLEET_NODE_BIN) + "/" + tool); }

// A command that must succeed; the caller asserts on the result, so a
// failure stops the test (an ASSERT in a void helper would only leave the
// helper, and the test would go on with missing files).
::testing::AssertionResult Ran(const std::string& cmd) {
  auto r = RunCommand(cmd);
  if (r.exit_code == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "exit " << r.exit_code << ": " << cmd << "\n" << r.output;
}

class CircomCircuits : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::RequireSnarkjs());
    ASSERT_TRUE(testing::RequireCircom2());
  }
};

TEST_P(CircomCircuits, ProofsVerifyForRandomZeroAndOneInputs) {
  const std::string curve = GetParam();
  TempDir dir;
  const std::string d = dir.path().string();
  testing::WriteFile(dir.file("mix.circom"), kCircuit);
  const std::string snarkjs = Bin("snarkjs");
  ASSERT_TRUE(Ran("cd " + Quote(d) + " && " + Bin("circom2") + " mix.circom --r1cs --wasm --prime " + curve + " -o ."));
  ASSERT_TRUE(Ran(snarkjs + " powersoftau new " + curve + " 8 " + d + "/p0.ptau"));
  ASSERT_TRUE(Ran(snarkjs + " powersoftau contribute " + d + "/p0.ptau " + d + "/p1.ptau --name=t -e=zkfleet-test"));
  ASSERT_TRUE(Ran(snarkjs + " powersoftau prepare phase2 " + d + "/p1.ptau " + d + "/p.ptau"));
  ASSERT_TRUE(Ran(snarkjs + " groth16 setup " + d + "/mix.r1cs " + d + "/p.ptau " + d + "/m0.zkey"));
  ASSERT_TRUE(Ran(snarkjs + " zkey contribute " + d + "/m0.zkey " + d + "/m.zkey --name=t -e=zkfleet-test2"));
  ASSERT_TRUE(Ran(snarkjs + " zkey export verificationkey " + d + "/m.zkey " + d + "/vk.json"));

  std::mt19937_64 rng(42);
  auto input = [&](const std::string& mode) {
    std::string s = "{\"k\": \"" + std::string(mode == "zero" ? "0" : mode == "one" ? "1" : std::to_string(rng() % 256)) +
                    "\", \"x\": [";
    for (int i = 0; i < 40; ++i) {
      std::string v = mode == "zero" ? "0" : mode == "one" ? "1" : std::to_string(rng()) + std::to_string(rng());
      s += (i ? ", \"" : "\"") + v + "\"";
    }
    return s + "]}";
  };
  for (const std::string mode : {"random", "zero", "one", "random"}) {
    SCOPED_TRACE(curve + " inputs: " + mode);
    testing::WriteFile(dir.file("in.json"), input(mode));
    std::filesystem::remove(dir.file("proof.json"));  // no stale proof from the previous round
    ASSERT_TRUE(Ran(snarkjs + " wtns calculate " + d + "/mix_js/mix.wasm " + d + "/in.json " + d + "/w.wtns"));
    ASSERT_TRUE(Ran(Quote(std::string(ZKFLEET_BINARY_DIR) + "/cmd/zkprove/zkprove") + " " + d + "/m.zkey " + d + "/w.wtns " + d +
            "/proof.json " + d + "/public.json"));
    std::string out;
    EXPECT_TRUE(testing::SnarkjsVerify(dir.file("vk.json"), dir.file("public.json"), dir.file("proof.json"), &out)) << out;
  }
}

INSTANTIATE_TEST_SUITE_P(Curves, CircomCircuits, ::testing::Values("bn128", "bls12381"));

}  // namespace
}  // namespace zkfleet
