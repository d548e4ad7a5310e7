// The circuits a worker holds, one resident proving key each, and how one work
// item is proved. A circuit is either backed by the engine (a loaded .zkey, or
// a bellperson .params file: CircuitSpec::kind BELLMAN, whose items are
// assignment files proved with engine::BellmanKey) or is a benchmark circuit (--instant / --instant-circuit) that answers at once,
// optionally after a fixed delay, without proving: it exists to measure the
// broker and to test the fleet without paying for proofs.
//
// On several devices (--gpus) every engine circuit has one key copy per
// device, each resident on its device; Prove() names the device (its index
// in devices()), and Release(device) frees one device's copies when that
// device leaves the set.
//
// Circuits change at run time (zkworker's SIGHUP, WorkerCore::ReloadCircuits):
// Sibling() makes a set of the new circuits with this one's settings, its
// Load() runs on a thread of its own while this set proves, and Adopt()
// moves its keys in and drops the circuits that go, once no Prove() runs
// (the lanes wait at most the proofs running then; new Prove() calls wait
// for the change).
//
// Thread-safety: Load() and Release() are called by one pipeline thread
// while no Prove() runs; Release(device) by the last lane of that device,
// once no Prove() on it runs (other devices' lanes may go on proving).
// Prove() may run on several lanes at once (the keys do not change while any
// runs; the engine serialises device work per device). Adopt() from any
// thread (it waits for running proofs). The accessors (circuit_ids(),
// specs(), Generator(), ...) may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/engine/bellman.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/witgen/witness_generator.hpp"
#include "zkfleet/worker/devices.hpp"

namespace zkfleet::worker {

struct CircuitSpec {
  std::string id;
  std::string zkey_path;  // empty for a benchmark circuit; the .params file for a BELLMAN circuit
  bool instant = false;   // benchmark mode: answer at once, prove nothing
  // circom's circuit.wasm (--generator ID=PATH): the worker computes this
  // circuit's witnesses from inputs. Empty: it takes only witnesses.
  std::string wasm_path;
  // CIRCOM: zkey_path is a .zkey, items are .wtns witnesses. BELLMAN:
  // zkey_path is a .params file, items are assignment files
  // (engine/assignment_file.hpp), proofs carry their 192 bytes.
  proto::CircuitKind kind = proto::CIRCUIT_KIND_CIRCOM;
};

// What proving one item produced.
struct ProveOutcome {
  bool ok = false;
  std::string proof_json;
  std::string public_json;
  std::string proof_bytes;  // BELLMAN: the 192-byte proof (proto::Result.proof_bytes); empty for circom
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
  // again; the device leaves the worker's set (the worker goes FAULTED and
  // exits non-zero when it was the last one).
  bool device_lost = false;
};

class CircuitSet {
 public:
  // `verify`: check every proof against its key's verification key before
  // it is sent (engine::ProveOptions::verify; off only for benchmarks).
  // `checked_keys`: keys whose points passed the check on this host before
  // load without it (when engine_options.validate_key is on); it becomes
  // engine_options.checked_keys for the first device's loads.
  // `devices`: where the keys go (each gets its own copies); empty = one
  // device, engine_options.cuda_device, labelled "none".
  CircuitSet(std::vector<CircuitSpec> specs, engine::EngineOptions engine_options,
             std::chrono::milliseconds instant_delay, bool verify = true,
             engine::CheckedKeys checked_keys = engine::CheckedKeys(),
             std::vector<Device> devices = {});

  // Loads every engine circuit's proving key on every device (the first
  // device's load checks the key's points; the other devices load the same
  // files at the same time, unchecked). Throws zkfleet::Error naming the
  // circuit, file and (with several devices) device.
  void Load();
  // Proves one item from `witness`, the .wtns bytes where they were received
  // (checked in place and uploaded from there: never copied). Never throws:
  // errors become a failed outcome. A witness that does not satisfy the
  // circuit fails (not retryable) with the error "witness does not satisfy
  // circuit <job's circuit id>".
  // `device`: an index in devices(). `version`: the circuit's Version() when
  // the item was queued; a circuit replaced since (Adopt) fails the item as
  // retryable instead of proving an old circuit's witness with the new key.
  static constexpr uint64_t kAnyVersion = ~uint64_t{0};
  ProveOutcome Prove(const proto::Job& job, std::span<const uint8_t> witness, size_t device = 0,
                     uint64_t version = kAnyVersion) const;
  // How often `circuit_id` was dropped or replaced by Adopt (0: never).
  uint64_t Version(const std::string& circuit_id) const;
  // Frees the proving keys (of every device); returns the bytes released.
  uint64_t Release();
  // Frees the proving keys of one device; returns the bytes released.
  uint64_t Release(size_t device);

  // ---- circuits changed at run time
  // An empty set of `specs` with this set's engine options, devices, checked
  // keys, progress and generator options; its Load() loads onto the devices
  // still in this set.
  std::unique_ptr<CircuitSet> Sibling(std::vector<CircuitSpec> specs) const;
  // Once no Prove() runs: drops the circuits `drop` names (their keys freed)
  // and takes `more`'s circuits (loaded; may be null). A circuit of `more`
  // must not be held here unless `drop` names it.
  void Adopt(std::unique_ptr<CircuitSet> more, const std::set<std::string>& drop);
  // No change is adopted from now on (the worker drains, faults or stops):
  // an Adopt waiting for running proofs returns at once, adopting nothing.
  void StopChanges();
  // Prove() calls under way now.
  int proofs_running() const;
  std::vector<CircuitSpec> specs() const;

  std::vector<std::string> circuit_ids() const;
  // The kind of each of circuit_ids(), same order (READY's circuit_kinds).
  std::vector<proto::CircuitKind> circuit_kinds() const;
  // The circuits with a witness generator (CircuitSpec::wasm_path), known
  // from construction: announced in READY's `generates`.
  std::vector<std::string> generator_ids() const;
  // The circuit's compiled generator once Load() has run; null when it has
  // none. Any thread (the map is fixed after Load()).
  std::shared_ptr<const witgen::WitnessGenerator> Generator(const std::string& circuit_id) const;
  // The public signals (nPublic) of an engine circuit once Load() has run;
  // nullopt for a BELLMAN or unknown circuit. Any thread.
  std::optional<uint32_t> PublicSignalCount(const std::string& circuit_id) const;
  // Told how much of each circuit's key file the first device's load has
  // read (the gauge zkfleet_worker_key_load_bytes): a bellperson .params file
  // every ~2 s as its points are decoded, then its size; a .zkey once loaded.
  // Set before Load(); called on the loading thread.
  using LoadProgress = std::function<void(const std::string& circuit_id, uint64_t done_bytes, uint64_t total_bytes)>;
  void set_load_progress(LoadProgress progress) { load_progress_ = std::move(progress); }
  // How generators are compiled and limited; set before Load().
  void set_generator_options(witgen::WitnessGeneratorOptions options) { generator_options_ = std::move(options); }
  const std::vector<Device>& devices() const { return devices_; }
  size_t device_count() const { return devices_.size(); }
  uint64_t resident_bytes() const { return resident_bytes_.load(); }
  uint64_t resident_bytes(size_t device) const { return device_resident_bytes_.at(device).load(); }
  std::string backend_name() const;
  bool verify() const { return verify_; }

 private:
  void LoadDevice(size_t device, bool check_points);
  // One BELLMAN circuit's .params onto `device`, logging progress and how it was checked.
  void LoadBellman(const CircuitSpec& spec, size_t device, bool check_points, const std::string& on_device);
  void LoadGenerators();
  // The prover of each circuit kind (CircuitProver).
  ProveOutcome ProveInstant() const;
  ProveOutcome ProveWitness(const proto::Job& job, const engine::ProvingKey& key,
                            std::span<const uint8_t> witness_bytes) const;
  ProveOutcome ProveAssignment(const proto::Job& job, const engine::BellmanKey& key,
                               std::span<const uint8_t> assignment_bytes) const;
  // A generator whose witnesses cannot be this circuit's (another curve,
  // another number of signals) is the operator's mistake: refused at start,
  // not blamed on every client's job. Throws zkfleet::Error.
  void CheckGeneratorsFitKeys(size_t device) const;

  // Prove() counts itself in `proving_` and waits while `changing_`
  // (Adopt); every other reader of the maps and specs_ holds gate_mutex_.
  class ProveGate;
  mutable std::mutex gate_mutex_;
  mutable std::condition_variable gate_changed_;
  mutable int proving_ = 0;
  bool changing_ = false;
  bool changes_stopped_ = false;
  std::vector<bool> released_;  // per device: Release(device) ran (it left the set)
  std::map<std::string, uint64_t> versions_;  // Version(): bumped by Adopt for what it drops

  std::vector<CircuitSpec> specs_;
  engine::EngineOptions engine_options_;
  std::chrono::milliseconds instant_delay_;
  bool verify_;
  std::vector<Device> devices_;
  // How a circuit is proved, by its kind: the one place that says which
  // prover a kind uses. A benchmark circuit (--instant) has no key; a
  // CIRCOM circuit has its zkey's key (a witness in, engine::ProvingKey); a
  // BELLMAN circuit its .params (an assignment in, engine::BellmanKey).
  struct InstantCircuit {};
  using CircuitProver =
      std::variant<InstantCircuit, std::unique_ptr<engine::ProvingKey>, std::unique_ptr<engine::BellmanKey>>;
  static uint64_t ResidentBytes(const CircuitProver& prover);
  // Per device (same index as devices_): every loaded circuit's prover. The
  // vector never changes size after construction.
  std::vector<std::map<std::string, CircuitProver>> provers_;
  std::atomic<uint64_t> resident_bytes_{0};
  std::vector<std::atomic<uint64_t>> device_resident_bytes_;
  std::string backend_name_;  // "cpu", "cuda" or "instant" (benchmark circuits only)
  witgen::WitnessGeneratorOptions generator_options_;
  LoadProgress load_progress_;
  std::map<std::string, std::shared_ptr<const witgen::WitnessGenerator>> generators_;  // filled by Load()
  std::map<std::string, uint32_t> public_counts_;  // engine circuits' nPublic, filled by Load() (device 0)
};

}  // namespace zkfleet::worker
