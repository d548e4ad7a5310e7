// WorkerMetrics: every metric a worker exports, created once when the worker
// starts: per-circuit series for the circuits it was configured with, the
// state gauges, the pinned-pool gauges and the drain / memory-wait clocks.
// docs/metrics.md describes each one.
//
// SetState() is the one call the worker makes on every state change: it sets
// zkfleet_worker_state, the /ready answer of the MetricsServer, and starts or
// stops the clocks behind zkfleet_drain_duration_seconds and
// zkfleet_memory_wait_seconds. Those two are computed at scrape time, so they
// keep growing even when the worker's threads are stuck.
//
// Thread-safety: all methods are thread-safe (the worker core, on the
// session's thread, and the pipeline's threads may both report), scrapes run
// concurrently.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "zkfleet.pb.h"
#include "zkfleet/metrics/labels.hpp"
#include "zkfleet/metrics/metrics_server.hpp"

namespace zkfleet::metrics {

class StateClocks;  // the scrape-time durations; worker_metrics.cpp

struct WorkerIdentity {
  std::string worker_id;        // --id
  std::string backend;          // "cpu", "cuda" or "instant"
  std::string gpu = "none";     // CUDA device ordinal, "none" on the CPU backend ("0,1" for several)
  // The devices the worker proves on (--gpus), by label; empty = one, `gpu`.
  std::vector<std::string> devices;
};

class WorkerMetrics {
 public:
  struct Circuit {
    std::array<prometheus::Counter*, kOutcomeLabels.size()> jobs{};            // by Outcome
    std::array<prometheus::Histogram*, kPhaseLabels.size()> phase_seconds{};   // by Phase
    std::vector<prometheus::Counter*> verification_failures;  // engine faults caught before sending, by device
    prometheus::Histogram* verify_seconds = nullptr;       // the check before sending, per proof
    prometheus::Gauge* key_load_bytes = nullptr;           // zkfleet_worker_key_load_bytes
  };

  // Registers the worker's metrics in `server`'s registry, with series for
  // `circuits` (a circuit seen later gets its own on first use, up to
  // max_circuits, then circuit="_other"). `drain_budget_seconds` is what a
  // drain may take before the ZkfleetDrainOverBudget alert fires:
  // --drain-timeout plus the expected memory release time.
  WorkerMetrics(MetricsServer& server, const WorkerIdentity& identity, const std::vector<std::string>& circuits,
                double drain_budget_seconds, size_t max_circuits = 64);
  ~WorkerMetrics();
  WorkerMetrics(const WorkerMetrics&) = delete;
  WorkerMetrics& operator=(const WorkerMetrics&) = delete;

  // The worker entered `state`: zkfleet_worker_state (1 for it, 0 for the
  // others), /ready (200 only in READY), and the clocks: the drain clock runs
  // from the first DRAINING/RELEASING until GONE, the memory-wait clock while
  // WAITING_FOR_MEMORY; after stopping they keep showing their last length.
  void SetState(proto::WorkerState state);

  // zkfleet_pinned_pool_bytes, _in_use_bytes, zkfleet_memory_to_release_bytes,
  // zkfleet_worker_pool_target_bytes and zkfleet_worker_pool_mode (1 for
  // memory.pool_mode, 0 for the other modes; an empty mode counts as "none",
  // an unknown one sets all five to 0).
  void SetMemory(const proto::MemoryStatus& memory);

  // A work item ended on this worker.
  void JobEnded(const std::string& circuit_id, Outcome outcome);
  // A proof's phase timings (proto::PhaseTimings, seconds), one observation
  // per phase. Phases the backend does not report (0) are skipped, except
  // prove_total.
  void ObservePhases(const std::string& circuit_id, const proto::PhaseTimings& timings);
  void MessageDropped(DropReason reason) { messages_dropped[static_cast<size_t>(reason)]->Increment(); }
  // A proof was verified before sending, in `seconds`
  // (zkfleet_worker_proof_verify_seconds).
  void ObserveVerify(const std::string& circuit_id, double seconds);
  // The engine's proof failed verification although the witness satisfies
  // the circuit (zkfleet_worker_proof_verification_failures_total), on the
  // device with index `device` in WorkerIdentity::devices.
  void ProofVerificationFailed(const std::string& circuit_id, size_t device = 0);

  // Per device (index in WorkerIdentity::devices): whether it is still in the
  // set (zkfleet_worker_device_up, and the counts of zkfleet_worker_devices),
  // a proof it completed (zkfleet_worker_device_proofs_total), and the bytes
  // of proving keys resident on it (zkfleet_worker_device_key_bytes).
  void SetDeviceUp(size_t device, bool up);
  void DeviceProofDone(size_t device);
  void SetDeviceKeyBytes(size_t device, uint64_t bytes);

  // A witness fetch by reference ended (fetch/fetcher.hpp): `outcome` is
  // one of kFetchOutcomeLabels ("ok", "refused", "client_error", "transient",
  // "cancelled"), `bytes` what a successful one put in the pool, `retries` the
  // transient errors it retried. zkfleet_worker_fetches_total{outcome},
  // zkfleet_worker_fetch_bytes_total, zkfleet_worker_fetch_retries_total,
  // zkfleet_worker_fetch_seconds.
  void FetchEnded(std::string_view outcome, uint64_t bytes, unsigned retries, double seconds);

  // A witness computed from inputs ended (witgen/witness_generator.hpp):
  // `outcome` is one of kGenerationOutcomeLabels (GenerationStatusName),
  // `bytes` the .wtns a successful one put in the pool.
  // `tier` is the program that computed it, one of kGenerationTierLabels
  // (GeneratorTierName: "native", or "node" at a circuit's first sight).
  // zkfleet_worker_generations_total{outcome}, zkfleet_worker_generation_tier_total{tier},
  // zkfleet_worker_generated_bytes_total, zkfleet_worker_generation_seconds;
  // SetGenerationQueue: items waiting for a generator (zkfleet_worker_generation_queue).
  void GenerationEnded(std::string_view outcome, std::string_view tier, double seconds, uint64_t bytes);
  void SetGenerationQueue(size_t waiting);

  // How much of the circuit's key file its load has read
  // (zkfleet_worker_key_load_bytes{circuit}): a bellperson .params file as
  // its points are decoded (every ~2 s), a .zkey once loaded; the file's
  // size once the key is resident.
  // `total_bytes` > 0: while the worker is not READY, /ready also names the
  // load's progress ("LOADING: circuit porep 12.3 of 48.4 GB (25%)").
  void SetKeyLoadBytes(const std::string& circuit_id, uint64_t bytes, uint64_t total_bytes = 0);

  Circuit& ForCircuit(const std::string& circuit_id);

  prometheus::Gauge& pinned_pool_bytes;
  prometheus::Gauge& pinned_pool_in_use_bytes;
  prometheus::Gauge& memory_to_release_bytes;
  prometheus::Gauge& drain_budget_seconds;
  prometheus::Gauge& pool_target_bytes;
  std::array<prometheus::Gauge*, kPoolModeLabels.size()> pool_mode{};  // by kPoolModeLabels
  std::array<prometheus::Gauge*, kWorkerStates.size()> state{};
  std::array<prometheus::Counter*, kDropReasonLabels.size()> messages_dropped{};
  struct Device {
    prometheus::Gauge* up = nullptr;
    prometheus::Counter* proofs = nullptr;
    prometheus::Gauge* key_bytes = nullptr;
  };
  std::vector<Device> devices;  // by index in WorkerIdentity::devices
  prometheus::Gauge* devices_ok = nullptr;       // zkfleet_worker_devices{state="ok"}
  prometheus::Gauge* devices_faulted = nullptr;  // zkfleet_worker_devices{state="faulted"}
  static constexpr std::array<std::string_view, 5> kFetchOutcomeLabels = {"ok", "refused", "client_error",
                                                                         "transient", "cancelled"};
  std::array<prometheus::Counter*, kFetchOutcomeLabels.size()> fetches{};
  prometheus::Counter* fetch_bytes = nullptr;
  static constexpr std::array<std::string_view, 6> kGenerationOutcomeLabels = {
      "ok", "bad_input", "circuit_error", "limit", "cancelled", "internal"};
  std::array<prometheus::Counter*, kGenerationOutcomeLabels.size()> generations{};
  static constexpr std::array<std::string_view, 2> kGenerationTierLabels = {"native", "node"};
  std::array<prometheus::Counter*, kGenerationTierLabels.size()> generation_tiers{};
  prometheus::Counter* generated_bytes = nullptr;
  prometheus::Histogram* generation_seconds = nullptr;
  prometheus::Gauge* generation_queue = nullptr;
  prometheus::Counter* fetch_retries = nullptr;
  prometheus::Histogram* fetch_seconds = nullptr;

 private:
  MetricsServer& server_;
  const size_t max_circuits_;
  prometheus::Family<prometheus::Counter>& jobs_family_;
  prometheus::Family<prometheus::Histogram>& phase_family_;
  prometheus::Family<prometheus::Counter>& verify_failures_family_;
  prometheus::Family<prometheus::Histogram>& verify_family_;
  prometheus::Family<prometheus::Gauge>& key_load_family_;
  const std::string backend_;
  const std::vector<std::string> device_labels_;
  std::mutex devices_mutex_;  // SetDeviceUp's count of devices up
  std::vector<bool> device_up_;
  std::shared_ptr<StateClocks> clocks_;

  std::mutex circuits_mutex_;
  std::map<std::string, Circuit, std::less<>> circuits_;  // node-based: references stay valid

  // What /ready says: the state, and while it is not READY the last load
  // progress reported (SetKeyLoadBytes). Set from the worker's thread and
  // the loaders'.
  void PublishReadiness();
  std::mutex readiness_mutex_;
  proto::WorkerState state_ = proto::WORKER_STATE_STARTING;
  std::string load_detail_;
};

}  // namespace zkfleet::metrics
