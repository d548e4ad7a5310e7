#include "zkfleet/metrics/worker_metrics.hpp"

#include <algorithm>
#include <cstdio>

#include <algorithm>

#include "zkfleet/metrics/buckets.hpp"
#include "zkfleet/metrics/state_clocks.hpp"

namespace zkfleet::metrics {
namespace {

// Verification takes about a millisecond: 0.25 ms .. 64 ms.
prometheus::Histogram::BucketBoundaries VerifyBuckets() {
  return {0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064};
}

prometheus::Gauge& UnlabelledGauge(prometheus::Registry& registry, const std::string& name, const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

WorkerMetrics::WorkerMetrics(MetricsServer& server, const WorkerIdentity& identity,
                             const std::vector<std::string>& circuits, double drain_budget, size_t max_circuits)
    : pinned_pool_bytes(UnlabelledGauge(server.registry(), "zkfleet_pinned_pool_bytes",
                                        "Bytes of pinned host memory the worker's pool holds")),
      pinned_pool_in_use_bytes(UnlabelledGauge(server.registry(), "zkfleet_pinned_pool_in_use_bytes",
                                               "Bytes of the pinned pool carved out for proving keys and job "
                                               "buffers")),
      memory_to_release_bytes(UnlabelledGauge(server.registry(), "zkfleet_memory_to_release_bytes",
                                              "Bytes the worker still has to give back while RELEASING")),
      drain_budget_seconds(UnlabelledGauge(server.registry(), "zkfleet_drain_budget_seconds",
                                           "Seconds a drain may take (--drain-timeout plus the expected memory "
                                           "release time) before it is over budget")),
      pool_target_bytes(UnlabelledGauge(server.registry(), "zkfleet_worker_pool_target_bytes",
                                        "Bytes the pinned pool will hold once pinning completes (it may grow "
                                        "in the background after READY)")),
      server_(server),
      max_circuits_(max_circuits),
      jobs_family_(prometheus::BuildCounter()
                       .Name("zkfleet_worker_jobs_total")
                       .Help("Work items that ended on this worker, by circuit and outcome")
                       .Register(server.registry())),
      phase_family_(prometheus::BuildHistogram()
                        .Name("zkfleet_job_phase_seconds")
                        .Help("Seconds a work item spent in each phase on this worker (queue_wait: in its "
                              "local queue)")
                        .Register(server.registry())),
      verify_failures_family_(prometheus::BuildCounter()
                                  .Name("zkfleet_worker_proof_verification_failures_total")
                                  .Help("Proofs of this worker's engine that failed verification although the "
                                        "witness satisfies the circuit (engine faults; the item was re-proved on the "
                                        "CPU), by backend, device and circuit")
                                  .Register(server.registry())),
      verify_family_(prometheus::BuildHistogram()
                         .Name("zkfleet_worker_proof_verify_seconds")
                         .Help("Seconds spent verifying each proof before sending it (--verify on)")
                         .Register(server.registry())),
      key_load_family_(prometheus::BuildGauge()
                           .Name("zkfleet_worker_key_load_bytes")
                           .Help("Bytes of the circuit's key file its load has read so far (a bellperson "
                                 ".params file as its points are decoded, a .zkey once loaded)")
                           .Register(server.registry())),
      backend_(identity.backend),
      device_labels_(identity.devices.empty() ? std::vector<std::string>{identity.gpu} : identity.devices),
      device_up_(device_labels_.size(), true),
      clocks_(std::make_shared<StateClocks>()) {
  prometheus::Registry& registry = server.registry();
  drain_budget_seconds.Set(drain_budget);

  auto& states = prometheus::BuildGauge()
                     .Name("zkfleet_worker_state")
                     .Help("1 for the state the worker is in, 0 for the others")
                     .Register(registry);
  for (size_t i = 0; i < kWorkerStates.size(); ++i) {
    state[i] = &states.Add({{"state", WorkerStateLabel(kWorkerStates[i])}});
  }

  auto& fetches_family = prometheus::BuildCounter()
                             .Name("zkfleet_worker_fetches_total")
                             .Help("Witnesses by reference this worker fetched, by outcome (ok, refused by "
                                   "--fetch-allow, client_error: missing, wrong size or digest; transient: "
                                   "network errors after every retry; cancelled)")
                             .Register(registry);
  for (size_t i = 0; i < kFetchOutcomeLabels.size(); ++i) {
    fetches[i] = &fetches_family.Add({{"outcome", std::string(kFetchOutcomeLabels[i])}});
  }
  fetch_bytes = &prometheus::BuildCounter()
                     .Name("zkfleet_worker_fetch_bytes_total")
                     .Help("Witness bytes fetched by reference into this worker's memory and checked against "
                           "their SHA-256")
                     .Register(registry)
                     .Add({});
  fetch_retries = &prometheus::BuildCounter()
                       .Name("zkfleet_worker_fetch_retries_total")
                       .Help("Transient errors (network, 5xx, truncated or too slow transfers) retried with "
                             "back-off while fetching witnesses")
                       .Register(registry)
                       .Add({});
  auto& generations_family = prometheus::BuildCounter()
                                 .Name("zkfleet_worker_generations_total")
                                 .Help("Witnesses this worker computed from inputs, by outcome (ok; bad_input, "
                                       "circuit_error, limit: the job's fault; cancelled; internal: this host's)")
                                 .Register(registry);
  for (size_t i = 0; i < kGenerationOutcomeLabels.size(); ++i) {
    generations[i] = &generations_family.Add({{"outcome", std::string(kGenerationOutcomeLabels[i])}});
  }
  auto& tiers_family = prometheus::BuildCounter()
                           .Name("zkfleet_worker_generation_tier_total")
                           .Help("Witnesses this worker computed from inputs, by the program that computed them "
                                 "(native: the compiled generator; node: the wasm under Node.js, at a circuit's "
                                 "first sight, while the native one is built)")
                           .Register(registry);
  for (size_t i = 0; i < kGenerationTierLabels.size(); ++i) {
    generation_tiers[i] = &tiers_family.Add({{"tier", std::string(kGenerationTierLabels[i])}});
  }
  generated_bytes = &prometheus::BuildCounter()
                         .Name("zkfleet_worker_generated_bytes_total")
                         .Help("Witness bytes (.wtns) computed from inputs into this worker's memory")
                         .Register(registry)
                         .Add({});
  generation_seconds = &prometheus::BuildHistogram()
                            .Name("zkfleet_worker_generation_seconds")
                            .Help("Seconds each witness generation took (input parse, child process, witness read)")
                            .Register(registry)
                            .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                                             1, 2.5, 5, 10, 30, 60, 300});
  generation_queue = &prometheus::BuildGauge()
                          .Name("zkfleet_worker_generation_queue")
                          .Help("Jobs from inputs waiting for a free witness generator (--witgen-threads)")
                          .Register(registry)
                          .Add({});
  fetch_seconds = &prometheus::BuildHistogram()
                       .Name("zkfleet_worker_fetch_seconds")
                       .Help("Seconds each witness fetch by reference took, retries included")
                       .Register(registry)
                       .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                                        1, 2.5, 5, 10, 30, 60, 300});

  auto& dropped = prometheus::BuildCounter()
                      .Name("zkfleet_messages_dropped_total")
                      .Help("Frames dropped unread: malformed, above --max-message-bytes, or another "
                            "protocol version")
                      .Register(registry);
  for (size_t i = 0; i < kDropReasonLabels.size(); ++i) {
    messages_dropped[i] = &dropped.Add({{"reason", std::string(kDropReasonLabels[i])}});
  }

  // Every mode from the start, so a dashboard can tell 0 from absent.
  auto& modes = prometheus::BuildGauge()
                    .Name("zkfleet_worker_pool_mode")
                    .Help("1 for how the worker's pinned pool is pinned (hugepage-registered, cuda-host-alloc, "
                          "mmap-locked, mmap-unlocked, none), 0 for the others")
                    .Register(registry);
  for (size_t i = 0; i < kPoolModeLabels.size(); ++i) {
    pool_mode[i] = &modes.Add({{"mode", std::string(kPoolModeLabels[i])}});
    pool_mode[i]->Set(kPoolModeLabels[i] == "none" ? 1 : 0);
  }

  prometheus::BuildGauge()
      .Name("zkfleet_worker_info")
      .Help("Always 1; the labels identify the worker process")
      .Register(registry)
      .Add({{"worker_id", identity.worker_id}, {"backend", identity.backend}, {"gpu", identity.gpu}})
      .Set(1);

  auto& up = prometheus::BuildGauge()
                 .Name("zkfleet_worker_device_up")
                 .Help("1 while the device is in the worker's set, 0 once it left it (fatal device error or "
                       "repeated engine faults on it)")
                 .Register(registry);
  auto& proofs = prometheus::BuildCounter()
                     .Name("zkfleet_worker_device_proofs_total")
                     .Help("Proofs this worker completed and sent, by the device that proved them")
                     .Register(registry);
  auto& key_bytes = prometheus::BuildGauge()
                        .Name("zkfleet_worker_device_key_bytes")
                        .Help("Bytes of proving keys resident on each device (its own copy of every key)")
                        .Register(registry);
  for (const std::string& label : device_labels_) {
    Device device;
    device.up = &up.Add({{"device", label}});
    device.up->Set(1);
    device.proofs = &proofs.Add({{"device", label}});
    device.key_bytes = &key_bytes.Add({{"device", label}});
    devices.push_back(device);
  }
  auto& by_state = prometheus::BuildGauge()
                       .Name("zkfleet_worker_devices")
                       .Help("Devices of this worker by state: ok (proving) or faulted (left the set after a fatal "
                             "device error or repeated engine faults on it)")
                       .Register(registry);
  devices_ok = &by_state.Add({{"state", "ok"}});
  devices_faulted = &by_state.Add({{"state", "faulted"}});
  devices_ok->Set(static_cast<double>(device_labels_.size()));
  devices_faulted->Set(0);

  for (const std::string& circuit : circuits) ForCircuit(circuit);
  server_.AddCollectable(clocks_);
  SetState(proto::WORKER_STATE_STARTING);
}

WorkerMetrics::~WorkerMetrics() = default;

WorkerMetrics::Circuit& WorkerMetrics::ForCircuit(const std::string& circuit_id) {
  std::lock_guard<std::mutex> lock(circuits_mutex_);
  return BoundedCircuitSeries(circuits_, max_circuits_, circuit_id, [this](Circuit& circuit, const std::string& label) {
    for (size_t i = 0; i < kOutcomeLabels.size(); ++i) {
      circuit.jobs[i] = &jobs_family_.Add({{"circuit", label}, {"outcome", std::string(kOutcomeLabels[i])}});
    }
    for (size_t i = 0; i < kPhaseLabels.size(); ++i) {
      circuit.phase_seconds[i] =
          &phase_family_.Add({{"circuit", label}, {"phase", std::string(kPhaseLabels[i])}}, DurationBuckets());
    }
    circuit.verification_failures.clear();
    for (const std::string& device : device_labels_) {
      circuit.verification_failures.push_back(
          &verify_failures_family_.Add({{"backend", backend_}, {"device", device}, {"circuit", label}}));
    }
    circuit.verify_seconds = &verify_family_.Add({{"circuit", label}}, VerifyBuckets());
    circuit.key_load_bytes = &key_load_family_.Add({{"circuit", label}});
  });
}

void WorkerMetrics::SetState(proto::WorkerState new_state) {
  int index = WorkerStateIndex(new_state);
  for (size_t i = 0; i < state.size(); ++i) state[i]->Set(static_cast<int>(i) == index ? 1 : 0);

  switch (new_state) {
    case proto::WORKER_STATE_WAITING_FOR_MEMORY: clocks_->memory_wait.Start(); break;
    case proto::WORKER_STATE_DRAINING:
    case proto::WORKER_STATE_RELEASING:
      clocks_->memory_wait.Stop();
      clocks_->drain.Start();  // keeps running from DRAINING into RELEASING
      break;
    case proto::WORKER_STATE_GONE:
      clocks_->memory_wait.Stop();
      clocks_->drain.Stop();
      break;
    default: clocks_->memory_wait.Stop(); break;
  }
  {
    std::lock_guard lock(readiness_mutex_);
    state_ = new_state;
  }
  PublishReadiness();
}

void WorkerMetrics::PublishReadiness() {
  std::lock_guard lock(readiness_mutex_);
  const bool ready = state_ == proto::WORKER_STATE_READY;
  std::string reason = ready ? "READY" : WorkerStateLabel(state_);
  if (!ready && !load_detail_.empty() &&
      (state_ == proto::WORKER_STATE_STARTING || state_ == proto::WORKER_STATE_LOADING)) {
    reason += ": " + load_detail_;
  }
  server_.SetReadiness(ready, reason);
}

void WorkerMetrics::SetMemory(const proto::MemoryStatus& memory) {
  pinned_pool_bytes.Set(static_cast<double>(memory.pool_bytes()));
  pinned_pool_in_use_bytes.Set(static_cast<double>(memory.pool_in_use_bytes()));
  memory_to_release_bytes.Set(static_cast<double>(memory.bytes_to_release()));
  pool_target_bytes.Set(static_cast<double>(memory.pool_target_bytes()));
  const std::string_view mode = memory.pool_mode().empty() ? std::string_view("none") : memory.pool_mode();
  for (size_t i = 0; i < kPoolModeLabels.size(); ++i) pool_mode[i]->Set(kPoolModeLabels[i] == mode ? 1 : 0);
}

void WorkerMetrics::JobEnded(const std::string& circuit_id, Outcome outcome) {
  ForCircuit(circuit_id).jobs[static_cast<size_t>(outcome)]->Increment();
}

void WorkerMetrics::SetKeyLoadBytes(const std::string& circuit_id, uint64_t bytes, uint64_t total_bytes) {
  ForCircuit(circuit_id).key_load_bytes->Set(static_cast<double>(bytes));
  if (total_bytes == 0) return;
  char detail[160];
  std::snprintf(detail, sizeof detail, "circuit %s %.1f of %.1f GB (%.0f%%)", circuit_id.c_str(),
                static_cast<double>(bytes) / 1e9, static_cast<double>(total_bytes) / 1e9,
                100.0 * static_cast<double>(std::min(bytes, total_bytes)) / static_cast<double>(total_bytes));
  {
    std::lock_guard lock(readiness_mutex_);
    load_detail_ = detail;
  }
  PublishReadiness();
}

void WorkerMetrics::ObserveVerify(const std::string& circuit_id, double seconds) {
  ForCircuit(circuit_id).verify_seconds->Observe(seconds);
}

void WorkerMetrics::ProofVerificationFailed(const std::string& circuit_id, size_t device) {
  Circuit& circuit = ForCircuit(circuit_id);
  circuit.verification_failures.at(device < circuit.verification_failures.size() ? device : 0)->Increment();
}

void WorkerMetrics::SetDeviceUp(size_t device, bool up) {
  if (device >= devices.size()) return;
  std::lock_guard<std::mutex> lock(devices_mutex_);
  device_up_[device] = up;
  devices[device].up->Set(up ? 1 : 0);
  const auto ok = static_cast<double>(std::count(device_up_.begin(), device_up_.end(), true));
  devices_ok->Set(ok);
  devices_faulted->Set(static_cast<double>(device_up_.size()) - ok);
}

void WorkerMetrics::DeviceProofDone(size_t device) {
  if (device < devices.size()) devices[device].proofs->Increment();
}

void WorkerMetrics::SetDeviceKeyBytes(size_t device, uint64_t bytes) {
  if (device < devices.size()) devices[device].key_bytes->Set(static_cast<double>(bytes));
}

void WorkerMetrics::ObservePhases(const std::string& circuit_id, const proto::PhaseTimings& timings) {
  Circuit& circuit = ForCircuit(circuit_id);
  auto observe = [&](Phase phase, double seconds, bool skip_zero) {
    if (skip_zero && seconds <= 0) return;
    circuit.phase_seconds[static_cast<size_t>(phase)]->Observe(seconds);
  };
  observe(Phase::kQueueWait, timings.queue_wait_s(), false);
  observe(Phase::kWitnessTransfer, timings.witness_transfer_s(), true);
  observe(Phase::kBuildAbc, timings.build_abc_s(), true);
  observe(Phase::kNtt, timings.ntt_s(), true);
  observe(Phase::kMsm, timings.msm_s(), true);
  observe(Phase::kProveTotal, timings.prove_total_s(), false);
}

void WorkerMetrics::FetchEnded(std::string_view outcome, uint64_t bytes, unsigned retries, double seconds) {
  for (size_t i = 0; i < kFetchOutcomeLabels.size(); ++i) {
    if (kFetchOutcomeLabels[i] == outcome) fetches[i]->Increment();
  }
  if (bytes > 0) fetch_bytes->Increment(static_cast<double>(bytes));
  if (retries > 0) fetch_retries->Increment(retries);
  fetch_seconds->Observe(seconds);
}

void WorkerMetrics::GenerationEnded(std::string_view outcome, std::string_view tier, double seconds, uint64_t bytes) {
  for (size_t i = 0; i < kGenerationOutcomeLabels.size(); ++i) {
    if (kGenerationOutcomeLabels[i] == outcome) generations[i]->Increment();
  }
  for (size_t i = 0; i < kGenerationTierLabels.size(); ++i) {
    if (kGenerationTierLabels[i] == tier) generation_tiers[i]->Increment();
  }
  if (bytes > 0) generated_bytes->Increment(static_cast<double>(bytes));
  generation_seconds->Observe(seconds);
}

void WorkerMetrics::SetGenerationQueue(size_t waiting) { generation_queue->Set(static_cast<double>(waiting)); }

}  // namespace zkfleet::metrics
