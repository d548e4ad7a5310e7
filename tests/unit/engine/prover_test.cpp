// The CPU proving key as the worker uses it: load once, prove many, from
// several threads; wrong witnesses are refused and leave the key usable.
#include <array>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/proving_key.hpp"

namespace zkfleet::engine {
namespace {

using zkfleet::testing::Fixture;

ProveOptions Blinding(uint64_t r, uint64_t s) {
  ProveOptions o;
  o.r = std::array<uint8_t, 32>{};
  o.s = std::array<uint8_t, 32>{};
  std::memcpy(o.r->data(), &r, 8);
  std::memcpy(o.s->data(), &s, 8);
  return o;
}

class CpuProvingKey : public ::testing::TestWithParam<const char*> {};

TEST_P(CpuProvingKey, DeterministicForFixedBlindingAndRandomOtherwise) {
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  EXPECT_EQ(key->backend(), Backend::kCpu);
  EXPECT_EQ(key->info().n_vars, 4095u);
  EXPECT_EQ(key->info().n_public, 2u);
  EXPECT_EQ(key->info().domain_size, 4096u);
  EXPECT_GT(key->info().resident_bytes, 1000000u);
  Witness w = Witness::FromFile(Fixture(GetParam(), "witness.wtns"));
  Proof p1 = key->Prove(w, Blinding(5, 7));
  Proof p2 = key->Prove(w, Blinding(5, 7));
  Proof p3 = key->Prove(w, Blinding(5, 8));
  Proof p4 = key->Prove(w);
  EXPECT_EQ(p1.proof_json, p2.proof_json);
  EXPECT_NE(p1.proof_json, p3.proof_json);
  EXPECT_NE(p1.proof_json, p4.proof_json);
  EXPECT_EQ(p1.public_json, zkfleet::testing::ReadFile(Fixture(GetParam(), "public.json")));
  EXPECT_GT(p1.timings.total_s, 0);
  EXPECT_GT(p1.timings.msm_s, 0);
}

TEST_P(CpuProvingKey, ConcurrentProofsAgree) {
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  Witness w = Witness::FromFile(Fixture(GetParam(), "witness.wtns"));
  const std::string expected = key->Prove(w, Blinding(11, 13)).proof_json;
  std::string got[3];
  std::thread threads[3];
  for (int i = 0; i < 3; ++i) threads[i] = std::thread([&, i] { got[i] = key->Prove(w, Blinding(11, 13)).proof_json; });
  for (auto& t : threads) t.join();
  for (auto& g : got) EXPECT_EQ(g, expected);
}

TEST(CpuProvingKeyErrors, WitnessOfAnotherCurveIsRefusedAndKeyStaysUsable) {
  auto key = ProvingKey::Load(Fixture("bn128_k12", "circuit_final.zkey"), {Backend::kCpu, 2});
  Witness other = Witness::FromFile(Fixture("bls12381_k12", "witness.wtns"));
  try {
    key->Prove(other);
    FAIL() << "proved a witness of another curve";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMismatch);
    EXPECT_NE(std::string(e.what()).find("prime"), std::string::npos) << e.what();
  }
  Proof ok = key->Prove(Witness::FromFile(Fixture("bn128_k12", "witness.wtns")));
  EXPECT_FALSE(ok.proof_json.empty());
}

TEST(CpuProvingKeyErrors, CudaBackendWithoutCudaIsAClearError) {
  if (CudaAvailable()) GTEST_SKIP() << "a CUDA device is present; this checks the no-GPU path";
  try {
    ProvingKey::Load(Fixture("bn128_k12", "circuit_final.zkey"), {Backend::kCuda});
    FAIL() << "cuda backend loaded without a GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CpuProvingKey, ::testing::Values("bn128_k12", "bls12381_k12"));

}  // namespace
}  // namespace zkfleet::engine
