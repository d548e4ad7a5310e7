// The CPU proving key as the worker uses it: load once, prove many, from
// several threads; the proofs are valid (snarkjs verifies them and rejects
// tampered ones); wrong witnesses are refused and leave the key usable.
#include <array>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <gtest/gtest.h>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/groth16/verifier.hpp"

namespace zkfleet::engine {
namespace {

using zkfleet::testing::Fixture;
using zkfleet::testing::TempDir;

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

// The bracketed list after `"name": [` in a snarkjs proof.json (pi_a, pi_c:
// no nested brackets).
std::pair<size_t, size_t> ListSpan(const std::string& json, const std::string& name) {
  size_t open = json.find('[', json.find("\"" + name + "\""));
  size_t close = json.find(']', open);
  return {open, close + 1 - open};
}

// The first public signal plus one (its last decimal digit changed).
std::string BumpFirstSignal(std::string public_json) {
  size_t quote = public_json.find('"');
  size_t end = public_json.find('"', quote + 1);
  char& digit = public_json[end - 1];
  digit = digit == '9' ? '8' : static_cast<char>(digit + 1);
  return public_json;
}

// Validity, not only determinism: snarkjs accepts what the key proves (with
// fixed and with random blinding) and rejects a proof whose public signal,
// points or witness were tampered with.
TEST_P(CpuProvingKey, ProofsVerifyAndTamperedOnesAreRejected) {
  ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
  TempDir dir;
  const std::string vk = Fixture(GetParam(), "verification_key.json");
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  Witness w = Witness::FromFile(Fixture(GetParam(), "witness.wtns"));
  auto write = [&](const std::string& name, const std::string& proof_json, const std::string& public_json) {
    zkfleet::testing::WriteFile(dir.file(name + "-proof.json"), proof_json);
    zkfleet::testing::WriteFile(dir.file(name + "-public.json"), public_json);
    return std::make_pair(dir.file(name + "-public.json"), dir.file(name + "-proof.json"));
  };

  const Proof fixed = key->Prove(w, Blinding(5, 7));
  const Proof random = key->Prove(w);
  for (const auto& [name, proof] : {std::pair<std::string, const Proof&>{"fixed", fixed}, {"random", random}}) {
    auto [pub, prf] = write(name, proof.proof_json, proof.public_json);
    std::string out;
    EXPECT_TRUE(zkfleet::testing::SnarkjsVerify(vk, pub, prf, &out)) << name << " blinding:\n" << out;
  }

  // A public signal changed: the same proof must not prove it.
  {
    auto [pub, prf] = write("public", fixed.proof_json, BumpFirstSignal(fixed.public_json));
    EXPECT_NE(zkfleet::testing::ReadFile(pub), fixed.public_json);
    EXPECT_TRUE(zkfleet::testing::SnarkjsRejects(vk, pub, prf)) << "tampered public signal";
  }
  // pi_a and pi_c swapped: both on G1, well-formed, wrong.
  {
    std::string swapped = fixed.proof_json;
    auto a = ListSpan(swapped, "pi_a"), c = ListSpan(swapped, "pi_c");
    const std::string pi_a = swapped.substr(a.first, a.second), pi_c = swapped.substr(c.first, c.second);
    ASSERT_NE(pi_a, pi_c);
    swapped.replace(c.first, c.second, pi_a);  // pi_c comes after pi_a: replace it first
    swapped.replace(a.first, a.second, pi_c);
    auto [pub, prf] = write("swapped", swapped, fixed.public_json);
    EXPECT_TRUE(zkfleet::testing::SnarkjsRejects(vk, pub, prf)) << "pi_a and pi_c swapped";
  }
  // A witness with one internal value changed (the last signal, private):
  // with the check before return off, a proof comes out and snarkjs must
  // reject it (the default, checked Prove() refuses it with kUnsatisfied:
  // see EveryProofIsCheckedAndUnsatisfyingWitnessIsRefused).
  {
    std::string bytes = zkfleet::testing::ReadFile(Fixture(GetParam(), "witness.wtns"));
    ASSERT_GT(bytes.size(), 32u);
    bytes[bytes.size() - 32] ^= 1;
    ProveOptions unchecked = Blinding(5, 7);
    unchecked.verify = false;
    const Proof bad = key->Prove(Witness::FromBytes(bytes, "tampered witness"), unchecked);
    EXPECT_EQ(bad.public_json, fixed.public_json);
    EXPECT_NE(bad.proof_json, fixed.proof_json);
    auto [pub, prf] = write("witness", bad.proof_json, bad.public_json);
    EXPECT_TRUE(zkfleet::testing::SnarkjsRejects(vk, pub, prf)) << "proof of a tampered witness";
  }
}

// Verify before return: a valid witness's proof comes back checked; a
// witness that does not satisfy the circuit is refused with kUnsatisfied and
// the line "witness does not satisfy circuit <zkey stem>"; the key stays usable.
TEST_P(CpuProvingKey, EveryProofIsCheckedAndUnsatisfyingWitnessIsRefused) {
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  const Witness w = Witness::FromFile(Fixture(GetParam(), "witness.wtns"));
  const Proof good = key->Prove(w);
  EXPECT_TRUE(good.check.verified);
  EXPECT_TRUE(good.check.engine_fault.empty()) << good.check.engine_fault;
  EXPECT_GT(good.check.verify_s, 0.0);
  ProveOptions off;
  off.verify = false;
  EXPECT_FALSE(key->Prove(w, off).check.verified);

  std::string bytes = zkfleet::testing::ReadFile(Fixture(GetParam(), "witness.wtns"));
  bytes[bytes.size() - 32] ^= 1;
  try {
    key->Prove(Witness::FromBytes(bytes, "tampered witness"));
    ADD_FAILURE() << "a proof of a witness that does not satisfy the circuit was returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), zkfleet::ErrorCode::kUnsatisfied);
    EXPECT_EQ(std::string(e.what()).rfind("witness does not satisfy circuit circuit_final (tampered witness", 0), 0u)
        << e.what();
  }
  EXPECT_TRUE(key->Prove(w).check.verified);
}

// The proof that leaves is the one verified: proof.json and public.json are
// formatted from the points and signals the verifier passed.
TEST_P(CpuProvingKey, ProofJsonIsTheVerifiedPoints) {
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  const Proof proof = key->Prove(Witness::FromFile(Fixture(GetParam(), "witness.wtns")), Blinding(7, 11));
  ASSERT_TRUE(proof.check.verified);
  ASSERT_TRUE(proof.points.curve.has_value());
  EXPECT_EQ(*proof.points.curve, key->info().curve);
  EXPECT_EQ(proof.proof_json, ProofJson(proof.points, key->info().curve));
  const ProofPoints parsed = ParseProofJson(proof.proof_json, "proof.json");
  EXPECT_EQ(parsed.a.x, proof.points.a.x);
  EXPECT_EQ(parsed.a.y, proof.points.a.y);
  EXPECT_EQ(parsed.b.x0, proof.points.b.x0);
  EXPECT_EQ(parsed.b.x1, proof.points.b.x1);
  EXPECT_EQ(parsed.b.y0, proof.points.b.y0);
  EXPECT_EQ(parsed.b.y1, proof.points.b.y1);
  EXPECT_EQ(parsed.c.x, proof.points.c.x);
  EXPECT_EQ(parsed.c.y, proof.points.c.y);
  const std::vector<BigInt> signals = ParsePublicSignalsJson(proof.public_json, "public.json");
  ASSERT_EQ(signals.size(), proof.public_signals.size());
  for (size_t i = 0; i < signals.size(); ++i) EXPECT_EQ(DecimalString(signals[i]), proof.public_signals[i]);
  EXPECT_TRUE(Verify(key->verification_key(), signals, proof.points).ok());
}

// The key's verification key is the one the verifier reads from the .zkey.
TEST_P(CpuProvingKey, VerificationKeyIsTheZkeys) {
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  const auto& vk = key->verification_key();
  EXPECT_EQ(vk.n_public, key->info().n_public);
  EXPECT_EQ(vk.ic.size(), key->info().n_public + 1);
  EXPECT_EQ(vk.curve, key->info().curve);
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

// A Witness::View (no copy of the values) proves exactly what the owning
// FromFile witness proves.
TEST_P(CpuProvingKey, ViewWitnessProvesLikeFromFile) {
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  const std::string file = zkfleet::testing::ReadFile(Fixture(GetParam(), "witness.wtns"));
  const Witness view =
      Witness::View({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, "received witness");
  ASSERT_FALSE(view.owns_values());
  const Witness owned = Witness::FromFile(Fixture(GetParam(), "witness.wtns"));
  const Proof from_view = key->Prove(view, Blinding(5, 7));
  const Proof from_file = key->Prove(owned, Blinding(5, 7));
  EXPECT_TRUE(from_view.check.verified);
  EXPECT_EQ(from_view.proof_json, from_file.proof_json);
  EXPECT_EQ(from_view.public_json, from_file.public_json);
}

// Two threads proving on one key at once, with fresh blinding each: both
// proofs come back verified (and so differ).
TEST_P(CpuProvingKey, TwoConcurrentProofsBothVerify) {
  auto key = ProvingKey::Load(Fixture(GetParam(), "circuit_final.zkey"), {Backend::kCpu, 2});
  const std::string file = zkfleet::testing::ReadFile(Fixture(GetParam(), "witness.wtns"));
  const Witness view = Witness::View({reinterpret_cast<const uint8_t*>(file.data()), file.size()}, "view");
  const Witness owned = Witness::FromFile(Fixture(GetParam(), "witness.wtns"));
  Proof proofs[2];
  std::thread threads[2] = {std::thread([&] { proofs[0] = key->Prove(view); }),
                            std::thread([&] { proofs[1] = key->Prove(owned); })};
  for (auto& t : threads) t.join();
  for (const Proof& p : proofs) {
    EXPECT_TRUE(p.check.verified);
    EXPECT_TRUE(p.check.engine_fault.empty()) << p.check.engine_fault;
    EXPECT_EQ(p.public_json, proofs[0].public_json);
  }
  EXPECT_NE(proofs[0].proof_json, proofs[1].proof_json);
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
