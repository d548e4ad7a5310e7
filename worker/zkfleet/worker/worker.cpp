#include "zkfleet/worker/worker.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/fleet/names.hpp"
#include "zkfleet/fleet/protocol.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::worker {
namespace {

// Dispatcher -> socket thread events: [kind][payload].
constexpr char kEventResult = 'R';    // payload: a serialized RESULT envelope
constexpr char kEventLoaded = 'L';    // circuits loaded
constexpr char kEventFailed = 'F';    // payload: why loading failed
constexpr char kEventReleased = 'X';  // payload: bytes of proving keys released, decimal
constexpr char kEventState = 'S';     // payload: a proto::WorkerState number (startup progress)
constexpr char kEventCheck = 'V';     // payload: circuit \n verify seconds \n engine fault ("" = none)
constexpr char kEventDeviceLost = 'D';  // payload: the fatal device error
constexpr char kEventStarted = 'B';   // payload: "<job_seq> <partition>", the dispatcher began it

// Linger on the final close, so DISCONNECT reaches the broker.
constexpr int kCloseLingerMs = 2000;
// Longest a send to the broker may block (see Send).
constexpr int kSendTimeoutMs = 1000;
// Longest wait between reconnect attempts while the broker stays silent.
constexpr auto kMaxSilence = std::chrono::seconds(32);

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

metrics::DropReason DropReasonOf(fleet::DecodeStatus status) {
  switch (status) {
    case fleet::DecodeStatus::kOversized: return metrics::DropReason::kOversized;
    case fleet::DecodeStatus::kWrongVersion: return metrics::DropReason::kVersion;
    default: return metrics::DropReason::kMalformed;
  }
}

}  // namespace

std::string DefaultWorkerId() { return HostName() + "-" + std::to_string(getpid()); }

double DrainBudgetSeconds(std::chrono::milliseconds drain_timeout, uint64_t pool_bytes) {
  constexpr double kReleaseSecondsPerByte = 14.0 / static_cast<double>(96ull << 30);
  return Seconds(drain_timeout) + 2 * kReleaseSecondsPerByte * static_cast<double>(pool_bytes);
}

Worker::Worker(zmq::context_t& context, WorkerOptions options, std::unique_ptr<CircuitSet> circuits,
               std::unique_ptr<MemorySource> memory, metrics::WorkerMetrics* metrics)
    : context_(context),
      options_(std::move(options)),
      circuits_(std::move(circuits)),
      memory_(std::move(memory)),
      metrics_(metrics),
      ledger_(options_.capacity),
      events_endpoint_("inproc://zkworker-events-" + std::to_string(reinterpret_cast<uintptr_t>(this))),
      events_(context, zmq::socket_type::pair) {
  if (options_.worker_id.empty()) options_.worker_id = DefaultWorkerId();
  state_since_ = Clock::now();
  pool_.set_observer([this](uint64_t bytes) { memory_->OnPoolChanged(options_.worker_id, bytes); });
}

Worker::~Worker() {
  if (dispatcher_.joinable()) {
    queue_.Close();
    dispatcher_.join();
  }
}

// ------------------------------------------------------------------ dispatcher thread

void Worker::DispatcherMain() {
  zmq::socket_t events(context_, zmq::socket_type::pair);
  events.connect(events_endpoint_);
  auto emit = [&](char kind, const std::string& payload) {
    events.send(zmq::buffer(&kind, 1), zmq::send_flags::sndmore);
    events.send(zmq::buffer(payload), zmq::send_flags::none);
  };
  if (!PassMemoryGate(emit)) {
    emit(kEventReleased, "0");
    return;
  }
  emit(kEventState, std::to_string(proto::WORKER_STATE_LOADING));
  try {
    circuits_->Load();
  } catch (const std::exception& e) {
    emit(kEventFailed, e.what());
    return;
  }
  emit(kEventLoaded, "");
  if (options_.dispatch_start_delay.count() > 0) {
    spdlog::info("dispatcher waits {} ms before the first item (--dispatch-start-delay-ms)",
                 options_.dispatch_start_delay.count());
    queue_.WaitForClose(Clock::now() + options_.dispatch_start_delay);
  }
  while (auto item = queue_.PopForRun()) {
    const fleet::WorkKey& key = item->key;
    auto started = Clock::now();
    if (item->witness) {  // out of the pool: the slot is free for the next item
      item->job.set_witness(item->witness.data(), item->witness.size());
      item->witness.Reset();
    }
    // One line per item, in processing order (the order test reads these).
    spdlog::info("processing priority={} job_seq={} partition={} attempt={} circuit={} queued_ms={:.1f}",
                 fleet::PriorityName(key.priority), key.job_seq, key.partition, item->job.attempt(),
                 item->job.circuit_id(), Seconds(started - item->arrived) * 1e3);
    ProveOutcome outcome;
    double deadline = item->job.deadline_unix_s();
    if (deadline > 0 && fleet::UnixNow() > deadline) {
      // The broker expires the job; proving it would be wasted work.
      outcome.ok = false;
      outcome.retryable = false;
      outcome.error = "its deadline passed before it was proved";
    } else {
      emit(kEventStarted, std::to_string(key.job_seq) + " " + std::to_string(key.partition));
      outcome = circuits_->Prove(item->job);
    }
    proto::Envelope envelope;
    auto* result = envelope.mutable_result();
    *result->mutable_item() = item->job.item();  // with its lease
    result->set_attempt(item->job.attempt());
    result->set_circuit_id(item->job.circuit_id());
    result->set_request_id(item->job.request_id());
    result->set_ok(outcome.ok);
    result->set_proof_json(std::move(outcome.proof_json));
    result->set_public_json(std::move(outcome.public_json));
    result->set_error(outcome.error);
    result->set_retryable(outcome.retryable);
    *result->mutable_timings() = outcome.timings;
    result->mutable_timings()->set_queue_wait_s(Seconds(started - item->arrived));
    if (outcome.ok) {
      spdlog::debug("proved job_seq={} partition={} in {:.3f} s", key.job_seq, key.partition,
                    outcome.timings.prove_total_s());
    } else {
      spdlog::warn("job_seq={} partition={} failed ({}): {}", key.job_seq, key.partition,
                   outcome.retryable ? "retryable" : "final", outcome.error);
    }
    emit(kEventResult, fleet::EncodeEnvelope(envelope));
    // After the result: its (valid) proof is out before a fault can turn the
    // worker FAULTED, which makes the broker take back what we still hold.
    if (outcome.verify_s > 0 || !outcome.engine_fault.empty()) {
      emit(kEventCheck, item->job.circuit_id() + "\n" + std::to_string(outcome.verify_s) + "\n" +
                            "job_seq=" + std::to_string(key.job_seq) + " partition=" + std::to_string(key.partition) +
                            ": " + outcome.engine_fault);
    }
    if (outcome.device_lost) emit(kEventDeviceLost, outcome.error);
    queue_.FinishRun();
  }
  emit(kEventReleased, std::to_string(circuits_->Release()));
}

bool Worker::PassMemoryGate(const std::function<void(char, const std::string&)>& emit) {
  MemoryReading reading = memory_->Read();
  last_available_ = reading.available_bytes;
  uint64_t budget = options_.pinned_budget.Resolve(reading.available_bytes);
  pool_budget_ = budget;
  if (budget == 0) {
    spdlog::info("no pinned pool (--pinned-budget 0); job buffers come from the heap");
    return true;
  }
  uint64_t need = budget + options_.memory_margin;
  auto started = Clock::now();
  auto deadline = started + options_.memory_wait_timeout;
  auto next_log = started;
  bool waiting = false;
  while (reading.available_bytes < need) {
    auto now = Clock::now();
    if (!waiting) {
      waiting = true;
      emit(kEventState, std::to_string(proto::WORKER_STATE_WAITING_FOR_MEMORY));
    }
    if (now >= next_log) {
      spdlog::info("waiting for memory: need {} bytes (pinned budget {} + margin {}), available {} ({})", need, budget,
                   options_.memory_margin, reading.available_bytes, reading.detail);
      next_log = now + std::chrono::seconds(5);
    }
    if (now >= deadline) {
      emit(kEventFailed, "memory gate: " + std::to_string(need) + " bytes (pinned budget " + std::to_string(budget) +
                             " + margin " + std::to_string(options_.memory_margin) + ") did not fit within " +
                             std::to_string(options_.memory_wait_timeout.count() / 1000) + " s; last seen " +
                             std::to_string(reading.available_bytes) + " available (" + reading.detail + ")");
      return false;
    }
    if (queue_.WaitForClose(now + std::chrono::milliseconds(100))) return false;  // drained while waiting
    reading = memory_->Read();
    last_available_ = reading.available_bytes;
  }
  spdlog::info("memory gate passed after {:.3f} s: {} bytes available ({}), allocating a {}-byte pinned pool",
               Seconds(Clock::now() - started), reading.available_bytes, reading.detail, budget);
  auto kind = circuits_->backend_name() == "cuda" ? PinnedPool::Kind::kCudaHost : PinnedPool::Kind::kLockedMmap;
  try {
    pool_.Allocate(budget, kind, options_.pool_chunk_bytes);
  } catch (const std::exception& e) {
    emit(kEventFailed, e.what());
    return false;
  }
  auto stats = pool_.stats();
  spdlog::info("pinned pool: {} bytes in {} allocation calls ({})", stats.pool_bytes, stats.alloc_calls,
               kind == PinnedPool::Kind::kCudaHost ? "cudaHostAlloc" : stats.locked ? "mmap + mlock" : "mmap, NOT locked");
  return true;
}

// ------------------------------------------------------------------ socket thread

void Worker::Connect() {
  dealer_ = zmq::socket_t(broker_context_, zmq::socket_type::dealer);
  fleet::ConfigureDealer(dealer_, options_.limits, kCloseLingerMs);
  dealer_.set(zmq::sockopt::sndtimeo, kSendTimeoutMs);
  options_.security.Apply(dealer_);
  dealer_.connect(options_.broker_endpoint);
  broker_last_seen_ = Clock::now();
}

void Worker::Reconnect(const std::string& why) {
  spdlog::warn("reconnecting to the broker at {}: {}", options_.broker_endpoint, why);
  dealer_.set(zmq::sockopt::linger, 0);
  dealer_.close();
  // The broker treats the new connection as a new incarnation and requeues
  // everything it had leased to us but what READY lists as in progress: the
  // item being proved keeps its lease (its result is still wanted), queued
  // ones are dropped here (the broker redelivers them).
  size_t dropped = queue_.TakeAllQueued().size();
  if (dropped > 0) spdlog::warn("dropped {} queued items; the broker redelivers them", dropped);
  std::vector<fleet::ItemRef> keep;
  if (auto running = queue_.running_key(); running && held_.count(running->ref())) keep.push_back(running->ref());
  ledger_.Reset(keep);
  for (auto it = held_.begin(); it != held_.end();) {
    it = std::find(keep.begin(), keep.end(), it->first) == keep.end() ? held_.erase(it) : std::next(it);
  }
  started_unsent_.clear();
  Connect();
  SendReady();
  if (state_ == proto::WORKER_STATE_READY) GrantCredit();
}

void Worker::Send(proto::Envelope& envelope) {
  // DEALER sends block only at the HWM, which credit flow keeps us far from,
  // or when the connection is gone for good (refused at the CURVE
  // handshake): then the send times out and the message is dropped; the
  // silence that follows makes us reconnect, and a drain still ends.
  if (!dealer_.send(zmq::buffer(fleet::EncodeEnvelope(envelope)), zmq::send_flags::none)) {
    auto now = Clock::now();
    if (now >= next_send_failure_log_) {  // at most one line a minute
      next_send_failure_log_ = now + std::chrono::minutes(1);
      spdlog::warn("could not send to the broker at {} within {} ms (no connection: is our key in its "
                   "allow-list, is --broker-public-key right?); messages are dropped until it answers",
                   options_.broker_endpoint, kSendTimeoutMs);
    }
  }
}

void Worker::SendReady() {
  proto::Envelope envelope;
  auto* ready = envelope.mutable_ready();
  ready->set_worker_id(options_.worker_id);
  ready->set_host(HostName());
  ready->set_backend(circuits_->backend_name());
  for (const auto& id : circuits_->circuit_ids()) ready->add_circuits(id);
  ready->set_capacity(options_.capacity);
  ready->set_state(state_);
  *ready->mutable_memory() = Memory();
  for (const fleet::ItemRef& ref : ledger_.held_items()) ToWire(ref, ready->add_in_progress());
  if (metrics_) metrics_->SetMemory(ready->memory());
  Send(envelope);
}

void Worker::SendHeartbeat() {
  proto::Envelope envelope;
  auto* beat = envelope.mutable_heartbeat();
  beat->set_state(state_);
  beat->set_queue_depth(static_cast<uint32_t>(queue_.queued()));
  beat->set_in_flight(queue_.running() ? 1 : 0);
  *beat->mutable_memory() = Memory();
  if (metrics_) metrics_->SetMemory(beat->memory());
  Send(envelope);
}

proto::MemoryStatus Worker::Memory() const {
  proto::MemoryStatus memory;
  PinnedPool::Stats pool = pool_.stats();
  memory.set_pool_bytes(pool.pool_bytes);
  memory.set_pool_in_use_bytes(pool.in_use_bytes);
  memory.set_alloc_calls(pool.alloc_calls);
  memory.set_budget_bytes(pool_budget_);
  memory.set_available_bytes(last_available_);
  if (state_ == proto::WORKER_STATE_RELEASING) {
    memory.set_bytes_to_release(pool.pool_bytes + circuits_->resident_bytes());
  }
  return memory;
}

void Worker::GrantCredit() {
  if (state_ != proto::WORKER_STATE_READY) return;
  uint32_t batch = std::max<uint32_t>(1, options_.capacity / 4);
  uint32_t credits = ledger_.TakeGrant(batch);
  if (credits == 0) return;
  proto::Envelope envelope;
  envelope.mutable_credit()->set_credits(credits);
  Send(envelope);
}

void Worker::SetState(proto::WorkerState state) {
  auto now = Clock::now();
  spdlog::info("state {} -> {} (after {:.3f} s)", fleet::WorkerStateName(state_), fleet::WorkerStateName(state),
               Seconds(now - state_since_));
  state_ = state;
  state_since_ = now;
  if (metrics_) metrics_->SetState(state);  // also /ready and the drain / memory-wait clocks
}

std::string Worker::ForgetCircuit(const fleet::ItemRef& item) {
  auto it = held_.find(item);
  if (it == held_.end()) return {};
  std::string circuit = std::move(it->second.circuit);
  held_.erase(it);
  return circuit;
}

void Worker::ToWire(const fleet::ItemRef& ref, proto::WorkItemRef* wire) const {
  fleet::ToProto(ref, wire);
  if (auto it = held_.find(ref); it != held_.end()) *wire->mutable_lease() = it->second.lease;
}

void Worker::FlushStarted() {
  if (started_unsent_.empty()) return;
  proto::Envelope envelope;
  for (const fleet::ItemRef& ref : started_unsent_) {
    if (held_.count(ref)) ToWire(ref, envelope.mutable_started()->add_items());
  }
  started_unsent_.clear();
  if (envelope.has_started()) Send(envelope);
}

int Worker::Run(int signal_fd) {
  events_.bind(events_endpoint_);
  silence_limit_ = options_.heartbeat_interval * options_.liveness;
  Connect();
  SendReady();  // registers as STARTING; the dispatcher reports its progress
  spdlog::info("worker {} connecting to {} with capacity {}, circuits: {}", options_.worker_id,
               options_.broker_endpoint, options_.capacity, fmt::format("{}", fmt::join(circuits_->circuit_ids(), ",")));
  dispatcher_ = std::thread(&Worker::DispatcherMain, this);

  auto next_heartbeat = Clock::now() + options_.heartbeat_interval;
  zmq::message_t kind;
  zmq::message_t payload;
  proto::Envelope message;
  while (!finished_) {
    zmq::pollitem_t items[3] = {
        {dealer_.handle(), 0, ZMQ_POLLIN, 0},
        {events_.handle(), 0, ZMQ_POLLIN, 0},
        {nullptr, signal_fd, ZMQ_POLLIN, 0},
    };
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_heartbeat - Clock::now());
    if (state_ == proto::WORKER_STATE_DRAINING) wait = std::min(wait, std::chrono::milliseconds(50));
    // Release the pool one chunk per turn, a heartbeat after each.
    if (state_ == proto::WORKER_STATE_RELEASING && keys_released_) wait = std::min(wait, std::chrono::milliseconds(10));
    if (wait.count() < 0) wait = std::chrono::milliseconds(0);
    zmq::poll(items, signal_fd >= 0 ? 3 : 2, wait);

    if (signal_fd >= 0 && (items[2].revents & ZMQ_POLLIN)) {
      signalfd_siginfo info{};
      if (read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
        BeginDrain(std::string("signal ") + strsignal(static_cast<int>(info.ssi_signo)));
      }
    }
    while (events_.recv(kind, zmq::recv_flags::dontwait)) {
      (void)events_.recv(payload, zmq::recv_flags::none);
      OnDispatcherEvent(kind, payload);
    }
    FlushStarted();
    while (!finished_ && dealer_.recv(payload, zmq::recv_flags::dontwait)) {
      broker_last_seen_ = Clock::now();  // any message counts as liveness
      silence_limit_ = options_.heartbeat_interval * options_.liveness;
      bool multi = payload.more();
      while (payload.more()) (void)dealer_.recv(payload, zmq::recv_flags::none);
      fleet::DecodeStatus status =
          multi ? fleet::DecodeStatus::kMalformed
                : fleet::DecodeEnvelope(payload.data(), payload.size(), options_.limits.max_message_bytes, message);
      if (status != fleet::DecodeStatus::kOk) {
        spdlog::warn("dropped a {} message from the broker", fleet::DecodeStatusName(status));
        if (metrics_) metrics_->MessageDropped(DropReasonOf(status));
        continue;
      }
      OnBrokerMessage(message);
    }
    if (finished_) break;

    auto now = Clock::now();
    if (now >= next_heartbeat) {
      SendHeartbeat();
      next_heartbeat = now + options_.heartbeat_interval;
    }
    if (now - broker_last_seen_ > silence_limit_) {
      Reconnect("no message for " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silence_limit_).count()) +
                " ms (" + std::to_string(options_.liveness) + " heartbeat intervals, doubled per silent retry)");
      silence_limit_ = std::min<Clock::duration>(silence_limit_ * 2, kMaxSilence);
    }
    if (state_ == proto::WORKER_STATE_DRAINING) CheckDrain();
    if (state_ == proto::WORKER_STATE_RELEASING && keys_released_) ReleasePoolChunk();
  }

  if (dispatcher_abandoned_) {
    dispatcher_.detach();
  } else if (dispatcher_.joinable()) {
    queue_.Close();
    dispatcher_.join();
  }
  // Closing the socket and terminating its context waits (up to the linger)
  // until DISCONNECT is out.
  dealer_.close();
  broker_context_.close();
  return exit_code_;
}

void Worker::OnBrokerMessage(proto::Envelope& message) {
  switch (message.body_case()) {
    case proto::Envelope::kJob: OnJob(*message.mutable_job()); break;
    case proto::Envelope::kHeartbeat: break;
    case proto::Envelope::kDrain: BeginDrain("broker drain command (" + message.drain().reason() + ")"); break;
    case proto::Envelope::kDisconnect:
      if (state_ == proto::WORKER_STATE_RELEASING || state_ == proto::WORKER_STATE_GONE) break;
      Reconnect("the broker said: " + message.disconnect().reason());
      break;
    default:
      spdlog::warn("dropped a message of type {} that brokers do not send", static_cast<int>(message.body_case()));
      if (metrics_) metrics_->MessageDropped(metrics::DropReason::kMalformed);
  }
}

void Worker::OnJob(proto::Job& job) {
  fleet::ItemRef ref = fleet::FromProto(job.item());
  if (!ledger_.OnJob(ref)) {
    spdlog::warn("broker sent job_seq={} partition={} without credit or twice", ref.job_seq, ref.partition);
  }
  held_[ref] = {job.circuit_id(), job.item().lease()};
  if (state_ != proto::WORKER_STATE_READY) {
    // Sent before the broker saw us drain: straight back, unstarted.
    HandBack({ref}, {}, "worker is " + fleet::WorkerStateName(state_));
    return;
  }
  proto::Priority priority = proto::Priority_IsValid(job.priority()) ? job.priority() : proto::PRIORITY_NORMAL;
  QueuedItem item{{priority, ref.job_seq, ref.partition}, std::move(job), {}, Clock::now()};
  if (PoolBuffer buffer = pool_.Acquire(item.job.witness().size())) {
    std::memcpy(buffer.data(), item.job.witness().data(), buffer.size());
    item.job.clear_witness();
    item.witness = std::move(buffer);
  }
  if (!queue_.Push(std::move(item))) {
    spdlog::warn("job_seq={} partition={} is already queued or running here; duplicate ignored", ref.job_seq,
                 ref.partition);
  }
}

void Worker::OnDispatcherEvent(const zmq::message_t& kind, const zmq::message_t& payload) {
  char type = kind.size() == 1 ? *static_cast<const char*>(kind.data()) : '?';
  switch (type) {
    case kEventStarted: {
      unsigned long long seq = 0;
      unsigned partition = 0;
      if (std::sscanf(payload.to_string().c_str(), "%llu %u", &seq, &partition) == 2) {
        started_unsent_.push_back({seq, partition});
      }
      return;
    }
    case kEventResult: {
      proto::Envelope envelope;
      if (fleet::DecodeEnvelope(payload.data(), payload.size(), 0, envelope) != fleet::DecodeStatus::kOk) return;
      fleet::ItemRef ref = fleet::FromProto(envelope.result().item());
      // Its RESULT says it started; no separate STARTED needed.
      std::erase(started_unsent_, ref);
      if (!ledger_.Release(ref)) {
        spdlog::info("result of job_seq={} partition={} discarded: no longer held (reconnect or drain abort)",
                     ref.job_seq, ref.partition);
        return;
      }
      dealer_.send(zmq::buffer(payload.data(), payload.size()), zmq::send_flags::none);
      std::string circuit = ForgetCircuit(ref);
      if (metrics_) {
        const proto::Result& result = envelope.result();
        if (result.ok()) {
          metrics_->ObservePhases(circuit, result.timings());
          metrics_->JobEnded(circuit, metrics::Outcome::kSucceeded);
        } else {
          metrics_->JobEnded(circuit, result.retryable() ? metrics::Outcome::kError : metrics::Outcome::kFailed);
        }
      }
      GrantCredit();
      return;
    }
    case kEventCheck: {
      const std::string text = payload.to_string();
      const size_t a = text.find('\n'), b = text.find('\n', a + 1);
      if (a == std::string::npos || b == std::string::npos) return;
      const std::string circuit = text.substr(0, a);
      const double verify_s = std::strtod(text.substr(a + 1, b - a - 1).c_str(), nullptr);
      const std::string detail = text.substr(b + 1);
      if (metrics_ && verify_s > 0) metrics_->ObserveVerify(circuit, verify_s);
      if (detail.size() > detail.find(": ") + 2) OnEngineFault(circuit, detail);
      return;
    }
    case kEventDeviceLost:
      EnterFaulted("fatal device error: " + payload.to_string(), /*exit=*/true);
      return;
    case kEventState: {
      auto state = static_cast<proto::WorkerState>(std::stoi(payload.to_string()));
      if (state_ == proto::WORKER_STATE_STARTING || state_ == proto::WORKER_STATE_WAITING_FOR_MEMORY) {
        SetState(state);
        SendHeartbeat();
      }
      return;
    }
    case kEventLoaded:
      if (state_ == proto::WORKER_STATE_LOADING) {
        SetState(proto::WORKER_STATE_READY);
        SendHeartbeat();  // the broker may dispatch from now on
        GrantCredit();
      }
      return;
    case kEventFailed:
      spdlog::error("cannot load circuits: {}", payload.to_string());
      {
        proto::Envelope envelope;
        envelope.mutable_disconnect()->set_reason("failed to load circuits: " + payload.to_string());
        Send(envelope);
      }
      SetState(proto::WORKER_STATE_GONE);
      exit_code_ = 1;
      finished_ = true;
      return;
    case kEventReleased:
      spdlog::info("released {} bytes of proving keys", payload.to_string());
      keys_released_ = true;  // the loop now frees the pool chunk by chunk
      return;
    default:
      spdlog::error("unknown dispatcher event");
  }
}

// ------------------------------------------------------------------ faults

void Worker::OnEngineFault(const std::string& circuit, const std::string& detail) {
  const auto now = Clock::now();
  spdlog::error("engine fault: backend={} device={} circuit={} {}; re-proved on the CPU, the valid proof was sent",
                circuits_->backend_name(), options_.device_label, circuit, detail);
  if (metrics_) metrics_->ProofVerificationFailed(circuit);
  recent_faults_.push_back(now);
  while (!recent_faults_.empty() && now - recent_faults_.front() > options_.fault_window) recent_faults_.pop_front();
  if (options_.fault_threshold > 0 && recent_faults_.size() >= options_.fault_threshold &&
      state_ == proto::WORKER_STATE_READY) {
    EnterFaulted(std::to_string(recent_faults_.size()) + " engine faults within " +
                     std::to_string(options_.fault_window.count()) + " s (--fault-threshold " +
                     std::to_string(options_.fault_threshold) + ")",
                 /*exit=*/false);
  }
}

void Worker::EnterFaulted(const std::string& why, bool exit) {
  if (finished_) return;
  if (state_ != proto::WORKER_STATE_FAULTED) {
    spdlog::error("worker FAULTED: {} (backend={} device={}); taking no more work{}", why, circuits_->backend_name(),
                  options_.device_label, exit ? ", exiting" : "");
    SetState(proto::WORKER_STATE_FAULTED);
    SendHeartbeat();  // the broker stops routing to us and requeues our leases
    std::vector<fleet::ItemRef> unstarted;
    for (const QueuedItem& item : queue_.TakeAllQueued()) unstarted.push_back(item.key.ref());
    HandBack(unstarted, {}, "faulted: " + why);
  }
  if (exit) {
    proto::Envelope envelope;
    envelope.mutable_disconnect()->set_reason("faulted: " + why);
    Send(envelope);
    exit_code_ = 1;
    finished_ = true;
  }
}

// ------------------------------------------------------------------ drain

void Worker::BeginDrain(const std::string& why) {
  if (state_ == proto::WORKER_STATE_DRAINING || state_ == proto::WORKER_STATE_RELEASING ||
      state_ == proto::WORKER_STATE_GONE) {
    spdlog::info("{}: already {}; the drain continues", why, fleet::WorkerStateName(state_));
    return;
  }
  spdlog::info("draining: {}", why);
  SetState(proto::WORKER_STATE_DRAINING);
  drain_deadline_ = Clock::now() + options_.drain_timeout;
  SendHeartbeat();  // the broker stops routing to us on this message
  std::vector<fleet::ItemRef> unstarted;
  for (const QueuedItem& item : queue_.TakeAllQueued()) unstarted.push_back(item.key.ref());
  HandBack(unstarted, {}, "draining");
  CheckDrain();
}

void Worker::HandBack(const std::vector<fleet::ItemRef>& unstarted, const std::vector<fleet::ItemRef>& aborted,
                      const std::string& reason) {
  if (unstarted.empty() && aborted.empty()) return;
  proto::Envelope envelope;
  auto* handback = envelope.mutable_handback();
  handback->set_reason(reason);
  auto give_back = [&](const fleet::ItemRef& ref, metrics::Outcome outcome, proto::WorkItemRef* wire) {
    ToWire(ref, wire);
    std::string circuit = ForgetCircuit(ref);
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
  Send(envelope);
}

void Worker::CheckDrain() {
  if (ledger_.held() == 0) {
    StartReleasing();
    return;
  }
  if (Clock::now() < drain_deadline_) return;
  // The item still proving (or whose result is not out yet) is aborted.
  std::vector<fleet::ItemRef> aborted(ledger_.held_items().begin(), ledger_.held_items().end());
  HandBack({}, aborted, "drain timeout");
  aborted_running_ = queue_.running();
  StartReleasing();
}

void Worker::StartReleasing() {
  SetState(proto::WORKER_STATE_RELEASING);
  SendHeartbeat();
  queue_.Close();  // the dispatcher leaves its loop, frees the keys, reports kEventReleased
  if (aborted_running_) {
    // The dispatcher is inside a proof we gave up on (it no longer uses the
    // pool); its proving keys are freed at exit.
    spdlog::warn("leaving while an aborted proof still runs; its proving keys are freed at exit");
    dispatcher_abandoned_ = true;
    keys_released_ = true;
  }
}

void Worker::ReleasePoolChunk() {
  uint64_t left = pool_.ReleaseChunk();
  SendHeartbeat();  // reports the bytes still held
  if (left > 0) {
    spdlog::info("releasing the pinned pool: {} bytes still held", left);
    return;
  }
  spdlog::info("pinned pool released: 0 bytes held");
  Finish();
}

void Worker::Finish() {
  proto::Envelope envelope;
  envelope.mutable_disconnect()->set_reason("drained");
  Send(envelope);
  SetState(proto::WORKER_STATE_GONE);
  finished_ = true;
}

}  // namespace zkfleet::worker
