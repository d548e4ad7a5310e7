// libzkfleet_supraseal_c2.so as a supraseal-c2 caller uses it. The C program
// (tests/c/supraseal_abi_test.c) proves through the C ABI; this driver
// makes its inputs with the bellman:: and devtools:: functions and checks
// its outputs: the raw groth16_proof structs (Montgomery limbs) converted
// back to canonical points must equal BellmanKey::Prove's with the same r
// and s, verify with engine::Verify and with the independent noble
// verifier; its errors must come back as RustError codes with messages, and
// a failed call must write no proof. Also zkfleet-dev bellman-params /
// bellman-assignment.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testutil/test_support.hpp"
#include "zkfleet/bellman/assignment_file.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"
#include "zkfleet/engine/assignment_file.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/ff/bls12_381.hpp"

namespace {

namespace bellman = zkfleet::bellman;
namespace engine = zkfleet::engine;
using zkfleet::testing::Quote;
using zkfleet::testing::RunCommand;
using zkfleet::testing::TempDir;
using Fr = zkfleet::ff::Bls12_381Fr;
using Fq = zkfleet::ff::Bls12_381Fq;

// The C program's r and s for circuit i (R(i), S(i) in supraseal_abi_test.c),
// Montgomery limbs.
engine::FrMont RMont(size_t i) {
  return {0x0123456789abcdefULL + i, 0x1111111111111111ULL, 0x2222222222222222ULL, 0x0333333333333333ULL};
}
engine::FrMont SMont(size_t i) {
  return {0x0fedcba987654321ULL + 7 * i, 0x4444444444444444ULL, 0x5555555555555555ULL, 0x0666666666666666ULL};
}

std::array<uint8_t, 32> CanonicalBytes(const engine::FrMont& mont) {
  uint64_t limbs[4];
  Fr::from_mont(mont.data()).to_canonical(limbs);
  std::array<uint8_t, 32> out;
  std::memcpy(out.data(), limbs, 32);
  return out;
}

// groth16_proof: a (x, y), b (x.c0, x.c1, y.c0, y.c1), c (x, y); 6 Montgomery limbs each.
constexpr size_t kRawProofBytes = 8 * 48;  // 8 coordinates of 48 bytes
static_assert(kRawProofBytes == 96 + 192 + 96);

engine::BigInt Canonical(const uint64_t* mont) {
  engine::BigInt out{};
  Fq::from_mont(mont).to_canonical(out.data());
  return out;
}

bool AllZero(const uint64_t* limbs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (limbs[i] != 0) return false;
  }
  return true;
}

engine::ProofPoints FromRaw(const uint8_t* raw) {
  uint64_t l[8 * 6];
  std::memcpy(l, raw, sizeof(l));
  engine::ProofPoints p;
  p.curve = engine::Curve::kBls12_381;
  p.a = {Canonical(l + 0), Canonical(l + 6), AllZero(l + 0, 12)};
  p.b = {Canonical(l + 12), Canonical(l + 18), Canonical(l + 24), Canonical(l + 30), AllZero(l + 12, 24)};
  p.c = {Canonical(l + 36), Canonical(l + 42), AllZero(l + 36, 12)};
  return p;
}

void ExpectSamePoints(const engine::ProofPoints& got, const engine::ProofPoints& want, size_t circuit) {
  EXPECT_EQ(got.a.infinity, want.a.infinity) << circuit;
  EXPECT_EQ(got.a.x, want.a.x) << circuit;
  EXPECT_EQ(got.a.y, want.a.y) << circuit;
  EXPECT_EQ(got.b.infinity, want.b.infinity) << circuit;
  EXPECT_EQ(got.b.x0, want.b.x0) << circuit;
  EXPECT_EQ(got.b.x1, want.b.x1) << circuit;
  EXPECT_EQ(got.b.y0, want.b.y0) << circuit;
  EXPECT_EQ(got.b.y1, want.b.y1) << circuit;
  EXPECT_EQ(got.c.infinity, want.c.infinity) << circuit;
  EXPECT_EQ(got.c.x, want.c.x) << circuit;
  EXPECT_EQ(got.c.y, want.c.y) << circuit;
}

std::string InputsJson(const std::vector<engine::BigInt>& inputs) {
  std::string json = "[";
  for (size_t i = 0; i < inputs.size(); ++i) json += (i ? ",\"" : "\"") + engine::DecimalString(inputs[i]) + "\"";
  return json + "]";
}

std::string NobleVerifier() { return std::string(ZKFLEET_SOURCE_DIR) + "/tests/js/bellman_verify.mjs"; }

// Runs the C program with the backend pinned (the default, auto, is the same
// here without a GPU).
zkfleet::testing::CommandResult RunAbi(const std::string& params, const std::string& out,
                                       const std::vector<std::string>& assignments,
                                       const std::string& backend = "cpu", const std::string& lie = "") {
  // Streamed, not `literal + string` (GCC 12's -Wrestrict false positive).
  std::ostringstream cmd;
  cmd << "SUPRASEAL_ABI_TEST_LIE=" << lie << " ZKFLEET_BACKEND=" << backend << ' ' << Quote(SUPRASEAL_ABI_C_BIN) << ' ' << Quote(params) << ' ' << Quote(out);
  for (const auto& a : assignments) cmd << ' ' << Quote(a);
  return RunCommand(cmd.str());
}

// One synthetic circuit's parameters and two satisfied assignments of it
// (MakeSyntheticCircuit's structure depends on the size only; the seed
// picks the values), plus files that must be refused.
class SupraSealAbi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    zkfleet::cpu::ThreadPool pool(2);
    const bellman::SyntheticCircuit c1 = bellman::MakeSyntheticCircuit(8, 3, 11);
    const bellman::SyntheticCircuit c2 = bellman::MakeSyntheticCircuit(8, 3, 12);
    const bellman::Parameters params = zkfleet::devtools::SynthesizeParameters(c1.cs, 5, pool);
    bellman::WriteParameters(Path("p.params"), params, pool);
    bellman::WriteVerifyingKey(Path("p.vk"), params.vk);
    bellman::WriteAssignmentFile(Path("c1.asgn"), bellman::Synthesize(c1.cs, c1.values, pool));
    bellman::WriteAssignmentFile(Path("c2.asgn"), bellman::Synthesize(c2.cs, c2.values, pool));
    // Another shape: 2^7 rows, so fewer aux variables than the parameters have.
    const bellman::SyntheticCircuit small = bellman::MakeSyntheticCircuit(7, 3, 11);
    bellman::WriteAssignmentFile(Path("small.asgn"), bellman::Synthesize(small.cs, small.values, pool));
    // The right shape, one aux value changed: no longer satisfies row 3 (v_4 = v_3^2 or so).
    bellman::Assignment bad = bellman::Synthesize(c1.cs, c1.values, pool);
    bad.aux[4][0] ^= 1;
    bellman::WriteAssignmentFile(Path("unsat.asgn"), bad);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Path(const std::string& name) { return dir_->file(name); }

  static TempDir* dir_;
};
TempDir* SupraSealAbi::dir_ = nullptr;

TEST_F(SupraSealAbi, ExportsExactlySupraSealsEntryPoints) {
  const auto nm = RunCommand("nm -D --defined-only " + Quote(SUPRASEAL_C2_LIB));
  ASSERT_EQ(nm.exit_code, 0) << nm.output;
  std::set<std::string> symbols;
  std::istringstream lines(nm.output);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.rfind(' ');
    if (space != std::string::npos) symbols.insert(line.substr(space + 1));
  }
  EXPECT_EQ(symbols, (std::set<std::string>{"clone_SRS", "create_SRS", "drop_SRS", "evict_SRS",
                                             "generate_groth16_proofs_c"}))
      << nm.output;
}

TEST_F(SupraSealAbi, TwoCircuitsInOneCallAreBellmanKeysProofsAndVerify) {
  const std::string out = Path("abi.raw");
  const auto run = RunAbi(Path("p.params"), out, {Path("c1.asgn"), Path("c2.asgn")});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string raw = zkfleet::testing::ReadFile(out);
  ASSERT_EQ(raw.size(), 2 * kRawProofBytes);

  const auto key = engine::BellmanKey::Load(Path("p.params"), engine::EngineOptions(engine::Backend::kCpu));
  const std::vector<std::string> files = {Path("c1.asgn"), Path("c2.asgn")};
  for (size_t i = 0; i < files.size(); ++i) {
    const engine::AssignmentFile assignment = engine::AssignmentFile::Open(files[i]);
    engine::ProveOptions options;
    options.r = CanonicalBytes(RMont(i));
    options.s = CanonicalBytes(SMont(i));
    const engine::BellmanProof want = key->Prove(assignment.View(), options);
    const engine::ProofPoints got = FromRaw(reinterpret_cast<const uint8_t*>(raw.data()) + i * kRawProofBytes);
    ExpectSamePoints(got, want.points, i);
    EXPECT_EQ(bellman::EncodeProof(got), want.bytes) << i;
    const engine::VerifyResult verdict = engine::Verify(key->verification_key(), want.public_inputs, got);
    EXPECT_TRUE(verdict.ok()) << i << ": " << verdict.reason;

    // The independent verifier (tests/js/bellman_verify.mjs, on @noble/curves;
    // exit 3 when those are not installed, which fails here).
    const std::string proof_path = Path("abi" + std::to_string(i) + ".proof");
    const std::string inputs_path = Path("abi" + std::to_string(i) + ".json");
    const auto bytes = bellman::EncodeProof(got);
    zkfleet::testing::WriteFile(proof_path, std::string(bytes.begin(), bytes.end()));
    zkfleet::testing::WriteFile(inputs_path, InputsJson(want.public_inputs));
    const auto noble = RunCommand("node " + Quote(NobleVerifier()) + " --vk " + Quote(Path("p.vk")) + " --proof " +
                                  Quote(proof_path) + " --inputs " + Quote(inputs_path));
    EXPECT_EQ(noble.exit_code, 0) << i << ": " << noble.output;
  }
  // Distinct r, s and assignments: distinct proofs.
  EXPECT_NE(raw.substr(0, kRawProofBytes), raw.substr(kRawProofBytes));
}

TEST_F(SupraSealAbi, ABadParamsPathIsANonZeroRustErrorWithAMessage) {
  const std::string missing = Path("no-such.params");
  const auto run = RunAbi(missing, Path("none.raw"), {Path("c1.asgn")});
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_NE(run.output.find("create_SRS: code 2: zkfleet supraseal-c2: create_SRS: not_found"), std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(missing), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(Path("none.raw")));

  // Not a .params file at all.
  const auto garbage = RunAbi(Path("c1.asgn"), Path("none.raw"), {Path("c1.asgn")});
  EXPECT_EQ(garbage.exit_code, 3) << garbage.output;
  EXPECT_NE(garbage.output.find("create_SRS: code 22: "), std::string::npos) << garbage.output;

  const auto backend = RunAbi(Path("p.params"), Path("none.raw"), {Path("c1.asgn")}, "gpu");
  EXPECT_EQ(backend.exit_code, 3) << backend.output;
  EXPECT_NE(backend.output.find("ZKFLEET_BACKEND"), std::string::npos) << backend.output;
}

TEST_F(SupraSealAbi, AMismatchedAssignmentFailsTheCallAndWritesNoProof) {
  // Circuit 0 is good; circuit 1 has another shape: the call fails and
  // leaves proofs[] as it was (the C program checks), circuit 0's included.
  const auto run = RunAbi(Path("p.params"), Path("none.raw"), {Path("c1.asgn"), Path("small.asgn")});
  EXPECT_EQ(run.exit_code, 4) << run.output;
  EXPECT_NE(run.output.find("generate_groth16_proofs_c: code 22: "), std::string::npos) << run.output;
  // Refused on its sizes before any of its scalars is read.
  EXPECT_NE(run.output.find("circuit 1: inp_assignment_size 4, aux_assignment_size 125, abc_size 128 do not fit the "
                            "parameters"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(std::filesystem::exists(Path("none.raw")));

  const auto unsat = RunAbi(Path("p.params"), Path("none.raw"), {Path("unsat.asgn")});
  EXPECT_EQ(unsat.exit_code, 4) << unsat.output;
  EXPECT_NE(unsat.output.find("unsatisfied: circuit 0 of 1"), std::string::npos) << unsat.output;
  EXPECT_FALSE(std::filesystem::exists(Path("none.raw")));

  // The Assignment struct's own sizes must agree with its bitmaps and
  // vectors (supraseal-c2 asserts; here they are errors).
  const auto popcount = RunAbi(Path("p.params"), Path("none.raw"), {Path("c1.asgn"), Path("c2.asgn")}, "cpu", "popcount");
  EXPECT_EQ(popcount.exit_code, 4) << popcount.output;
  EXPECT_NE(popcount.output.find("circuit 1: a_aux_density: its popcount field says"), std::string::npos)
      << popcount.output;
  const auto bit_len = RunAbi(Path("p.params"), Path("none.raw"), {Path("c1.asgn")}, "cpu", "bit_len");
  EXPECT_EQ(bit_len.exit_code, 4) << bit_len.output;
  EXPECT_NE(bit_len.output.find("circuit 0: b_inp_bit_len 5 must equal inp_assignment_size 4"), std::string::npos)
      << bit_len.output;
  EXPECT_FALSE(std::filesystem::exists(Path("none.raw")));
}

// zkfleet-dev bellman-params and bellman-assignment, on the BLS12-381 circom
// fixture and on a synthetic circuit; the files prove with BellmanKey (and,
// the synthetic ones, through the C ABI).
TEST(ZkfleetDevBellman, ParamsAndAssignmentFromCircomAndSynthetic) {
  TempDir dir;
  const std::string dev = Quote(ZKFLEET_DEV_BIN);
  const std::string r1cs = zkfleet::testing::Fixture("bls12381_k12", "circuit.r1cs");
  const std::string wtns = zkfleet::testing::Fixture("bls12381_k12", "witness.wtns");
  auto params = RunCommand(dev + " bellman-params --r1cs " + Quote(r1cs) + " --seed 3 --out " +
                           Quote(dir.file("k12.params")) + " --vk " + Quote(dir.file("k12.vk")) + " --threads 2");
  ASSERT_EQ(params.exit_code, 0) << params.output;
  EXPECT_NE(params.output.find("WARNING: insecure"), std::string::npos) << params.output;
  auto asgn = RunCommand(dev + " bellman-assignment --r1cs " + Quote(r1cs) + " --wtns " + Quote(wtns) + " --out " +
                         Quote(dir.file("k12.asgn")) + " --inputs-json " + Quote(dir.file("k12.json")));
  ASSERT_EQ(asgn.exit_code, 0) << asgn.output;

  const auto key = engine::BellmanKey::Load(dir.file("k12.params"), engine::EngineOptions(engine::Backend::kCpu));
  const engine::AssignmentFile file = engine::AssignmentFile::Open(dir.file("k12.asgn"));
  const engine::BellmanProof proof = key->Prove(file.View());
  EXPECT_TRUE(proof.check.verified);
  EXPECT_TRUE(engine::Verify(key->verification_key(), proof.public_inputs, proof.points).ok());
  EXPECT_EQ(InputsJson(proof.public_inputs) + "\n", zkfleet::testing::ReadFile(dir.file("k12.json")));
  // The public inputs are the circom circuit's public signals (snarkjs's public.json).
  std::string want_json = zkfleet::testing::ReadFile(zkfleet::testing::Fixture("bls12381_k12", "public.json"));
  std::string compact;
  for (char ch : want_json) {
    if (ch != ' ' && ch != '\n') compact += ch;
  }
  EXPECT_EQ(InputsJson(proof.public_inputs), compact);
  EXPECT_EQ(zkfleet::testing::ReadFile(dir.file("k12.vk")),
            std::string(key->verifying_key_bytes().begin(), key->verifying_key_bytes().end()));

  params = RunCommand(dev + " bellman-params --synthetic 6 --public 2 --seed 9 --out " + Quote(dir.file("s.params")));
  ASSERT_EQ(params.exit_code, 0) << params.output;
  asgn = RunCommand(dev + " bellman-assignment --synthetic 6 --public 2 --seed 9 --out " + Quote(dir.file("s.asgn")));
  ASSERT_EQ(asgn.exit_code, 0) << asgn.output;
  const auto synthetic = engine::BellmanKey::Load(dir.file("s.params"), engine::EngineOptions(engine::Backend::kCpu));
  EXPECT_TRUE(synthetic->Prove(engine::AssignmentFile::Open(dir.file("s.asgn")).View()).check.verified);
  const auto abi = RunAbi(dir.file("s.params"), dir.file("s.raw"), {dir.file("s.asgn")});
  EXPECT_EQ(abi.exit_code, 0) << abi.output;

  // Refusals: both sources, none, a synthetic assignment without its seed.
  // Each exits 1 with zkfleet-dev's one error line naming the command and
  // what is missing, so a refusal for another reason (a crash, a bad flag
  // parse, an unreadable r1cs) does not pass for this one.
  const std::string one_source = "zkfleet-dev: error: bellman-params: give exactly one of --r1cs FILE and --synthetic LOG_ROWS\n";
  const auto no_source = RunCommand(dev + " bellman-params --seed 1 --out " + Quote(dir.file("x.params")));
  EXPECT_EQ(no_source.exit_code, 1) << no_source.output;
  EXPECT_EQ(no_source.output, one_source);
  const auto two_sources = RunCommand(dev + " bellman-params --r1cs " + Quote(r1cs) + " --synthetic 6 --seed 1 --out " +
                                      Quote(dir.file("x.params")));
  EXPECT_EQ(two_sources.exit_code, 1) << two_sources.output;
  EXPECT_EQ(two_sources.output, one_source);
  const auto no_seed = RunCommand(dev + " bellman-assignment --synthetic 6 --out " + Quote(dir.file("x.asgn")));
  EXPECT_EQ(no_seed.exit_code, 1) << no_seed.output;
  EXPECT_EQ(no_seed.output, "zkfleet-dev: error: bellman-assignment: give --seed S\n");
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.asgn")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.params")));
}

}  // namespace
