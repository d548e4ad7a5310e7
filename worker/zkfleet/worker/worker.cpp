// The worker's socket loop and its state (see worker.hpp).
#include "zkfleet/worker/worker.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::worker {
namespace {

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

metrics::DropReason DropReasonOf(wire::DecodeStatus status) {
  switch (status) {
    case wire::DecodeStatus::kOversized: return metrics::DropReason::kOversized;
    case wire::DecodeStatus::kWrongVersion: return metrics::DropReason::kVersion;
    default: return metrics::DropReason::kMalformed;
  }
}

}  // namespace

std::string DefaultWorkerId() { return HostName() + "-" + std::to_string(getpid()); }

double DrainBudgetSeconds(std::chrono::milliseconds drain_timeout, uint64_t pool_bytes, PinnedPool::Kind kind) {
  // Release seconds per 96 GiB, measured (docs/operations.md); mmap'ed memory
  // (CPU workers) frees like the huge-page kind.
  const double per_96_gib = kind == PinnedPool::Kind::kCudaHost ? 14.0 : 2.0;
  const double per_byte = per_96_gib / static_cast<double>(96ull << 30);
  return Seconds(drain_timeout) + 2 * per_byte * static_cast<double>(pool_bytes);
}

Worker::Worker(zmq::context_t& context, WorkerOptions options, std::unique_ptr<CircuitSet> circuits,
               std::unique_ptr<MemorySource> memory, metrics::WorkerMetrics* metrics)
    : context_(context),
      options_(std::move(options)),
      circuits_(std::move(circuits)),
      devices_(circuits_->devices(), options_.fault_threshold, options_.fault_window),
      memory_(std::move(memory)),
      metrics_(metrics),
      // --capacity is per device: items held at once scale with the devices.
      ledger_(options_.capacity * static_cast<uint32_t>(circuits_->device_count())) {
  if (options_.worker_id.empty()) options_.worker_id = DefaultWorkerId();
  state_since_ = Clock::now();
  pool_.set_observer([this](uint64_t bytes) { memory_->OnPoolChanged(options_.worker_id, bytes); });
  pipeline_ = std::make_unique<ProvingPipeline>(options_, *circuits_, *memory_, pool_, queue_, mailbox_);
}

Worker::~Worker() {
  if (pipeline_ && !pipeline_abandoned_) {
    queue_.Close();
    pipeline_->Join();
  }
}

// ------------------------------------------------------------------ state

bool Worker::Transition(wire::WorkerEvent event, const std::string& why) {
  std::optional<proto::WorkerState> next = wire::NextState(state_, event);
  if (!next) {
    spdlog::error("state machine: event '{}' is not allowed in state {} ({}); ignored", wire::WorkerEventName(event),
                  wire::WorkerStateName(state_), why);
    return false;
  }
  auto now = Clock::now();
  spdlog::info("state {} -> {} (after {:.3f} s): {}", wire::WorkerStateName(state_), wire::WorkerStateName(*next),
               Seconds(now - state_since_), why);
  state_ = *next;
  state_since_ = now;
  if (metrics_) metrics_->SetState(state_);  // also /ready and the drain / memory-wait clocks
  return true;
}

// ------------------------------------------------------------------ socket loop

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
  retry_registration_.reset();
  dealer_.set(zmq::sockopt::linger, 0);
  dealer_.close();
  // The broker treats the new connection as a new incarnation and requeues
  // everything it had leased to us but what READY lists as in progress: the
  // items being proved keep their leases (their results are still wanted),
  // queued ones are dropped here (the broker redelivers them).
  size_t dropped = queue_.TakeAllQueued().size();
  if (dropped > 0) spdlog::warn("dropped {} queued items; the broker redelivers them", dropped);
  std::vector<wire::ItemRef> keep;
  for (const wire::WorkKey& running : queue_.running_keys()) {
    if (held_.count(running.ref())) keep.push_back(running.ref());
  }
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
  if (!dealer_.send(zmq::buffer(wire::EncodeEnvelope(envelope)), zmq::send_flags::none)) {
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
  ready->set_capacity(ledger_.capacity());
  ready->set_state(state_);
  *ready->mutable_memory() = Memory();
  for (const wire::ItemRef& ref : ledger_.held_items()) ToWire(ref, ready->add_in_progress());
  if (metrics_) metrics_->SetMemory(ready->memory());
  Send(envelope);
}

void Worker::SendHeartbeat() {
  proto::Envelope envelope;
  auto* beat = envelope.mutable_heartbeat();
  beat->set_state(state_);
  beat->set_queue_depth(static_cast<uint32_t>(queue_.queued()));
  beat->set_in_flight(static_cast<uint32_t>(queue_.running()));
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
  memory.set_budget_bytes(pipeline_->pool_budget());
  memory.set_pool_mode(pool.mode);
  memory.set_pool_target_bytes(pool.target_bytes);
  memory.set_available_bytes(pipeline_->last_available());
  if (state_ == proto::WORKER_STATE_RELEASING) {
    memory.set_bytes_to_release(pool.pool_bytes + circuits_->resident_bytes());
  }
  return memory;
}

void Worker::GrantCredit() {
  if (state_ != proto::WORKER_STATE_READY) return;
  uint32_t batch = std::max<uint32_t>(1, ledger_.capacity() / 4);
  uint32_t credits = ledger_.TakeGrant(batch);
  if (credits == 0) return;
  proto::Envelope envelope;
  envelope.mutable_credit()->set_credits(credits);
  Send(envelope);
}

std::string Worker::ForgetCircuit(const wire::ItemRef& item) {
  auto it = held_.find(item);
  if (it == held_.end()) return {};
  std::string circuit = std::move(it->second.circuit);
  held_.erase(it);
  return circuit;
}

void Worker::ToWire(const wire::ItemRef& ref, proto::WorkItemRef* wire) const {
  wire::ToProto(ref, wire);
  if (auto it = held_.find(ref); it != held_.end()) *wire->mutable_lease() = it->second.lease;
}

void Worker::FlushStarted() {
  if (started_unsent_.empty() || Clock::now() < started_hold_until_) return;
  proto::Envelope envelope;
  for (const wire::ItemRef& ref : started_unsent_) {
    if (held_.count(ref)) ToWire(ref, envelope.mutable_started()->add_items());
  }
  started_unsent_.clear();
  if (envelope.has_started()) Send(envelope);
}

int Worker::Run(int signal_fd) {
  silence_limit_ = options_.heartbeat_interval * options_.liveness;
  Connect();
  SendReady();  // registers as STARTING; the pipeline reports its progress
  spdlog::info("worker {} connecting to {} with capacity {}{}, circuits: {}", options_.worker_id,
               options_.broker_endpoint, ledger_.capacity(),
               devices_.size() > 1 ? fmt::format(" ({} per device, {} devices)", options_.capacity, devices_.size())
                                   : std::string(),
               fmt::format("{}", fmt::join(circuits_->circuit_ids(), ",")));
  pipeline_->Start();

  auto next_heartbeat = Clock::now() + options_.heartbeat_interval;
  zmq::message_t payload;
  proto::Envelope message;
  while (!finished()) {
    zmq::pollitem_t items[3] = {
        {dealer_.handle(), 0, ZMQ_POLLIN, 0},
        {nullptr, mailbox_.fd(), ZMQ_POLLIN, 0},
        {nullptr, signal_fd, ZMQ_POLLIN, 0},
    };
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_heartbeat - Clock::now());
    if (state_ == proto::WORKER_STATE_DRAINING) wait = std::min(wait, std::chrono::milliseconds(50));
    // Release the pool one chunk per turn, a heartbeat after each, without
    // waiting in between (messages are still read every turn).
    const bool releasing_pool = state_ == proto::WORKER_STATE_RELEASING && release_step_ == ReleaseStep::kPool;
    if (releasing_pool) wait = std::min(wait, options_.test_release_pause);
    if (wait.count() < 0) wait = std::chrono::milliseconds(0);
    zmq::poll(items, signal_fd >= 0 ? 3 : 2, wait);

    if (signal_fd >= 0 && (items[2].revents & ZMQ_POLLIN)) {
      signalfd_siginfo info{};
      if (read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
        BeginDrain(std::string("signal ") + strsignal(static_cast<int>(info.ssi_signo)));
      }
    }
    if (items[1].revents & ZMQ_POLLIN) {
      for (PipelineEvent& event : mailbox_.TakeAll()) {
        if (!finished()) OnPipelineEvent(event);
      }
    }
    FlushStarted();
    while (!finished() && dealer_.recv(payload, zmq::recv_flags::dontwait)) {
      broker_last_seen_ = Clock::now();  // any message counts as liveness
      silence_limit_ = options_.heartbeat_interval * options_.liveness;
      fleet::Frames frames;  // a JOB's witness follows its envelope, in chunks
      bool more = payload.more();
      while (more) {
        zmq::message_t frame;
        (void)dealer_.recv(frame, zmq::recv_flags::none);
        more = frame.more();
        frames.push_back(std::move(frame));
      }
      wire::DecodeStatus status =
          wire::DecodeEnvelope(payload.data(), payload.size(), options_.limits.max_message_bytes, message);
      if (status != wire::DecodeStatus::kOk) {
        spdlog::warn("dropped a {} message from the broker", wire::DecodeStatusName(status));
        if (metrics_) metrics_->MessageDropped(DropReasonOf(status));
        continue;
      }
      OnBrokerMessage(message, frames);
    }
    if (finished()) break;

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
    if (retry_registration_ && now >= retry_registration_->first) Reconnect(retry_registration_->second);
    if (state_ == proto::WORKER_STATE_DRAINING) CheckDrain();
    if (state_ == proto::WORKER_STATE_RELEASING && release_step_ == ReleaseStep::kPool) ReleasePoolChunk();
  }

  if (pipeline_abandoned_) {
    pipeline_->Abandon();
  } else {
    queue_.Close();
    pipeline_->Join();
  }
  // Closing the socket and terminating its context waits (up to the linger)
  // until DISCONNECT is out.
  dealer_.close();
  broker_context_.close();
  return exit_code_;
}

void Worker::OnBrokerMessage(proto::Envelope& message, fleet::Frames& frames) {
  const bool is_job = message.body_case() == proto::Envelope::kJob;
  std::string why = "frames after a message that has none";
  std::optional<std::vector<fleet::WitnessFrames>> witness;
  if (is_job) witness = fleet::SplitWitnesses(std::move(frames), {message.job().witness_bytes()}, &why);
  if (is_job ? !witness : !frames.empty()) {
    spdlog::warn("dropped a broker message of type {}: {}", static_cast<int>(message.body_case()), why);
    if (metrics_) metrics_->MessageDropped(metrics::DropReason::kMalformed);
    // A JOB is leased to us: answer it (failed, with the reason) rather than
    // leave its lease hanging until this worker goes away.
    if (is_job) FailUnreadableJob(message.job(), "its witness frames did not arrive whole: " + why);
    return;
  }
  switch (message.body_case()) {
    case proto::Envelope::kJob: OnJob(*message.mutable_job(), witness->front()); break;
    case proto::Envelope::kHeartbeat: break;
    case proto::Envelope::kDrain: BeginDrain("broker drain command (" + message.drain().reason() + ")"); break;
    case proto::Envelope::kDisconnect:
      if (state_ == proto::WORKER_STATE_RELEASING || state_ == proto::WORKER_STATE_GONE) break;
      if (retry_registration_) break;  // already waiting to register again
      if (message.disconnect().reason().rfind("registration refused", 0) == 0) {
        spdlog::error("the broker refused our registration: {}; trying again in {} ms",
                      message.disconnect().reason(), options_.heartbeat_interval.count());
        retry_registration_.emplace(Clock::now() + options_.heartbeat_interval,
                                    "the broker said: " + message.disconnect().reason());
        break;
      }
      Reconnect("the broker said: " + message.disconnect().reason());
      break;
    default:
      spdlog::warn("dropped a message of type {} that brokers do not send", static_cast<int>(message.body_case()));
      if (metrics_) metrics_->MessageDropped(metrics::DropReason::kMalformed);
  }
}

void Worker::OnJob(proto::Job& job, fleet::WitnessFrames& witness) {
  wire::ItemRef ref = wire::FromProto(job.item());
  if (!ledger_.OnJob(ref)) {
    spdlog::warn("broker sent job_seq={} partition={} without credit or twice", ref.job_seq, ref.partition);
  }
  held_[ref] = {job.circuit_id(), job.item().lease()};
  if (state_ != proto::WORKER_STATE_READY) {
    // Sent before the broker saw us drain: straight back, unstarted.
    HandBack({ref}, {}, "worker is " + wire::WorkerStateName(state_));
    return;
  }
  proto::Priority priority = proto::Priority_IsValid(job.priority()) ? job.priority() : proto::PRIORITY_NORMAL;
  QueuedItem item;
  item.key = {priority, ref.job_seq, ref.partition};
  item.job = std::move(job);
  item.arrived = Clock::now();
  // The receive: from libzmq's frames into the pinned pool, the one copy; the
  // engine checks it there and the device reads it from there. Without room
  // in the pool it goes to a heap buffer instead (pageable: a slower upload).
  const size_t size = witness.size();
  uint8_t* into = nullptr;
  if (PoolBuffer buffer = pool_.Acquire(size)) {
    item.pooled_witness = std::move(buffer);
    into = item.pooled_witness.data();
  } else {
    item.heap_witness.reset(new uint8_t[size]);
    item.heap_witness_size = size;
    into = item.heap_witness.get();
  }
  for (const zmq::message_t& chunk : witness.chunks) {
    std::memcpy(into, chunk.data(), chunk.size());
    into += chunk.size();
  }
  if (!queue_.Push(std::move(item))) {
    // Its lease (held_, above) is now the broker's newest: the result of the
    // run already here answers it (OnResult).
    spdlog::warn("job_seq={} partition={} is already queued or running here; the run continues under lease {}",
                 ref.job_seq, ref.partition, held_[ref].lease.ShortDebugString());
  }
}

void Worker::FailUnreadableJob(const proto::Job& job, const std::string& why) {
  const wire::ItemRef ref = wire::FromProto(job.item());
  if (!ledger_.OnJob(ref)) return;  // not ours to answer (no credit, or a duplicate)
  held_[ref] = {job.circuit_id(), job.item().lease()};
  (void)ledger_.Release(ref);
  ForgetCircuit(ref);
  proto::Envelope envelope;
  auto* result = envelope.mutable_result();
  *result->mutable_item() = job.item();
  result->set_attempt(job.attempt());
  result->set_circuit_id(job.circuit_id());
  result->set_request_id(job.request_id());
  result->set_ok(false);
  result->set_retryable(false);
  result->set_error(why);
  Send(envelope);
  GrantCredit();
}

void Worker::OnPipelineEvent(PipelineEvent& event) {
  switch (event.kind) {
    case PipelineEvent::Kind::kStarted:
      if (options_.test_hold_started.count() > 0) {
        // The batch goes out a hold after its first item started.
        if (started_unsent_.empty()) started_hold_until_ = Clock::now() + options_.test_hold_started;
        spdlog::warn("TEST ONLY (--test-hold-started-ms): STARTED of job_seq={} partition={} withheld", event.ref.job_seq,
                     event.ref.partition);
      }
      started_unsent_.push_back(event.ref);
      return;
    case PipelineEvent::Kind::kResult:
      OnResult(event);
      return;
    case PipelineEvent::Kind::kState:
      // Startup progress; a drain may have overtaken it.
      if (state_ == proto::WORKER_STATE_STARTING || state_ == proto::WORKER_STATE_WAITING_FOR_MEMORY) {
        if (Transition(event.state_event, "memory gate")) SendHeartbeat();
      }
      return;
    case PipelineEvent::Kind::kLoaded:
      if (metrics_) {
        for (size_t d = 0; d < devices_.size(); ++d) metrics_->SetDeviceKeyBytes(d, circuits_->resident_bytes(d));
      }
      if (state_ == proto::WORKER_STATE_LOADING && Transition(wire::WorkerEvent::kLoaded, "proving keys resident")) {
        SendHeartbeat();  // the broker may dispatch from now on
        GrantCredit();
      }
      return;
    case PipelineEvent::Kind::kStartFailed: {
      spdlog::error("cannot start: {}", event.text);
      proto::Envelope envelope;
      envelope.mutable_disconnect()->set_reason("failed to load circuits: " + event.text);
      Send(envelope);
      Transition(wire::WorkerEvent::kStartFailed, event.text);
      exit_code_ = 1;
      return;
    }
    case PipelineEvent::Kind::kDeviceReleased: {
      const auto device = static_cast<size_t>(event.device);
      if (metrics_) metrics_->SetDeviceKeyBytes(device, 0);
      if (devices_.size() > 1) {
        spdlog::info("device {}: its lanes stopped, released {} bytes of its proving keys",
                     devices_.device(device).label, event.bytes);
      }
      return;
    }
    case PipelineEvent::Kind::kReleased:
      if (devices_.size() > 1) {
        spdlog::info("every lane has stopped; the proving keys of every device are released");
      } else {
        spdlog::info("released {} bytes of proving keys", event.bytes);
      }
      release_step_ = ReleaseStep::kPool;  // the loop now frees the pool chunk by chunk
      return;
  }
}

void Worker::OnResult(PipelineEvent& event) {
  const wire::ItemRef ref = event.ref;
  const auto device = static_cast<size_t>(event.device);
  const std::string circuit = event.result.circuit_id();
  // Its RESULT says it started; no separate STARTED needed.
  std::erase(started_unsent_, ref);
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
    Send(envelope);
    ForgetCircuit(ref);
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
    GrantCredit();
  }
  // After the result: its (valid) proof is out before a fault can turn the
  // worker FAULTED, which makes the broker take back what we still hold.
  if (metrics_ && event.verify_s > 0) metrics_->ObserveVerify(circuit, event.verify_s);
  if (!event.engine_fault.empty()) {
    OnEngineFault(circuit, device,
                  "job_seq=" + std::to_string(ref.job_seq) + " partition=" + std::to_string(ref.partition) + ": " +
                      event.engine_fault);
  }
  if (event.device_lost) RetireDevice(device, "fatal device error: " + event.text, /*lost=*/true);
}

void Worker::HandBack(const std::vector<wire::ItemRef>& unstarted, const std::vector<wire::ItemRef>& aborted,
                      const std::string& reason) {
  if (unstarted.empty() && aborted.empty()) return;
  proto::Envelope envelope;
  auto* handback = envelope.mutable_handback();
  handback->set_reason(reason);
  auto give_back = [&](const wire::ItemRef& ref, metrics::Outcome outcome, proto::WorkItemRef* wire) {
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

}  // namespace zkfleet::worker
