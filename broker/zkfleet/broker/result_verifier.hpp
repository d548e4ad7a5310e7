// Verification of worker RESULTs off the broker's loop thread: the broker
// submits each result's proof.json and public.json with its circuit's
// verifier (VerificationKeys) and, when it knows them, the public signals the
// job's witness commits to (PublicSignalsOfWitness); a few threads verify
// (about 1-2 ms per BN254 proof, three Miller loops and a final
// exponentiation) and post a verdict. The loop polls wake_fd() beside its
// sockets (a zmq::pollitem_t with socket = nullptr, fd = wake_fd(),
// events = ZMQ_POLLIN) and collects the verdicts with TakeFinished().
//
// A verdict is kValid only when both JSON files parse, a bellman circuit's
// proof_bytes are the 192-byte encoding of proof.json's points (and a circom
// circuit's are empty), the public signals
// equal the expected ones exactly (when given), hash to the expected digest
// (when given) and groth16 verification
// (PreparedVerifier::Verify, with its point, range and subgroup checks)
// accepts. Nothing a worker sends can throw out of a verifier thread: every
// failure is a verdict.
//
// Ownership: the verifier owns its threads and its eventfd; a task owns its
// JSON and shares its PreparedVerifier.
// Thread-safety: Submit, TakeFinished, in_flight and wake_fd may be called
// from any thread (the broker calls them from its loop). The destructor joins
// the threads after the proofs being verified at that moment; tasks still
// queued and verdicts not taken are dropped.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/common/mailbox.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/engine/verify.hpp"

namespace zkfleet::broker {

struct VerifyTask {
  uint64_t id = 0;  // the caller's, returned in the verdict
  std::shared_ptr<const engine::PreparedVerifier> verifier;
  std::string proof_json;
  std::string public_json;
  // CIRCUIT_KIND_BELLMAN: proof_bytes must be exactly the 192-byte encoding
  // of proof.json's points (engine/bellman_format.hpp); CIRCOM: it must be empty.
  proto::CircuitKind kind = proto::CIRCUIT_KIND_CIRCOM;
  std::string proof_bytes;
  // When set, public.json must hold exactly these values.
  std::optional<std::vector<engine::BigInt>> expected_public;
  // When set, the SHA-256 of public.json's signals (wire/public_digest.hpp)
  // must equal it: a witness by reference, which the broker never reads, is
  // bound to its proof by the digest its client sent.
  std::optional<std::string> expected_public_digest;
};

enum class VerifyReason {
  kValid,
  kInvalidProof,        // PreparedVerifier::Verify refused (pairing, points, ranges, count, curve)
  kWrongPublicSignals,  // public.json differs from expected_public
  kMalformed,           // proof.json or public.json does not parse, proof_bytes of the wrong size (or no verifier)
};

// "valid", "invalid_proof", "wrong_public_signals", "malformed" (usable as a
// metric label).
const char* VerifyReasonName(VerifyReason reason);

struct VerifyVerdict {
  uint64_t id = 0;
  bool ok = false;
  VerifyReason reason = VerifyReason::kMalformed;
  std::string why;       // one line, empty when ok
  double seconds = 0.0;  // parsing and verification, on the verifier thread
  // When ok: proof.json and public.json of exactly what was verified, written
  // by the broker (engine::ProofJson / PublicJson: snarkjs's layout, decimal
  // signals), which the client gets instead of the worker's text. A byte-order
  // mark, hex or zero-padded numbers, or extra fields a lenient parser let
  // through never reach a client.
  std::string proof_json;
  std::string public_json;
};

class ResultVerifier {
 public:
  // Starts max(1, threads) threads. Throws zkfleet::Error kInternal when no
  // eventfd can be made.
  explicit ResultVerifier(unsigned threads);
  ~ResultVerifier();
  ResultVerifier(const ResultVerifier&) = delete;
  ResultVerifier& operator=(const ResultVerifier&) = delete;

  // Queues `task` (FIFO); never blocks on verification.
  void Submit(VerifyTask task);
  // The verdicts finished since the last call, in finishing order; empty when
  // none. Never blocks on verification. Resets wake_fd().
  std::vector<VerifyVerdict> TakeFinished();
  // Tasks submitted whose verdict has not been taken yet.
  size_t in_flight() const;

  // Readable (POLLIN) exactly while TakeFinished() has verdicts to return.
  int wake_fd() const { return finished_.fd(); }

 private:
  void Run();

  Mailbox<VerifyVerdict> finished_{"result verifier"};  // the threads' verdicts, to the loop
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<VerifyTask> queue_;          // guarded by mu_
  size_t in_flight_ = 0;                  // guarded by mu_: submitted, verdict not taken
  bool stopping_ = false;                 // guarded by mu_
  std::vector<std::thread> threads_;
};

// Verifies one task on the calling thread (what the ResultVerifier's threads
// run; also for tests and benchmarks). Never throws.
VerifyVerdict VerifyResultNow(const VerifyTask& task);

// The public signals w[1..n_public] of a .wtns file (spec §5) held in
// `witness`'s chunks, split anywhere: reads only the container header, the
// section table, section 1 and the first 1 + n_public values, across chunk
// boundaries, without copying the rest. Values are returned as canonical
// BigInts. nullopt with *why (one line) when the bytes are not such a file:
// bad magic or version, a section out of bounds, n8 not a multiple of 8 in
// [8, 48], section 2's size not n8 * nWitness, fewer than 1 + n_public
// values, w[0] != 1, or a returned value not below the file's prime.
std::optional<std::vector<engine::BigInt>> PublicSignalsOfWitness(const fleet::WitnessFrames& witness,
                                                                  uint32_t n_public, std::string* why);

}  // namespace zkfleet::broker
