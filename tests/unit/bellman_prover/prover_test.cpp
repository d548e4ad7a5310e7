// The assignment prover on the CPU (engine::BellmanKey over a CPU
// groth16::AssignmentKey): proofs of synthetic and circom circuits verify
// with the engine's verifier, are deterministic for fixed r and s, and
// every kind of bad assignment is refused with an error, never a proof.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

#include "testutil/test_support.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/r1cs/r1cs.hpp"
#include "zkfleet/wtns/witness.hpp"

namespace zkfleet {
namespace {

using bellman::Fr;

std::unique_ptr<engine::BellmanKey> CpuKey(const bellman::Parameters& params) {
  engine::EngineOptions options{engine::Backend::kCpu, 2};
  return std::make_unique<engine::BellmanKey>(groth16::MakeCpuAssignmentKey(params, options),
                                              bellman::SerializeVerifyingKey(params.vk), bellman::ToEngineKey(params.vk));
}

engine::ProveOptions Fixed(uint8_t r, uint8_t s) {
  engine::ProveOptions options;
  options.r.emplace();
  options.s.emplace();
  options.r->fill(0);
  options.s->fill(0);
  (*options.r)[0] = r;
  (*options.s)[0] = s;
  return options;
}

struct Synthetic {
  bellman::SyntheticCircuit circuit;
  bellman::Parameters params;
  bellman::Assignment assignment;
};

Synthetic MakeSynthetic(int log_rows, uint32_t n_public, uint64_t seed) {
  cpu::ThreadPool pool(2);
  Synthetic s{bellman::MakeSyntheticCircuit(log_rows, n_public, seed), {}, {}};
  s.params = bellman::SynthesizeParameters(s.circuit.cs, seed + 1, pool);
  s.assignment = bellman::Synthesize(s.circuit.cs, s.circuit.values, pool);
  return s;
}

TEST(BellmanProver, SyntheticCircuitProofsVerifyAndAreDeterministic) {
  const Synthetic s = MakeSynthetic(9, 3, 11);
  EXPECT_EQ(s.assignment.a.size(), 512u);  // abc_size is exactly 2^log_rows
  const auto key = CpuKey(s.params);
  EXPECT_EQ(key->info().domain_size, 512u);
  EXPECT_EQ(key->info().n_inputs, 4u);
  const engine::BellmanProof p1 = key->Prove(s.assignment.View(), Fixed(3, 5));
  EXPECT_TRUE(p1.check.verified);
  EXPECT_TRUE(p1.check.engine_fault.empty());
  ASSERT_EQ(p1.public_inputs.size(), 3u);
  // Independent check of what Prove() verified, from the 192 bytes.
  const engine::ProofPoints decoded = bellman::DecodeProof(p1.bytes, "proof");
  EXPECT_TRUE(engine::Verify(bellman::ToEngineKey(s.params.vk), p1.public_inputs, decoded).ok());
  const engine::BellmanProof p2 = key->Prove(s.assignment.View(), Fixed(3, 5));
  EXPECT_EQ(p1.bytes, p2.bytes);
  const engine::BellmanProof p3 = key->Prove(s.assignment.View());  // random r, s
  EXPECT_NE(p1.bytes, p3.bytes);
  EXPECT_TRUE(engine::Verify(bellman::ToEngineKey(s.params.vk), p3.public_inputs, bellman::DecodeProof(p3.bytes, "p3")).ok());
  // Another input is another statement.
  std::vector<engine::BigInt> wrong = p1.public_inputs;
  wrong[1][0] ^= 1;
  EXPECT_EQ(engine::Verify(bellman::ToEngineKey(s.params.vk), wrong, decoded).status, engine::VerifyStatus::kInvalidProof);
}

TEST(BellmanProver, AbcSizeBelowTheDomainIsPaddedWithZeros) {
  // 2^8 rows of which only some are used: drop the last constraints.
  Synthetic s = MakeSynthetic(8, 2, 5);
  bellman::ConstraintSystem cs = s.circuit.cs;
  const size_t keep = cs.n_constraints() - 40;
  for (auto* lc : {&cs.a, &cs.b, &cs.c}) {
    lc->start.resize(keep + 1);
    lc->terms.resize(lc->start.back());
  }
  cpu::ThreadPool pool(2);
  const bellman::Parameters params = bellman::SynthesizeParameters(cs, 7, pool);
  const bellman::Assignment assignment = bellman::Synthesize(cs, s.circuit.values, pool);
  ASSERT_LT(assignment.a.size(), 256u);
  const auto key = CpuKey(params);
  EXPECT_EQ(key->info().domain_size, 256u);
  EXPECT_TRUE(key->Prove(assignment.View(), Fixed(1, 2)).check.verified);
}

TEST(BellmanProver, CircomCircuitInBellpersonOrder) {
  const io::R1cs r1cs = io::ReadR1cs(testing::Fixture("bls12381_k12", "circuit.r1cs"));
  const engine::Witness witness = engine::Witness::FromFile(testing::Fixture("bls12381_k12", "witness.wtns"));
  const bellman::ConstraintSystem cs = bellman::FromCircom(r1cs);
  std::vector<Fr> values(cs.n_vars());
  for (uint32_t i = 0; i < cs.n_vars(); ++i) {
    uint64_t limbs[4];
    std::memcpy(limbs, witness.values() + size_t{i} * 32, 32);
    values[i] = Fr::from_canonical(limbs);
  }
  cpu::ThreadPool pool(2);
  const bellman::Parameters params = bellman::SynthesizeParameters(cs, 99, pool);
  const bellman::Assignment assignment = bellman::Synthesize(cs, values, pool);
  const auto key = CpuKey(params);
  const engine::BellmanProof proof = key->Prove(assignment.View(), Fixed(9, 9));
  EXPECT_TRUE(proof.check.verified);
  // The public inputs are circom's public signals, in order.
  ASSERT_EQ(proof.public_inputs.size(), r1cs.header.n_pub_out + r1cs.header.n_pub_in);
  for (size_t i = 0; i < proof.public_inputs.size(); ++i) {
    EXPECT_EQ(std::memcmp(proof.public_inputs[i].data(), witness.values() + (i + 1) * 32, 32), 0) << i;
  }
}

TEST(BellmanProver, AnUnsatisfiedRowIsNamedAndNoProofIsReturned) {
  const Synthetic s = MakeSynthetic(8, 2, 3);
  const auto key = CpuKey(s.params);
  bellman::Assignment bad = s.assignment;
  bad.c[17][0] ^= 1;  // still < r: the low bit of a reduced value
  try {
    (void)key->Prove(bad.View(), Fixed(1, 1));
    FAIL() << "a proof of an unsatisfied assignment was returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsatisfied);
    EXPECT_NE(std::string(e.what()).find("row 17"), std::string::npos) << e.what();
  }
}

TEST(BellmanProver, EvaluationsThatDoNotBelongToTheAssignmentFailVerificationTwice) {
  const Synthetic s = MakeSynthetic(8, 2, 4);
  const auto key = CpuKey(s.params);
  bellman::Assignment bad = s.assignment;
  // a·b = c still holds on every row, but aux no longer matches a, b, c.
  bad.aux[5] = bad.aux[6];
  ASSERT_NE(bad.aux[5], s.assignment.aux[5]);
  try {
    (void)key->Prove(bad.View(), Fixed(1, 1));
    FAIL() << "a proof that fails verification was returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsatisfied);
    EXPECT_NE(std::string(e.what()).find("also on the CPU reference path"), std::string::npos) << e.what();
  }
}

TEST(BellmanProver, ShapeAndValueErrorsNameTheField) {
  const Synthetic s = MakeSynthetic(8, 2, 6);
  const auto key = CpuKey(s.params);
  auto expect_error = [&](const bellman::Assignment& a, ErrorCode code, const std::string& needle) {
    try {
      (void)key->Prove(a.View(), Fixed(1, 1));
      ADD_FAILURE() << "accepted; expected " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {
    bellman::Assignment a = s.assignment;
    a.aux.pop_back();
    expect_error(a, ErrorCode::kMismatch, "aux count");
  }
  {
    bellman::Assignment a = s.assignment;
    a.input.push_back(a.input[1]);
    expect_error(a, ErrorCode::kMismatch, "input count");
  }
  {
    bellman::Assignment a = s.assignment;
    a.c.pop_back();
    expect_error(a, ErrorCode::kMismatch, "different lengths");
  }
  {
    bellman::Assignment a = s.assignment;
    for (auto* v : {&a.a, &a.b, &a.c}) v->resize(257);
    expect_error(a, ErrorCode::kMismatch, "abc_size");
  }
  {
    bellman::Assignment a = s.assignment;
    a.a_aux_density[0] ^= 1;  // one point more or less than the parameters hold
    expect_error(a, ErrorCode::kMismatch, "a_aux density");
  }
  {
    bellman::Assignment a = s.assignment;
    a.b_aux_density[1] ^= 4;
    expect_error(a, ErrorCode::kMismatch, "b densities");
  }
  {
    bellman::Assignment a = s.assignment;
    a.b_aux_density.clear();
    expect_error(a, ErrorCode::kMismatch, "word count");
  }
  {
    bellman::Assignment a = s.assignment;
    a.input[0] = a.input[1];
    expect_error(a, ErrorCode::kMismatch, "constant one");
  }
  {
    bellman::Assignment a = s.assignment;
    a.aux[3] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
    expect_error(a, ErrorCode::kInvalidArgument, "aux[3]");
  }
  {
    bellman::Assignment a = s.assignment;
    a.b[2] = {~uint64_t{0}, 0, 0, ~uint64_t{0}};
    expect_error(a, ErrorCode::kInvalidArgument, "b[2]");
  }
}

std::string DecimalJson(const std::vector<engine::BigInt>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    uint64_t limbs[4] = {values[i][0], values[i][1], values[i][2], values[i][3]};
    std::string dec;
    for (bool zero = false; !zero;) {  // repeated division by 10
      unsigned __int128 rem = 0;
      zero = true;
      for (int k = 3; k >= 0; --k) {
        const unsigned __int128 cur = (rem << 64) | limbs[k];
        limbs[k] = static_cast<uint64_t>(cur / 10);
        rem = cur % 10;
        if (limbs[k]) zero = false;
      }
      dec.insert(dec.begin(), static_cast<char>('0' + static_cast<int>(rem)));
    }
    out += (i ? ",\"" : "\"") + dec + "\"";
  }
  return out + "]";
}

// The independent oracle: @noble/curves (tests/js/bellman_verify.mjs) accepts
// our two-partition proof file and refuses it with one byte changed.
TEST(BellmanProver, NobleCurvesAcceptsOurProofsAndRejectsATamperedOne) {
  ASSERT_TRUE(testing::RequireOnPath("node"));
  const Synthetic s1 = MakeSynthetic(8, 3, 21);
  const auto key = CpuKey(s1.params);
  // Two partitions of one circuit: the same constraints, other values.
  bellman::SyntheticCircuit c2 = bellman::MakeSyntheticCircuit(8, 3, 21);
  cpu::ThreadPool pool(2);
  c2.values[1] = c2.values[1] + Fr::one();  // another public input, same chain rules
  for (size_t row = 0; row < 3; ++row) c2.values[4 + row + 1] = c2.values[4 + row] + c2.values[row + 1];
  for (size_t row = 3; row + 1 < c2.values.size() - 4; ++row) {
    const size_t cur = 4 + row, next = cur + 1;
    if (row % 3 == 1) c2.values[next] = c2.values[cur] * c2.values[cur];
    if (row % 3 == 2) c2.values[next] = c2.values[cur] * Fr::from_uint(2) + Fr::one();
  }
  const bellman::Assignment a2 = bellman::Synthesize(c2.cs, c2.values, pool);
  const engine::BellmanProof p1 = key->Prove(s1.assignment.View());
  const engine::BellmanProof p2 = key->Prove(a2.View());
  ASSERT_NE(p1.public_inputs, p2.public_inputs);

  testing::TempDir dir;
  const std::string vk = (dir.path() / "x.vk").string(), proof = (dir.path() / "x.proof").string(),
                    inputs = (dir.path() / "x.json").string();
  bellman::WriteVerifyingKey(vk, s1.params.vk);
  std::string bytes(reinterpret_cast<const char*>(p1.bytes.data()), 192);
  bytes.append(reinterpret_cast<const char*>(p2.bytes.data()), 192);
  testing::WriteFile(proof, bytes);
  testing::WriteFile(inputs, "[" + DecimalJson(p1.public_inputs) + "," + DecimalJson(p2.public_inputs) + "]");
  const std::string script = std::string(ZKFLEET_SOURCE_DIR) + "/tests/js/bellman_verify.mjs";
  auto noble = [&] {
    return testing::RunCommand("node " + testing::Quote(script) + " --vk " + testing::Quote(vk) + " --proof " +
                               testing::Quote(proof) + " --inputs " + testing::Quote(inputs));
  };
  testing::CommandResult r = noble();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("valid (2 partitions)"), std::string::npos) << r.output;
  bytes[192 + 100] ^= 0x01;  // partition 2's B, a low bit of x
  testing::WriteFile(proof, bytes);
  r = noble();
  EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << r.output;
  // Ours refuses it too.
  bool ours_rejects = false;
  try {
    const auto decoded = bellman::DecodeProofs(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "x");
    ours_rejects = !engine::Verify(bellman::ToEngineKey(s1.params.vk), p2.public_inputs, decoded[1]).ok();
  } catch (const Error&) {
    ours_rejects = true;
  }
  EXPECT_TRUE(ours_rejects);
}

// A backend that returns one corrupted proof (as a faulty device would) and
// then correct ones.
class OnceFaultyKey final : public groth16::AssignmentKey {
 public:
  explicit OnceFaultyKey(std::unique_ptr<groth16::AssignmentKey> inner) : inner_(std::move(inner)) {}
  const engine::BellmanInfo& info() const override { return inner_->info(); }
  groth16::RawProof ProveUnchecked(const engine::AssignmentView& v, const engine::ProveOptions& o,
                                   bool inject_fault) const override {
    const bool corrupt = !faulted_.exchange(true);
    return inner_->ProveUnchecked(v, o, inject_fault || corrupt);
  }

 private:
  std::unique_ptr<groth16::AssignmentKey> inner_;
  mutable std::atomic<bool> faulted_{false};
};

TEST(BellmanProver, AnEngineFaultIsCaughtAndTheRetriedProofReturned) {
  const Synthetic s = MakeSynthetic(8, 2, 13);
  engine::EngineOptions options{engine::Backend::kCpu, 2};
  engine::BellmanKey key(std::make_unique<OnceFaultyKey>(groth16::MakeCpuAssignmentKey(s.params, options)),
                         bellman::SerializeVerifyingKey(s.params.vk), bellman::ToEngineKey(s.params.vk));
  const engine::BellmanProof faulty_first = key.Prove(s.assignment.View(), Fixed(4, 6));
  EXPECT_TRUE(faulty_first.check.verified);
  EXPECT_FALSE(faulty_first.check.engine_fault.empty());  // reported, not hidden
  // The returned proof is the correct one: the same bytes as a clean key's.
  EXPECT_EQ(faulty_first.bytes, CpuKey(s.params)->Prove(s.assignment.View(), Fixed(4, 6)).bytes);
  EXPECT_TRUE(key.Prove(s.assignment.View(), Fixed(4, 6)).check.engine_fault.empty());
}

TEST(BellmanProver, ParametersOfAnotherSeedDoNotVerify) {
  // The proof must depend on the parameters: proving with one SRS and
  // checking against another's verifying key fails.
  const Synthetic s = MakeSynthetic(8, 2, 8);
  cpu::ThreadPool pool(2);
  const bellman::Parameters other = bellman::SynthesizeParameters(s.circuit.cs, 12345, pool);
  const engine::BellmanProof p = CpuKey(s.params)->Prove(s.assignment.View(), Fixed(2, 3));
  EXPECT_EQ(engine::Verify(bellman::ToEngineKey(other.vk), p.public_inputs, p.points).status,
            engine::VerifyStatus::kInvalidProof);
}

}  // namespace
}  // namespace zkfleet
