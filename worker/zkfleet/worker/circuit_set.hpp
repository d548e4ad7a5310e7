// The circuits a worker holds, one resident proving key each, and how one work
// item is proved. A circuit is either backed by the engine (a loaded .zkey) or
// is a benchmark circuit (--instant / --instant-circuit) that answers at once,
// optionally after a fixed delay, without proving: it exists to measure the
// broker and to test the fleet without paying for proofs.
//
// Thread-safety: Load() and Release() are called by one pipeline thread
// while no Prove() runs; Prove() may run on several lanes at once (the keys
// are immutable; the engine serialises device work). circuit_ids() and
// resident_bytes() may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/worker/checked_keys.hpp"

namespace zkfleet::worker {

struct CircuitSpec {
  std::string id;
  std::string zkey_path;  // empty for a benchmark circuit
  bool instant = false;   // benchmark mode: answer at once, prove nothing
};

// What proving one item produced.
struct ProveOutcome {
  bool ok = false;
  std::string proof_json;
  std::string public_json;
  std::string error;       // when !ok, with context
  bool retryable = false;  // the worker's fault (device, memory), not the job's
  proto::PhaseTimings timings;
  // The check before sending (engine::ProofCheck): seconds spent verifying
  // (0 when off), and, when the engine's first proof failed verification
  // although the witness satisfies the circuit, what the verifier said (the
  // proof sent is then the CPU re-proof, which verified).
  double verify_s = 0;
  std::string engine_fault;
  // A fatal (sticky) device error: this process cannot prove on the device
  // again; the worker goes FAULTED and exits non-zero.
  bool device_lost = false;
};

class CircuitSet {
 public:
  // `verify`: check every proof against its key's verification key before
  // it is sent (engine::ProveOptions::verify; off only for benchmarks).
  // `checked_keys`: keys whose points passed the check on this host before
  // load without it (when engine_options.validate_key is on).
  CircuitSet(std::vector<CircuitSpec> specs, engine::EngineOptions engine_options,
             std::chrono::milliseconds instant_delay, bool verify = true, CheckedKeys checked_keys = CheckedKeys(""));

  // Loads every engine circuit's proving key. Throws zkfleet::Error naming
  // the circuit and file.
  void Load();
  // Proves one item from `witness`, the .wtns bytes where they were received
  // (checked in place and uploaded from there: never copied). Never throws:
  // errors become a failed outcome. A witness that does not satisfy the
  // circuit fails (not retryable) with the error "witness does not satisfy
  // circuit <job's circuit id>".
  ProveOutcome Prove(const proto::Job& job, std::span<const uint8_t> witness) const;
  // Frees the proving keys; returns the bytes released.
  uint64_t Release();

  std::vector<std::string> circuit_ids() const;
  uint64_t resident_bytes() const { return resident_bytes_.load(); }
  std::string backend_name() const;
  bool verify() const { return verify_; }

 private:
  std::vector<CircuitSpec> specs_;
  engine::EngineOptions engine_options_;
  CheckedKeys checked_keys_;
  std::chrono::milliseconds instant_delay_;
  bool verify_;
  std::map<std::string, std::unique_ptr<engine::ProvingKey>> keys_;  // engine circuits
  std::atomic<uint64_t> resident_bytes_{0};
  std::string backend_name_;  // "cpu", "cuda" or "instant" (benchmark circuits only)
};

}  // namespace zkfleet::worker
