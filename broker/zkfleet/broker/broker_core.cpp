#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>
#include <array>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/fleet/names.hpp"
#include "zkfleet/fleet/protocol.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::broker {
namespace {

using fleet::ItemRef;
using fleet::WorkKey;

constexpr uint64_t kMaxCredit = 1u << 20;
// Longest gap between two updates of the queue and worker gauges.
constexpr Clock::duration kMaxGaugePeriod = std::chrono::seconds(1);

// Where a worker state sits on the way out; a draining worker only moves forward.
int DrainRank(proto::WorkerState state) {
  switch (state) {
    case proto::WORKER_STATE_DRAINING: return 1;
    case proto::WORKER_STATE_RELEASING: return 2;
    case proto::WORKER_STATE_GONE: return 3;
    default: return 0;
  }
}

std::string ItemName(uint64_t job_seq, uint32_t partition) {
  return "job_seq=" + std::to_string(job_seq) + " partition=" + std::to_string(partition);
}

}  // namespace

BrokerCore::BrokerCore(BrokerOptions options, metrics::BrokerMetrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

void BrokerCore::CountDroppedFrame(metrics::DropReason reason) {
  switch (reason) {
    case metrics::DropReason::kMalformed: ++counters_.frames_malformed; break;
    case metrics::DropReason::kOversized: ++counters_.frames_oversized; break;
    case metrics::DropReason::kVersion: ++counters_.frames_wrong_version; break;
  }
  if (metrics_) metrics_->MessageDropped(reason);
}

// ------------------------------------------------------------------ clients

void BrokerCore::HandleClient(const std::string& identity, proto::Envelope& message, Clock::time_point now) {
  uint64_t correlation = message.correlation_id();
  switch (message.body_case()) {
    case proto::Envelope::kSubmit: OnSubmit(identity, correlation, *message.mutable_submit(), now); break;
    case proto::Envelope::kAwait: OnAwait(identity, correlation, message.await()); break;
    case proto::Envelope::kCancel: OnCancel(identity, correlation, message.cancel(), now); break;
    case proto::Envelope::kDrainWorker: OnDrainWorker(identity, correlation, message.drain_worker()); break;
    case proto::Envelope::kStatus: {
      proto::Envelope reply;
      reply.set_correlation_id(correlation);
      *reply.mutable_status_reply() = Status(now);
      SendClient({identity, correlation}, std::move(reply));
      break;
    }
    default:
      CountDroppedFrame(metrics::DropReason::kMalformed);
      SendError(identity, correlation, proto::ERROR_KIND_BAD_REQUEST,
                "message type " + std::to_string(message.body_case()) + " is not a client request");
  }
}

void BrokerCore::OnSubmit(const std::string& identity, uint64_t correlation, proto::SubmitRequest& request,
                          Clock::time_point now) {
  auto refuse = [&](proto::ErrorKind kind, const std::string& why) {
    ++counters_.jobs_refused;
    SendError(identity, correlation, kind, why);
  };
  if (request.request_id().empty()) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without request_id");

  // Idempotency: a known request id returns the existing job, never a new one.
  if (JobRecord* existing = jobs_.FindByRequestId(request.request_id())) {
    ++counters_.jobs_duplicate;
    proto::Envelope reply;
    reply.set_correlation_id(correlation);
    auto* body = reply.mutable_submit_reply();
    body->set_job_seq(existing->job_seq);
    body->set_duplicate(true);
    body->set_state(existing->state);
    SendClient({identity, correlation}, std::move(reply));
    if (fleet::IsTerminal(existing->state)) {
      proto::Envelope result;
      result.set_correlation_id(correlation);
      FillResult(*existing, result.mutable_job_result());
      SendClient({identity, correlation}, std::move(result));
    } else {
      existing->awaiters.push_back({identity, correlation});
    }
    return;
  }

  if (request.circuit_id().empty()) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without circuit_id");
  if (request.witnesses_size() == 0) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without witnesses");
  if (static_cast<uint32_t>(request.witnesses_size()) > options_.max_partitions) {
    return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT with " + std::to_string(request.witnesses_size()) +
                                                     " witnesses; at most " + std::to_string(options_.max_partitions));
  }
  proto::Priority priority = request.priority();
  if (priority == proto::PRIORITY_UNSPECIFIED) priority = proto::PRIORITY_NORMAL;
  if (!proto::Priority_IsValid(priority)) {
    return refuse(proto::ERROR_KIND_BAD_REQUEST, "unknown priority value " + std::to_string(priority));
  }
  if (!options_.accept_unrouted && !workers_.AnyHolds(request.circuit_id())) {
    return refuse(proto::ERROR_KIND_UNKNOWN_CIRCUIT,
                  "no worker has announced circuit '" + request.circuit_id() +
                      "' (start a worker with it, or run the broker with --accept-unrouted)");
  }

  JobRecord& job = jobs_.Create(request.request_id());
  job.circuit_id = request.circuit_id();
  job.priority = priority;
  job.submitter = {identity, correlation};
  job.submitted_at = now;
  job.submitted_unix_s = fleet::UnixNow();
  job.items.resize(request.witnesses_size());
  for (int p = 0; p < request.witnesses_size(); ++p) {
    job.items[p].witness = std::move(*request.mutable_witnesses(p));
    queue_.Insert(job.circuit_id, job.key(p));
  }
  ++counters_.jobs_submitted;
  if (metrics_) metrics_->JobSubmitted(job.circuit_id, job.priority);

  proto::Envelope reply;
  reply.set_correlation_id(correlation);
  auto* body = reply.mutable_submit_reply();
  body->set_job_seq(job.job_seq);
  body->set_state(job.state);
  SendClient(job.submitter, std::move(reply));
}

void BrokerCore::OnAwait(const std::string& identity, uint64_t correlation, const proto::AwaitRequest& request) {
  JobRecord* job = jobs_.Find(request.job_seq());
  if (!job) {
    return SendError(identity, correlation, proto::ERROR_KIND_UNKNOWN_JOB,
                     "job " + std::to_string(request.job_seq()) + " is not known (never submitted, or its result expired)");
  }
  if (fleet::IsTerminal(job->state)) {
    proto::Envelope reply;
    reply.set_correlation_id(correlation);
    FillResult(*job, reply.mutable_job_result());
    SendClient({identity, correlation}, std::move(reply));
  } else {
    job->awaiters.push_back({identity, correlation});
  }
}

void BrokerCore::OnCancel(const std::string& identity, uint64_t correlation, const proto::CancelRequest& request,
                          Clock::time_point now) {
  JobRecord* job = jobs_.Find(request.job_seq());
  if (!job) {
    return SendError(identity, correlation, proto::ERROR_KIND_UNKNOWN_JOB,
                     "job " + std::to_string(request.job_seq()) + " is not known");
  }
  bool cancelled = !fleet::IsTerminal(job->state);
  if (cancelled) FinishJob(*job, proto::JOB_STATE_CANCELLED, "cancelled by a client", now);
  proto::Envelope reply;
  reply.set_correlation_id(correlation);
  reply.mutable_cancel_reply()->set_cancelled(cancelled);
  reply.mutable_cancel_reply()->set_state(job->state);
  SendClient({identity, correlation}, std::move(reply));
}

void BrokerCore::OnDrainWorker(const std::string& identity, uint64_t correlation,
                               const proto::DrainWorkerRequest& request) {
  WorkerRecord* worker = workers_.FindByWorkerId(request.worker_id());
  if (!worker) {
    return SendError(identity, correlation, proto::ERROR_KIND_UNKNOWN_WORKER,
                     "no worker '" + request.worker_id() + "' is registered (see zkctl workers)");
  }
  // The broker's view changes now, before the next dispatch; the worker
  // confirms with a DRAINING heartbeat.
  SetWorkerState(*worker, proto::WORKER_STATE_DRAINING);
  proto::Envelope command;
  command.mutable_drain()->set_reason("zkctl drain");
  SendWorker(worker->identity, std::move(command));

  proto::Envelope reply;
  reply.set_correlation_id(correlation);
  reply.mutable_drain_worker_reply()->set_worker_id(worker->worker_id);
  *reply.mutable_drain_worker_reply()->mutable_phases() = {worker->phases.begin(), worker->phases.end()};
  SendClient({identity, correlation}, std::move(reply));
  if (request.wait()) worker->drain_waiters.push_back({identity, correlation});
  spdlog::info("worker {} draining on request", worker->worker_id);
}

// ------------------------------------------------------------------ workers

void BrokerCore::HandleWorker(const std::string& identity, proto::Envelope& message, Clock::time_point now) {
  if (message.has_ready()) return OnReady(identity, message.ready(), now);

  WorkerRecord* worker = workers_.Find(identity);
  if (!worker) {
    // Not registered (declared dead, or the broker restarted): tell it to
    // start over, as Majordomo does. Its results are stale by definition.
    if (message.has_result()) ++counters_.results_stale;
    if (!message.has_disconnect()) {
      proto::Envelope reply;
      reply.mutable_disconnect()->set_reason("not registered with this broker; reconnect and send READY");
      SendWorker(identity, std::move(reply));
    }
    return;
  }
  worker->last_seen = now;  // any message counts as liveness
  switch (message.body_case()) {
    case proto::Envelope::kCredit: {
      // Clamped: a misbehaving worker must not overflow the counter.
      uint64_t credit = uint64_t{worker->credit} + message.credit().credits();
      worker->credit = static_cast<uint32_t>(std::min<uint64_t>(credit, kMaxCredit));
      break;
    }
    case proto::Envelope::kHeartbeat: {
      const auto& beat = message.heartbeat();
      worker->queue_depth = beat.queue_depth();
      worker->reported_in_flight = beat.in_flight();
      worker->memory = beat.memory();
      OnWorkerState(*worker, beat.state(), now);
      break;
    }
    case proto::Envelope::kResult: OnResult(*worker, *message.mutable_result(), now); break;
    case proto::Envelope::kHandback: OnHandback(*worker, message.handback(), now); break;
    case proto::Envelope::kDisconnect:
      RemoveWorker(identity, "disconnected: " + message.disconnect().reason(), /*graceful=*/true, now);
      break;
    default:
      CountDroppedFrame(metrics::DropReason::kMalformed);
      spdlog::warn("worker {} sent a message of type {} that workers do not send; dropped", worker->worker_id,
                   static_cast<int>(message.body_case()));
  }
}

void BrokerCore::OnReady(const std::string& identity, const proto::Ready& ready, Clock::time_point now) {
  if (ready.worker_id().empty()) {
    CountDroppedFrame(metrics::DropReason::kMalformed);
    spdlog::warn("READY without worker_id dropped");
    return;
  }
  // A READY on a known connection, or from a worker id registered on another
  // connection, starts a new incarnation: the old one's leases are lost.
  if (workers_.Find(identity)) RemoveWorker(identity, "sent READY again", false, now);
  if (WorkerRecord* old = workers_.FindByWorkerId(ready.worker_id())) {
    RemoveWorker(old->identity, "reconnected on a new connection", false, now);
  }
  WorkerRecord& worker = workers_.Add(identity, ready.worker_id());
  worker.host = ready.host();
  worker.backend = ready.backend();
  worker.circuits = {ready.circuits().begin(), ready.circuits().end()};
  worker.capacity = ready.capacity();
  worker.state = ready.state() == proto::WORKER_STATE_UNSPECIFIED ? proto::WORKER_STATE_READY : ready.state();
  worker.memory = ready.memory();
  worker.last_seen = now;
  if (metrics_) {
    // Per-circuit series exist from the first scrape, before any job.
    for (const std::string& circuit : worker.circuits) metrics_->ForCircuit(circuit);
  }
  spdlog::info("worker {} registered: host={} backend={} capacity={} state={} circuits={}", worker.worker_id,
               worker.host, worker.backend, worker.capacity, fleet::WorkerStateName(worker.state),
               fmt::join(worker.circuits, ","));
}

void BrokerCore::OnWorkerState(WorkerRecord& worker, proto::WorkerState reported, Clock::time_point now) {
  if (reported == proto::WORKER_STATE_UNSPECIFIED || reported == worker.state) return;
  SetWorkerState(worker, reported);
  if (worker.state != proto::WORKER_STATE_FAULTED || worker.leased.empty()) return;
  // Its engine is not to be trusted: everything it holds goes back, and the
  // item it was proving, if any, is not the item's fault either.
  std::set<ItemRef> leased = std::move(worker.leased);
  worker.leased.clear();
  for (const ItemRef& ref : leased) {
    if (JobRecord* job = jobs_.Find(ref.job_seq)) {
      ReturnItem(*job, ref.partition, /*count_attempt=*/false, "worker " + worker.worker_id + " is FAULTED", now,
                 worker.worker_id);
    }
  }
}

void BrokerCore::SetWorkerState(WorkerRecord& worker, proto::WorkerState state) {
  if (DrainRank(worker.state) > 0 && DrainRank(state) <= DrainRank(worker.state)) return;
  // FAULTED is left only on the way out (drain, disconnect), never back to READY.
  if (worker.state == proto::WORKER_STATE_FAULTED && DrainRank(state) == 0) return;
  if (state == proto::WORKER_STATE_FAULTED) {
    worker.credit = 0;  // nothing more is routed to a faulted worker
    spdlog::error("worker {} ({} on {}) is FAULTED: no more work is routed to it", worker.worker_id, worker.backend,
                  worker.host);
  }
  double now_s = fleet::UnixNow();
  if (DrainRank(state) > 0) {
    if (!worker.phases.empty()) {
      auto& last = worker.phases.back();
      last.set_duration_s(now_s - last.started_unix_s());
    }
    proto::DrainPhase phase;
    phase.set_state(state);
    phase.set_started_unix_s(now_s);
    worker.phases.push_back(phase);
    worker.credit = 0;  // nothing more is routed to a draining worker
  }
  spdlog::info("worker {} state {} -> {}", worker.worker_id, fleet::WorkerStateName(worker.state),
               fleet::WorkerStateName(state));
  worker.state = state;
}

void BrokerCore::OnResult(WorkerRecord& worker, proto::Result& result, Clock::time_point now) {
  ItemRef ref = fleet::FromProto(result.item());
  // Only the current lease holder may answer; anything else (a worker that
  // was declared dead and came back, a duplicate) is stale.
  if (worker.leased.erase(ref) == 0) {
    ++counters_.results_stale;
    return;
  }
  JobRecord* job = jobs_.Find(ref.job_seq);
  if (!job || ref.partition >= job->items.size()) {
    ++counters_.results_stale;
    return;
  }
  WorkItem& item = job->items[ref.partition];
  if (item.state != WorkItem::State::kLeased || item.worker_identity != worker.identity) {
    ++counters_.results_stale;
    return;
  }
  item.worker_identity.clear();
  if (fleet::IsTerminal(job->state)) {  // cancelled or failed meanwhile
    item.state = WorkItem::State::kDropped;
    return;
  }
  if (result.ok()) {
    ++worker.items_completed;
    item.state = WorkItem::State::kDone;
    item.witness.clear();
    item.witness.shrink_to_fit();
    auto& out = item.result;
    out.set_partition(ref.partition);
    out.set_proof_json(std::move(*result.mutable_proof_json()));
    out.set_public_json(std::move(*result.mutable_public_json()));
    *out.mutable_timings() = result.timings();
    out.set_worker_id(worker.worker_id);
    out.set_attempts(item.attempts);
    if (++job->items_done == job->items.size()) FinishJob(*job, proto::JOB_STATE_SUCCEEDED, "", now);
  } else if (result.retryable()) {
    ReturnItem(*job, ref.partition, /*count_attempt=*/true,
               "worker " + worker.worker_id + " failed it: " + result.error(), now, worker.worker_id);
  } else {
    item.state = WorkItem::State::kDropped;
    FinishJob(*job, proto::JOB_STATE_FAILED,
              "partition " + std::to_string(ref.partition) + " failed on worker " + worker.worker_id + ": " +
                  result.error(),
              now);
  }
}

void BrokerCore::OnHandback(WorkerRecord& worker, const proto::Handback& handback, Clock::time_point now) {
  auto give_back = [&](const proto::WorkItemRef& wire, bool started) {
    ItemRef ref = fleet::FromProto(wire);
    if (worker.leased.erase(ref) == 0) return;  // not (or no longer) its lease
    ++counters_.items_handed_back;
    if (metrics_) metrics_->ItemHandedBack();
    if (JobRecord* job = jobs_.Find(ref.job_seq)) {
      ReturnItem(*job, ref.partition, started,
                 "handed back by worker " + worker.worker_id + " (" + handback.reason() + ")", now,
                 started ? worker.worker_id : std::string());
    }
  };
  for (const auto& item : handback.items()) give_back(item, false);
  for (const auto& item : handback.aborted()) give_back(item, true);
  spdlog::info("worker {} handed back {} unstarted and {} aborted items ({})", worker.worker_id,
               handback.items_size(), handback.aborted_size(), handback.reason());
}

void BrokerCore::RemoveWorker(const std::string& identity, const std::string& why, bool graceful,
                              Clock::time_point now) {
  WorkerRecord* worker = workers_.Find(identity);
  if (!worker) return;
  if (!graceful) {
    ++counters_.workers_lost;
    if (metrics_) metrics_->WorkerLost();
  }
  spdlog::log(graceful ? spdlog::level::info : spdlog::level::warn, "worker {} removed ({}); {} leased items return",
              worker->worker_id, why, worker->leased.size());
  SetWorkerState(*worker, proto::WORKER_STATE_GONE);
  std::set<ItemRef> leased = std::move(worker->leased);
  worker->leased.clear();
  for (const ItemRef& ref : leased) {
    if (JobRecord* job = jobs_.Find(ref.job_seq)) {
      ReturnItem(*job, ref.partition, true, "lease lost: worker " + worker->worker_id + " " + why, now,
                 worker->worker_id);
    }
  }
  for (const ReplyTo& waiter : worker->drain_waiters) {
    if (graceful) {
      proto::Envelope reply;
      reply.set_correlation_id(waiter.correlation_id);
      auto* body = reply.mutable_drain_worker_reply();
      body->set_worker_id(worker->worker_id);
      body->set_finished(true);
      *body->mutable_phases() = {worker->phases.begin(), worker->phases.end()};
      SendClient(waiter, std::move(reply));
    } else {
      SendError(waiter.identity, waiter.correlation_id, proto::ERROR_KIND_UNKNOWN_WORKER,
                "worker " + worker->worker_id + " " + why + " before it finished draining");
    }
  }
  workers_.Remove(identity);
}

void BrokerCore::WorkerUnreachable(const std::string& identity, Clock::time_point now) {
  RemoveWorker(identity, "unreachable (send failed)", false, now);
}

// ------------------------------------------------------------------ jobs

void BrokerCore::ReturnItem(JobRecord& job, uint32_t partition, bool count_attempt, const std::string& why,
                            Clock::time_point now, const std::string& failed_on) {
  WorkItem& item = job.items[partition];
  if (item.state != WorkItem::State::kLeased) return;
  item.worker_identity.clear();
  if (!failed_on.empty()) item.failed_on = failed_on;
  if (!count_attempt && item.attempts > 0) --item.attempts;
  if (fleet::IsTerminal(job.state)) {
    item.state = WorkItem::State::kDropped;
    return;
  }
  if (count_attempt && item.attempts >= options_.max_attempts) {
    item.state = WorkItem::State::kDropped;
    FinishJob(job, proto::JOB_STATE_DEAD_LETTERED,
              "partition " + std::to_string(partition) + " was leased " + std::to_string(item.attempts) +
                  " times (--max-attempts " + std::to_string(options_.max_attempts) + ") without a result; last: " + why,
              now);
    return;
  }
  item.state = WorkItem::State::kQueued;
  queue_.Insert(job.circuit_id, job.key(partition));  // original key: ahead of newer jobs
  ++counters_.items_redelivered;
  if (metrics_) metrics_->ItemRedelivered();
  spdlog::info("requeued {} (attempts so far {}): {}", ItemName(job.job_seq, partition), item.attempts, why);
}

void BrokerCore::FinishJob(JobRecord& job, proto::JobState state, const std::string& error, Clock::time_point now) {
  job.state = state;
  job.error = error;
  job.finished_unix_s = fleet::UnixNow();
  for (uint32_t p = 0; p < job.items.size(); ++p) {
    WorkItem& item = job.items[p];
    if (item.state == WorkItem::State::kQueued) {
      queue_.Erase(job.circuit_id, job.key(p));
      item.state = WorkItem::State::kDropped;
    }
    // Leased items keep their lease until the worker answers or dies, so its
    // in-flight count stays true; the answer is then dropped.
    item.witness.clear();
    item.witness.shrink_to_fit();
  }
  switch (state) {
    case proto::JOB_STATE_SUCCEEDED:
      ++counters_.jobs_completed;
      if (metrics_) metrics_->JobCompleted(job.circuit_id, job.priority);
      break;
    case proto::JOB_STATE_FAILED:
      ++counters_.jobs_failed;
      if (metrics_) metrics_->JobFailed(job.circuit_id, metrics::FailReason::kProveError);
      break;
    case proto::JOB_STATE_DEAD_LETTERED:
      ++counters_.jobs_dead_lettered;
      if (metrics_) metrics_->JobFailed(job.circuit_id, metrics::FailReason::kDeadLettered);
      break;
    case proto::JOB_STATE_CANCELLED:
      ++counters_.jobs_cancelled;
      if (metrics_) metrics_->JobCancelled();
      break;
    default: break;
  }
  if (state != proto::JOB_STATE_SUCCEEDED) {
    spdlog::warn("job {} ({}) ended {}: {}", job.job_seq, job.request_id, fleet::JobStateName(state), error);
  }
  jobs_.MarkFinished(job, now);

  // The submitter gets the result exactly once; awaiters once each.
  proto::Envelope result;
  FillResult(job, result.mutable_job_result());
  result.set_correlation_id(job.submitter.correlation_id);
  SendClient(job.submitter, result);
  for (const ReplyTo& waiter : job.awaiters) {
    result.set_correlation_id(waiter.correlation_id);
    SendClient(waiter, result);
  }
  job.awaiters.clear();
}

void BrokerCore::FillResult(const JobRecord& job, proto::JobResult* out) const {
  out->set_job_seq(job.job_seq);
  out->set_request_id(job.request_id);
  out->set_circuit_id(job.circuit_id);
  out->set_state(job.state);
  out->set_error(job.error);
  out->set_priority(job.priority);
  out->set_submitted_unix_s(job.submitted_unix_s);
  out->set_finished_unix_s(job.finished_unix_s);
  if (job.state == proto::JOB_STATE_SUCCEEDED) {
    for (const WorkItem& item : job.items) *out->add_partitions() = item.result;
  }
}

// ------------------------------------------------------------------ dispatch

WorkerRecord* BrokerCore::PickWorker(const std::string& circuit, const std::string& avoid) {
  bool skip_avoided = false;
  if (!avoid.empty()) {
    for (const auto& [identity, worker] : workers_.all()) {
      if (worker.worker_id != avoid && worker.state == proto::WORKER_STATE_READY && worker.circuits.count(circuit)) {
        skip_avoided = true;
        break;
      }
    }
  }
  WorkerRecord* best = nullptr;
  for (auto& [identity, worker] : workers_.all()) {
    if (!worker.Dispatchable() || !worker.circuits.count(circuit)) continue;
    if (skip_avoided && worker.worker_id == avoid) continue;
    if (!best || worker.credit > best->credit) best = &worker;
  }
  return best;
}

void BrokerCore::Dispatch(Clock::time_point now) {
  while (queue_.size() > 0) {
    // The best queued item that some worker can take right now.
    const WorkKey* best_key = nullptr;
    const std::string* best_circuit = nullptr;
    WorkerRecord* best_worker = nullptr;
    for (const auto& [circuit, keys] : queue_.by_circuit()) {
      const WorkKey& head = *keys.begin();
      if (best_key && !(head < *best_key)) continue;
      const JobRecord* head_job = jobs_.Find(head.job_seq);
      const std::string& avoid = head_job ? head_job->items[head.partition].failed_on : std::string();
      if (WorkerRecord* worker = PickWorker(circuit, avoid)) {
        best_key = &head;
        best_circuit = &circuit;
        best_worker = worker;
      }
    }
    if (!best_key) return;
    WorkKey key = *best_key;
    std::string circuit = *best_circuit;
    queue_.Erase(circuit, key);

    JobRecord* job = jobs_.Find(key.job_seq);
    WorkItem& item = job->items[key.partition];
    item.state = WorkItem::State::kLeased;
    item.worker_identity = best_worker->identity;
    ++item.attempts;
    if (!item.ever_leased) {
      item.ever_leased = true;
      if (metrics_) {
        metrics_->ObserveQueueWait(job->priority, std::chrono::duration<double>(now - job->submitted_at).count());
      }
    }
    --best_worker->credit;
    best_worker->leased.insert(key.ref());
    if (job->state == proto::JOB_STATE_QUEUED) job->state = proto::JOB_STATE_RUNNING;
    ++counters_.items_dispatched;

    proto::Envelope envelope;
    auto* body = envelope.mutable_job();
    fleet::ToProto(key.ref(), body->mutable_item());
    body->set_partitions(static_cast<uint32_t>(job->items.size()));
    body->set_circuit_id(job->circuit_id);
    body->set_priority(job->priority);
    body->set_witness(item.witness);
    body->set_attempt(item.attempts);
    body->set_request_id(job->request_id);
    body->set_submitted_unix_s(job->submitted_unix_s);
    SendWorker(best_worker->identity, std::move(envelope));
  }
}

Clock::time_point BrokerCore::Tick(Clock::time_point now) {
  if (now >= next_heartbeat_) {
    next_heartbeat_ = now + options_.heartbeat_interval;
    auto deadline = options_.heartbeat_interval * options_.liveness;
    std::vector<std::string> dead;
    for (auto& [identity, worker] : workers_.all()) {
      if (now - worker.last_seen > deadline) {
        dead.push_back(identity);
        continue;
      }
      proto::Envelope beat;
      beat.mutable_heartbeat();
      SendWorker(identity, std::move(beat));
    }
    for (const auto& identity : dead) {
      RemoveWorker(identity, "silent for " + std::to_string(options_.liveness) + " heartbeat intervals", false, now);
    }
    jobs_.ExpireFinishedBefore(now - options_.result_ttl);
  }
  if (!metrics_) return next_heartbeat_;
  if (now >= next_gauges_) {
    ExportGauges(now);
    next_gauges_ = now + std::min<Clock::duration>(options_.heartbeat_interval, kMaxGaugePeriod);
  }
  return std::min(next_heartbeat_, next_gauges_);
}

double BrokerCore::OldestQueuedAgeSeconds(proto::Priority priority, Clock::time_point now) const {
  auto seq = queue_.OldestSeq(priority);
  if (!seq) return 0;
  const JobRecord* job = jobs_.Find(*seq);
  return job ? std::chrono::duration<double>(now - job->submitted_at).count() : 0;
}

void BrokerCore::ExportGauges(Clock::time_point now) {
  for (proto::Priority priority : metrics::kPriorities) {
    metrics_->SetQueue(priority, queue_.depth(priority), OldestQueuedAgeSeconds(priority, now));
  }
  std::array<size_t, metrics::kWorkerStates.size()> by_state{};
  for (const auto& [identity, worker] : workers_.all()) {
    int index = metrics::WorkerStateIndex(worker.state);
    if (index >= 0) ++by_state[index];
  }
  for (size_t i = 0; i < by_state.size(); ++i) metrics_->SetWorkers(metrics::kWorkerStates[i], by_state[i]);
}

// ------------------------------------------------------------------ output

void BrokerCore::SendClient(const ReplyTo& to, proto::Envelope envelope) {
  outbox_.push_back({Outgoing::To::kClient, to.identity, std::move(envelope)});
}

void BrokerCore::SendError(const std::string& identity, uint64_t correlation_id, proto::ErrorKind kind,
                           const std::string& message) {
  SendClient({identity, correlation_id}, fleet::MakeErrorReply(kind, message, correlation_id));
}

void BrokerCore::SendWorker(const std::string& identity, proto::Envelope envelope) {
  outbox_.push_back({Outgoing::To::kWorker, identity, std::move(envelope)});
}

proto::StatusReply BrokerCore::Status(Clock::time_point now) const {
  proto::StatusReply status;
  for (int p = proto::PRIORITY_CRITICAL; p >= proto::PRIORITY_LOW; --p) {
    auto priority = static_cast<proto::Priority>(p);
    auto* queue = status.add_queues();
    queue->set_priority(priority);
    queue->set_depth(static_cast<uint32_t>(queue_.depth(priority)));
    if (queue_.OldestSeq(priority)) queue->set_oldest_age_s(OldestQueuedAgeSeconds(priority, now));
  }
  for (const auto& [identity, worker] : workers_.all()) {
    auto* info = status.add_workers();
    info->set_worker_id(worker.worker_id);
    info->set_host(worker.host);
    info->set_backend(worker.backend);
    info->set_state(worker.state);
    for (const auto& circuit : worker.circuits) info->add_circuits(circuit);
    info->set_credit(worker.credit);
    info->set_in_flight(static_cast<uint32_t>(worker.leased.size()));
    info->set_queue_depth(worker.queue_depth);
    *info->mutable_memory() = worker.memory;
    info->set_last_seen_s(std::chrono::duration<double>(now - worker.last_seen).count());
    info->set_capacity(worker.capacity);
    info->set_items_completed(worker.items_completed);
  }
  status.set_jobs_submitted(counters_.jobs_submitted);
  status.set_jobs_completed(counters_.jobs_completed);
  status.set_jobs_failed(counters_.jobs_failed);
  status.set_jobs_dead_lettered(counters_.jobs_dead_lettered);
  status.set_items_redelivered(counters_.items_redelivered);
  status.set_next_job_seq(jobs_.next_job_seq());
  status.set_frames_malformed(counters_.frames_malformed);
  status.set_frames_wrong_version(counters_.frames_wrong_version);
  status.set_frames_oversized(counters_.frames_oversized);
  status.set_results_stale(counters_.results_stale);
  status.set_replies_undeliverable(counters_.replies_undeliverable);
  status.set_items_handed_back(counters_.items_handed_back);
  status.set_jobs_cancelled(counters_.jobs_cancelled);
  status.set_jobs_in_table(jobs_.size());
  return status;
}

}  // namespace zkfleet::broker
