// The witness generation tests (witgen_*_test.cpp): where the fixture
// circuits and the shared generator cache are, generator options, snarkjs's
// witness for an input, ours, the echo circuit (compiled with circom2 at test
// time, both curves), and the fixture circuits of tests/fixtures/witgen.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "testutil/test_support.hpp"
#include "zkfleet/witgen/witness_generator.hpp"

namespace zkfleet {

namespace fs = std::filesystem;
using witgen::GenerationStatus;
using witgen::GeneratorTier;
using witgen::WitnessGenerator;
using testing::Quote;
using testing::RunCommand;
using testing::TempDir;

inline const fs::path kFixtures = fs::path(ZKFLEET_FIXTURES_DIR) / "witgen";
// Compiled generators are keyed by content, so every test process (and
// every build of the tree) may share them.
inline const fs::path kCache = fs::path(ZKFLEET_SOURCE_DIR) / "build" / ".witgen-test-cache";

// The native generator, built before Load returns (the first-sight tier has
// tests of its own: WitgenFirstSight).
inline witgen::WitnessGeneratorOptions Options(bool native = true) {
  witgen::WitnessGeneratorOptions o;
  o.first_sight = witgen::WitnessGeneratorOptions::FirstSight::kWaitForBuild;
  o.cache_dir = kCache;
  o.native_field = native;
  o.limits.cpu_seconds = 120;
  o.limits.memory_bytes = 4ull << 30;
  o.limits.wall_seconds = 300;
  return o;
}

inline std::string Snarkjs() { return Quote(std::string(ZKFLEET_NODE_BIN) + "/snarkjs"); }

// snarkjs's witness, or "" (with its output in *why) when it refused.
inline std::string SnarkjsWitness(const fs::path& wasm, const std::string& input_json, std::string* why = nullptr) {
  TempDir dir;
  testing::WriteFile(dir.file("input.json"), input_json);
  auto r = RunCommand(Snarkjs() + " wtns calculate " + Quote(wasm.string()) + " " + Quote(dir.file("input.json")) + " " +
                      Quote(dir.file("w.wtns")));
  if (why) *why = r.output;
  if (r.exit_code != 0) return "";
  return testing::ReadFile(dir.file("w.wtns"));
}

struct Ours {
  witgen::GenerationResult result;
  std::string wtns;
};

inline Ours Generate(const WitnessGenerator& gen, const std::string& input_json,
                     const std::atomic<bool>* cancel = nullptr) {
  std::vector<uint8_t> out(gen.wtns_bytes());
  Ours ours;
  ours.result = gen.Generate(input_json, out, cancel);
  if (ours.result.ok()) ours.wtns.assign(reinterpret_cast<const char*>(out.data()), out.size());
  return ours;
}

// A circuit whose witness holds its inputs as they were reduced: every
// reading of a value shows in the bytes. Compiled once per curve and build.
inline constexpr const char* kEchoCircuit = R"(pragma circom 2.0.0;
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

inline fs::path EchoWasm(const std::string& curve) {
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
inline std::string EchoInput(const std::vector<std::string>& in_values,
                             const std::string& m = "[[\"1\",2],[3,\"4\"]]") {
  std::string s = "{\"m\": " + m + ", \"in\": [";
  for (size_t i = 0; i < in_values.size(); ++i) s += (i ? ", " : "") + in_values[i];
  return s + "]}";
}

struct Fixture {
  std::string name, curve;
  fs::path wasm, input, input_fail;
  bool native_only = false;  // <name>/native_only: no plain wasm2c build in the tests (CI time)
};

inline void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name << "/" << f.curve; }

inline std::vector<Fixture> Fixtures() {
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

inline std::string FixtureName(const ::testing::TestParamInfo<Fixture>& info) {
  std::string s = info.param.name + "_" + info.param.curve;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

}  // namespace zkfleet
