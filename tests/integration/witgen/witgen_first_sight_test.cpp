// A circuit never seen: node answers at once while the native build runs behind it; zkprove's wtns and fullprove.
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "witgen_test_support.hpp"

namespace zkfleet {
namespace {

// ---------------------------------------------------------------- first sight

// A circuit never seen, answered through node at once (the default), in a
// cache of its own so that nothing was built before.
witgen::WitnessGeneratorOptions FirstSightOptions(const fs::path& cache) {
  witgen::WitnessGeneratorOptions o = Options();
  o.first_sight = witgen::WitnessGeneratorOptions::FirstSight::kInterpretWhileBuilding;
  o.cache_dir = cache;
  return o;
}

class WitgenFirstSight : public ::testing::TestWithParam<Fixture> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::RequireSnarkjs());
    ASSERT_TRUE(testing::RequireOnPath("node"));
    ASSERT_TRUE(testing::RequireOnPath("prlimit"));
  }
};

// Every fixture, both curves: node answers before any compiler has run, with
// snarkjs's bytes and snarkjs's refusals (the build behind is cancelled when
// the generator goes: the native tier has the tests above).
TEST_P(WitgenFirstSight, NodeAnswersAtOnceWithSnarkjsBytesAndRefusals) {
  const Fixture& f = GetParam();
  const std::string input = testing::ReadFile(f.input.string());
  std::string why;
  const std::string expected = SnarkjsWitness(f.wasm, input, &why);
  ASSERT_FALSE(expected.empty()) << "snarkjs refused the fixture's input: " << why;
  TempDir cache;
  auto gen = WitnessGenerator::Load(f.wasm, FirstSightOptions(cache.path()));
  ASSERT_EQ(gen->tier(), GeneratorTier::kNode) << "a circuit never seen is answered through node";
  EXPECT_FALSE(gen->info().native_field);
  Ours ours = Generate(*gen, input);
  ASSERT_TRUE(ours.result.ok()) << GenerationStatusName(ours.result.status) << ": " << ours.result.error;
  EXPECT_EQ(ours.result.tier, GeneratorTier::kNode);
  EXPECT_TRUE(ours.wtns == expected) << "node's witness differs from snarkjs's";
  if (!f.input_fail.empty()) {
    Ours failed = Generate(*gen, testing::ReadFile(f.input_fail.string()));
    EXPECT_EQ(failed.result.status, GenerationStatus::kCircuitError) << failed.result.error;
    EXPECT_NE(failed.result.error.find("Assert Failed"), std::string::npos) << failed.result.error;
    EXPECT_NE(failed.result.error.find("line"), std::string::npos) << "circom's 'Error in template ... line: N'";
  }
  // An input the circuit does not have (circom 2.2's wasm gives it size 0:
  // "Too many values for input signal no_such_signal", as snarkjs says), and
  // one of its inputs left out.
  Ours unknown = Generate(*gen, "{\"no_such_signal\": 1}");
  EXPECT_EQ(unknown.result.status, GenerationStatus::kBadInput) << unknown.result.error;
  EXPECT_NE(unknown.result.error.find("input signal no_such_signal"), std::string::npos) << unknown.result.error;
  Ours none = Generate(*gen, "{}");
  EXPECT_EQ(none.result.status, GenerationStatus::kBadInput) << none.result.error;
  EXPECT_NE(none.result.error.find("Not all inputs have been set"), std::string::npos) << none.result.error;
}

INSTANTIATE_TEST_SUITE_P(Circuits, WitgenFirstSight, ::testing::ValuesIn(Fixtures()), FixtureName);

// The build behind the first sight ends, the native generator takes over
// (same bytes), and the next Load finds it in the cache.
TEST(WitgenFirstSightBuild, TheNativeGeneratorTakesOverOnceBuilt) {
  ASSERT_TRUE(testing::RequireSnarkjs());
  ASSERT_TRUE(testing::RequireCircom2());
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  ASSERT_TRUE(testing::RequireOnPath("node"));
  const fs::path wasm = EchoWasm("bn128");
  ASSERT_FALSE(wasm.empty());
  const std::string input = EchoInput(std::vector<std::string>(12, "\"7\""));
  const std::string expected = SnarkjsWitness(wasm, input);
  TempDir cache;
  auto options = FirstSightOptions(cache.path());
  std::promise<std::string> built;
  options.on_built = [&built](const std::string& error) { built.set_value(error); };
  auto gen = WitnessGenerator::Load(wasm, options);
  ASSERT_EQ(gen->tier(), GeneratorTier::kNode);
  Ours first = Generate(*gen, input);
  ASSERT_TRUE(first.result.ok()) << first.result.error;
  EXPECT_TRUE(first.wtns == expected);
  ASSERT_TRUE(gen->WaitForNative());
  EXPECT_EQ(built.get_future().get(), "") << "on_built reports the build's end";
  EXPECT_EQ(gen->tier(), GeneratorTier::kNative);
  EXPECT_TRUE(gen->info().native_field);
  Ours second = Generate(*gen, input);
  ASSERT_TRUE(second.result.ok()) << second.result.error;
  EXPECT_EQ(second.result.tier, GeneratorTier::kNative);
  EXPECT_TRUE(second.wtns == expected);
  auto again = WitnessGenerator::Load(wasm, FirstSightOptions(cache.path()));
  EXPECT_EQ(again->tier(), GeneratorTier::kNative);
  EXPECT_TRUE(again->info().from_cache);
}

// A build that fails (here: no wasm2c) leaves node answering, never "no
// witness", and says why.
TEST(WitgenFirstSightBuild, AFailedBuildLeavesNodeAnswering) {
  ASSERT_TRUE(testing::RequireSnarkjs());
  ASSERT_TRUE(testing::RequireOnPath("node"));
  const Fixture f = Fixtures().front();
  TempDir cache;
  auto options = FirstSightOptions(cache.path());
  options.wasm2c = "/nonexistent/wasm2c";
  std::promise<std::string> built;
  options.on_built = [&built](const std::string& error) { built.set_value(error); };
  auto gen = WitnessGenerator::Load(f.wasm, options);
  EXPECT_FALSE(gen->WaitForNative());
  const std::string why = built.get_future().get();
  EXPECT_NE(why.find("wasm2c"), std::string::npos) << why;
  EXPECT_EQ(gen->tier(), GeneratorTier::kNode);
  const std::string input = testing::ReadFile(f.input.string());
  Ours ours = Generate(*gen, input);
  ASSERT_TRUE(ours.result.ok()) << ours.result.error;
  EXPECT_EQ(ours.result.tier, GeneratorTier::kNode);
  EXPECT_TRUE(ours.wtns == SnarkjsWitness(f.wasm, input));
}

// The limits hold on node as on the native generator: prlimit's CPU time
// kills a looping circuit; a cancel kills it at once.
TEST(WitgenFirstSightBuild, NodeIsKilledAtItsCpuLimitAndOnCancel) {
  ASSERT_TRUE(testing::RequireOnPath("node"));
  TempDir cache;
  auto options = FirstSightOptions(cache.path());
  options.limits.cpu_seconds = 2;
  auto looping = WitnessGenerator::Load(kFixtures / "hostile" / "loop.wasm", options);
  ASSERT_EQ(looping->tier(), GeneratorTier::kNode);
  Ours ours = Generate(*looping, "{\"a\": \"1\"}");
  EXPECT_EQ(ours.result.status, GenerationStatus::kLimit) << ours.result.error;
  EXPECT_NE(ours.result.error.find("CPU"), std::string::npos) << ours.result.error;
  std::atomic<bool> cancel{false};
  const auto started = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] { return Generate(*looping, "{\"a\": \"1\"}", &cancel); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  cancel = true;
  EXPECT_EQ(run.get().result.status, GenerationStatus::kCancelled);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5 * testing::TimeScale());
}

// ---------------------------------------------------------------- zkprove

// A one-shot zkprove at first sight: node answers, the `zkprove wtns build`
// it leaves behind fills the cache, and the next call is native.
TEST(WitgenZkprove, FirstSightAnswersThroughNodeAndLeavesTheNativeBuildBehind) {
  ASSERT_TRUE(testing::RequireSnarkjs());
  ASSERT_TRUE(testing::RequireCircom2());
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  ASSERT_TRUE(testing::RequireOnPath("node"));
  const fs::path wasm = EchoWasm("bls12381");
  ASSERT_FALSE(wasm.empty());
  TempDir dir, cache;
  fs::permissions(cache.path(), fs::perms::owner_all, fs::perm_options::replace);
  testing::WriteFile(dir.file("input.json"), EchoInput(std::vector<std::string>(12, "\"5\"")));
  const std::string expected = SnarkjsWitness(wasm, testing::ReadFile(dir.file("input.json")));
  const std::string calc = "ZKFLEET_WITGEN_CACHE=" + Quote(cache.path().string()) + " " +
                           Quote(std::string(ZKFLEET_BINARY_DIR) + "/cmd/zkprove/zkprove") + " wtns calculate " +
                           Quote(wasm.string()) + " " + Quote(dir.file("input.json")) + " --timings ";
  auto first = RunCommand(calc + Quote(dir.file("first.wtns")));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("by the node tier"), std::string::npos) << first.output;
  EXPECT_TRUE(testing::ReadFile(dir.file("first.wtns")) == expected);
  // The build left behind: its entry appears in the cache.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(120 * testing::TimeScale());
  auto built = [&] {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(cache.path(), ec)) {
      if (entry.path().filename().string()[0] != '.' && fs::exists(entry.path() / "generator")) return true;
    }
    return false;
  };
  while (!built() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(built()) << "no native generator in the cache after the first sight";
  auto second = RunCommand(calc + Quote(dir.file("second.wtns")));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("by the native tier"), std::string::npos) << second.output;
  EXPECT_TRUE(testing::ReadFile(dir.file("second.wtns")) == expected);
}

TEST(WitgenZkprove, FullproveWritesAProofSnarkjsAcceptsAndBadInputExitsTwo) {
  ASSERT_TRUE(testing::RequireSnarkjs());
  ASSERT_TRUE(testing::RequireCircom2());
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  const fs::path wasm = EchoWasm("bn128");
  ASSERT_FALSE(wasm.empty());
  const fs::path r1cs = wasm.parent_path().parent_path() / "echo.r1cs";
  TempDir dir;
  const std::string bin = std::string(ZKFLEET_BINARY_DIR) + "/cmd/";
  const std::string env = "ZKFLEET_WITGEN_CACHE=" + Quote(kCache.string()) + " ";
  auto setup = RunCommand(Quote(bin + "zkfleet-dev/zkfleet-dev") + " setup " + Quote(r1cs.string()) + " " +
                          Quote(dir.file("echo.zkey")) + " --insecure");
  ASSERT_EQ(setup.exit_code, 0) << setup.output;
  auto vk = RunCommand(Quote(bin + "zkprove/zkprove") + " export-vk " + Quote(dir.file("echo.zkey")) + " " +
                       Quote(dir.file("vk.json")));
  ASSERT_EQ(vk.exit_code, 0) << vk.output;
  testing::WriteFile(dir.file("input.json"), EchoInput(std::vector<std::string>(12, "\"-3\"")));
  auto prove = RunCommand(env + Quote(bin + "zkprove/zkprove") + " fullprove " + Quote(dir.file("input.json")) + " " +
                          Quote(wasm.string()) + " " + Quote(dir.file("echo.zkey")) + " " + Quote(dir.file("proof.json")) +
                          " " + Quote(dir.file("public.json")) + " --backend cpu");
  ASSERT_EQ(prove.exit_code, 0) << prove.output;
  std::string out;
  EXPECT_TRUE(testing::SnarkjsVerify(dir.file("vk.json"), dir.file("public.json"), dir.file("proof.json"), &out)) << out;

  // wtns calculate: the same bytes as snarkjs; a bad input exits 2, names the signal, writes nothing.
  auto calc = RunCommand(env + Quote(bin + "zkprove/zkprove") + " wtns calculate " + Quote(wasm.string()) + " " +
                         Quote(dir.file("input.json")) + " " + Quote(dir.file("w.wtns")));
  ASSERT_EQ(calc.exit_code, 0) << calc.output;
  EXPECT_TRUE(testing::ReadFile(dir.file("w.wtns")) == SnarkjsWitness(wasm, testing::ReadFile(dir.file("input.json"))));
  testing::WriteFile(dir.file("bad.json"), EchoInput(std::vector<std::string>(11, "1")));
  auto bad = RunCommand(env + Quote(bin + "zkprove/zkprove") + " wtns calculate " + Quote(wasm.string()) + " " +
                        Quote(dir.file("bad.json")) + " " + Quote(dir.file("bad.wtns")));
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("Not enough values for input signal in"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(dir.file("bad.wtns")));
}

}  // namespace
}  // namespace zkfleet
