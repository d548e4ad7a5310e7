// zkfleet-dev end to end, checked by snarkjs itself (the "done"
// criteria at 2^12, both curves):
//   gen-circuit -> snarkjs wtns check accepts the r1cs/wtns pair
//   setup --insecure -> snarkjs zkey export verificationkey reads the key
//   zkprove proof with it -> snarkjs groth16 verify: OK
//   snarkjs groth16 prove with it -> snarkjs groth16 verify: OK
//   a corrupted witness -> the zkprove proof does NOT verify
// plus a circom-compiled circuit keyed by our setup, and the CLI's errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../testutil/test_support.hpp"
#include "zkfleet/devtools/circuit_generator.hpp"
#include "zkfleet/r1cs/r1cs.hpp"

namespace zkfleet::devtools {
namespace {

const std::string kDev = std::string(ZKFLEET_BINARY_DIR) + "/cmd/zkfleet-dev/zkfleet-dev";
const std::string kProve = std::string(ZKFLEET_BINARY_DIR) + "/cmd/zkprove/zkprove";
const std::string kSnarkjs = std::string(ZKFLEET_NODE_BIN) + "/snarkjs";

struct Result {
  int rc;
  std::string output;  // stdout and stderr together
};

Result RunCommand(const std::string& command) {
  Result r{-1, {}};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// A fresh directory of the running test (removed when the test ends; kept,
// with its files, when it failed). Unique per process, so cases may run in
// parallel.
class Scratch {
 public:
  ~Scratch() {
    if (!::testing::Test::HasFailure()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    } else {
      std::fprintf(stderr, "files kept in %s\n", path_.c_str());
    }
  }
  std::string Make() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "zkfleet-devtools-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
    return path_;
  }

 private:
  std::string path_;
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string WithoutSpace(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != ' ' && c != '\n' && c != '\t' && c != '\r') out += c;
  }
  return out;
}

// The built tools; snarkjs (from ./scripts/install-deps.sh) only where a
// test checks against it: missing, the test fails with that message.
class ToolsAvailable : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const std::string& tool : {kDev, kProve}) {
      ASSERT_TRUE(std::filesystem::exists(tool)) << tool << " is missing: build zkprove and zkfleet-dev";
    }
    if (NeedsSnarkjs()) {
      ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
    }
  }
  virtual bool NeedsSnarkjs() const { return true; }
  std::string ScratchDir() { return scratch_.Make(); }

 private:
  Scratch scratch_;
};

class EndToEnd : public ToolsAvailable, public ::testing::WithParamInterface<const char*> {};

TEST_P(EndToEnd, SnarkjsAcceptsOurCircuitKeyAndBothProvers) {
  const std::string curve = GetParam();
  const std::string d = ScratchDir();
  Result r = RunCommand(kDev + " gen-circuit --curve " + curve + " --domain-power 12 --seed 12 --out " + d);
  ASSERT_EQ(r.rc, 0) << r.output;
  const std::string r1cs = d + "/circuit.r1cs", wtns = d + "/witness.wtns", zkey = d + "/circuit.zkey";

  r = RunCommand(kSnarkjs + " wtns check " + r1cs + " " + wtns);
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "WITNESS IS CORRECT")) << r.output;

  r = RunCommand(kDev + " setup " + r1cs + " " + zkey + " --insecure --seed 99");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "WARNING")) << r.output;
  EXPECT_TRUE(Contains(r.output, "tests and benchmarks ONLY")) << r.output;
  EXPECT_TRUE(Contains(r.output, "domain 2^12")) << r.output;

  r = RunCommand(kSnarkjs + " zkey export verificationkey " + zkey + " " + d + "/vk.json");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_TRUE(Contains(ReadText(d + "/vk.json"), "\"curve\": \"" + curve + "\""));

  // zkprove's proof.
  r = RunCommand(kProve + " " + zkey + " " + wtns + " " + d + "/proof.json " + d + "/public.json");
  ASSERT_EQ(r.rc, 0) << r.output;
  r = RunCommand(kSnarkjs + " groth16 verify " + d + "/vk.json " + d + "/public.json " + d + "/proof.json");
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "OK!")) << r.output;

  // snarkjs' own proof with our key.
  r = RunCommand(kSnarkjs + " groth16 prove " + zkey + " " + wtns + " " + d + "/sproof.json " + d + "/spublic.json");
  ASSERT_EQ(r.rc, 0) << r.output;
  r = RunCommand(kSnarkjs + " groth16 verify " + d + "/vk.json " + d + "/spublic.json " + d + "/sproof.json");
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "OK!")) << r.output;
  EXPECT_EQ(WithoutSpace(ReadText(d + "/public.json")), WithoutSpace(ReadText(d + "/spublic.json")));

  // Negative control: change one internal (private) witness value; the
  // public signals stay the same, so only the proof can make verify fail.
  std::string bytes = ReadText(wtns);
  const size_t last = bytes.size() - 32;
  const char replacement = bytes[last] == 5 && bytes.substr(last + 1) == std::string(31, '\0') ? 6 : 5;
  bytes.replace(last, 32, std::string(32, '\0'));
  bytes[last] = replacement;
  {
    std::ofstream out(d + "/bad.wtns", std::ios::binary);
    out << bytes;
  }
  r = RunCommand(kProve + " " + zkey + " " + d + "/bad.wtns " + d + "/bad_proof.json " + d + "/bad_public.json");
  // zkprove either refuses the witness (exit 1, no proof) or writes a proof
  // that snarkjs rejects; never one it accepts.
  if (r.rc != 0) {
    EXPECT_EQ(r.rc, 1) << r.output;
    EXPECT_FALSE(std::filesystem::exists(d + "/bad_proof.json")) << r.output;
  } else {
    EXPECT_EQ(ReadText(d + "/bad_public.json"), ReadText(d + "/public.json"));
    EXPECT_TRUE(zkfleet::testing::SnarkjsRejects(d + "/vk.json", d + "/bad_public.json", d + "/bad_proof.json"));
  }
}

INSTANTIATE_TEST_SUITE_P(Curves, EndToEnd, ::testing::Values("bn128", "bls12381"));

class CircomCircuit : public ToolsAvailable, public ::testing::WithParamInterface<const char*> {};

// A real circom-compiled circuit (tests/fixtures) with our key: zkprove's
// proof of the circom witness verifies.
TEST_P(CircomCircuit, OurKeyProvesTheCircomWitness) {
  const std::string fixture = std::string(ZKFLEET_FIXTURES_DIR) + "/" + GetParam() + "_k12";
  const std::string d = ScratchDir();
  Result r = RunCommand(kDev + " setup " + fixture + "/circuit.r1cs " + d + "/k.zkey --insecure");
  ASSERT_EQ(r.rc, 0) << r.output;
  r = RunCommand(kSnarkjs + " zkey export verificationkey " + d + "/k.zkey " + d + "/vk.json");
  ASSERT_EQ(r.rc, 0) << r.output;
  r = RunCommand(kProve + " " + d + "/k.zkey " + fixture + "/witness.wtns " + d + "/proof.json " + d + "/public.json");
  ASSERT_EQ(r.rc, 0) << r.output;
  r = RunCommand(kSnarkjs + " groth16 verify " + d + "/vk.json " + d + "/public.json " + d + "/proof.json");
  EXPECT_EQ(r.rc, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "OK!")) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Curves, CircomCircuit, ::testing::Values("bn128", "bls12381"));

class Cli : public ToolsAvailable {
 protected:
  bool NeedsSnarkjs() const override { return false; }
};

TEST_F(Cli, SetupRefusesToRunWithoutInsecure) {
  const std::string d = ScratchDir();
  Result r = RunCommand(kDev + " gen-circuit --curve bn128 --constraints 50 --out " + d);
  ASSERT_EQ(r.rc, 0) << r.output;
  r = RunCommand(kDev + " setup " + d + "/circuit.r1cs " + d + "/k.zkey");
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "refusing to run without --insecure")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d + "/k.zkey"));
}

TEST_F(Cli, SetupRejectsAnotherPrimeAndOversizedCircuits) {
  const std::string d = ScratchDir();
  CircuitOptions o;
  o.constraints = 100;
  GeneratedCircuit g = GenerateCircuit(o);
  io::WriteR1cs(d + "/ok.r1cs", g.r1cs);
  // The prime 2^255 - 19 (little-endian): above every coefficient, so the
  // file itself is well-formed, but it is neither curve's scalar field.
  g.r1cs.header.prime.assign(32, 0xff);
  g.r1cs.header.prime[0] = 0xed;
  g.r1cs.header.prime[31] = 0x7f;
  io::WriteR1cs(d + "/other_prime.r1cs", g.r1cs);

  Result r = RunCommand(kDev + " setup " + d + "/other_prime.r1cs " + d + "/k.zkey --insecure");
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "is not the scalar field of bn128")) << r.output;

  r = RunCommand(kDev + " setup " + d + "/ok.r1cs " + d + "/k.zkey --insecure --max-power 6");
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "104 rows need a domain of 2^7, above the limit 2^6")) << r.output;

  r = RunCommand(kDev + " setup " + d + "/missing.r1cs " + d + "/k.zkey --insecure");
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "missing.r1cs")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d + "/k.zkey"));
}

TEST_F(Cli, GenCircuitRejectsBadOptions) {
  const std::string d = ScratchDir();
  Result r = RunCommand(kDev + " gen-circuit --curve bn128 --constraints 0 --out " + d);
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "--constraints: expected >= 1")) << r.output;

  r = RunCommand(kDev + " gen-circuit --curve bn128 --constraints 100 --max-power 6 --out " + d);
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "use at most 60 constraints")) << r.output;

  r = RunCommand(kDev + " gen-circuit --curve secp256k1 --constraints 100 --out " + d);
  EXPECT_EQ(r.rc, 1) << r.output;
  EXPECT_TRUE(Contains(r.output, "--curve: expected bn128 or bls12381")) << r.output;

  r = RunCommand(kDev + " gen-circuit --curve bn128 --out " + d);
  EXPECT_NE(r.rc, 0) << r.output;
  EXPECT_TRUE(Contains(r.output, "--constraints N or --domain-power K")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(d + "/circuit.r1cs"));
}

}  // namespace
}  // namespace zkfleet::devtools
