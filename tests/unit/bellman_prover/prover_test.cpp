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
#include "zkfleet/devtools/seeded_parameters.hpp"
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
  s.params = devtools::SynthesizeParameters(s.circuit.cs, seed + 1, pool);
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
  const bellman::Parameters params = devtools::SynthesizeParameters(cs, 7, pool);
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
  const bellman::Parameters params = devtools::SynthesizeParameters(cs, 99, pool);
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
  size_t j = 5;  // two aux values that differ (two bits may not)
  while (bad.aux[j] == bad.aux[j + 1]) ++j;
  bad.aux[j] = bad.aux[j + 1];
  ASSERT_NE(bad.aux[j], s.assignment.aux[j]);
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

// Every row of `cs` holds for `values`: A·z times B·z equals C·z.
size_t UnsatisfiedRows(const bellman::ConstraintSystem& cs, const std::vector<Fr>& values) {
  auto eval = [&](const bellman::LinearCombinations& lc, size_t row) {
    Fr acc = Fr::zero();
    for (uint64_t t = lc.start[row]; t < lc.start[row + 1]; ++t) acc += lc.terms[t].coef * values[lc.terms[t].var];
    return acc;
  };
  size_t bad = 0;
  for (size_t row = 0; row < cs.n_constraints(); ++row) {
    if (!(eval(cs.a, row) * eval(cs.b, row) == eval(cs.c, row))) ++bad;
  }
  return bad;
}

// The synthetic circuit's shape against a 32 GiB PoRep partition's
// (bellman::porep32g, measured by cuzk): n_aux per row, the A- and B-dense
// shares of aux, only the constant one B-dense among the inputs, ~99 % of
// the aux values bits.
struct Shape {
  double aux_per_row, a_share, b_share, bit_share;
  size_t a_dense, b_dense, bits, b_inputs_dense, n_inputs;
};
Shape ShapeOf(const bellman::SyntheticCircuit& c) {
  const bellman::Densities d = bellman::DensitiesOf(c.cs);
  size_t a = 0, b = 0, b_in = 0, bits = 0;
  for (uint32_t j = 0; j < c.cs.n_aux; ++j) {
    a += d.a_aux[j];
    b += d.b_aux[j];
    const Fr& v = c.values[c.cs.n_inputs + j];
    bits += v == Fr::zero() || v == Fr::one();
  }
  for (bool x : d.b_input) b_in += x;
  const double n_aux = c.cs.n_aux;
  return {n_aux / static_cast<double>(c.cs.n_constraints()), a / n_aux, b / n_aux, bits / n_aux, a, b, bits,
          b_in, c.cs.n_inputs};
}

constexpr double kRealAuxPerRow = double(bellman::porep32g::kAux) / double(bellman::porep32g::kConstraints);
constexpr double kRealAShare = double(bellman::porep32g::kAuxA) / double(bellman::porep32g::kAux);
constexpr double kRealBShare = double(bellman::porep32g::kAuxB) / double(bellman::porep32g::kAux);

TEST(BellmanProver, SyntheticCircuitHasThePoRepPartitionsRatios) {
  const Synthetic s = MakeSynthetic(12, 3, 17);
  const Shape shape = ShapeOf(s.circuit);
  EXPECT_EQ(s.circuit.cs.n_constraints() + s.circuit.cs.n_inputs, 4096u);  // abc_size stays 2^log_rows
  EXPECT_NEAR(shape.aux_per_row, kRealAuxPerRow, 0.0005);
  EXPECT_LT(shape.aux_per_row, 1.0);  // some rows define no variable
  EXPECT_NEAR(shape.a_share, kRealAShare, 0.001);
  EXPECT_LT(shape.a_share, 1.0);  // some aux values are named in C only
  EXPECT_NEAR(shape.b_share, kRealBShare, 0.002);
  EXPECT_NEAR(shape.bit_share, bellman::porep32g::kBitSharePercent / 100.0, 0.003);
  EXPECT_EQ(shape.b_inputs_dense, 1u);
  // About half the bits are ones (the split MSM adds those, skips zeros).
  size_t ones = 0, zeros = 0;
  for (uint32_t j = 0; j < s.circuit.cs.n_aux; ++j) {
    const Fr& v = s.circuit.values[s.circuit.cs.n_inputs + j];
    ones += v == Fr::one();
    zeros += v == Fr::zero();
  }
  EXPECT_NEAR(double(ones) / double(ones + zeros), 0.5, 0.05);
  // The parameters' point counts follow: a = inputs + A-dense aux, b = 1 + B-dense aux.
  EXPECT_EQ(s.params.l.size(), s.circuit.cs.n_aux);
  EXPECT_EQ(s.params.a.size(), s.circuit.cs.n_inputs + shape.a_dense);
  EXPECT_EQ(s.params.b_g1.size(), 1 + shape.b_dense);
  EXPECT_EQ(s.params.h.size(), 4095u);
  // Satisfied, and it proves.
  EXPECT_EQ(UnsatisfiedRows(s.circuit.cs, s.circuit.values), 0u);
  const engine::BellmanProof p = CpuKey(s.params)->Prove(s.assignment.View(), Fixed(7, 8));
  EXPECT_TRUE(p.check.verified);
  const engine::ProofPoints decoded = bellman::DecodeProof(p.bytes, "p");
  EXPECT_TRUE(engine::Verify(bellman::ToEngineKey(s.params.vk), p.public_inputs, decoded).ok());
}

TEST(BellmanProver, SyntheticPoRepShapeWithItsPublicInputs) {
  // The real partition's 327 public inputs (328 with the constant one); at
  // 2^16 their chain rows are 0.5 % of the rows, so the shares hold looser.
  const bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(16, bellman::kPoRepPublicInputs, 3);
  const Shape shape = ShapeOf(c);
  EXPECT_EQ(shape.n_inputs, bellman::porep32g::kInputs);
  EXPECT_EQ(c.cs.n_constraints(), 65536u - bellman::porep32g::kInputs);
  EXPECT_NEAR(shape.aux_per_row, kRealAuxPerRow, 0.0005);
  EXPECT_NEAR(shape.a_share, kRealAShare, 0.001);
  EXPECT_NEAR(shape.b_share, kRealBShare, 0.002);
  EXPECT_NEAR(shape.bit_share, bellman::porep32g::kBitSharePercent / 100.0, 0.008);
  EXPECT_EQ(shape.b_inputs_dense, 1u);
  EXPECT_EQ(UnsatisfiedRows(c.cs, c.values), 0u);
  // The exact counts of the row schedule's arithmetic, which also gives the
  // header's 2^27 figures (run standalone, not by building 2^27).
  EXPECT_EQ(c.cs.n_aux, 65155u);
  EXPECT_EQ(shape.a_dense, 64947u);
  EXPECT_EQ(shape.b_dense, 16490u);
  EXPECT_EQ(shape.bits, 64178u);
}

TEST(BellmanProver, SyntheticVariantsShareTheConstraintsAndTheBits) {
  const bellman::SyntheticCircuit c = bellman::MakeSyntheticCircuit(12, 5, 23);
  EXPECT_EQ(bellman::SyntheticVariantValues(12, 5, 23, 0), c.values);
  const std::vector<Fr> v1 = bellman::SyntheticVariantValues(12, 5, 23, 1);
  const std::vector<Fr> v2 = bellman::SyntheticVariantValues(12, 5, 23, 2);
  ASSERT_EQ(v1.size(), c.values.size());
  ASSERT_EQ(v2.size(), c.values.size());
  EXPECT_EQ(UnsatisfiedRows(c.cs, v1), 0u);
  EXPECT_EQ(UnsatisfiedRows(c.cs, v2), 0u);
  size_t same_inputs = 0, bits_kept = 0, bits = 0;
  for (uint32_t i = 1; i < c.cs.n_inputs; ++i) same_inputs += v1[i] == c.values[i] || v2[i] == v1[i];
  for (uint32_t i = c.cs.n_inputs; i < c.values.size(); ++i) {
    if (c.values[i] == Fr::zero() || c.values[i] == Fr::one()) {
      ++bits;
      bits_kept += v1[i] == c.values[i];
    }
  }
  EXPECT_EQ(same_inputs, 0u);
  EXPECT_EQ(bits_kept, bits);
  // The same structure for another seed: only the values differ.
  const bellman::SyntheticCircuit other = bellman::MakeSyntheticCircuit(12, 5, 99);
  EXPECT_EQ(other.cs.n_aux, c.cs.n_aux);
  EXPECT_EQ(other.cs.a.start, c.cs.a.start);
  EXPECT_EQ(other.cs.b.start, c.cs.b.start);
  EXPECT_EQ(other.cs.c.start, c.cs.c.start);
  EXPECT_NE(other.values, c.values);
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
  c2.values = bellman::SyntheticVariantValues(8, 3, 21, 1);  // other public inputs, same chain rules
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
  const bellman::Parameters other = devtools::SynthesizeParameters(s.circuit.cs, 12345, pool);
  const engine::BellmanProof p = CpuKey(s.params)->Prove(s.assignment.View(), Fixed(2, 3));
  EXPECT_EQ(engine::Verify(bellman::ToEngineKey(other.vk), p.public_inputs, p.points).status,
            engine::VerifyStatus::kInvalidProof);
}

}  // namespace
}  // namespace zkfleet
