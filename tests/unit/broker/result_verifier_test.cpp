// The broker's result verification: VerificationKeys (loading, digest pins,
// refusals), VerifyResultNow's verdicts on the bundled snarkjs fixtures (valid,
// tampered, another curve's proof, wrong public signals, malformed JSON),
// PublicSignalsOfWitness on chunked .wtns files, and ResultVerifier's threads
// and eventfd.
#include <gtest/gtest.h>

#include <poll.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "testutil/test_support.hpp"
#include "zkfleet/broker/result_verifier.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/engine/snarkjs.hpp"

namespace zkfleet::broker {
namespace {

using zkfleet::testing::ReadFile;
using zkfleet::testing::TempDir;
using zkfleet::testing::WriteFile;

const char* const kBn = "bn128_k12";
const char* const kBls = "bls12381_k12";

std::string Fixture(const std::string& circuit, const std::string& file) {
  return std::string(ZKFLEET_FIXTURES_DIR) + "/" + circuit + "/" + file;
}

// The fixture's key, loaded as the broker loads it.
std::shared_ptr<const engine::PreparedVerifier> KeyOf(const std::string& circuit) {
  const VerificationKeys keys = VerificationKeys::Load({circuit + "=" + Fixture(circuit, "verification_key.json")});
  const VerificationKeys::Entry* entry = keys.Find(circuit);
  EXPECT_NE(entry, nullptr);
  return entry ? entry->verifier : nullptr;
}

VerifyTask TaskOf(const std::string& key_circuit, const std::string& proof_circuit, uint64_t id = 1) {
  VerifyTask task;
  task.id = id;
  task.verifier = KeyOf(key_circuit);
  task.proof_json = ReadFile(Fixture(proof_circuit, "proof.json"));
  task.public_json = ReadFile(Fixture(proof_circuit, "public.json"));
  return task;
}

std::vector<engine::BigInt> PublicOf(const std::string& circuit) {
  return engine::ReadPublicSignalsJson(Fixture(circuit, "public.json"));
}

// Runs `fn`, expects a zkfleet::Error with `code` whose message contains every needle.
template <typename Fn>
void ExpectError(Fn&& fn, ErrorCode code, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& needle : needles) EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "'" << needle << "' not in: " << e.what();
  }
}

std::string Sha256Sum(const std::string& path) {
  const auto result = zkfleet::testing::RunCommand("sha256sum " + zkfleet::testing::Quote(path));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return result.output.substr(0, 64);
}

fleet::WitnessFrames Chunked(const std::string& bytes, size_t chunk) {
  return fleet::ChunkWitness(fleet::FrameFromString(bytes), chunk);
}

// ---------------------------------------------------------------- verdicts

TEST(ResultVerifierTest, ValidProofVerifiesOnBothCurves) {
  for (const char* circuit : {kBn, kBls}) {
    SCOPED_TRACE(circuit);
    VerifyTask task = TaskOf(circuit, circuit, 7);
    const VerifyVerdict plain = VerifyResultNow(task);
    EXPECT_TRUE(plain.ok) << plain.why;
    EXPECT_EQ(plain.reason, VerifyReason::kValid);
    EXPECT_EQ(plain.id, 7u);
    EXPECT_TRUE(plain.why.empty());
    EXPECT_GT(plain.seconds, 0.0);
    // And with the witness's public signals expected.
    task.expected_public = PublicOf(circuit);
    const VerifyVerdict pinned = VerifyResultNow(task);
    EXPECT_TRUE(pinned.ok) << pinned.why;
  }
}

// Lower-case hex of a little-endian limb array, most significant first.
std::string Hex(const engine::BigInt& value) {
  std::string out;
  for (size_t i = value.size(); i-- > 0;) {
    char limb[17];
    std::snprintf(limb, sizeof limb, "%016llx", static_cast<unsigned long long>(value[i]));
    out += limb;
  }
  const size_t first = out.find_first_not_of('0');
  return first == std::string::npos ? "0" : out.substr(first);
}

// Issue 47, item 3: the broker delivers what it verified, written by itself.
// A worker's text that a lenient parser accepts (a byte-order mark, hex or
// zero-padded signals, extra fields, odd spacing) is either refused or
// replaced by the canonical text, which snarkjs reads.
TEST(ResultVerifierTest, AVerifiedResultIsDeliveredInTheBrokersOwnCanonicalText) {
  for (const char* circuit : {kBn, kBls}) {
    SCOPED_TRACE(circuit);
    const VerifyVerdict plain = VerifyResultNow(TaskOf(circuit, circuit));
    ASSERT_TRUE(plain.ok) << plain.why;
    // The canonical text is the engine's, as zkprove writes it, of the same points and signals.
    const engine::ProofPoints points = engine::ReadProofJson(Fixture(circuit, "proof.json"));
    ASSERT_TRUE(points.curve.has_value());
    EXPECT_EQ(plain.proof_json, engine::ProofJson(points, *points.curve));
    EXPECT_EQ(plain.public_json, engine::PublicJson(PublicOf(circuit)));
    const std::string proof = ReadFile(Fixture(circuit, "proof.json"));
    const std::string signals = ReadFile(Fixture(circuit, "public.json"));
    const std::vector<engine::BigInt> values = PublicOf(circuit);
    std::string hex = "[", padded = "[";
    for (size_t i = 0; i < values.size(); ++i) {
      hex += std::string(i ? "," : "") + "\"0x" + Hex(values[i]) + "\"";
      padded += std::string(i ? "," : "") + "\"000" + engine::DecimalString(values[i]) + "\"";
    }
    hex += "]";
    padded += "]";
    const std::pair<std::string, std::string> variants[] = {
        {"\xEF\xBB\xBF" + proof, signals},                               // a BOM before proof.json
        {proof, "\xEF\xBB\xBF" + signals},                               // and before public.json
        {proof, hex},                                                     // hex signals
        {proof, padded},                                                  // zero-padded signals
        {"{\"note\":\"hello\"," + proof.substr(proof.find('{') + 1), signals},  // an extra field
        {"\n\n  " + proof + "  \n", " " + signals + "\n\n"},                  // spacing
    };
    int accepted = 0;
    for (const auto& [p, q] : variants) {
      VerifyTask task = TaskOf(circuit, circuit);
      task.proof_json = p;
      task.public_json = q;
      const VerifyVerdict verdict = VerifyResultNow(task);
      if (!verdict.ok) continue;  // refused: nothing reaches the client
      ++accepted;
      EXPECT_EQ(verdict.proof_json, plain.proof_json) << p;
      EXPECT_EQ(verdict.public_json, plain.public_json) << q;
    }
    EXPECT_GE(accepted, 1);  // the spacing variant at least: the replacement is exercised
  }
}

TEST(ResultVerifierTest, TamperedProofIsInvalid) {
  for (const char* circuit : {kBn, kBls}) {
    SCOPED_TRACE(circuit);
    VerifyTask task = TaskOf(circuit, circuit);
    // The last digit of pi_a's x coordinate, moved by one.
    const size_t pi_a = task.proof_json.find("\"pi_a\"");
    ASSERT_NE(pi_a, std::string::npos);
    const size_t open = task.proof_json.find('"', task.proof_json.find('[', pi_a));
    const size_t close = task.proof_json.find('"', open + 1);
    char& digit = task.proof_json[close - 1];
    ASSERT_TRUE(std::isdigit(static_cast<unsigned char>(digit)));
    digit = digit == '9' ? '8' : static_cast<char>(digit + 1);
    const VerifyVerdict verdict = VerifyResultNow(task);
    EXPECT_FALSE(verdict.ok);
    EXPECT_EQ(verdict.reason, VerifyReason::kInvalidProof) << verdict.why;
    EXPECT_FALSE(verdict.why.empty());
  }
}

TEST(ResultVerifierTest, AnotherCircuitsValidProofFails) {
  for (const auto& [key, proof] : {std::pair{kBn, kBls}, std::pair{kBls, kBn}}) {
    SCOPED_TRACE(std::string(key) + " key, " + proof + " proof");
    VerifyTask task = TaskOf(key, proof);
    VerifyVerdict verdict = VerifyResultNow(task);
    EXPECT_FALSE(verdict.ok);
    EXPECT_EQ(verdict.reason, VerifyReason::kInvalidProof) << verdict.why;
    // With this circuit's public signals (both have 2) and without the
    // "curve" name, the proof's points themselves must be refused.
    task.public_json = ReadFile(Fixture(key, "public.json"));
    const size_t curve = task.proof_json.find(",\n \"curve\"");
    ASSERT_NE(curve, std::string::npos);
    task.proof_json.erase(curve, task.proof_json.find('\n', curve + 2) - curve);
    verdict = VerifyResultNow(task);
    EXPECT_FALSE(verdict.ok);
    EXPECT_EQ(verdict.reason, VerifyReason::kInvalidProof) << verdict.why;
  }
}

TEST(ResultVerifierTest, ValidProofOfOtherPublicSignalsIsInvalid) {
  // A proof is bound to its statement: the right proof with another public.json fails.
  VerifyTask task = TaskOf(kBn, kBn);
  task.public_json = "[\"1\", \"2\"]";
  const VerifyVerdict verdict = VerifyResultNow(task);
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.reason, VerifyReason::kInvalidProof) << verdict.why;
}

TEST(ResultVerifierTest, PublicSignalsDifferingFromExpectedAreWrong) {
  VerifyTask task = TaskOf(kBn, kBn);
  std::vector<engine::BigInt> expected = PublicOf(kBn);
  ASSERT_EQ(expected.size(), 2u);
  expected[1][0] ^= 1;
  task.expected_public = expected;
  VerifyVerdict verdict = VerifyResultNow(task);
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.reason, VerifyReason::kWrongPublicSignals) << verdict.why;
  EXPECT_NE(verdict.why.find("[1]"), std::string::npos) << verdict.why;

  expected = PublicOf(kBn);
  expected.pop_back();
  task.expected_public = expected;
  verdict = VerifyResultNow(task);
  EXPECT_EQ(verdict.reason, VerifyReason::kWrongPublicSignals) << verdict.why;
  EXPECT_NE(verdict.why.find("expected 1 public signals"), std::string::npos) << verdict.why;
}

TEST(ResultVerifierTest, MalformedJsonIsMalformed) {
  VerifyTask task = TaskOf(kBn, kBn);
  task.proof_json = "this is not json";
  VerifyVerdict verdict = VerifyResultNow(task);
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.reason, VerifyReason::kMalformed);
  EXPECT_NE(verdict.why.find("proof.json"), std::string::npos) << verdict.why;
  EXPECT_EQ(verdict.why.find('\n'), std::string::npos);

  task = TaskOf(kBn, kBn);
  task.public_json = "[\"12\",";
  verdict = VerifyResultNow(task);
  EXPECT_EQ(verdict.reason, VerifyReason::kMalformed);
  EXPECT_NE(verdict.why.find("public.json"), std::string::npos) << verdict.why;

  task = TaskOf(kBn, kBn);
  task.verifier = nullptr;
  EXPECT_EQ(VerifyResultNow(task).reason, VerifyReason::kMalformed);
}

// ---------------------------------------------------------------- witness

TEST(PublicSignalsOfWitnessTest, MatchesPublicJsonWholeAndInChunksOf7) {
  for (const char* circuit : {kBn, kBls}) {
    SCOPED_TRACE(circuit);
    const std::string bytes = ReadFile(Fixture(circuit, "witness.wtns"));
    const std::vector<engine::BigInt> expected = PublicOf(circuit);
    for (size_t chunk : {bytes.size(), size_t{7}, size_t{1}}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk));
      const fleet::WitnessFrames witness = Chunked(bytes, chunk);
      ASSERT_EQ(witness.chunks.size(), (bytes.size() + chunk - 1) / chunk);
      std::string why;
      const auto signals = PublicSignalsOfWitness(witness, static_cast<uint32_t>(expected.size()), &why);
      ASSERT_TRUE(signals.has_value()) << why;
      EXPECT_EQ(*signals, expected);
    }
    std::string why;
    const auto none = PublicSignalsOfWitness(Chunked(bytes, 7), 0, &why);
    ASSERT_TRUE(none.has_value()) << why;
    EXPECT_TRUE(none->empty());
  }
}

TEST(PublicSignalsOfWitnessTest, RefusesTruncatedAndForeignBytes) {
  const std::string bytes = ReadFile(Fixture(kBn, "witness.wtns"));
  const auto refused = [](const std::string& data, uint32_t n_public, const std::string& needle) {
    SCOPED_TRACE(needle);
    std::string why;
    const auto signals = PublicSignalsOfWitness(Chunked(data, 7), n_public, &why);
    EXPECT_FALSE(signals.has_value());
    EXPECT_NE(why.find(needle), std::string::npos) << why;
  };
  refused(bytes.substr(0, 8), 2, "truncated");
  refused(bytes.substr(0, 60), 2, "truncated");
  refused(bytes.substr(0, 76 + 2 * 32), 2, "truncated");
  refused(bytes.substr(0, bytes.size() - 1), 2, "truncated");
  refused(bytes + "x", 2, "after the last section");
  refused("wtnx" + bytes.substr(4), 2, "magic");
  refused("rubbish that is long enough", 2, "magic");
  refused(bytes, 5000, "too small");
  std::string wide = bytes;
  wide[24] = 56;  // n8
  refused(wide, 2, "n8");
  // Cut into frames but missing its last frame: what a short read would give.
  fleet::WitnessFrames witness = Chunked(bytes, 7);
  witness.chunks.pop_back();
  std::string why;
  EXPECT_FALSE(PublicSignalsOfWitness(witness, 2, &why).has_value());
  EXPECT_FALSE(why.empty());
}

// ---------------------------------------------------------------- keys

TEST(VerificationKeysTest, LoadsAndFindsWithDigestPins) {
  const std::string bn = Fixture(kBn, "verification_key.json");
  const std::string bls = Fixture(kBls, "verification_key.json");
  const std::string bn_sum = Sha256Sum(bn);
  std::string bls_sum = Sha256Sum(bls);
  std::transform(bls_sum.begin(), bls_sum.end(), bls_sum.begin(), [](char c) { return std::toupper(c); });
  const VerificationKeys keys = VerificationKeys::Load({"a=" + bn + "@sha256:" + bn_sum, "b=" + bls + "@sha256:" + bls_sum});
  ASSERT_EQ(keys.size(), 2u);
  const VerificationKeys::Entry* a = keys.Find("a");
  const VerificationKeys::Entry* b = keys.Find("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(keys.Find("c"), nullptr);
  EXPECT_EQ(a->path, bn);
  EXPECT_EQ(a->sha256, bn_sum);
  EXPECT_EQ(a->curve, engine::Curve::kBn254);
  EXPECT_EQ(a->n_public, 2u);
  EXPECT_EQ(b->curve, engine::Curve::kBls12_381);
  ASSERT_NE(a->verifier, nullptr);
  EXPECT_EQ(a->verifier->key().curve, engine::Curve::kBn254);
  std::vector<std::string> order;
  for (const VerificationKeys::Entry& entry : keys) order.push_back(entry.circuit);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b"}));
  // Unpinned: the digest is still computed.
  EXPECT_EQ(VerificationKeys::Load({"a=" + bn}).Find("a")->sha256, bn_sum);
}

TEST(VerificationKeysTest, RefusesWrongDigestNamingBoth) {
  const std::string bn = Fixture(kBn, "verification_key.json");
  const std::string actual = Sha256Sum(bn);
  std::string pinned = actual;
  pinned[10] = pinned[10] == '0' ? '1' : '0';
  ExpectError([&] { VerificationKeys::Load({"a=" + bn + "@sha256:" + pinned}); }, ErrorCode::kMismatch,
              {"'a'", bn, "expected " + pinned, "found " + actual});
  ExpectError([&] { VerificationKeys::Load({"a=" + bn + "@sha256:abc"}); }, ErrorCode::kInvalidArgument,
              {"'a'", "64 hex digits"});
}

TEST(VerificationKeysTest, RefusesDuplicateEmptyMissingAndInvalid) {
  const std::string bn = Fixture(kBn, "verification_key.json");
  const std::string bls = Fixture(kBls, "verification_key.json");
  ExpectError([&] { VerificationKeys::Load({"a=" + bn, "a=" + bls}); }, ErrorCode::kInvalidArgument,
              {"'a'", "already", bn, bls});
  ExpectError([&] { VerificationKeys::Load({"=" + bn}); }, ErrorCode::kInvalidArgument, {"empty circuit id"});
  ExpectError([&] { VerificationKeys::Load({bn}); }, ErrorCode::kInvalidArgument, {"CIRCUIT=PATH"});
  ExpectError([&] { VerificationKeys::Load({"a="}); }, ErrorCode::kInvalidArgument, {"empty path"});
  TempDir dir;
  ExpectError([&] { VerificationKeys::Load({"a=" + dir.file("absent.json")}); }, ErrorCode::kNotFound,
              {"'a'", "absent.json"});
  ExpectError([&] { VerificationKeys::Load({"a=" + Fixture(kBn, "proof.json")}); }, ErrorCode::kBadFormat,
              {"'a'", "proof.json"});
  // A well-formed key whose alpha is not on the curve: the PreparedVerifier refuses it.
  std::string text = ReadFile(bn);
  const size_t alpha = text.find("\"vk_alpha_1\"");
  ASSERT_NE(alpha, std::string::npos);
  const size_t end = text.find('"', text.find('"', text.find('[', alpha)) + 1);
  text[end - 1] = text[end - 1] == '9' ? '8' : static_cast<char>(text[end - 1] + 1);
  WriteFile(dir.file("bad_vk.json"), text);
  ExpectError([&] { VerificationKeys::Load({"a=" + dir.file("bad_vk.json")}); }, ErrorCode::kBadFormat,
              {"'a'", "bad_vk.json"});
}

// ---------------------------------------------------------------- threads

bool Readable(int fd, int timeout_ms) {
  pollfd item{fd, POLLIN, 0};
  return poll(&item, 1, timeout_ms) == 1 && (item.revents & POLLIN);
}

TEST(ResultVerifierTest, EventfdWakesAndEveryIdIsReturnedOnce) {
  ResultVerifier verifier(3);
  EXPECT_FALSE(Readable(verifier.wake_fd(), 0));
  EXPECT_TRUE(verifier.TakeFinished().empty());

  // Even ids valid, odd ids tampered (another curve's public signals), on both curves,
  // submitted from two threads at once.
  constexpr uint64_t kTasks = 24;
  const VerifyTask bn = TaskOf(kBn, kBn), bls = TaskOf(kBls, kBls);
  const auto submit = [&](uint64_t first) {
    for (uint64_t id = first; id < kTasks; id += 2) {
      VerifyTask task = (id / 2) % 2 ? bn : bls;
      task.id = id;
      if (id % 2) task.public_json = ReadFile(Fixture((id / 2) % 2 ? kBls : kBn, "public.json"));
      verifier.Submit(std::move(task));
    }
  };
  std::thread other(submit, 1);
  submit(0);
  other.join();

  std::map<uint64_t, int> seen;
  int wakes = 0;
  while (seen.size() < kTasks) {
    ASSERT_TRUE(Readable(verifier.wake_fd(), static_cast<int>(zkfleet::testing::Scaled(std::chrono::seconds(30)).count())))
        << "no wake-up with " << seen.size() << " of " << kTasks << " verdicts";
    ++wakes;
    const std::vector<VerifyVerdict> verdicts = verifier.TakeFinished();
    ASSERT_FALSE(verdicts.empty()) << "woken with nothing to take";
    for (const VerifyVerdict& verdict : verdicts) {
      ASSERT_LT(verdict.id, kTasks);
      EXPECT_EQ(++seen[verdict.id], 1) << "id " << verdict.id << " returned twice";
      EXPECT_EQ(verdict.ok, verdict.id % 2 == 0) << verdict.id << ": " << verdict.why;
    }
  }
  EXPECT_GE(wakes, 1);
  EXPECT_EQ(verifier.in_flight(), 0u);
  // Taken: no longer readable until the next verdict.
  EXPECT_FALSE(Readable(verifier.wake_fd(), 0));
  EXPECT_TRUE(verifier.TakeFinished().empty());

  VerifyTask late = TaskOf(kBn, kBn, 99);
  verifier.Submit(std::move(late));
  ASSERT_TRUE(Readable(verifier.wake_fd(), static_cast<int>(zkfleet::testing::Scaled(std::chrono::seconds(30)).count())));
  const std::vector<VerifyVerdict> last = verifier.TakeFinished();
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].id, 99u);
  EXPECT_TRUE(last[0].ok) << last[0].why;
}

TEST(ResultVerifierTest, DestructorDropsQueuedTasks) {
  // Many tasks on one thread, destroyed at once: it must return promptly
  // (after the proof in progress) and not crash.
  const VerifyTask bn = TaskOf(kBn, kBn);
  const auto start = std::chrono::steady_clock::now();
  {
    ResultVerifier verifier(1);
    for (uint64_t id = 0; id < 200; ++id) {
      VerifyTask task = bn;
      task.id = id;
      verifier.Submit(std::move(task));
    }
    EXPECT_GT(verifier.in_flight(), 0u);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, zkfleet::testing::Scaled(std::chrono::seconds(20)));
}

// A bellperson .vk (gnark's public vector 01: one public input) loads as a
// BELLMAN key; a truncated one, or one with a compressed point, is refused at
// load with the field named.
TEST(BellmanVerificationKeys, GnarkVectorLoadsAsABellmanKeyAndDamagedOnesAreRefused) {
  const std::string path = std::string(ZKFLEET_FIXTURES_DIR) + "/bellman/gnark/vector_01.vk";
  const VerificationKeys keys = VerificationKeys::Load({"g=" + path});
  const VerificationKeys::Entry* entry = keys.Find("g");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->kind, proto::CIRCUIT_KIND_BELLMAN);
  EXPECT_EQ(entry->curve, engine::Curve::kBls12_381);
  EXPECT_EQ(entry->n_public, 1u);
  const std::string bytes = ReadFile(path);
  TempDir dir;
  WriteFile(dir.file("short.vk"), bytes.substr(0, bytes.size() - 1));
  ExpectError([&] { VerificationKeys::Load({"g=" + dir.file("short.vk")}); }, ErrorCode::kBadFormat,
              {"circuit 'g'", "bellperson .vk", "ic"});
  std::string compressed = bytes;
  compressed[0] = static_cast<char>(compressed[0] | 0x80);
  WriteFile(dir.file("compressed.vk"), compressed);
  ExpectError([&] { VerificationKeys::Load({"g=" + dir.file("compressed.vk")}); }, ErrorCode::kBadFormat,
              {"alpha_g1", "compressed"});
}

// A circom circuit's RESULT carrying proof_bytes is malformed; a bellman
// task's bytes of the wrong size are malformed too.
TEST(BellmanVerify, ProofBytesWhereNoneBelongOrOfTheWrongSizeAreRefused) {
  VerifyTask task = TaskOf(kBls, kBls);
  task.proof_bytes = std::string(192, '\0');
  VerifyVerdict verdict = VerifyResultNow(task);
  EXPECT_FALSE(verdict.ok);
  EXPECT_EQ(verdict.reason, VerifyReason::kMalformed) << verdict.why;
  EXPECT_NE(verdict.why.find("circom"), std::string::npos) << verdict.why;
  task.kind = proto::CIRCUIT_KIND_BELLMAN;
  task.proof_bytes = std::string(191, '\0');
  verdict = VerifyResultNow(task);
  EXPECT_EQ(verdict.reason, VerifyReason::kMalformed) << verdict.why;
  // The right size, not the points' encoding: an invalid proof.
  task.proof_bytes = std::string(192, '\0');
  verdict = VerifyResultNow(task);
  EXPECT_EQ(verdict.reason, VerifyReason::kInvalidProof) << verdict.why;
  EXPECT_NE(verdict.why.find("first difference at byte 0"), std::string::npos) << verdict.why;
}

}  // namespace
}  // namespace zkfleet::broker
