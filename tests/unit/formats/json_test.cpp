// proof.json / public.json writers and LimbsToDecimal.
#include "zkfleet/snarkjs/json_writer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>

#include "gmp_oracle.hpp"
#include "formats_test_util.hpp"

namespace zkfleet::io {
namespace {

using testing::ExpectError;
using testing::Fixture;

class JsonFixtureTest : public ::testing::TestWithParam<const char*> {};

// Feeding the numbers of a snarkjs proof.json back in reproduces the file.
TEST_P(JsonFixtureTest, ProofJsonIsByteIdenticalToSnarkjs) {
  const std::string original = testing::ReadText(Fixture(GetParam(), "proof.json"));
  const auto j = nlohmann::json::parse(original);
  const auto s = [](const nlohmann::json& v) { return v.get<std::string>(); };
  const std::string ours =
      ProofJson(s(j["curve"]), s(j["pi_a"][0]), s(j["pi_a"][1]), s(j["pi_b"][0][0]), s(j["pi_b"][0][1]),
                s(j["pi_b"][1][0]), s(j["pi_b"][1][1]), s(j["pi_c"][0]), s(j["pi_c"][1]));
  EXPECT_EQ(ours, original);
}

TEST_P(JsonFixtureTest, PublicJsonIsByteIdenticalToSnarkjs) {
  const std::string original = testing::ReadText(Fixture(GetParam(), "public.json"));
  const auto j = nlohmann::json::parse(original);
  EXPECT_EQ(PublicJson(j.get<std::vector<std::string>>()), original);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, JsonFixtureTest, ::testing::Values("bn128_k12", "bls12381_k12"));

TEST(JsonTest, LayoutMatchesJsonStringifyWithOneSpace) {
  EXPECT_EQ(PublicJson({}), "[]");
  EXPECT_EQ(PublicJson({"7"}), "[\n \"7\"\n]");
  EXPECT_EQ(ProofJson("bls12381", "1", "2", "3", "4", "5", "6", "7", "8"),
            "{\n \"pi_a\": [\n  \"1\",\n  \"2\",\n  \"1\"\n ],\n"
            " \"pi_b\": [\n  [\n   \"3\",\n   \"4\"\n  ],\n  [\n   \"5\",\n   \"6\"\n  ],\n  [\n   \"1\",\n   \"0\"\n  ]\n ],\n"
            " \"pi_c\": [\n  \"7\",\n  \"8\",\n  \"1\"\n ],\n \"protocol\": \"groth16\",\n \"curve\": \"bls12381\"\n}");
}

TEST(JsonTest, RejectsNonDecimalInput) {
  ExpectError([] { PublicJson({"12", "0x1f"}); }, ErrorCode::kInvalidArgument, {"public signal 1", "0x1f"});
  ExpectError([] { PublicJson({""}); }, ErrorCode::kInvalidArgument, {"public signal 0"});
  ExpectError([] { ProofJson("bn128", "1", "2", "3", "4", "5\"", "6", "7", "8"); }, ErrorCode::kInvalidArgument,
              {"pi_b.y.c0"});
  ExpectError([] { ProofJson("bn254", "1", "2", "3", "4", "5", "6", "7", "8"); }, ErrorCode::kInvalidArgument,
              {"curve", "bn254"});
}

TEST(LimbsToDecimalTest, KnownValues) {
  const uint64_t zero[4] = {0, 0, 0, 0};
  EXPECT_EQ(LimbsToDecimal(zero, 4), "0");
  EXPECT_EQ(LimbsToDecimal(zero, 0), "0");
  const uint64_t one[1] = {1};
  EXPECT_EQ(LimbsToDecimal(one, 1), "1");
  const uint64_t two_64[2] = {0, 1};
  EXPECT_EQ(LimbsToDecimal(two_64, 2), "18446744073709551616");
  const uint64_t ten_19[2] = {10000000000000000000ULL, 0};
  EXPECT_EQ(LimbsToDecimal(ten_19, 2), "10000000000000000000");
  const uint64_t ten_19_minus_1[1] = {9999999999999999999ULL};
  EXPECT_EQ(LimbsToDecimal(ten_19_minus_1, 1), "9999999999999999999");
  const uint64_t max256[4] = {~0ULL, ~0ULL, ~0ULL, ~0ULL};
  EXPECT_EQ(LimbsToDecimal(max256, 4),
            "115792089237316195423570985008687907853269984665640564039457584007913129639935");
  const uint64_t bn_r[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL};
  EXPECT_EQ(LimbsToDecimal(bn_r, 4),
            "21888242871839275222246405745257275088548364400416034343698204186575808495617");
}

// Random values (with runs of zero limbs, where base-10^19 chunks need
// padding) against GMP.
TEST(LimbsToDecimalTest, AgreesWithGmp) {
  std::mt19937_64 rng(12345);
  for (int iter = 0; iter < 2000; ++iter) {
    const int n = 1 + iter % 6;
    std::vector<uint64_t> limbs(n);
    for (auto& l : limbs) {
      const uint64_t kind = rng() % 4;
      l = kind == 0 ? 0 : kind == 1 ? rng() % 1000 : rng();
    }
    std::vector<uint8_t> le(8 * n);
    std::memcpy(le.data(), limbs.data(), le.size());
    ASSERT_EQ(LimbsToDecimal(limbs.data(), n), testing::LeToDecimal(le.data(), le.size())) << "iteration " << iter;
  }
}

}  // namespace
}  // namespace zkfleet::io
