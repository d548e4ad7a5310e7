// Witnesses byte-identical to snarkjs's: inputs as snarkjs reads or refuses them, and every fixture circuit.
#include <string>
#include <vector>

#include "witgen_test_support.hpp"

namespace zkfleet {
namespace {

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

}  // namespace
}  // namespace zkfleet
