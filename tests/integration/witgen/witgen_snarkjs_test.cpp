// Witness generation (engine/witness_generator.hpp) against snarkjs: every
// witness must be the bytes `snarkjs wtns calculate` writes, for the
// fixture circuits of tests/fixtures/witgen on both curves, with the native
// field code and without it; inputs snarkjs refuses are refused, naming the
// signal; hostile generators (an endless loop, endless memory growth) are
// stopped at their limits while other witnesses are still computed.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <algorithm>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/witness_generator.hpp"
#include "zkfleet/witgen/child_process.hpp"
#include "zkfleet/witgen/generator_build.hpp"

namespace zkfleet {
namespace {

namespace fs = std::filesystem;
using engine::GenerationStatus;
using engine::GeneratorTier;
using engine::WitnessGenerator;
using testing::Quote;
using testing::RunCommand;
using testing::TempDir;

const fs::path kFixtures = fs::path(ZKFLEET_FIXTURES_DIR) / "witgen";
// Compiled generators are keyed by content, so every test process (and
// every build of the tree) may share them.
const fs::path kCache = fs::path(ZKFLEET_SOURCE_DIR) / "build" / ".witgen-test-cache";

// The native generator, built before Load returns (the first-sight tier has
// tests of its own: WitgenFirstSight).
engine::WitnessGeneratorOptions Options(bool native = true) {
  engine::WitnessGeneratorOptions o;
  o.first_sight = engine::WitnessGeneratorOptions::FirstSight::kWaitForBuild;
  o.cache_dir = kCache;
  o.native_field = native;
  o.limits.cpu_seconds = 120;
  o.limits.memory_bytes = 4ull << 30;
  o.limits.wall_seconds = 300;
  return o;
}

std::string Snarkjs() { return Quote(std::string(ZKFLEET_NODE_BIN) + "/snarkjs"); }

// snarkjs's witness, or "" (with its output in *why) when it refused.
std::string SnarkjsWitness(const fs::path& wasm, const std::string& input_json, std::string* why = nullptr) {
  TempDir dir;
  testing::WriteFile(dir.file("input.json"), input_json);
  auto r = RunCommand(Snarkjs() + " wtns calculate " + Quote(wasm.string()) + " " + Quote(dir.file("input.json")) + " " +
                      Quote(dir.file("w.wtns")));
  if (why) *why = r.output;
  if (r.exit_code != 0) return "";
  return testing::ReadFile(dir.file("w.wtns"));
}

struct Ours {
  engine::GenerationResult result;
  std::string wtns;
};

Ours Generate(const WitnessGenerator& gen, const std::string& input_json, const std::atomic<bool>* cancel = nullptr) {
  std::vector<uint8_t> out(gen.wtns_bytes());
  Ours ours;
  ours.result = gen.Generate(input_json, out, cancel);
  if (ours.result.ok()) ours.wtns.assign(reinterpret_cast<const char*>(out.data()), out.size());
  return ours;
}

// A circuit whose witness holds its inputs as they were reduced: every
// reading of a value shows in the bytes. Compiled once per curve and build.
constexpr const char* kEchoCircuit = R"(pragma circom 2.0.0;
template Echo(N) {
    signal input in[N];
    signal input m[2][2];
    signal output out;
    signal acc[N + 1];
    acc[0] <== m[0][0] + m[0][1] * m[1][0] + m[1][1];
    for (var i = 0; i < N; i++) { acc[i + 1] <== acc[i] * in[i] + in[i]; }
    out <== acc[N];
}
component main {public [m]} = Echo(12);
)";

fs::path EchoWasm(const std::string& curve) {
  const std::string root = (fs::path(ZKFLEET_BINARY_DIR) / "witgen-test-circuits").string();
  std::string dir = testing::CachedDirectory(root, "echo-" + curve, [&](const std::string& d) {
    testing::WriteFile(d + "/echo.circom", kEchoCircuit);
    auto r = RunCommand("cd " + Quote(d) + " && " + Quote(std::string(ZKFLEET_NODE_BIN) + "/circom2") +
                        " echo.circom --r1cs --wasm --prime " + curve + " -o .");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.exit_code == 0;
  });
  return dir.empty() ? fs::path() : fs::path(dir) / "echo_js" / "echo.wasm";
}

// in[12] and m[2][2]: `in` takes the values under test.
std::string EchoInput(const std::vector<std::string>& in_values, const std::string& m = "[[\"1\",2],[3,\"4\"]]") {
  std::string s = "{\"m\": " + m + ", \"in\": [";
  for (size_t i = 0; i < in_values.size(); ++i) s += (i ? ", " : "") + in_values[i];
  return s + "]}";
}

class WitgenInputs : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::RequireSnarkjs());
    ASSERT_TRUE(testing::RequireCircom2());
    ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
    wasm_ = EchoWasm(GetParam());
    ASSERT_FALSE(wasm_.empty());
    gen_ = WitnessGenerator::Load(wasm_, Options());
  }
  fs::path wasm_;
  std::shared_ptr<const WitnessGenerator> gen_;
};

// Each row: twelve values for in[], written as a client might.
TEST_P(WitgenInputs, ValuesAreReadAsSnarkjsReadsThem) {
  const std::string bn_p = "21888242871839275222246405745257275088548364400416034343698204186575808495617";
  const std::string bls_r = "52435875175726624625768494820054023409707218224934513467049934290826297589761";
  const std::vector<std::vector<std::string>> rows = {
      {"\"1\"", "2", "\"-5\"", "\"0x1F\"", "\"0o17\"", "\"0b101\"", "\" 12 \"", "\"\"", "\"+7\"", "true", "false",
       "\"00012\""},
      {"\"" + bn_p + "\"", "\"" + bls_r + "\"", "\"-" + bn_p + "\"", "\"" + bn_p + "3\"", "1e3", "-0", "9007199254740993",
       "123456789012345678901234567890", "-9007199254740993", "1.0", "\"\\t\\n 42\\r\"",
       "\"0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF\""},
      {"[\"1\", [2, [3]]]", "\"4\"", "\"5\"", "\"6\"", "\"7\"", "\"8\"", "\"9\"", "\"10\"", "\"11\"",
       "\"-1\""},  // 3 + 9 values
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string input = EchoInput(rows[i]);
    SCOPED_TRACE(input);
    std::string why;
    const std::string expected = SnarkjsWitness(wasm_, input, &why);
    ASSERT_FALSE(expected.empty()) << "snarkjs refused: " << why;
    for (bool native : {true, false}) {
      auto gen = native ? gen_ : WitnessGenerator::Load(wasm_, Options(false));
      Ours ours = Generate(*gen, input);
      ASSERT_TRUE(ours.result.ok()) << ours.result.error;
      EXPECT_TRUE(ours.wtns == expected) << (native ? "native" : "plain") << ": the witness differs from snarkjs's";
    }
  }
  // A key given twice: the last one wins (JSON.parse), bad values of the
  // first included; "__proto__" is never a signal (snarkjs drops it).
  const std::string ones = "[1,1,1,1,1,1,1,1,1,1,1,1]", twos = "[2,2,2,2,2,2,2,2,2,2,2,2]";
  for (const std::string& input :
       {"{\"in\": " + ones + ", \"m\": [[1,2],[3,4]], \"in\": " + twos + "}",
        "{\"in\": [null, {\"a\": [1, {\"b\": 2}]}, 1.5], \"m\": [[1,2],[3,4]], \"in\": " + twos + "}",
        "{\"__proto__\": [1], \"in\": " + ones + ", \"m\": [[1,2],[3,4]], \"__proto__\": 7}"}) {
    SCOPED_TRACE(input);
    const std::string expected = SnarkjsWitness(wasm_, input);
    ASSERT_FALSE(expected.empty());
    Ours ours = Generate(*gen_, input);
    ASSERT_TRUE(ours.result.ok()) << ours.result.error;
    EXPECT_TRUE(ours.wtns == expected);
  }
}

TEST_P(WitgenInputs, InputsSnarkjsRefusesAreRefusedNamingTheSignal) {
  const std::vector<std::string> twelve(12, "\"1\"");
  struct Case {
    std::string input;
    GenerationStatus status;
    std::string mentions;
  };
  auto with = [&](size_t at, const std::string& value) {
    auto row = twelve;
    row[at] = value;
    return EchoInput(row);
  };
  const std::vector<Case> cases = {
      {with(3, "1.5"), GenerationStatus::kBadInput, "in, value 3"},
      {with(4, "null"), GenerationStatus::kBadInput, "in, value 4"},
      {with(5, "{\"a\": 1}"), GenerationStatus::kBadInput, "in, value 5"},
      {with(6, "\"12abc\""), GenerationStatus::kBadInput, "12abc"},
      {with(7, "\"-0x5\""), GenerationStatus::kBadInput, "-0x5"},
      {with(8, "\"0x\""), GenerationStatus::kBadInput, "0x"},
      {with(9, "\"1_000\""), GenerationStatus::kBadInput, "1_000"},
      {with(10, "\"1e3\""), GenerationStatus::kBadInput, "1e3"},
      {with(11, "1e400"), GenerationStatus::kBadInput, "in"},
      {"{\"in\": [1,1,1,1,1,1,1,1,1,1,1,1], \"m\": [[1,2],[3,4]], \"in\": [1,1,1,1,1,1,1,1,1,1,1,null]}",
       GenerationStatus::kBadInput, "in, value 11: null"},
      {EchoInput(std::vector<std::string>(11, "1")), GenerationStatus::kBadInput, "Not enough values for input signal in"},
      {EchoInput(std::vector<std::string>(13, "1")), GenerationStatus::kBadInput, "Too many values for input signal in"},
      {"{\"in\": [1,1,1,1,1,1,1,1,1,1,1,1]}", GenerationStatus::kBadInput, "Not all inputs have been set"},
      {"{\"in\": [1,1,1,1,1,1,1,1,1,1,1,1], \"m\": [[1,2],[3,4]], \"k\": 1}", GenerationStatus::kBadInput,
       "input signal k"},  // circom's wasm sizes an unknown name 0: snarkjs says the same
      {"{\"in\": [1,1,1,1,1,1,1,1,1,1,1,1], \"m\": [[1,2],[3,4]]", GenerationStatus::kBadInput, "not valid JSON"},
      {"[1, 2]", GenerationStatus::kBadInput, "object"},
      {"", GenerationStatus::kBadInput, "not valid JSON"},
      {EchoInput(twelve) + std::string(1, '\0') + "junk", GenerationStatus::kBadInput, "NUL"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input);
    Ours ours = Generate(*gen_, c.input);
    EXPECT_EQ(ours.result.status, c.status) << ours.result.error;
    EXPECT_NE(ours.result.error.find(c.mentions), std::string::npos) << ours.result.error;
    std::string why;
    EXPECT_EQ(SnarkjsWitness(wasm_, c.input, &why), "") << "snarkjs accepted what we refuse";
  }
  // Nested deeper than the parser allows: refused, not a crash.
  std::string deep = "{\"in\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  Ours ours = Generate(*gen_, deep);
  EXPECT_EQ(ours.result.status, GenerationStatus::kBadInput);
  EXPECT_NE(ours.result.error.find("nested"), std::string::npos) << ours.result.error;
}

INSTANTIATE_TEST_SUITE_P(Curves, WitgenInputs, ::testing::Values("bn128", "bls12381"));

// ---------------------------------------------------------------- fixtures

struct Fixture {
  std::string name, curve;
  fs::path wasm, input, input_fail;
  bool native_only = false;  // <name>/native_only: no plain wasm2c build in the tests (CI time)
};

void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name << "/" << f.curve; }

std::vector<Fixture> Fixtures() {
  std::vector<Fixture> all;
  std::error_code ec;
  for (const auto& circuit : fs::directory_iterator(kFixtures, ec)) {
    if (!fs::exists(circuit.path() / "input.json")) continue;
    for (const char* curve : {"bn128", "bls12381"}) {
      const fs::path wasm = circuit.path() / curve / "circuit.wasm";
      if (!fs::exists(wasm)) continue;
      Fixture f{circuit.path().filename().string(), curve, wasm, circuit.path() / "input.json", {}};
      if (fs::exists(circuit.path() / "input_fail.json")) f.input_fail = circuit.path() / "input_fail.json";
      f.native_only = fs::exists(circuit.path() / "native_only");
      all.push_back(f);
    }
  }
  std::sort(all.begin(), all.end(), [](const Fixture& a, const Fixture& b) { return a.name + a.curve < b.name + b.curve; });
  return all;
}

class WitgenFixtures : public ::testing::TestWithParam<Fixture> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::RequireSnarkjs());
    ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  }
};

TEST_P(WitgenFixtures, ByteIdenticalToSnarkjsWithAndWithoutNativeFieldCode) {
  const Fixture& f = GetParam();
  const std::string input = testing::ReadFile(f.input.string());
  std::string why;
  const std::string expected = SnarkjsWitness(f.wasm, input, &why);
  ASSERT_FALSE(expected.empty()) << "snarkjs refused the fixture's input: " << why;
  for (bool native : {true, false}) {
    if (!native && f.native_only) continue;
    SCOPED_TRACE(native ? "native field code" : "plain wasm2c");
    auto gen = WitnessGenerator::Load(f.wasm, Options(native));
    if (native) {
      EXPECT_TRUE(gen->info().native_field) << "BN254 and BLS12-381 circuits get the native field code";
    }
    Ours ours = Generate(*gen, input);
    ASSERT_TRUE(ours.result.ok()) << GenerationStatusName(ours.result.status) << ": " << ours.result.error;
    EXPECT_EQ(ours.wtns.size(), expected.size());
    EXPECT_TRUE(ours.wtns == expected) << "the witness differs from snarkjs's";
  }
  // With the native field code the witness is read out in one pass by
  // native_fr.c (not through getWitness): the bench report says which.
  auto options = Options(true);
  options.bench_repeat = 2;
  auto gen = WitnessGenerator::Load(f.wasm, options);
  Ours twice = Generate(*gen, input);
  ASSERT_TRUE(twice.result.ok()) << twice.result.error;
  EXPECT_NE(twice.result.bench_json.find("\"native_readout\":1"), std::string::npos) << twice.result.bench_json;
  EXPECT_TRUE(twice.wtns == expected) << "the witness read out natively differs from snarkjs's";
}

TEST_P(WitgenFixtures, FailingAssertIsTheCircuitsErrorWithCircomsMessage) {
  const Fixture& f = GetParam();
  if (f.input_fail.empty()) GTEST_SKIP() << f.name << " has no input_fail.json";
  const std::string input = testing::ReadFile(f.input_fail.string());
  EXPECT_EQ(SnarkjsWitness(f.wasm, input), "") << "snarkjs accepted input_fail.json";
  auto gen = WitnessGenerator::Load(f.wasm, Options());
  Ours ours = Generate(*gen, input);
  EXPECT_EQ(ours.result.status, GenerationStatus::kCircuitError) << ours.result.error;
  EXPECT_NE(ours.result.error.find("Assert Failed"), std::string::npos) << ours.result.error;
  EXPECT_NE(ours.result.error.find("line"), std::string::npos) << "circom's 'Error in template ... line: N'";
}

std::string FixtureName(const ::testing::TestParamInfo<Fixture>& info) {
  std::string s = info.param.name + "_" + info.param.curve;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Circuits, WitgenFixtures, ::testing::ValuesIn(Fixtures()), FixtureName);

TEST(WitgenFixtureSet, CoversBothCurvesAndAFailingAssert) {
  auto all = Fixtures();
  int bn = 0, bls = 0, failing = 0;
  for (const Fixture& f : all) {
    (f.curve == "bn128" ? bn : bls)++;
    failing += !f.input_fail.empty();
  }
  EXPECT_GE(bn, 5) << "tests/fixtures/witgen holds the circuits (see its README)";
  // Every circuit on both curves, but those whose <name>/curves names one
  // (circomlib's Poseidon: its constants are BN254's).
  int bn_only = 0;
  std::error_code ec;
  for (const auto& circuit : fs::directory_iterator(kFixtures, ec)) {
    const fs::path curves = circuit.path() / "curves";
    if (fs::exists(curves) && testing::ReadFile(curves.string()).find("bls12381") == std::string::npos) ++bn_only;
  }
  EXPECT_EQ(bn, bls + bn_only);
  EXPECT_GE(failing, 2);
}

// ---------------------------------------------------------------- hostile

class WitgenHostile : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(testing::RequireOnPath("wasm2c")); }
};

TEST_F(WitgenHostile, ALoopingGeneratorIsKilledAtItsCpuLimitWhileOthersStillWork) {
  auto options = Options();
  options.limits.cpu_seconds = 2;
  auto looping = WitnessGenerator::Load(kFixtures / "hostile" / "loop.wasm", options);
  auto started = std::chrono::steady_clock::now();
  auto stuck = std::async(std::launch::async, [&] { return Generate(*looping, "{\"a\": \"1\"}"); });
  // Meanwhile a real circuit still gets its witnesses.
  ASSERT_TRUE(testing::RequireCircom2());
  auto echo = WitnessGenerator::Load(EchoWasm("bn128"), Options());
  for (int i = 0; i < 3; ++i) {
    Ours ok = Generate(*echo, EchoInput(std::vector<std::string>(12, std::to_string(i + 2))));
    EXPECT_TRUE(ok.result.ok()) << ok.result.error;
  }
  Ours ours = stuck.get();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(ours.result.status, GenerationStatus::kLimit) << ours.result.error;
  EXPECT_NE(ours.result.error.find("CPU"), std::string::npos) << ours.result.error;
  EXPECT_LT(took, 30 * testing::TimeScale());
}

TEST_F(WitgenHostile, AWallClockLimitStopsAGeneratorThatOutlivesIt) {
  auto options = Options();
  // The limit is charged to the generator only when it had at least half of
  // it on a core (else "this host is too busy"): on a loaded box, or slowed
  // by a sanitizer, it needs a longer window to show that.
  // A host busier than that (ctest runs more cases than cores) is named as
  // such, which is right too: the window doubles then, up to 4 times.
  options.limits.wall_seconds = 1.5 * std::max(1.0, testing::TimeScale());
  Ours ours;
  for (int attempt = 0; attempt < 5; ++attempt, options.limits.wall_seconds *= 2) {
    auto looping = WitnessGenerator::Load(kFixtures / "hostile" / "loop.wasm", options);
    ours = Generate(*looping, "{\"a\": \"1\"}");
    const bool host_too_busy = ours.result.status == GenerationStatus::kInternal &&
                               ours.result.error.find("this host is too busy") != std::string::npos;
    if (!host_too_busy) break;
  }
  EXPECT_EQ(ours.result.status, GenerationStatus::kLimit) << ours.result.error;
  EXPECT_NE(ours.result.error.find("wall-clock"), std::string::npos) << ours.result.error;
}

TEST_F(WitgenHostile, AMemoryGrowingGeneratorStopsAtItsMemoryLimit) {
  auto options = Options();
  options.limits.memory_bytes = 256ull << 20;
  auto growing = WitnessGenerator::Load(kFixtures / "hostile" / "memgrow.wasm", options);
  Ours ours = Generate(*growing, "{\"a\": \"1\"}");
  EXPECT_EQ(ours.result.status, GenerationStatus::kLimit) << ours.result.error;
  EXPECT_NE(ours.result.error.find("memory"), std::string::npos) << ours.result.error;
}

TEST_F(WitgenHostile, CancellingKillsTheGeneratorAtOnce) {
  auto looping = WitnessGenerator::Load(kFixtures / "hostile" / "loop.wasm", Options());
  std::atomic<bool> cancel{false};
  auto started = std::chrono::steady_clock::now();
  auto run = std::async(std::launch::async, [&] { return Generate(*looping, "{\"a\": \"1\"}", &cancel); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  cancel = true;
  Ours ours = run.get();
  EXPECT_EQ(ours.result.status, GenerationStatus::kCancelled) << ours.result.error;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5 * testing::TimeScale());
}

// ---------------------------------------------------------------- the cache

TEST(WitgenCache, ASecondLoadIsCachedAndABrokenEntryIsRebuilt) {
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  ASSERT_TRUE(testing::RequireCircom2());
  TempDir cache;
  auto options = Options();
  options.cache_dir = cache.path();
  const fs::path wasm = EchoWasm("bn128");
  // The user is told when a load compiles (a first sight looked hung), once.
  std::vector<std::string> said;
  options.on_compile = [&](const std::string& line) { said.push_back(line); };
  auto first = WitnessGenerator::Load(wasm, options);
  EXPECT_FALSE(first->info().from_cache);
  // Once, and "still compiling ... (N s so far)" every 2 s while it runs.
  ASSERT_GE(said.size(), 1u);
  EXPECT_NE(said[0].find("compiling a witness generator for " + wasm.string()), std::string::npos) << said[0];
  for (size_t i = 1; i < said.size(); ++i) EXPECT_NE(said[i].find("still compiling"), std::string::npos) << said[i];
  const size_t said_at_first_load = said.size();
  auto second = WitnessGenerator::Load(wasm, options);
  EXPECT_TRUE(second->info().from_cache);
  EXPECT_EQ(said.size(), said_at_first_load) << "a cached load compiles nothing and says nothing";
  EXPECT_EQ(first->info().executable, second->info().executable);
  // Two loads at once of a fresh cache: both succeed, one entry stays.
  TempDir race;
  options.cache_dir = race.path();
  auto a = std::async(std::launch::async, [&] { return WitnessGenerator::Load(wasm, options); });
  auto b = std::async(std::launch::async, [&] { return WitnessGenerator::Load(wasm, options); });
  EXPECT_TRUE(Generate(*a.get(), EchoInput(std::vector<std::string>(12, "3"))).result.ok());
  EXPECT_TRUE(Generate(*b.get(), EchoInput(std::vector<std::string>(12, "3"))).result.ok());
  int entries = 0;
  for (const auto& e : fs::directory_iterator(race.path())) entries += e.path().filename().string()[0] != '.';
  EXPECT_EQ(entries, 1);
  // A damaged program (a disk error, a killed build) is rebuilt, not run.
  options.cache_dir = cache.path();
  std::ofstream(first->info().executable, std::ios::trunc) << "#!/bin/sh\nexit 0\n";
  auto third = WitnessGenerator::Load(wasm, options);
  EXPECT_FALSE(third->info().from_cache);
  EXPECT_TRUE(Generate(*third, EchoInput(std::vector<std::string>(12, "3"))).result.ok());
}

// A compile that takes a while says so every 2 s (issue 49, item 6: the
// ~37 s first compile at 2^22 was silent). The C compiler here is cc made
// slow by a wrapper that sleeps 4.5 s first.
TEST(WitgenCache, ALongCompileSaysItIsStillCompiling) {
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  ASSERT_TRUE(testing::RequireCircom2());
  TempDir cache, tools;
  const fs::path slow_cc = tools.path() / "slow-cc";
  {
    std::ofstream script(slow_cc);
    script << "#!/bin/sh\nsleep 4.5\nexec cc \"$@\"\n";
  }
  fs::permissions(slow_cc, fs::perms::owner_all);
  auto options = Options();
  options.cache_dir = cache.path();
  options.cc = slow_cc.string();
  std::vector<std::string> said;
  options.on_compile = [&](const std::string& line) { said.push_back(line); };
  auto generator = WitnessGenerator::Load(EchoWasm("bn128"), options);
  EXPECT_FALSE(generator->info().from_cache);
  size_t still = 0;
  for (const std::string& line : said) still += line.find("still compiling the witness generator of") == 0;
  EXPECT_GE(still, 2u) << "4.5 s of compiling, a line every 2 s";
}

// Two loads of a circuit never seen, at once: one compiles, the other waits
// for it (the cache entry's lock) and finds its generator.
TEST(WitgenCache, TwoLoadsAtOnceCompileOnce) {
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  ASSERT_TRUE(testing::RequireCircom2());
  const fs::path wasm = EchoWasm("bn128");
  ASSERT_FALSE(wasm.empty());
  TempDir cache;
  auto options = Options();
  options.cache_dir = cache.path();
  auto load = [&] { return WitnessGenerator::Load(wasm, options); };
  auto a = std::async(std::launch::async, load);
  auto b = std::async(std::launch::async, load);
  auto first = a.get();
  auto second = b.get();
  EXPECT_EQ(int{first->info().from_cache} + int{second->info().from_cache}, 1)
      << "exactly one of the two compiled; the other found its result";
  EXPECT_EQ(first->info().executable, second->info().executable);
}

TEST(WitgenCache, AHostWithoutTheToolsRunsAGeneratorShippedInItsCache) {
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  ASSERT_TRUE(testing::RequireCircom2());
  const fs::path wasm = EchoWasm("bls12381");
  TempDir cache;
  auto options = Options();
  options.cache_dir = cache.path();
  options.wasm2c = "/nonexistent/wasm2c";  // a GPU image: no wabt
  try {
    WitnessGenerator::Load(wasm, options);
    FAIL() << "loaded without wasm2c and without a shipped generator";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no generator built elsewhere"), std::string::npos) << e.what();
  }
  auto built = WitnessGenerator::Load(wasm, Options());  // where the tools are
  fs::copy(built->info().executable.parent_path(), cache.path() / built->info().executable.parent_path().filename());
  auto shipped = WitnessGenerator::Load(wasm, options);
  EXPECT_TRUE(shipped->info().from_cache);
  EXPECT_TRUE(shipped->info().native_field);
  const std::string input = EchoInput(std::vector<std::string>(12, "\"-7\""));
  EXPECT_TRUE(Generate(*shipped, input).wtns == Generate(*built, input).wtns);
}

TEST(WitgenCache, AFileThatIsNotCircomsWasmIsAClearError) {
  TempDir dir;
  testing::WriteFile(dir.file("x.wasm"), "not a wasm at all");
  try {
    WitnessGenerator::Load(dir.file("x.wasm"), Options());
    FAIL() << "loaded a text file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.wasm"), std::string::npos) << e.what();
  }
  try {
    WitnessGenerator::Load(dir.file("missing.wasm"), Options());
    FAIL() << "loaded a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
}

// ---------------------------------------------------------------- pieces

TEST(WitgenPatch, ReadsGetWitnesssLayoutOffWasm2csTextOrNothing) {
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  TempDir dir;
  auto r = RunCommand("wasm2c " + Quote((kFixtures / "arrays" / "bn128" / "circuit.wasm").string()) +
                      " -n circuit -o " + Quote(dir.file("circuit.c")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string c = testing::ReadFile(dir.file("circuit.c"));
  const std::string layout = witgen::GetWitnessLayout(c);
  EXPECT_NE(layout.find("#define ZKF_GETWITNESS_TABLE "), std::string::npos) << layout;
  EXPECT_NE(layout.find("#define ZKF_GETWITNESS_SIZE 40u"), std::string::npos) << layout;
  EXPECT_NE(layout.find("#define ZKF_GETWITNESS_SIGNALS "), std::string::npos) << layout;
  // Any other shape (here: 48-byte elements) is not guessed at.
  const size_t at = c.find("static void w2c_getWitness(Z_circuit_instance_t* instance");
  ASSERT_NE(at, std::string::npos);
  std::string other = c;
  other.replace(other.find("w2c_i1 = 40u;", at), 13, "w2c_i1 = 48u;");
  EXPECT_EQ(witgen::GetWitnessLayout(other), "");
  EXPECT_EQ(witgen::GetWitnessLayout("int main() {}\n"), "");
}

TEST(WitgenPatch, RenamesEveryListedDefinitionOrNothing) {
  const std::string c = "static void w2c_Fr_a(Z_circuit_instance_t*, u32);\n"
                        "static void w2c_Fr_a(Z_circuit_instance_t* instance, u32 w2c_x) {\n  w2c_Fr_a(instance, 1);\n}\n"
                        "static u32 w2c_Fr_b(Z_circuit_instance_t* instance) {\n  return 0;\n}\n";
  std::string patched = c;
  ASSERT_TRUE(witgen::PatchNativeField(patched, "/* zkfleet-native: Fr_a Fr_b */\nint x;\n"));
  EXPECT_NE(patched.find("__attribute__((unused)) static void w2c_Fr_a_wasm(Z_circuit_instance_t* instance, u32 w2c_x) {"),
            std::string::npos) << patched;
  EXPECT_NE(patched.find("static void w2c_Fr_a(Z_circuit_instance_t*, u32);"), std::string::npos) << "declaration kept";
  EXPECT_NE(patched.find("w2c_Fr_b_wasm("), std::string::npos);
  EXPECT_NE(patched.find("#include \"native_fr.c\""), std::string::npos);
  std::string unpatched = c;
  EXPECT_FALSE(witgen::PatchNativeField(unpatched, "/* zkfleet-native: Fr_a Fr_missing */\n"));
  EXPECT_EQ(unpatched, c);
  EXPECT_FALSE(witgen::PatchNativeField(unpatched, ""));
  EXPECT_EQ(unpatched, c);
}

TEST(WitgenPatch, MarksOnlyFunctionsOverTheLineLimitAndTheResultCompiles) {
  ASSERT_TRUE(testing::RequireOnPath("cc"));
  auto function = [](const std::string& name, int lines) {
    std::string f = "static u32 w2c_" + name + "(Z_circuit_instance_t* instance, u32 w2c_p0) {\n";
    for (int i = 0; i < lines; ++i) f += "  w2c_p0 = w2c_p0 * 3u + " + std::to_string(i) + "u;\n";
    return f + "  return w2c_p0;\n}\n";
  };
  const std::string c = "typedef unsigned u32;\ntypedef struct Z_circuit_instance_t Z_circuit_instance_t;\n"
                        "static u32 w2c_Big(Z_circuit_instance_t* instance, u32 w2c_p0);\n" +
                        function("Small", 30) + function("Big", 60) + function("Edge", 48) +
                        "u32 Z_circuitZ_run(Z_circuit_instance_t* c) { return w2c_Big(c, 1) + w2c_Small(c, 2) + "
                        "w2c_Edge(c, 3); }\n";
  std::string marked = c;
  EXPECT_EQ(witgen::MarkGiantFunctions(marked, 50), 1u) << "the 62-line w2c_Big only";
  EXPECT_NE(marked.find("\nZKF_GIANT_FUNCTION static u32 w2c_Big(Z_circuit_instance_t* instance, u32 w2c_p0) {"),
            std::string::npos) << "the definition is marked";
  EXPECT_NE(marked.find("\nstatic u32 w2c_Big(Z_circuit_instance_t* instance, u32 w2c_p0);"), std::string::npos)
      << "the declaration is not";
  EXPECT_EQ(marked.find("ZKF_GIANT_FUNCTION static u32 w2c_Small"), std::string::npos);
  EXPECT_EQ(marked.find("ZKF_GIANT_FUNCTION static u32 w2c_Edge"), std::string::npos);
  std::string unmarked = c;
  EXPECT_EQ(witgen::MarkGiantFunctions(unmarked, 100), 0u);
  EXPECT_EQ(unmarked, c) << "nothing over the limit: the source is left as it was";
  TempDir dir;
  testing::WriteFile(dir.file("marked.c"), marked);
  auto r = RunCommand("cc -std=gnu11 -O3 -Werror -c " + Quote(dir.file("marked.c")) + " -o " + Quote(dir.file("m.o")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(WitgenDescribe, ReadsTheGeneratorsLine) {
  engine::GeneratorInfo info;
  ASSERT_TRUE(witgen::ParseDescribe("zkfleet-generator 1 n32=8 witness=13 inputs=4 native=1 version=2.2.3 "
                                    "prime=30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001\n",
                                    info));
  EXPECT_EQ(info.n8, 32u);
  EXPECT_EQ(info.witness_count, 13u);
  EXPECT_EQ(info.input_count, 4u);
  EXPECT_TRUE(info.native_field);
  ASSERT_EQ(info.prime.size(), 32u);
  EXPECT_EQ(info.prime[0], 0x01);
  EXPECT_EQ(info.prime[31], 0x30);
  EXPECT_FALSE(witgen::ParseDescribe("zkfleet-generator 1 n32=8 witness=13 prime=30", info));
  EXPECT_FALSE(witgen::ParseDescribe("hello", info));
}

TEST(WitgenChildProcess, AChildThatExitsWithoutReadingItsInputDoesNotKillUs) {
  // SIGPIPE at its default would end this process at the first write after
  // the child is gone.
  std::vector<uint8_t> input(16 << 20, 'x');
  witgen::ChildOptions options;
  options.argv = {"/bin/true"};
  witgen::StringSink out;
  witgen::ChildExit exit = witgen::RunChild(options, input, out);
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.code, 0);
  // The environment is empty, the streams are ours, nothing else is open.
  options.argv = {"/bin/sh", "-c", "env | wc -l; ls /proc/self/fd | wc -l; cat >/dev/null; echo done >&2; exit 3"};
  exit = witgen::RunChild(options, input, out);
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.code, 3);
  EXPECT_NE(exit.stderr_tail.find("done"), std::string::npos);
  std::istringstream lines(out.text());
  int env_lines = -1, fds = -1;
  lines >> env_lines >> fds;
  EXPECT_LE(env_lines, 2) << out.text();  // sh may add PWD
  EXPECT_LE(fds, 4) << out.text();        // 0, 1, 2 and ls's own
}

// ---------------------------------------------------------------- to a file

TEST(WitgenToFile, TheChildWritesTheSameBytesAndAFailureLeavesTheOldFile) {
  ASSERT_TRUE(testing::RequireCircom2());
  ASSERT_TRUE(testing::RequireOnPath("wasm2c"));
  const fs::path wasm = EchoWasm("bn128");
  ASSERT_FALSE(wasm.empty());
  auto gen = WitnessGenerator::Load(wasm, Options());
  TempDir dir;
  const fs::path path = dir.file("w.wtns");
  testing::WriteFile(path.string(), "an older witness");
  auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
    return names;
  };

  auto bad = gen->GenerateToFile(EchoInput(std::vector<std::string>(11, "1")), path);
  EXPECT_EQ(bad.status, GenerationStatus::kBadInput) << bad.error;
  EXPECT_EQ(testing::ReadFile(path.string()), "an older witness");
  EXPECT_EQ(listing(), std::vector<std::string>{"w.wtns"}) << "no temporary file is left behind";

  const std::string input = EchoInput(std::vector<std::string>(12, "\"-3\""));
  auto good = gen->GenerateToFile(input, path);
  ASSERT_TRUE(good.ok()) << good.error;
  Ours in_memory = Generate(*gen, input);
  ASSERT_TRUE(in_memory.result.ok()) << in_memory.result.error;
  EXPECT_TRUE(testing::ReadFile(path.string()) == in_memory.wtns);
  EXPECT_EQ(listing(), std::vector<std::string>{"w.wtns"});

  auto nowhere = gen->GenerateToFile(input, dir.file("missing/w.wtns"));
  EXPECT_EQ(nowhere.status, GenerationStatus::kInternal);
  EXPECT_NE(nowhere.error.find("missing/w.wtns"), std::string::npos) << nowhere.error;
}

// ---------------------------------------------------------------- zkprove

// ---------------------------------------------------------------- first sight

// A circuit never seen, answered through node at once (the default), in a
// cache of its own so that nothing was built before.
engine::WitnessGeneratorOptions FirstSightOptions(const fs::path& cache) {
  engine::WitnessGeneratorOptions o = Options();
  o.first_sight = engine::WitnessGeneratorOptions::FirstSight::kInterpretWhileBuilding;
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
