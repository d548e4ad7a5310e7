// engine::Witness (.wtns reader), the .wtns writer and CheckWitnessMatches.
#include "zkfleet/engine/witness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gmp_oracle.hpp"
#include "io_test_util.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/io/wtns_writer.hpp"
#include "zkfleet/io/zkey.hpp"

namespace zkfleet::io {
namespace {

using engine::Witness;
using testing::Bytes;
using testing::Container;
using testing::ExpectError;
using testing::Fixture;
using testing::ScratchDir;

class WitnessFixtureTest : public ::testing::TestWithParam<const char*> {};

TEST_P(WitnessFixtureTest, ReadsHeaderAndPublicSignals) {
  const std::string path = Fixture(GetParam(), "witness.wtns");
  const Witness w = Witness::FromFile(path);
  const ZkeyFile key = ZkeyFile::Open(Fixture(GetParam(), "circuit_final.zkey"));
  EXPECT_EQ(w.origin(), path);
  EXPECT_EQ(w.n8(), 32u);
  EXPECT_EQ(w.count(), 4095u);
  EXPECT_EQ(w.prime(), Bytes(key.r(), key.r() + 32));
  EXPECT_EQ(w.values()[0], 1);
  CheckWitnessMatches(w, {key.r(), key.n8r()}, key.n_vars(), key.path());  // must not throw

  // w[1..nPublic] are public.json's values.
  const auto pub = nlohmann::json::parse(testing::ReadText(Fixture(GetParam(), "public.json")));
  ASSERT_EQ(pub.size(), 2u);
  for (size_t i = 0; i < pub.size(); ++i) EXPECT_EQ(testing::LeToDecimal(w.values() + 32 * (i + 1), 32), pub[i]);
}

TEST_P(WitnessFixtureTest, FromBytesEqualsFromFile) {
  const std::string path = Fixture(GetParam(), "witness.wtns");
  const Bytes bytes = testing::ReadBytes(path);
  const Witness a = Witness::FromFile(path);
  const Witness b = Witness::FromBytes(std::string(bytes.begin(), bytes.end()), "job 42");
  EXPECT_EQ(b.origin(), "job 42");
  EXPECT_EQ(b.count(), a.count());
  EXPECT_EQ(b.prime(), a.prime());
  EXPECT_EQ(std::memcmp(a.values(), b.values(), size_t{a.count()} * a.n8()), 0);
}

TEST_P(WitnessFixtureTest, WriterReproducesTheFile) {
  const std::string path = Fixture(GetParam(), "witness.wtns");
  const Witness w = Witness::FromFile(path);
  const std::string bytes = WtnsBytes(w.n8(), w.prime(), {w.values(), size_t{w.count()} * w.n8()});
  const Bytes original = testing::ReadBytes(path);
  EXPECT_TRUE(Bytes(bytes.begin(), bytes.end()) == original);

  ScratchDir dir;
  const std::string out = dir.File("w.wtns");
  WriteWtns(out, w.n8(), w.prime(), {w.values(), size_t{w.count()} * w.n8()});
  EXPECT_TRUE(testing::ReadBytes(out) == original);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, WitnessFixtureTest, ::testing::Values("bn128_k12", "bls12381_k12"));

TEST(WitnessMatchTest, OtherCurvesKeyIsAMismatch) {
  const Witness w = Witness::FromFile(Fixture("bn128_k12", "witness.wtns"));
  const ZkeyFile bls = ZkeyFile::Open(Fixture("bls12381_k12", "circuit_final.zkey"));
  ExpectError([&] { CheckWitnessMatches(w, {bls.r(), bls.n8r()}, bls.n_vars(), bls.path()); },
              ErrorCode::kMismatch, {w.origin(), bls.path(), "witness prime", "differs"});
}

TEST(WitnessMatchTest, OtherSignalCountIsAMismatch) {
  const Witness w = Witness::FromFile(Fixture("bn128_k12", "witness.wtns"));
  const ZkeyFile key = ZkeyFile::Open(Fixture("bn128_k12", "circuit_final.zkey"));
  ExpectError([&] { CheckWitnessMatches(w, {key.r(), key.n8r()}, 4096, "k.zkey"); }, ErrorCode::kMismatch,
              {"witness has 4095 values", "k.zkey expects nVars 4096"});
}

// ----------------------------------------------------------------------------
// Damaged witnesses, made from the bn128 fixture.

class BadWitnessTest : public ::testing::Test {
 protected:
  BadWitnessTest() : original_(testing::ReadBytes(Fixture("bn128_k12", "witness.wtns"))) {}

  void ExpectLoadFails(const Bytes& bytes, ErrorCode code, std::vector<std::string> parts) {
    const std::string path = dir_.Put("bad.wtns", bytes);
    std::vector<std::string> with_path = parts;
    with_path.push_back(path);
    ExpectError([&] { Witness::FromFile(path); }, code, with_path);
    parts.push_back("upload 7");
    ExpectError([&] { Witness::FromBytes(std::string(bytes.begin(), bytes.end()), "upload 7"); }, code, parts);
  }

  ScratchDir dir_;
  Bytes original_;
};

TEST_F(BadWitnessTest, MissingFile) {
  const std::string path = dir_.File("nope.wtns");
  ExpectError([&] { Witness::FromFile(path); }, ErrorCode::kNotFound, {path});
}

TEST_F(BadWitnessTest, EmptyFile) { ExpectLoadFails({}, ErrorCode::kBadFormat, {"file is empty"}); }

TEST_F(BadWitnessTest, WrongMagic) {
  ExpectLoadFails(testing::ReadBytes(Fixture("bn128_k12", "circuit.r1cs")), ErrorCode::kBadFormat,
                  {"magic: expected \"wtns\", found \"r1cs\""});
}

TEST_F(BadWitnessTest, NewerVersion) {
  Bytes b = original_;
  testing::PutU32(b, 4, 3);
  ExpectLoadFails(b, ErrorCode::kUnsupported, {"version: expected <= 2, found 3"});
}

TEST_F(BadWitnessTest, Truncated) {
  for (size_t cut : {size_t{10}, size_t{30}, size_t{70}, original_.size() - 32}) {
    ExpectLoadFails(Bytes(original_.begin(), original_.begin() + cut), ErrorCode::kBadFormat,
                    {"truncated", std::to_string(cut)});
  }
}

TEST_F(BadWitnessTest, SectionSizeDisagreesWithCount) {
  Container c = Container::Split(original_);
  c.Payload(2).resize(c.Payload(2).size() - 32);
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat,
                  {"section 2 (witness values): size: expected n8 * nWitness = 32 * 4095 = 131040 bytes, found 131008"});
}

TEST_F(BadWitnessTest, HeaderOfWrongSize) {
  Container c = Container::Split(original_);
  c.Payload(1).push_back(0);
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat, {"section 1 (header): size: expected 40 bytes, found 41"});
}

TEST_F(BadWitnessTest, BadN8) {
  Container c = Container::Split(original_);
  testing::PutU32(c.Payload(1), 0, 33);
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat, {"n8: expected a multiple of 8 in [8, 64], found 33"});
}

TEST_F(BadWitnessTest, ValueNotBelowPrime) {
  Container c = Container::Split(original_);
  const Bytes prime(c.Payload(1).begin() + 4, c.Payload(1).begin() + 36);
  std::copy(prime.begin(), prime.end(), c.Payload(2).begin() + 5 * 32);
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat, {"w[5]: expected < prime", "found " + HexLe(prime)});
}

TEST_F(BadWitnessTest, FirstValueNotOne) {
  Container c = Container::Split(original_);
  c.Payload(2)[0] = 2;
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat, {"w[0]: expected 1"});
}

TEST_F(BadWitnessTest, EvenPrime) {
  Container c = Container::Split(original_);
  c.Payload(1)[4] = 0;  // the bn128 r ends in ...01
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat, {"prime: expected an odd prime"});
}

// A witness for another field loads (it is a well-formed file) but does not
// fit a bn128 key.
TEST_F(BadWitnessTest, AnotherPrimeDoesNotMatchTheKey) {
  Container c = Container::Split(original_);
  const CurvePrimes& bls = PrimesOf(engine::Curve::kBls12_381);
  std::copy(bls.r, bls.r + 32, c.Payload(1).begin() + 4);
  const std::string path = dir_.Put("bls_prime.wtns", c.Join());
  const Witness w = Witness::FromFile(path);
  const ZkeyFile key = ZkeyFile::Open(Fixture("bn128_k12", "circuit_final.zkey"));
  ExpectError([&] { CheckWitnessMatches(w, {key.r(), key.n8r()}, key.n_vars(), key.path()); },
              ErrorCode::kMismatch, {path, key.path(), "witness prime " + HexLe({bls.r, 32})});
}

TEST(WtnsWriterTest, RejectsInconsistentInput) {
  const CurvePrimes& bn = PrimesOf(engine::Curve::kBn254);
  const std::span<const uint8_t> prime(bn.r, 32);
  ExpectError([&] { WtnsBytes(32, prime, Bytes(33)); }, ErrorCode::kInvalidArgument, {"whole number"});
  ExpectError([&] { WtnsBytes(32, prime, prime); }, ErrorCode::kInvalidArgument, {"value 0 is not below the prime"});
  ExpectError([&] { WtnsBytes(48, prime, {}); }, ErrorCode::kInvalidArgument, {"prime must be n8 = 48 bytes"});
}

}  // namespace
}  // namespace zkfleet::io
