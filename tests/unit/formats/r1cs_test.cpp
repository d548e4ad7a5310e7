// .r1cs reader and writer.
#include "zkfleet/r1cs/r1cs.hpp"

#include <gtest/gtest.h>

#include "formats_test_util.hpp"
#include "zkfleet/io/curve_primes.hpp"

namespace zkfleet::io {
namespace {

using testing::Bytes;
using testing::Container;
using testing::ExpectError;
using testing::Fixture;
using testing::ScratchDir;

class R1csFixtureTest : public ::testing::TestWithParam<std::pair<const char*, io::Curve>> {};

TEST_P(R1csFixtureTest, ReadsHeaderAndConstraints) {
  const auto [dir, curve] = GetParam();
  const R1cs r = ReadR1cs(Fixture(dir, "circuit.r1cs"));
  // Values from the fixture's info.txt (snarkjs r1cs info).
  EXPECT_EQ(r.header.n8, 32u);
  EXPECT_EQ(CurveFromScalarPrime(r.header.prime), curve);
  EXPECT_EQ(r.header.n_wires, 4095u);
  EXPECT_EQ(r.header.n_constraints, 4093u);
  EXPECT_EQ(r.header.n_pub_out, 1u);
  EXPECT_EQ(r.header.n_pub_in, 1u);
  EXPECT_EQ(r.header.n_prv_in, 16u);
  EXPECT_EQ(r.header.n_labels, 8410u);
  EXPECT_EQ(r.wire_labels.size(), 4095u);
  EXPECT_EQ(r.lc_start.size(), 3u * 4093 + 1);
  EXPECT_EQ(r.term_coeff.size(), r.n_terms() * 32);
  // The section-2 size is 4 bytes per LC plus 36 bytes per term.
  Container c = Container::Split(testing::ReadBytes(Fixture(dir, "circuit.r1cs")));
  EXPECT_EQ(c.Payload(2).size(), 4 * 3 * 4093 + 36 * r.n_terms());
  // Every constraint has a non-empty A or C side.
  for (uint32_t i = 0; i < r.header.n_constraints; ++i) {
    EXPECT_GT(r.lc(i, 0).size + r.lc(i, 2).size, 0u) << "constraint " << i;
  }
}

TEST_P(R1csFixtureTest, WriterRoundTripsByteForByte) {
  const auto [dir, curve] = GetParam();
  ScratchDir scratch;
  const std::string original_path = Fixture(dir, "circuit.r1cs");
  const R1cs r = ReadR1cs(original_path);
  const std::string out = scratch.File("copy.r1cs");
  WriteR1cs(out, r);
  EXPECT_TRUE(ReadR1cs(out) == r);
  EXPECT_TRUE(testing::ReadBytes(out) == testing::ReadBytes(original_path));  // circom layout, order 2, 1, 3
}

// snarkjs accepts a written r1cs: `r1cs info` reads it and `wtns check`
// evaluates every constraint on the fixture's witness.
TEST_P(R1csFixtureTest, SnarkjsAcceptsWrittenFile) {
  ASSERT_TRUE(testing::RequireSnarkjs());
  const auto [dir, curve] = GetParam();
  ScratchDir scratch;
  const std::string out = scratch.File("copy.r1cs");
  WriteR1cs(out, ReadR1cs(Fixture(dir, "circuit.r1cs")));

  const auto [info_status, info] = testing::RunCommand(testing::SnarkjsPath() + " r1cs info " + out);
  ASSERT_EQ(info_status, 0) << info;
  EXPECT_NE(info.find("# of Constraints: 4093"), std::string::npos) << info;
  EXPECT_NE(info.find("# of Wires: 4095"), std::string::npos) << info;

  const auto [check_status, check] =
      testing::RunCommand(testing::SnarkjsPath() + " wtns check " + out + " " + Fixture(dir, "witness.wtns"));
  ASSERT_EQ(check_status, 0) << check;
  EXPECT_NE(check.find("WITNESS IS CORRECT"), std::string::npos) << check;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, R1csFixtureTest,
                         ::testing::Values(std::make_pair("bn128_k12", io::Curve::kBn254),
                                           std::make_pair("bls12381_k12", io::Curve::kBls12_381)),
                         [](const auto& info) { return std::string(info.param.first); });

// A two-constraint system built by hand: a*b = t, t*c = out - 7 (wires:
// 0 = one, 1 = out, 2 = a, 3 = b, 4 = c, 5 = t).
R1cs SmallSystem() {
  R1cs r;
  const CurvePrimes& bn = PrimesOf(io::Curve::kBn254);
  r.header = {32, Bytes(bn.r, bn.r + 32), 6, 1, 0, 3, 6, 2};
  const auto term = [&](uint32_t wire, uint8_t value) {
    r.term_wire.push_back(wire);
    Bytes coeff(32, 0);
    coeff[0] = value;
    r.term_coeff.insert(r.term_coeff.end(), coeff.begin(), coeff.end());
  };
  const auto end_lc = [&] { r.lc_start.push_back(r.term_wire.size()); };
  r.lc_start.push_back(0);
  term(2, 1); end_lc();               // A = a
  term(3, 1); end_lc();               // B = b
  term(5, 1); end_lc();               // C = t
  term(5, 1); end_lc();               // A = t
  term(4, 1); end_lc();               // B = c
  term(1, 1); term(0, 7); end_lc();   // C = out + 7 (toy coefficient, not -7)
  r.wire_labels = {0, 1, 2, 3, 4, 5};
  return r;
}

TEST(R1csTest, SmallSystemRoundTrips) {
  ScratchDir dir;
  const R1cs r = SmallSystem();
  WriteR1cs(dir.File("s.r1cs"), r);
  const R1cs back = ReadR1cs(dir.File("s.r1cs"));
  EXPECT_TRUE(back == r);
  const LinearCombination c1 = back.lc(1, 2);
  ASSERT_EQ(c1.size, 2u);
  EXPECT_EQ(c1.wires[1], 0u);
  EXPECT_EQ(c1.coeffs[32], 7);
}

TEST(R1csTest, WriterRejectsInconsistentArrays) {
  ScratchDir dir;
  R1cs r = SmallSystem();
  r.lc_start.pop_back();
  ExpectError([&] { WriteR1cs(dir.File("x.r1cs"), r); }, ErrorCode::kInvalidArgument, {"lc_start"});
  r = SmallSystem();
  r.wire_labels.pop_back();
  ExpectError([&] { WriteR1cs(dir.File("x.r1cs"), r); }, ErrorCode::kInvalidArgument, {"wire_labels"});
}

class BadR1csTest : public ::testing::Test {
 protected:
  void ExpectReadFails(const R1cs& r, const std::function<void(Container&)>& damage, ErrorCode code,
                       std::vector<std::string> parts) {
    const std::string good = dir_.File("good.r1cs");
    WriteR1cs(good, r);
    Container c = Container::Split(testing::ReadBytes(good));
    damage(c);
    const std::string path = dir_.Put("bad.r1cs", c.Join());
    parts.push_back(path);
    ExpectError([&] { ReadR1cs(path); }, code, parts);
  }
  ScratchDir dir_;
};

TEST_F(BadR1csTest, WireOutOfRange) {
  // Constraint 0, A, term 0: the wire id follows the LC's u32 term count.
  ExpectReadFails(SmallSystem(), [](Container& c) { testing::PutU32(c.Payload(2), 4, 6); }, ErrorCode::kBadFormat,
                  {"constraint 0 A term 0: wireId: expected < nWires 6, found 6"});
}

TEST_F(BadR1csTest, CoefficientNotBelowPrime) {
  ExpectReadFails(SmallSystem(), [](Container& c) { std::fill(c.Payload(2).begin() + 8, c.Payload(2).begin() + 40, 0xff); },
                  ErrorCode::kBadFormat, {"constraint 0 A term 0: coefficient: expected < prime"});
}

TEST_F(BadR1csTest, ConstraintsSectionTooLong) {
  ExpectReadFails(SmallSystem(), [](Container& c) { c.Payload(2).push_back(0); }, ErrorCode::kBadFormat,
                  {"section 2 (constraints): size: expected", "found"});
}

TEST_F(BadR1csTest, ConstraintsSectionTooShort) {
  ExpectReadFails(SmallSystem(), [](Container& c) { c.Payload(2).resize(c.Payload(2).size() - 10); },
                  ErrorCode::kBadFormat, {"section 2 (constraints): field coefficient", "needs 32 bytes"});
}

TEST_F(BadR1csTest, LabelsOfWrongSize) {
  ExpectReadFails(SmallSystem(), [](Container& c) { c.Payload(3).resize(40); }, ErrorCode::kBadFormat,
                  {"section 3 (wire labels): size: expected nWires * 8 = 48 bytes, found 40"});
}

TEST_F(BadR1csTest, CustomGatesAreUnsupported) {
  ExpectReadFails(SmallSystem(), [](Container& c) { c.sections.push_back({4, Bytes(4)}); }, ErrorCode::kUnsupported,
                  {"custom gates"});
}

TEST_F(BadR1csTest, WiresFewerThanInputs) {
  ExpectReadFails(SmallSystem(), [](Container& c) { testing::PutU32(c.Payload(1), 36 + 12, 10); },
                  ErrorCode::kBadFormat, {"nWires: expected >= 1 + nPubOut + nPubIn + nPrvIn = 12, found 6"});
}

}  // namespace
}  // namespace zkfleet::io
