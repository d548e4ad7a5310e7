#include "zkfleet/broker/result_verifier.hpp"

#include "zkfleet/wire/public_digest.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <iterator>
#include <span>
#include <utility>

#include "zkfleet/engine/bellman_format.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/wtns.hpp"

namespace zkfleet::broker {
namespace {

// Lower-case hex, for the few bytes an error message quotes.
std::string HexBytes(std::span<const uint8_t> bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// A worker's file can make a parser's message long or multi-line; a verdict's
// `why` goes into one log line.
constexpr size_t kMaxWhy = 400;

std::string OneLine(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  if (text.size() > kMaxWhy) {
    text.resize(kMaxWhy);
    text += "...";
  }
  return text;
}

VerifyVerdict Fail(VerifyReason reason, std::string why) {
  VerifyVerdict verdict;
  verdict.ok = false;
  verdict.reason = reason;
  verdict.why = OneLine(std::move(why));
  return verdict;
}

VerifyVerdict Check(const VerifyTask& task) {
  if (!task.verifier) return Fail(VerifyReason::kMalformed, "no verification key");
  engine::ProofPoints proof;
  std::vector<engine::BigInt> signals;
  // The readers throw zkfleet::Error for bad input; anything else they might
  // throw is still the input's fault as far as this verdict goes.
  try {
    proof = engine::ParseProofJson(task.proof_json, "proof.json");
  } catch (const std::exception& e) {
    return Fail(VerifyReason::kMalformed, e.what());
  }
  try {
    signals = engine::ParsePublicSignalsJson(task.public_json, "public.json");
  } catch (const std::exception& e) {
    return Fail(VerifyReason::kMalformed, e.what());
  }
  if (task.kind == proto::CIRCUIT_KIND_BELLMAN) {
    // The 192 bytes the client gets must be the points verified below.
    if (task.proof_bytes.size() != engine::kBellmanProofBytes) {
      return Fail(VerifyReason::kMalformed, "proof_bytes: a bellman proof is " + std::to_string(engine::kBellmanProofBytes) +
                                                " bytes, found " + std::to_string(task.proof_bytes.size()));
    }
    const auto encoded = engine::EncodeBellmanProof(proof);
    const auto* sent = reinterpret_cast<const uint8_t*>(task.proof_bytes.data());
    size_t at = 0;
    while (at < encoded.size() && encoded[at] == sent[at]) ++at;
    if (at < encoded.size()) {
      const size_t from = at & ~size_t{7};  // 8 bytes around the first difference
      return Fail(VerifyReason::kInvalidProof,
                  "proof_bytes: not the encoding of proof.json's points (first difference at byte " +
                      std::to_string(at) + ": bytes " + std::to_string(from) + ".. expected " +
                      HexBytes(std::span(encoded).subspan(from, 8)) + ", found " +
                      HexBytes(std::span(sent + from, 8)) + ")");
    }
  } else if (!task.proof_bytes.empty()) {
    return Fail(VerifyReason::kMalformed, "proof_bytes: set for a circom circuit (" +
                                              std::to_string(task.proof_bytes.size()) + " bytes)");
  }
  if (task.expected_public) {
    const std::vector<engine::BigInt>& expected = *task.expected_public;
    if (signals.size() != expected.size()) {
      return Fail(VerifyReason::kWrongPublicSignals, "public.json: expected " + std::to_string(expected.size()) +
                                                         " public signals (the witness's), found " +
                                                         std::to_string(signals.size()));
    }
    for (size_t i = 0; i < signals.size(); ++i) {
      if (signals[i] != expected[i]) {
        return Fail(VerifyReason::kWrongPublicSignals, "public.json: signal [" + std::to_string(i) +
                                                           "]: expected " + engine::DecimalString(expected[i]) +
                                                           " (the witness's), found " + engine::DecimalString(signals[i]));
      }
    }
  }
  if (task.expected_public_digest) {
    std::vector<std::string> decimal;
    decimal.reserve(signals.size());
    for (const engine::BigInt& value : signals) decimal.push_back(engine::DecimalString(value));
    if (const std::string digest = wire::PublicSignalsDigest(decimal); digest != *task.expected_public_digest) {
      return Fail(VerifyReason::kWrongPublicSignals,
                  "public.json: its signals hash to " + wire::DigestHex(digest) + ", the client expects " +
                      wire::DigestHex(*task.expected_public_digest) + " (public_signals_sha256)");
    }
  }
  const engine::VerifyResult result = task.verifier->Verify(signals, proof);
  if (!result.ok()) {
    // Name the status unless the reason already starts with it ("invalid proof: ...").
    const std::string status = engine::VerifyStatusName(result.status);
    return Fail(VerifyReason::kInvalidProof,
                result.reason.rfind(status, 0) == 0 ? result.reason : status + ": " + result.reason);
  }
  VerifyVerdict verdict;
  verdict.ok = true;
  verdict.reason = VerifyReason::kValid;
  verdict.proof_json = engine::ProofJson(proof, task.verifier->key().curve);
  verdict.public_json = engine::PublicJson(signals);
  return verdict;
}

}  // namespace

const char* VerifyReasonName(VerifyReason reason) {
  switch (reason) {
    case VerifyReason::kValid: return "valid";
    case VerifyReason::kInvalidProof: return "invalid_proof";
    case VerifyReason::kWrongPublicSignals: return "wrong_public_signals";
    case VerifyReason::kMalformed: return "malformed";
  }
  return "unknown";
}

VerifyVerdict VerifyResultNow(const VerifyTask& task) {
  const auto start = std::chrono::steady_clock::now();
  VerifyVerdict verdict;
  try {
    verdict = Check(task);
  } catch (const std::exception& e) {
    // Only allocation failure is left (Verify throws nothing else).
    verdict = Fail(VerifyReason::kMalformed, std::string("verification failed: ") + e.what());
  } catch (...) {
    verdict = Fail(VerifyReason::kMalformed, "verification failed: unknown exception");
  }
  verdict.id = task.id;
  verdict.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return verdict;
}

ResultVerifier::ResultVerifier(unsigned threads) {
  threads = std::max(1u, threads);
  try {
    for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { Run(); });
  } catch (...) {
    // The destructor does not run for a throwing constructor: stop the threads started.
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
    throw;
  }
}

ResultVerifier::~ResultVerifier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void ResultVerifier::Submit(VerifyTask task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    ++in_flight_;
  }
  cv_.notify_one();
}

std::vector<VerifyVerdict> ResultVerifier::TakeFinished() {
  std::deque<VerifyVerdict> taken = finished_.TakeAll();
  if (taken.empty()) return {};
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_ -= taken.size();
  }
  return {std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end())};
}

size_t ResultVerifier::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

void ResultVerifier::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    VerifyTask task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    VerifyVerdict verdict = VerifyResultNow(task);
    task = VerifyTask{};  // free the JSON and release the key outside the lock
    finished_.Post(std::move(verdict));
    lock.lock();
  }
}

std::optional<std::vector<engine::BigInt>> PublicSignalsOfWitness(const fleet::WitnessFrames& witness,
                                                                  uint32_t n_public, std::string* why) {
  return engine::PublicSignalsOfWtns(fleet::ByteSpans(witness), n_public, why);
}

}  // namespace zkfleet::broker
