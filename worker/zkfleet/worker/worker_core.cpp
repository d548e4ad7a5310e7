// The worker's state, messages, results and credit (see worker_core.hpp).
#include "zkfleet/worker/worker_core.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <utility>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/wtns.hpp"
#include "zkfleet/wire/local_paths.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/unix_time.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::worker {
namespace {

using wire::Seconds;

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// How often the drain checks its deadline while items still run.
constexpr auto kDrainCheck = std::chrono::milliseconds(50);

}  // namespace

std::string DefaultWorkerId() { return HostName() + "-" + std::to_string(getpid()); }

double DrainBudgetSeconds(std::chrono::milliseconds drain_timeout, uint64_t pool_bytes, PinnedPool::Kind kind) {
  // Release seconds per 96 GiB, measured (docs/operations.md); mmap'ed memory
  // (CPU workers) frees like the huge-page kind.
  const double per_96_gib = kind == PinnedPool::Kind::kCudaHost ? 14.0 : 2.0;
  const double per_byte = per_96_gib / static_cast<double>(96ull << 30);
  return Seconds(drain_timeout) + 2 * per_byte * static_cast<double>(pool_bytes);
}

WorkerCore::WorkerCore(WorkerOptions options, std::unique_ptr<CircuitSet> circuits,
                       std::unique_ptr<MemorySource> memory, metrics::WorkerMetrics* metrics, Clock::time_point now)
    : options_(std::move(options)),
      circuits_(std::move(circuits)),
      devices_(circuits_->devices(), options_.fault_threshold, options_.fault_window),
      memory_(std::move(memory)),
      metrics_(metrics),
      // --capacity is per device: items held at once scale with the devices.
      ledger_(options_.capacity * static_cast<uint32_t>(circuits_->device_count())),
      now_(now),
      state_since_(now) {
  if (options_.worker_id.empty()) options_.worker_id = DefaultWorkerId();
  pool_.set_observer([this](uint64_t bytes) { memory_->OnPoolChanged(options_.worker_id, bytes); });
  pipeline_ = std::make_unique<ProvingPipeline>(options_, *circuits_, *memory_, pool_, queue_, mailbox_);
  if (!options_.fetch.allow.empty()) {
    fetch_stage_ = std::make_unique<FetchStage>(options_.fetch, options_.fetch_threads, mailbox_);
  }
  circuits_->set_generator_options(options_.witgen);  // also for circuits added at run time
  if (!circuits_->generator_ids().empty()) {
    generate_stage_ = std::make_unique<GenerateStage>(*circuits_, options_.worker_id, options_.witgen_threads, mailbox_);
  }
}

WorkerCore::~WorkerCore() { StopPipeline(); }

void WorkerCore::StartPipeline() { pipeline_->Start(); }

void WorkerCore::StopPipeline() {
  if (pipeline_stopped_) return;
  pipeline_stopped_ = true;
  // A circuit change still loading: it adopts nothing now (a lane may be
  // inside a proof the drain gave up on), and is waited for.
  circuits_->StopChanges();
  if (reload_thread_.joinable()) reload_thread_.join();
  if (fetch_stage_) fetch_stage_->Stop();
  if (generate_stage_) generate_stage_->Stop();
  if (pipeline_abandoned_) {
    pipeline_->Abandon();
  } else {
    queue_.Close();
    pipeline_->Join();
  }
}

const proto::Lease* WorkerCore::lease(const wire::ItemRef& item) const {
  auto it = held_.find(item);
  return it == held_.end() ? nullptr : &it->second.lease;
}

// ------------------------------------------------------------------ state

bool WorkerCore::Transition(wire::WorkerEvent event, const std::string& why) {
  std::optional<proto::WorkerState> next = wire::NextState(state_, event);
  if (!next) {
    spdlog::error("state machine: event '{}' is not allowed in state {} ({}); ignored", wire::WorkerEventName(event),
                  wire::WorkerStateName(state_), why);
    return false;
  }
  spdlog::info("state {} -> {} (after {:.3f} s): {}", wire::WorkerStateName(state_), wire::WorkerStateName(*next),
               Seconds(now_ - state_since_), why);
  state_ = *next;
  state_since_ = now_;
  if (metrics_) metrics_->SetState(state_);  // also /ready and the drain / memory-wait clocks
  return true;
}

// ------------------------------------------------------------------ connection

void WorkerCore::OnConnected(bool reconnect, Clock::time_point now) {
  now_ = now;
  if (reconnect) {
    size_t dropped = queue_.TakeAllQueued().size() + CancelPreparations().size();
    if (dropped > 0) spdlog::warn("dropped {} queued items; the broker redelivers them", dropped);
    std::vector<wire::ItemRef> keep;
    for (const wire::WorkKey& running : queue_.running_keys()) {
      if (held_.count(running.ref())) keep.push_back(running.ref());
    }
    ledger_.Reset(keep);
    std::erase_if(held_,
                  [&](const auto& held) { return std::find(keep.begin(), keep.end(), held.first) == keep.end(); });
    started_unsent_.clear();
  }
  SendReady();
  if (reconnect) GrantCredit();
}

void WorkerCore::SendReady() {
  proto::Envelope envelope;
  auto* ready = envelope.mutable_ready();
  ready->set_worker_id(options_.worker_id);
  ready->set_host(HostName());
  ready->set_backend(circuits_->backend_name());
  for (const CircuitSpec& spec : circuits_->specs()) {
    if (leaving_.count(spec.id)) continue;  // a reload takes it away or replaces it
    ready->add_circuits(spec.id);
    ready->add_circuit_kinds(spec.kind);
    if (!spec.wasm_path.empty()) ready->add_generates(spec.id);
  }
  for (const std::string& prefix : options_.fetch.allow) ready->add_fetch_prefixes(prefix);
  if (ready->generates_size() > 0) {
    ready->set_generation_wall_s(static_cast<uint32_t>(std::ceil(options_.witgen.limits.wall_seconds)));
    ready->set_generation_slots(std::max(1u, options_.witgen_threads));
  }
  ready->set_capacity(ledger_.capacity());
  ready->set_state(state_);
  *ready->mutable_memory() = Memory();
  for (const wire::ItemRef& ref : ledger_.held_items()) ToWire(ref, ready->add_in_progress());
  if (metrics_) metrics_->SetMemory(ready->memory());
  Send(std::move(envelope));
}

void WorkerCore::SendHeartbeat() {
  proto::Envelope envelope;
  auto* beat = envelope.mutable_heartbeat();
  beat->set_state(state_);
  beat->set_queue_depth(static_cast<uint32_t>(queue_.queued()));
  beat->set_in_flight(static_cast<uint32_t>(queue_.running()));
  *beat->mutable_memory() = Memory();
  if (metrics_) metrics_->SetMemory(beat->memory());
  Send(std::move(envelope));
}

proto::MemoryStatus WorkerCore::Memory() const {
  proto::MemoryStatus memory;
  PinnedPool::Stats pool = pool_.stats();
  memory.set_pool_bytes(pool.pool_bytes);
  memory.set_pool_in_use_bytes(pool.in_use_bytes);
  memory.set_alloc_calls(pool.alloc_calls);
  memory.set_budget_bytes(pipeline_->pool_budget());
  memory.set_pool_mode(pool.mode);
  memory.set_pool_target_bytes(pool.target_bytes);
  memory.set_available_bytes(pipeline_->last_available());
  if (state_ == proto::WORKER_STATE_RELEASING) {
    memory.set_bytes_to_release(pool.pool_bytes + circuits_->resident_bytes());
  }
  return memory;
}

void WorkerCore::GrantCredit() {
  if (state_ != proto::WORKER_STATE_READY) return;
  uint32_t batch = std::max<uint32_t>(1, ledger_.capacity() / 4);
  uint32_t credits = ledger_.TakeGrant(batch);
  if (credits == 0) return;
  proto::Envelope envelope;
  envelope.mutable_credit()->set_credits(credits);
  Send(std::move(envelope));
}

std::string WorkerCore::Forget(const wire::ItemRef& item) {
  auto it = held_.find(item);
  if (it == held_.end()) return {};
  std::string circuit = std::move(it->second.circuit);
  held_.erase(it);
  return circuit;
}

void WorkerCore::ToWire(const wire::ItemRef& ref, proto::WorkItemRef* wire) const {
  wire::ToProto(ref, wire);
  if (auto it = held_.find(ref); it != held_.end()) *wire->mutable_lease() = it->second.lease;
}

void WorkerCore::FlushStarted(Clock::time_point now) {
  if (started_unsent_.empty() || now < started_hold_until_) return;
  proto::Envelope envelope;
  for (const wire::ItemRef& ref : started_unsent_) {
    if (held_.count(ref)) ToWire(ref, envelope.mutable_started()->add_items());
  }
  started_unsent_.clear();
  if (envelope.has_started()) Send(std::move(envelope));
}

WorkerCore::Clock::time_point WorkerCore::Tick(Clock::time_point now) {
  now_ = now;
  FlushStarted(now);
  if (state_ == proto::WORKER_STATE_DRAINING) CheckDrain(now);
  const bool releasing_pool = state_ == proto::WORKER_STATE_RELEASING && release_step_ == ReleaseStep::kPool;
  if (releasing_pool) ReleasePoolChunk();
  Clock::time_point next = Clock::time_point::max();
  if (!started_unsent_.empty()) next = std::min(next, started_hold_until_);
  if (state_ == proto::WORKER_STATE_DRAINING) next = std::min(next, now + kDrainCheck);
  // The pool goes one chunk per call, without waiting in between (messages
  // are still read between calls).
  if (state_ == proto::WORKER_STATE_RELEASING && release_step_ == ReleaseStep::kPool) {
    next = std::min(next, now + options_.test_release_pause);
  }
  return next;
}

// ------------------------------------------------------------------ messages

void WorkerCore::OnBrokerMessage(proto::Envelope& message, const WitnessChunks& witness, Clock::time_point now) {
  now_ = now;
  switch (message.body_case()) {
    case proto::Envelope::kJob: OnJob(*message.mutable_job(), witness, now); break;
    case proto::Envelope::kHeartbeat: break;
    case proto::Envelope::kDrain: BeginDrain("broker drain command (" + message.drain().reason() + ")", now); break;
    default:
      spdlog::warn("dropped a message of type {} that brokers do not send", static_cast<int>(message.body_case()));
      if (metrics_) metrics_->MessageDropped(metrics::DropReason::kMalformed);
  }
}

void WorkerCore::OnJob(proto::Job& job, const WitnessChunks& witness, Clock::time_point now) {
  wire::ItemRef ref = wire::FromProto(job.item());
  if (!ledger_.OnJob(ref)) {
    spdlog::warn("broker sent job_seq={} partition={} without credit or twice", ref.job_seq, ref.partition);
  }
  // The newest lease replaces any older one; the queued job goes without it.
  held_[ref] = {job.circuit_id(), std::move(*job.mutable_item()->mutable_lease())};
  job.mutable_item()->clear_lease();
  if (state_ != proto::WORKER_STATE_READY) {
    // Sent before the broker saw us drain: straight back, unstarted.
    HandBack({ref}, {}, "worker is " + wire::WorkerStateName(state_));
    return;
  }
  if (HandBackIfLeaving(ref, job.circuit_id())) return;  // sent before the broker saw our READY without it
  proto::Priority priority = proto::Priority_IsValid(job.priority()) ? job.priority() : proto::PRIORITY_NORMAL;
  QueuedItem item;
  item.key = {priority, ref.job_seq, ref.partition};
  item.job = std::move(job);
  item.arrived = now;
  if (item.job.has_witness_ref()) return PrepareWitness(std::move(item), events::WitnessSource::kFetched);
  if (!item.job.input_json().empty()) return PrepareWitness(std::move(item), events::WitnessSource::kGenerated);
  // The receive: from the session's frames into the pinned pool, the one
  // copy; the engine checks it there and the device reads it from there.
  size_t size = 0;
  for (const auto& chunk : witness) size += chunk.size();
  if (!AllocateWitness(item, size)) throw std::bad_alloc();
  uint8_t* into = item.writable_witness().data();
  for (const auto& chunk : witness) {
    if (!chunk.empty()) std::memcpy(into, chunk.data(), chunk.size());
    into += chunk.size();
  }
  item.circuit_version = circuits_->Version(item.job.circuit_id());
  if (!queue_.Push(std::move(item))) {
    // Its lease (held_, above) is now the broker's newest: the result of the
    // run already here answers it (On(events::ProofFinished)).
    spdlog::warn("job_seq={} partition={} is already queued or running here; the run continues under lease {}",
                 ref.job_seq, ref.partition, held_[ref].lease.ShortDebugString());
  }
}

bool WorkerCore::AllocateWitness(QueuedItem& item, size_t size) {
  if (PoolBuffer buffer = pool_.Acquire(size)) {
    item.pooled_witness = std::move(buffer);
    return true;
  }
  item.heap_witness.reset(new (std::nothrow) uint8_t[size]);
  if (!item.heap_witness) return false;
  item.heap_witness_size = size;
  return true;
}

void WorkerCore::PrepareWitness(QueuedItem item, events::WitnessSource source) {
  const wire::ItemRef ref = item.key.ref();
  const bool fetched = source == events::WitnessSource::kFetched;
  if (preparing_.count(ref)) {
    // The broker leased it again (a restarted broker that never saw it
    // start): the preparation under way serves it, answered under the newest lease.
    spdlog::info("job_seq={} partition={}: its witness is already being {} here; it continues under lease {}",
                 ref.job_seq, ref.partition, fetched ? "fetched" : "computed", held_[ref].lease.ShortDebugString());
    return;
  }
  // The witness's size, or why this worker cannot prepare it.
  size_t bytes = 0;
  if (fetched) {
    const proto::WitnessRef& witness = item.job.witness_ref();
    if (!fetch_stage_) {
      // Another worker may be allowed to fetch it.
      return FailItem(ref, item.job,
                      "worker " + options_.worker_id + " fetches no witnesses by reference (it runs without "
                      "--fetch-allow); " + wire::RedactUrl(witness.url()) + " was not fetched",
                      /*retryable=*/true);
    }
    if (auto why = wire::WitnessRefProblem(witness, options_.max_fetch_bytes)) {
      return FailItem(ref, item.job, *why + " (nothing was fetched)", /*retryable=*/false);
    }
    bytes = witness.size();
  } else {
    auto generator = circuits_->Generator(item.job.circuit_id());
    if (!generator || !generate_stage_) {
      // The broker routes inputs only to workers announcing the circuit in
      // `generates`; another worker may have its generator.
      return FailItem(ref, item.job,
                      "worker " + options_.worker_id + " has no witness generator for circuit " +
                          item.job.circuit_id(),
                      /*retryable=*/true);
    }
    bytes = generator->wtns_bytes();
  }
  if (!AllocateWitness(item, bytes)) {
    return FailItem(ref, item.job,
                    "no memory for its " + std::to_string(bytes) + "-byte witness on worker " + options_.worker_id,
                    /*retryable=*/true);
  }
  // Preparing the witness is work on the item: the broker's start deadline
  // is for workers that sit on a lease, and a worker that dies now has spent
  // an attempt.
  started_unsent_.push_back(ref);
  started_when_prepared_.insert(ref);
  auto submitted = std::make_unique<QueuedItem>(std::move(item));
  preparing_[ref] = fetched ? fetch_stage_->Submit(std::move(submitted)) : generate_stage_->Submit(std::move(submitted));
  if (!fetched && metrics_) metrics_->SetGenerationQueue(generate_stage_->waiting());
}

void WorkerCore::On(events::WitnessPrepared& event) {
  const wire::ItemRef ref = event.ref;
  const bool fetched = event.source == events::WitnessSource::kFetched;
  if (metrics_) {
    if (fetched) {
      metrics_->FetchEnded(event.status, event.bytes, event.retries, event.seconds);
    } else {
      metrics_->GenerationEnded(event.status, event.tier, event.seconds, event.bytes);
      if (generate_stage_) metrics_->SetGenerationQueue(generate_stage_->waiting());
    }
  }
  // A cancelled preparation (handed back or dropped already), or one a newer
  // submission of the same item replaced: its event changes nothing.
  auto live = preparing_.find(ref);
  if (live == preparing_.end() || live->second != event.generation || !event.item) return;
  preparing_.erase(live);
  QueuedItem& item = *event.item;
  if (event.verdict != events::WitnessVerdict::kReady) {
    return FailItem(ref, item.job, event.why, /*retryable=*/event.verdict == events::WitnessVerdict::kRetryable);
  }
  if (state_ != proto::WORKER_STATE_READY) {
    started_when_prepared_.erase(ref);
    return HandBack({ref}, {}, "worker is " + wire::WorkerStateName(state_));
  }
  if (HandBackIfLeaving(ref, item.job.circuit_id())) return;
  spdlog::debug("job_seq={} partition={}: {} witness bytes {} in {:.3f} s", ref.job_seq, ref.partition, event.bytes,
                events::WitnessSourceName(event.source), event.seconds);
  if (!fetched) {
    if (item.job.signals_only()) return AnswerSignals(ref, item);
    item.arrived = now_;  // its queue wait starts now
  }
  item.circuit_version = circuits_->Version(item.job.circuit_id());
  if (!queue_.Push(std::move(item))) {
    started_when_prepared_.erase(ref);
    spdlog::warn("job_seq={} partition={} is already queued or running here; the run continues under lease {}",
                 ref.job_seq, ref.partition, held_[ref].lease.ShortDebugString());
  }
}

void WorkerCore::AnswerSignals(const wire::ItemRef& ref, const QueuedItem& item) {
  // The broker checks another worker's proof with these: the witness's
  // public signals, read as the prover would read them; no proof.
  const std::optional<uint32_t> n_public = circuits_->PublicSignalCount(item.job.circuit_id());
  if (!n_public) {
    return FailItem(ref, item.job, "worker " + options_.worker_id + " cannot read circuit " + item.job.circuit_id() +
                                       "'s public signals", /*retryable=*/true);
  }
  const std::span<const uint8_t> whole = item.witness();
  std::string why;
  auto signals = engine::PublicSignalsOfWtns({&whole, 1}, *n_public, &why);
  if (!signals) return FailItem(ref, item.job, "its computed witness is unreadable: " + why, /*retryable=*/true);
  std::erase(started_unsent_, ref);  // its RESULT says it started
  started_when_prepared_.erase(ref);
  if (!ledger_.Release(ref)) return;
  proto::Envelope envelope;
  auto* result = envelope.mutable_result();
  ToWire(ref, result->mutable_item());
  result->set_attempt(item.job.attempt());
  result->set_circuit_id(item.job.circuit_id());
  result->set_request_id(item.job.request_id());
  result->set_ok(true);
  result->set_public_json(engine::PublicJson(*signals));
  spdlog::info("job_seq={} partition={}: public signals computed for the broker's check", ref.job_seq, ref.partition);
  Forget(ref);
  Send(std::move(envelope));
  GrantCredit();
}

std::vector<wire::ItemRef> WorkerCore::CancelPreparations() {
  std::vector<wire::ItemRef> cancelled;
  for (const auto& [ref, generation] : preparing_) cancelled.push_back(ref);
  for (const wire::ItemRef& ref : cancelled) {
    if (fetch_stage_) fetch_stage_->Cancel(ref);
    if (generate_stage_) generate_stage_->Cancel(ref);
    started_when_prepared_.erase(ref);
    std::erase(started_unsent_, ref);
  }
  preparing_.clear();
  return cancelled;
}

void WorkerCore::FailItem(const wire::ItemRef& ref, const proto::Job& job, const std::string& why, bool retryable) {
  std::erase(started_unsent_, ref);  // its RESULT says it started
  started_when_prepared_.erase(ref);
  if (!ledger_.Release(ref)) return;
  spdlog::warn("job_seq={} partition={} failed here{}: {}", ref.job_seq, ref.partition,
               retryable ? " (another worker may take it)" : "", why);
  proto::Envelope envelope;
  auto* result = envelope.mutable_result();
  ToWire(ref, result->mutable_item());
  result->set_attempt(job.attempt());
  result->set_circuit_id(job.circuit_id());
  result->set_request_id(job.request_id());
  result->set_ok(false);
  result->set_retryable(retryable);
  result->set_error(wire::WithoutLocalPaths(why));  // the client reads it: this host's paths stay here
  const std::string circuit = Forget(ref);
  if (metrics_) metrics_->JobEnded(circuit, retryable ? metrics::Outcome::kError : metrics::Outcome::kFailed);
  Send(std::move(envelope));
  GrantCredit();
}

void WorkerCore::OnUnreadableJob(const proto::Job& job, const std::string& why) {
  spdlog::warn("dropped a JOB: its witness frames did not arrive whole: {}", why);
  if (metrics_) metrics_->MessageDropped(metrics::DropReason::kMalformed);
  const wire::ItemRef ref = wire::FromProto(job.item());
  if (!ledger_.OnJob(ref)) return;  // not ours to answer (no credit, or a duplicate)
  (void)ledger_.Release(ref);
  proto::Envelope envelope;
  auto* result = envelope.mutable_result();
  *result->mutable_item() = job.item();  // under the lease it came with
  result->set_attempt(job.attempt());
  result->set_circuit_id(job.circuit_id());
  result->set_request_id(job.request_id());
  result->set_ok(false);
  result->set_retryable(false);
  result->set_error("its witness frames did not arrive whole: " + why);
  Send(std::move(envelope));
  GrantCredit();
}

// ------------------------------------------------------------------ pipeline events

void WorkerCore::OnPipelineEvent(PipelineEvent& event, Clock::time_point now) {
  now_ = now;
  if (finished()) return;
  std::visit([this](auto& e) { On(e); }, event);
}

void WorkerCore::On(events::ProofStarted& event) {
  if (started_when_prepared_.erase(event.ref)) return;  // announced when its witness's preparation began
  if (options_.test_hold_started.count() > 0) {
    // The batch goes out a hold after its first item started.
    if (started_unsent_.empty()) started_hold_until_ = now_ + options_.test_hold_started;
    spdlog::warn("TEST ONLY (--test-hold-started-ms): STARTED of job_seq={} partition={} withheld", event.ref.job_seq,
                 event.ref.partition);
  }
  started_unsent_.push_back(event.ref);
}

void WorkerCore::On(events::MemoryGate& event) {
  // Startup progress; a drain may have overtaken it.
  if (state_ == proto::WORKER_STATE_STARTING || state_ == proto::WORKER_STATE_WAITING_FOR_MEMORY) {
    if (Transition(event.verdict, "memory gate")) SendHeartbeat();
  }
}

void WorkerCore::On(events::KeysLoaded&) {
  if (metrics_) {
    for (size_t d = 0; d < devices_.size(); ++d) metrics_->SetDeviceKeyBytes(d, circuits_->resident_bytes(d));
  }
  if (state_ == proto::WORKER_STATE_LOADING && Transition(wire::WorkerEvent::kLoaded, "proving keys resident")) {
    SendHeartbeat();  // the broker may dispatch from now on
    GrantCredit();
  }
}

void WorkerCore::On(events::StartFailed& event) {
  spdlog::error("cannot start: {}", event.why);
  proto::Envelope envelope;
  envelope.mutable_disconnect()->set_reason("failed to load circuits: " + event.why);
  Send(std::move(envelope));
  Transition(wire::WorkerEvent::kStartFailed, event.why);
  exit_code_ = 1;
}

void WorkerCore::On(events::DeviceReleased& event) {
  const auto device = static_cast<size_t>(event.device);
  if (metrics_) metrics_->SetDeviceKeyBytes(device, 0);
  if (devices_.size() > 1) {
    spdlog::info("device {}: its lanes stopped, released {} bytes of its proving keys", devices_.device(device).label,
                 event.bytes);
  }
}

void WorkerCore::On(events::KeysReleased& event) {
  if (devices_.size() > 1) {
    spdlog::info("every lane has stopped; the proving keys of every device are released");
  } else {
    spdlog::info("released {} bytes of proving keys", event.bytes);
  }
  release_step_ = ReleaseStep::kPool;  // Tick now frees the pool chunk by chunk
}

void WorkerCore::On(events::ProofFinished& event) {
  const wire::ItemRef ref = event.ref;
  const auto device = static_cast<size_t>(event.device);
  const std::string circuit = event.result.circuit_id();
  // Its RESULT says it started; no separate STARTED needed.
  std::erase(started_unsent_, ref);
  started_when_prepared_.erase(ref);
  if (!ledger_.Release(ref)) {
    spdlog::info("result of job_seq={} partition={} discarded: no longer held (reconnect or drain abort)", ref.job_seq,
                 ref.partition);
  } else {
    proto::Envelope envelope;
    *envelope.mutable_result() = std::move(event.result);
    // Under the newest lease the broker gave us for this item: a restarted
    // broker that never saw it start leases it again, the worker keeps the
    // run it has (OnJob: a duplicate) and must answer the new lease, or the
    // broker drops the result as stale and the job waits forever.
    ToWire(ref, envelope.mutable_result()->mutable_item());
    Forget(ref);
    if (metrics_) {
      const proto::Result& result = envelope.result();
      if (result.ok()) {
        metrics_->ObservePhases(circuit, result.timings());
        metrics_->JobEnded(circuit, metrics::Outcome::kSucceeded);
        metrics_->DeviceProofDone(device);
      } else {
        metrics_->JobEnded(circuit, result.retryable() ? metrics::Outcome::kError : metrics::Outcome::kFailed);
      }
    }
    Send(std::move(envelope));
    GrantCredit();
  }
  // After the result: its (valid) proof is out before a fault can turn the
  // worker FAULTED, which makes the broker take back what we still hold.
  if (metrics_ && event.verify_s > 0) metrics_->ObserveVerify(circuit, event.verify_s);
  if (!event.engine_fault.empty()) {
    OnEngineFault(circuit, device,
                  "job_seq=" + std::to_string(ref.job_seq) + " partition=" + std::to_string(ref.partition) + ": " +
                      event.engine_fault,
                  now_);
  }
  if (event.device_lost) RetireDevice(device, "fatal device error: " + event.local_error, /*lost=*/true);
}

void WorkerCore::HandBack(const std::vector<wire::ItemRef>& unstarted, const std::vector<wire::ItemRef>& aborted,
                          const std::string& reason) {
  if (unstarted.empty() && aborted.empty()) return;
  proto::Envelope envelope;
  auto* handback = envelope.mutable_handback();
  handback->set_reason(reason);
  auto give_back = [&](const wire::ItemRef& ref, metrics::Outcome outcome, proto::WorkItemRef* wire) {
    ToWire(ref, wire);
    std::string circuit = Forget(ref);
    if (metrics_) metrics_->JobEnded(circuit, outcome);
  };
  for (const auto& ref : unstarted) {
    if (ledger_.Release(ref)) give_back(ref, metrics::Outcome::kHandedBack, handback->add_items());
  }
  for (const auto& ref : aborted) {
    if (ledger_.Release(ref)) give_back(ref, metrics::Outcome::kAborted, handback->add_aborted());
  }
  spdlog::info("handing back {} unstarted and {} aborted items ({})", handback->items_size(),
               handback->aborted_size(), reason);
  Send(std::move(envelope));
}

// ------------------------------------------------------------------ circuits changed at run time

namespace {

bool SameCircuit(const CircuitSpec& a, const CircuitSpec& b) {
  return a.zkey_path == b.zkey_path && a.instant == b.instant && a.wasm_path == b.wasm_path && a.kind == b.kind;
}

std::string Names(const std::vector<std::string>& ids) { return ids.empty() ? "none" : fmt::format("{}", fmt::join(ids, ", ")); }

}  // namespace

void WorkerCore::ReloadCircuits(std::vector<CircuitSpec> specs, Clock::time_point now) {
  now_ = now;
  if (reload_thread_.joinable()) {
    spdlog::warn("circuits not reloaded: the last change is still loading (send SIGHUP again once the log says it is "
                 "done)");
    return;
  }
  if (state_ != proto::WORKER_STATE_READY) {
    spdlog::warn("circuits not reloaded: the worker is {} (a change is taken in READY only)",
                 wire::WorkerStateName(state_));
    return;
  }
  const std::vector<CircuitSpec> current = circuits_->specs();
  auto find = [](const std::vector<CircuitSpec>& in, const std::string& id) {
    return std::find_if(in.begin(), in.end(), [&id](const CircuitSpec& s) { return s.id == id; });
  };
  std::vector<CircuitSpec> load;
  std::set<std::string> drop, removed;
  std::vector<std::string> added, replaced;
  for (const CircuitSpec& spec : specs) {
    auto held = find(current, spec.id);
    if (held == current.end()) {
      load.push_back(spec);
      added.push_back(spec.id);
    } else if (!SameCircuit(*held, spec)) {
      load.push_back(spec);
      drop.insert(spec.id);
      replaced.push_back(spec.id);
    }
  }
  for (const CircuitSpec& spec : current) {
    if (find(specs, spec.id) == specs.end()) {
      drop.insert(spec.id);
      removed.insert(spec.id);
    }
  }
  if (load.empty() && drop.empty()) {
    spdlog::info("circuits reloaded: nothing changed");
    return;
  }
  spdlog::info("circuits change: adding {}, removing {}, reloading {}", Names(added),
               Names({removed.begin(), removed.end()}), Names(replaced));
  if (!drop.empty()) {
    // What goes takes no more work: its queued items go back now, and READY
    // leaves it out (the broker routes them elsewhere).
    leaving_ = drop;
    std::vector<wire::ItemRef> back;
    for (QueuedItem& item : queue_.TakeQueuedOf(drop)) back.push_back(item.key.ref());
    HandBack(back, {}, "its circuit is being removed or reloaded on this worker");
    Reannounce();
  }
  reload_adds_ = !load.empty();
  reload_thread_ = std::thread([this, load = std::move(load), drop, removed] {
    events::CircuitsChanged done;
    std::unique_ptr<CircuitSet> more;
    if (!load.empty()) {
      try {
        more = circuits_->Sibling(load);
        more->Load();
      } catch (const std::exception& e) {
        done.load_error = e.what();
        more.reset();
      }
    }
    // A replacement whose new file failed keeps the old one.
    circuits_->Adopt(std::move(more), done.load_error.empty() ? drop : removed);
    mailbox_.Post(std::move(done));
  });
}

void WorkerCore::On(events::CircuitsChanged& event) {
  if (reload_thread_.joinable()) reload_thread_.join();
  leaving_.clear();
  if (!event.load_error.empty()) {
    spdlog::error("circuits not added: {}; the removals were applied, the rest is as it was", event.load_error);
  }
  if (!generate_stage_ && !circuits_->generator_ids().empty()) {
    generate_stage_ = std::make_unique<GenerateStage>(*circuits_, options_.worker_id, options_.witgen_threads, mailbox_);
  }
  if (metrics_) {
    for (size_t d = 0; d < devices_.size(); ++d) metrics_->SetDeviceKeyBytes(d, circuits_->resident_bytes(d));
  }
  spdlog::info("circuits reloaded: the worker holds {} now", Names(circuits_->circuit_ids()));
  // Removals were announced when they began; additions (or a failed
  // replacement, its old key kept) are announced now.
  if (state_ == proto::WORKER_STATE_READY && std::exchange(reload_adds_, false)) Reannounce();
}

void WorkerCore::Reannounce() { SendReady(); }

bool WorkerCore::HandBackIfLeaving(const wire::ItemRef& ref, const std::string& circuit) {
  if (!leaving_.count(circuit)) return false;
  started_when_prepared_.erase(ref);
  HandBack({ref}, {}, "circuit " + circuit + " is being removed or reloaded on this worker");
  return true;
}

}  // namespace zkfleet::worker
