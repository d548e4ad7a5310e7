// engine::Witness (.wtns reader), the .wtns writer and CheckWitnessMatches.
#include "zkfleet/engine/witness.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "gmp_oracle.hpp"
#include "formats_test_util.hpp"
#include "zkfleet/io/binfile.hpp"
#include "zkfleet/io/curve_primes.hpp"
#include "zkfleet/wtns/wtns_writer.hpp"
#include "zkfleet/zkey/zkey.hpp"

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

// View: same header and values as FromBytes, but values() points into the
// caller's buffer (no copy); copies and moves of an owning Witness keep
// pointing at their own values.
TEST_P(WitnessFixtureTest, ViewEqualsFromBytesWithoutCopying) {
  const Bytes bytes = testing::ReadBytes(Fixture(GetParam(), "witness.wtns"));
  const Witness owned = Witness::FromBytes(std::string(bytes.begin(), bytes.end()), "job 42");
  const Witness view = Witness::View(bytes, "job 43");
  EXPECT_EQ(view.origin(), "job 43");
  EXPECT_EQ(view.n8(), owned.n8());
  EXPECT_EQ(view.count(), owned.count());
  EXPECT_EQ(view.prime(), owned.prime());
  EXPECT_EQ(std::memcmp(view.values(), owned.values(), size_t{owned.count()} * owned.n8()), 0);

  const uint64_t offset = BinFile::Parse(bytes, "wtns", 2, "x").Get(2, "values").offset;
  EXPECT_EQ(view.values(), bytes.data() + offset);
  EXPECT_FALSE(view.owns_values());
  EXPECT_TRUE(owned.owns_values());
  EXPECT_TRUE(owned.values() < bytes.data() || owned.values() >= bytes.data() + bytes.size());

  const Witness view_copy = view;
  EXPECT_EQ(view_copy.values(), view.values());
  Witness source = owned;
  EXPECT_NE(source.values(), owned.values());
  EXPECT_EQ(std::memcmp(source.values(), owned.values(), size_t{owned.count()} * owned.n8()), 0);
  const uint8_t* before = source.values();
  const Witness moved = std::move(source);
  EXPECT_EQ(moved.values(), before);
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
    // View: the same error, word for word.
    ExpectError([&] { Witness::View(bytes, "upload 7"); }, code, parts);
    EXPECT_EQ(Message([&] { Witness::View(bytes, "upload 7"); }),
              Message([&] { Witness::FromBytes(std::string(bytes.begin(), bytes.end()), "upload 7"); }));
  }

  static std::string Message(const std::function<void()>& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(ErrorCodeName(e.code())) + ": " + e.what();
    }
    return "(no error)";
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

// The fast check compares the top 64-bit limb first: a value whose top limb
// equals the prime's must still be compared in full, both ways.
TEST_F(BadWitnessTest, TopLimbEqualToThePrimesIsComparedInFull) {
  Container c = Container::Split(original_);
  const Bytes prime(c.Payload(1).begin() + 4, c.Payload(1).begin() + 36);
  Bytes& values = c.Payload(2);
  Bytes below = prime;  // prime - 1 (the prime is odd): top limb equal, accepted
  below[0] -= 1;
  std::copy(below.begin(), below.end(), values.begin() + 3 * 32);
  Bytes above = prime;  // limb 1 one bigger, limb 0 zero: > prime
  uint64_t limb1 = LoadU64(above.data() + 8) + 1;
  std::memcpy(above.data() + 8, &limb1, 8);
  std::fill(above.begin(), above.begin() + 8, 0);
  std::copy(above.begin(), above.end(), values.begin() + 7 * 32);
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat, {"w[7]: expected < prime", "found " + HexLe(above)});
  // Without the bad one, the file loads (prime - 1 is canonical).
  std::fill(values.begin() + 7 * 32, values.begin() + 8 * 32, 0);
  const Bytes good = c.Join();
  EXPECT_EQ(std::memcmp(Witness::View(good, "g").values() + 3 * 32, below.data(), 32), 0);
}

TEST_F(BadWitnessTest, LowestBadIndexIsReported) {
  Container c = Container::Split(original_);
  const Bytes prime(c.Payload(1).begin() + 4, c.Payload(1).begin() + 36);
  Bytes& values = c.Payload(2);
  for (size_t i : {size_t{900}, size_t{9}, size_t{4000}}) std::copy(prime.begin(), prime.end(), values.begin() + i * 32);
  std::fill(values.begin() + 600 * 32, values.begin() + 601 * 32, 0xff);  // top limb above the prime's
  ExpectLoadFails(c.Join(), ErrorCode::kBadFormat, {"w[9]: expected < prime"});
}

// A witness above Witness::kParallelCheckMin values is checked on several
// threads; the lowest bad index is still the one reported, wherever the
// chunk boundaries fall.
TEST(WitnessLargeTest, ParallelCheckReportsTheLowestBadIndex) {
  const CurvePrimes& bn = PrimesOf(io::Curve::kBn254);
  const Bytes prime(bn.r, bn.r + 32);
  const uint64_t count = Witness::kParallelCheckMin + 12345;
  Bytes zeros(count * 32, 0);
  zeros[0] = 1;
  const std::string file = WtnsBytes(32, prime, zeros);
  zeros = Bytes();
  Bytes bytes(file.begin(), file.end());
  const uint64_t offset = BinFile::Parse(bytes, "wtns", 2, "x").Get(2, "values").offset;
  {
    const Witness ok = Witness::View(bytes, "big");
    EXPECT_EQ(ok.count(), count);
    EXPECT_EQ(ok.values(), bytes.data() + offset);
  }

  Bytes above = prime;  // top limb equal to the prime's, a lower limb bigger
  uint64_t limb2 = LoadU64(above.data() + 16) + 1;
  std::memcpy(above.data() + 16, &limb2, 8);
  const Bytes all_ff(32, 0xff);
  // In the first, a middle and the last chunk for 2, 3 or 4 threads, and on
  // both sides of chunk boundaries.
  std::vector<uint64_t> bad = {count / 4 - 1, count / 4 + 7, count / 3, count / 2 + 1, 3 * count / 4, count - 1};
  for (size_t k = 0; k < bad.size(); ++k) {
    const Bytes& v = k % 3 == 0 ? prime : k % 3 == 1 ? above : all_ff;
    std::copy(v.begin(), v.end(), bytes.begin() + offset + bad[k] * 32);
  }
  for (size_t k = 0; k < bad.size(); ++k) {
    SCOPED_TRACE(bad[k]);
    const std::string want = "w[" + std::to_string(bad[k]) + "]: expected < prime";
    ExpectError([&] { Witness::View(bytes, "big"); }, ErrorCode::kBadFormat, {"big", want});
    ExpectError([&] { Witness::FromBytes({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, "big"); },
                ErrorCode::kBadFormat, {"big", want});
    std::fill(bytes.begin() + offset + bad[k] * 32, bytes.begin() + offset + (bad[k] + 1) * 32, 0);  // repair it
  }
  EXPECT_EQ(Witness::View(bytes, "big").count(), count);
}

// Benchmark figure (printed, not asserted: sanitizer builds are far slower):
// View of a 2^22-value witness (134 MB, values uniformly below the BN254
// prime) -- essentially the "every value < prime" check -- against
// FromBytes, which also copies the values.
TEST(WitnessLargeTest, PrintsTheCheckTimeFor2To22Values) {
  const CurvePrimes& bn = PrimesOf(io::Curve::kBn254);
  const uint32_t count = 1u << 22;
  std::string file;
  file.append("wtns");
  AppendU32(file, 2);
  AppendU32(file, 2);
  AppendU32(file, 1);
  AppendU64(file, 4 + 32 + 4);
  AppendU32(file, 32);
  file.append(reinterpret_cast<const char*>(bn.r), 32);
  AppendU32(file, count);
  AppendU32(file, 2);
  AppendU64(file, uint64_t{count} * 32);
  const size_t offset = file.size();
  file.resize(offset + uint64_t{count} * 32);
  const uint64_t prime_top = LoadU64(bn.r + 24);
  uint64_t state = 0x9e3779b97f4a7c15;
  auto next = [&state] {  // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  };
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t limbs[4] = {next(), next(), next(), next() % prime_top};
    if (i == 0) limbs[0] = 1, limbs[1] = limbs[2] = limbs[3] = 0;
    std::memcpy(file.data() + offset + i * 32, limbs, 32);
  }
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(file.data()), file.size());

  auto best_ms = [](int runs, const std::function<void()>& fn) {
    double best = 1e30;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  const double view_ms = best_ms(5, [&] { EXPECT_EQ(Witness::View(bytes, "bench").count(), count); });
  const double copy_ms = best_ms(3, [&] { EXPECT_EQ(Witness::FromBytes(file, "bench").count(), count); });
  std::printf("[ figure   ] 2^22-value witness (134 MB): View (checks, no copy) %.2f ms; FromBytes (checks + copy) %.2f ms\n",
              view_ms, copy_ms);
  ::testing::Test::RecordProperty("view_ms", std::to_string(view_ms));
  ::testing::Test::RecordProperty("from_bytes_ms", std::to_string(copy_ms));
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
  const CurvePrimes& bls = PrimesOf(io::Curve::kBls12_381);
  std::copy(bls.r, bls.r + 32, c.Payload(1).begin() + 4);
  const std::string path = dir_.Put("bls_prime.wtns", c.Join());
  const Witness w = Witness::FromFile(path);
  const ZkeyFile key = ZkeyFile::Open(Fixture("bn128_k12", "circuit_final.zkey"));
  ExpectError([&] { CheckWitnessMatches(w, {key.r(), key.n8r()}, key.n_vars(), key.path()); },
              ErrorCode::kMismatch, {path, key.path(), "witness prime " + HexLe({bls.r, 32})});
}

TEST(WtnsWriterTest, RejectsInconsistentInput) {
  const CurvePrimes& bn = PrimesOf(io::Curve::kBn254);
  const std::span<const uint8_t> prime(bn.r, 32);
  ExpectError([&] { WtnsBytes(32, prime, Bytes(33)); }, ErrorCode::kInvalidArgument, {"whole number"});
  ExpectError([&] { WtnsBytes(32, prime, prime); }, ErrorCode::kInvalidArgument, {"value 0 is not below the prime"});
  ExpectError([&] { WtnsBytes(48, prime, {}); }, ErrorCode::kInvalidArgument, {"prime must be n8 = 48 bytes"});
}

}  // namespace
}  // namespace zkfleet::io
