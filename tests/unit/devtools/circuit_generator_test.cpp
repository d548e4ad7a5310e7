// gen-circuit: the r1cs/wtns pair reads back, the witness satisfies every
// constraint (checked with GMP, not the engine's field code), the shape is
// circom-like, the output is a pure function of the seed, and bad options
// are rejected with a message naming the option.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gmp_field.hpp"
#include "scratch_dir.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/devtools/circuit_generator.hpp"
#include "zkfleet/engine/witness.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/r1cs/r1cs.hpp"

namespace zkfleet::devtools {
namespace {

using testing::FromLe;
using testing::GmpField;

using testing::ScratchDir;
using testing::ScratchPath;

// <lc, w> mod p with GMP.
mpz_class Evaluate(const io::LinearCombination& lc, const std::vector<mpz_class>& w, const GmpField& f) {
  mpz_class sum = 0;
  for (size_t t = 0; t < lc.size; ++t) sum += FromLe(lc.coeffs + 32 * t, 32) * w[lc.wires[t]];
  return f.Mod(sum);
}

struct Case {
  engine::Curve curve;
  int power;
};

class GenerateCircuitTest : public ::testing::TestWithParam<Case> {};

TEST_P(GenerateCircuitTest, ReadsBackAndTheWitnessSatisfiesEveryConstraint) {
  const Case c = GetParam();
  CircuitOptions o;
  o.curve = c.curve;
  o.constraints = MaxConstraints(c.power, 3) - 7;  // not a "round" count
  o.seed = 42 + c.power;
  const GeneratedCircuit gen = GenerateCircuit(o);

  const auto dir = ScratchDir();
  const std::string r1cs_path = dir / "circuit.r1cs", wtns_path = dir / "witness.wtns";
  WriteCircuitFiles(gen, r1cs_path, wtns_path);
  const io::R1cs r1cs = io::ReadR1cs(r1cs_path);
  EXPECT_EQ(r1cs, gen.r1cs);
  const engine::Witness witness = engine::Witness::FromFile(wtns_path);

  const io::R1csHeader& h = r1cs.header;
  const io::CurvePrimes& primes = io::PrimesOf(c.curve);
  EXPECT_EQ(h.prime, std::vector<uint8_t>(primes.r, primes.r + 32));
  EXPECT_EQ(h.n_constraints, o.constraints);
  EXPECT_EQ(h.n_pub_out, 1u);
  EXPECT_EQ(h.n_pub_in, 2u);
  EXPECT_EQ(h.n_prv_in, 2u);
  EXPECT_EQ(h.n_wires, 1 + 1 + 2 + 2 + (o.constraints - 1));
  EXPECT_EQ(gen.stats.domain_power, c.power);
  ASSERT_EQ(witness.count(), h.n_wires);
  EXPECT_EQ(witness.prime(), h.prime);

  const GmpField f(FromLe(primes.r, 32));
  std::vector<mpz_class> w(h.n_wires);
  uint64_t zero_or_one = 0;
  for (uint32_t i = 0; i < h.n_wires; ++i) {
    w[i] = FromLe(witness.values() + 32 * size_t{i}, 32);
    ASSERT_LT(w[i], f.p());
    if (w[i] == 0 || w[i] == 1) ++zero_or_one;
  }
  EXPECT_EQ(w[0], 1);
  EXPECT_EQ(zero_or_one, gen.stats.boolean_values);

  size_t single_term_lcs = 0, max_terms = 0;
  for (uint32_t row = 0; row < h.n_constraints; ++row) {
    const mpz_class a = Evaluate(r1cs.lc(row, 0), w, f);
    const mpz_class b = Evaluate(r1cs.lc(row, 1), w, f);
    const mpz_class cc = Evaluate(r1cs.lc(row, 2), w, f);
    ASSERT_EQ(f.Mul(a, b), cc) << "constraint " << row;
    for (int part = 0; part < 3; ++part) {
      const io::LinearCombination lc = r1cs.lc(row, part);
      single_term_lcs += lc.size == 1;
      max_terms = std::max(max_terms, lc.size);
      for (size_t t = 1; t < lc.size; ++t) EXPECT_LT(lc.wires[t - 1], lc.wires[t]) << "terms sorted, no duplicates";
    }
  }
  // circom-like: sparse rows, mostly single-term combinations, about half
  // of the witness 0 or 1.
  EXPECT_LE(max_terms, 3u);
  EXPECT_GT(single_term_lcs, h.n_constraints);  // more than one per row on average
  const double boolean_share = static_cast<double>(zero_or_one) / h.n_wires;
  EXPECT_GT(boolean_share, 0.40);
  EXPECT_LT(boolean_share, 0.65);
}

INSTANTIATE_TEST_SUITE_P(Sizes, GenerateCircuitTest,
                         ::testing::Values(Case{engine::Curve::kBn254, 6}, Case{engine::Curve::kBn254, 10},
                                           Case{engine::Curve::kBls12_381, 6},
                                           Case{engine::Curve::kBls12_381, 10}),
                         [](const auto& info) {
                           return std::string(engine::CurveName(info.param.curve)) + "_2pow" +
                                  std::to_string(info.param.power);
                         });

TEST(GenerateCircuit, SameSeedSameFilesOtherSeedOtherFiles) {
  CircuitOptions o;
  o.constraints = 500;
  o.seed = 7;
  const GeneratedCircuit a = GenerateCircuit(o), b = GenerateCircuit(o);
  EXPECT_EQ(a.r1cs, b.r1cs);
  EXPECT_EQ(a.witness, b.witness);
  o.seed = 8;
  const GeneratedCircuit c = GenerateCircuit(o);
  EXPECT_NE(a.r1cs.term_wire, c.r1cs.term_wire);
  EXPECT_NE(a.witness, c.witness);
}

TEST(GenerateCircuit, HonoursInputCounts) {
  CircuitOptions o;
  o.curve = engine::Curve::kBls12_381;
  o.constraints = 100;
  o.public_outputs = 3;
  o.public_inputs = 4;
  o.private_inputs = 0;
  const GeneratedCircuit g = GenerateCircuit(o);
  EXPECT_EQ(g.r1cs.header.n_pub_out, 3u);
  EXPECT_EQ(g.r1cs.header.n_pub_in, 4u);
  EXPECT_EQ(g.r1cs.header.n_prv_in, 0u);
  EXPECT_EQ(g.r1cs.header.n_wires, 1 + 3 + 4 + (100 - 3));
  // The last rows define the outputs: C = {out_k}.
  for (uint32_t k = 0; k < 3; ++k) {
    const io::LinearCombination c = g.r1cs.lc(100 - 3 + k, 2);
    ASSERT_EQ(c.size, 1u);
    EXPECT_EQ(c.wires[0], 1 + k);
  }
}

TEST(DomainPower, IsTheSmallestPowerOfTwoHoldingConstraintsAndPublicRows) {
  EXPECT_EQ(DomainPower(4092, 3), 12);  // 4096 rows exactly
  EXPECT_EQ(DomainPower(4093, 3), 13);
  EXPECT_EQ(DomainPower(2, 2), 3);      // spec §4.2: 2 + 2 -> 8
  EXPECT_EQ(DomainPower(4001, 3), 12);  // spec §4.2: 4001 + 3 -> 4096
  EXPECT_EQ(MaxConstraints(12, 3), 4092u);
}

void ExpectRejected(const CircuitOptions& o, const std::string& fragment) {
  try {
    GenerateCircuit(o);
    FAIL() << "expected an error mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(GenerateCircuit, RejectsBadOptions) {
  CircuitOptions o;
  o.constraints = 0;
  ExpectRejected(o, "--constraints: expected >= 1");

  o.constraints = 61;  // 61 + 3 + 1 = 65 rows > 2^6
  o.max_power = 6;
  ExpectRejected(o, "use at most 60 constraints");
  o.constraints = 60;
  EXPECT_EQ(GenerateCircuit(o).stats.domain_power, 6);

  o.max_power = 29;
  ExpectRejected(o, "--max-power: expected 1..28");
  o.max_power = 28;
  o.constraints = MaxConstraints(28, 3) + 1;
  ExpectRejected(o, "2^28");

  o.constraints = 10;
  o.public_outputs = 0;
  ExpectRejected(o, "--public-outputs");
  o.public_outputs = 1;
  o.public_inputs = 0;
  ExpectRejected(o, "--public-inputs");
  o.public_inputs = 1;
  o.public_outputs = 11;
  ExpectRejected(o, "one row per public output");
}

}  // namespace
}  // namespace zkfleet::devtools
