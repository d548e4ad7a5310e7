// BrokerCore (broker_core.hpp), the jobs' way through: items returned to the
// queue, jobs finished (and their results loaded back), dispatch to workers,
// and the tick (deadlines, overrun leases, retention sweeps, gauges).
// Thread-safety: as BrokerCore (one thread).
#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>
#include <array>

#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_core_detail.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {

namespace {

using detail::FramesOf;
using detail::ItemName;
using wire::ItemRef;
using wire::WorkKey;

// Longest gap between two updates of the queue and worker gauges.
constexpr Clock::duration kMaxGaugePeriod = std::chrono::seconds(1);
// Journal records looked at per tick by each retention sweep.
constexpr size_t kExpiryBudget = 100000;

}  // namespace

// ------------------------------------------------------------------ jobs

WorkItem* BrokerCore::LeasedTo(const WorkerRecord& worker, const ItemRef& ref) {
  JobRecord* job = jobs_.Find(ref.job_seq);
  if (!job || ref.partition >= job->items.size()) return nullptr;
  WorkItem& item = job->items[ref.partition];
  if (item.state != WorkItem::State::kLeased || item.worker_identity != worker.identity) return nullptr;
  return &item;
}

size_t BrokerCore::LiveLeaseCount(const WorkerRecord& worker) {
  size_t live = 0;
  for (const ItemRef& ref : worker.leased) live += LeasedTo(worker, ref) != nullptr;
  return live;
}

void BrokerCore::ReturnItem(JobRecord& job, uint32_t partition, const std::string& why, Clock::time_point now,
                            const std::string& failed_on, bool refund_attempt) {
  WorkItem& item = job.items[partition];
  if (item.state != WorkItem::State::kLeased) return;
  const bool was_started = item.started;
  item.worker_identity.clear();
  item.lease_worker_id.clear();
  item.lease = {};
  item.started = false;
  if (!failed_on.empty()) item.failed_on = failed_on;
  if (was_started && refund_attempt && item.attempts > 0) --item.attempts;
  if (was_started && !refund_attempt && item.attempts >= options_.max_attempts) {
    MoveItem(job, partition, ItemEvent::kDropped);
    FinishJob(job, proto::JOB_STATE_DEAD_LETTERED,
              "partition " + std::to_string(partition) + " started " + std::to_string(item.attempts) +
                  " times (--max-attempts " + std::to_string(options_.max_attempts) + ") without a result; last: " + why,
              now);
    return;
  }
  MoveItem(job, partition, ItemEvent::kReturned);
  if (was_started) JournalItem(job, partition);  // the journal said STARTED
  queue_.Insert(job.queue(), job.key(partition));  // original key: ahead of newer jobs
  ++counters_.items_redelivered;
  if (metrics_) metrics_->ItemRedelivered();
  spdlog::info("requeued {} (started attempts so far {}): {}", ItemName(job.job_seq, partition), item.attempts, why);
}

void BrokerCore::FinishJob(JobRecord& job, proto::JobState state, const std::string& error, Clock::time_point now) {
  (void)now;
  double finished_unix_s = wire::UnixNow();
  for (uint32_t p = 0; p < job.items.size(); ++p) {
    WorkItem& item = job.items[p];
    if (item.state == WorkItem::State::kQueued) queue_.Erase(job.queue(), job.key(p));
    if (item.state == WorkItem::State::kLeased && item.worker_identity.empty()) {
      // An orphaned lease: nobody will answer for it now.
      if (auto it = orphans_.find(item.lease_worker_id); it != orphans_.end()) {
        it->second.erase({job.job_seq, p});
        if (it->second.empty()) orphans_.erase(it);
      }
    }
    // Leased items stay in their worker's lease set until it answers or dies,
    // so its in-flight count stays true; the answer is then dropped.
    if (item.state != WorkItem::State::kDone) {
      if (item.state == WorkItem::State::kLeased && item.started) {
        MoveItem(job, p, ItemEvent::kDropped);
        JournalItem(job, p);
      }
      MoveItem(job, p, ItemEvent::kDropped);
      // A dead-lettered job's witnesses stay until its result expires (the
      // journal drops them then): RetryJob proves them again. Its workers
      // failed it, not its payload; a FAILED job's payload is its own fault
      // and goes now (kept, a client could fill the disk with failures).
      if (state != proto::JOB_STATE_DEAD_LETTERED) journal_.DeleteWitness(job.job_seq, p);
    }
  }
  JournalJob(job, state, finished_unix_s, error);
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
    case proto::JOB_STATE_EXPIRED:
      ++counters_.jobs_expired;
      if (metrics_) metrics_->JobFailed(job.circuit_id, metrics::FailReason::kExpired);
      break;
    default: break;
  }
  if (state != proto::JOB_STATE_SUCCEEDED) {
    spdlog::warn("job {} ({} of client {}) ended {}: {}", job.job_seq, job.request_id, job.client_id,
                 wire::JobStateName(state), error);
  }
  admission_.Remove(job.client_id, job.items.size(), job.witness_bytes);
  if (job.deadline_unix_s > 0) deadlines_.erase({job.deadline_unix_s, job.job_seq});

  // Each waiter gets the result once (the server sends it after the commit).
  proto::Envelope result;
  LoadResult(job.job_seq, result.mutable_job_result());
  for (const ReplyTo& waiter : job.waiters) {
    result.set_correlation_id(waiter.correlation_id);
    SendClient(waiter, result);
  }
  jobs_.Erase(job.job_seq);
}

bool BrokerCore::LoadResult(uint64_t job_seq, proto::JobResult* out) {
  auto job = journal_.GetJob(job_seq);
  if (!job) return false;
  out->set_job_seq(job_seq);
  out->set_request_id(job->request_id());
  out->set_circuit_id(job->circuit_id());
  out->set_state(job->state());
  out->set_error(job->error());
  out->set_priority(job->priority());
  out->set_submitted_unix_s(job->submitted_unix_s());
  out->set_finished_unix_s(job->finished_unix_s());
  if (job->state() == proto::JOB_STATE_SUCCEEDED) {
    for (auto& [partition, item] : journal_.Items(job_seq)) {
      if (item.state() == journal::Item::STATE_DONE) *out->add_partitions() = std::move(*item.mutable_result());
    }
  }
  return true;
}

// ------------------------------------------------------------------ dispatch

WorkerRecord* BrokerCore::PickWorker(const std::string& queue, const std::string& avoid,
                                     const std::set<std::string>* exclude, const std::string* fetch_url) {
  // A witness by reference goes only to a worker that says it fetches there:
  // one host without --fetch-allow must not burn the job's attempts.
  auto fetches = [&](const WorkerRecord& worker) {
    if (!fetch_url) return true;
    return std::any_of(worker.fetch_prefixes.begin(), worker.fetch_prefixes.end(),
                       [&](const std::string& prefix) { return FetchPrefixCovers(prefix, *fetch_url); });
  };
  bool from_inputs = false;
  const std::string circuit(CircuitOfQueue(queue, &from_inputs));
  // A job from inputs goes only to a worker that computes the circuit's
  // witnesses; holding the circuit (its proving key) is not enough.
  auto serves = [&](const WorkerRecord& worker) {
    return from_inputs ? worker.generates.count(circuit) > 0 : worker.circuits.count(circuit) > 0;
  };
  bool skip_avoided = false;
  if (!avoid.empty()) {
    for (const auto& [identity, worker] : workers_.all()) {
      if (worker.owner() != avoid && worker.state == proto::WORKER_STATE_READY && serves(worker) && fetches(worker)) {
        skip_avoided = true;
        break;
      }
    }
  }
  WorkerRecord* best = nullptr;
  for (auto& [identity, worker] : workers_.all()) {
    if (!worker.Dispatchable() || !serves(worker)) continue;
    if (skip_avoided && worker.owner() == avoid) continue;
    if (exclude && exclude->count(worker.owner())) continue;  // its key called the item the client's fault
    if (!fetches(worker)) continue;
    // Fair: the worker with the fewest unanswered leases first, then the
    // one with the most room; announced capacity buys nothing (credit is capped).
    if (!best || worker.leased.size() < best->leased.size() ||
        (worker.leased.size() == best->leased.size() && worker.credit > best->credit)) {
      best = &worker;
    }
  }
  return best;
}

void BrokerCore::Dispatch(Clock::time_point now) {
  double now_unix = -1;  // read once, lazily
  while (queue_.size() > 0) {
    // The best queued item that some worker can take right now.
    const WorkKey* best_key = nullptr;
    const std::string* best_circuit = nullptr;
    WorkerRecord* best_worker = nullptr;
    for (const auto& [queue, keys] : queue_.by_circuit()) {  // a queue per circuit (and per circuit from inputs)
      const WorkKey& head = *keys.begin();
      if (best_key && !(head < *best_key)) continue;
      const JobRecord* head_job = jobs_.Find(head.job_seq);
      const std::string& avoid = head_job ? head_job->items[head.partition].failed_on : std::string();
      // Keys never to lease it to: those that called it the client's fault,
      // or, in a signals check, those that gave their signals already.
      const WorkItem* head_item = head_job ? &head_job->items[head.partition] : nullptr;
      const std::set<std::string>* claimants =
          !head_item ? nullptr : head_item->signals_check ? &head_item->signals_check->asked : &head_item->refused_by;
      const std::string* fetch_url = head_job && head.partition < head_job->witness_refs.size()
                                         ? &head_job->witness_refs[head.partition].url()
                                         : nullptr;
      if (WorkerRecord* worker = PickWorker(queue, avoid, claimants, fetch_url)) {
        best_key = &head;
        best_circuit = &queue;
        best_worker = worker;
      }
    }
    if (!best_key) return;
    WorkKey key = *best_key;
    std::string circuit = *best_circuit;
    JobRecord* job = jobs_.Find(key.job_seq);
    if (job->deadline_unix_s > 0) {
      if (now_unix < 0) now_unix = wire::UnixNow();
      if (job->deadline_unix_s <= now_unix) {  // stale work is not proved
        FinishJob(*job, proto::JOB_STATE_EXPIRED, "its deadline passed before it was proved", now);
        continue;
      }
    }
    queue_.Erase(circuit, key);
    proto::Envelope envelope;
    auto* body = envelope.mutable_job();
    // The witness goes out as its own frame, straight from the journal (a
    // mapped blob file: no copy on the broker); a reference goes in the JOB
    // and the worker fetches the bytes; an input.json goes in the JOB and the
    // worker computes the witness.
    const bool by_reference = !job->witness_refs.empty();
    const bool from_inputs = !job->inputs.empty();
    std::string fault = from_inputs ? "the job's inputs do not match its partitions"
                                    : "the job's references do not match its partitions";
    std::optional<fleet::WitnessFrames> witness;
    if (by_reference) {
      if (key.partition < job->witness_refs.size()) witness.emplace();
    } else if (from_inputs) {
      if (key.partition < job->inputs.size()) witness.emplace();
    } else if (auto stored = journal_.ReadWitness(job->job_seq, key.partition, &fault)) {
      witness = FramesOf(std::move(*stored));
    }
    if (!witness) {
      // The broker's storage failed this job, not its client: it alone ends.
      ++counters_.storage_faults;
      if (metrics_) metrics_->StorageFault(metrics::StorageFaultKind::kWitness);
      MoveItem(*job, key.partition, ItemEvent::kDropped);
      FinishJob(*job, proto::JOB_STATE_FAILED,
                "broker storage fault: the stored witness of partition " + std::to_string(key.partition) +
                    " cannot be served (" + fault + "); the client's submission was fine: submit it again "
                    "under a new request id",
                now);
      continue;
    }

    WorkItem& item = job->items[key.partition];
    if (!job->witness_unread() && item.expected_public.empty() && options_.verification_keys) {
      // What its proof must show as public signals, read while the witness is at hand.
      if (const auto* vk = options_.verification_keys->Find(job->circuit_id); vk && vk->n_public > 0) {
        std::string why;
        if (auto values = PublicSignalsOfWitness(*witness, vk->n_public, &why)) {
          item.expected_public = std::move(*values);
        } else {
          MoveItem(*job, key.partition, ItemEvent::kDropped);
          FinishJob(*job, proto::JOB_STATE_FAILED,
                    "the witness of partition " + std::to_string(key.partition) + " does not fit circuit '" +
                        job->circuit_id + "' (" + why + ")",
                    now);
          continue;
        }
      }
    }
    MoveItem(*job, key.partition, ItemEvent::kLeased);
    item.leased_at = now;
    item.started_at = {};
    item.worker_identity = best_worker->identity;
    item.lease_worker_id = best_worker->worker_id;
    item.started = false;
    item.lease.set_epoch(epoch_);
    item.lease.set_number(next_lease_++);
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

    wire::ToProto(key.ref(), body->mutable_item());
    *body->mutable_item()->mutable_lease() = item.lease;
    body->set_partitions(static_cast<uint32_t>(job->items.size()));
    body->set_circuit_id(job->circuit_id);
    body->set_priority(job->priority);
    body->set_attempt(item.attempts + 1);
    body->set_request_id(job->request_id);
    body->set_submitted_unix_s(job->submitted_unix_s);
    body->set_deadline_unix_s(job->deadline_unix_s);
    body->set_witness_bytes(witness->size());
    if (by_reference) *body->mutable_witness_ref() = job->witness_refs[key.partition];
    if (from_inputs) body->set_input_json(job->inputs[key.partition]);
    if (job->witness_unread() && key.partition < job->public_digests.size()) {
      body->set_public_signals_sha256(job->public_digests[key.partition]);
    }
    if (!item.agreed_public_digest.empty()) body->set_public_signals_sha256(item.agreed_public_digest);
    if (item.signals_check) body->set_signals_only(true);
    outbox_.emplace_back(Outgoing::To::kWorker, best_worker->identity, std::move(envelope),
                         std::move(witness->chunks));
  }
}

Clock::time_point BrokerCore::Tick(Clock::time_point now) {
  NoteTime(now);
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
      const std::string id = workers_.Find(identity)->worker_id;
      RemoveWorker(identity, "silent for " + std::to_string(options_.liveness) + " heartbeat intervals", false, now);
      ForgetDrainHold(id);
    }
    ReclaimLeases(now);
    ExpireVerdicts(now);
    // Recovered leases whose worker did not come back within the window. The
    // due workers are found first and their leases returned after the walk:
    // a return can end a job (its last attempt), and FinishJob takes that
    // job's other orphaned leases out of orphans_.
    std::vector<std::string> due_workers;
    for (auto& [worker_id, leases] : orphans_) {
      bool due = false;
      for (const ItemRef& ref : leases) {
        JobRecord* job = jobs_.Find(ref.job_seq);
        if (job && job->items[ref.partition].orphan_until == Clock::time_point{}) {
          job->items[ref.partition].orphan_until = now + options_.heartbeat_interval * options_.liveness;
        }
        due = due || !job || job->items[ref.partition].orphan_until <= now;
      }
      if (due) due_workers.push_back(worker_id);
    }
    for (const std::string& worker_id : due_workers) {
      auto it = orphans_.find(worker_id);
      if (it == orphans_.end()) continue;  // its leases ended with their jobs meanwhile
      const std::set<ItemRef> leases = std::move(it->second);
      orphans_.erase(it);
      for (const ItemRef& ref : leases) {
        JobRecord* job = jobs_.Find(ref.job_seq);
        if (!job) continue;
        WorkItem& item = job->items[ref.partition];
        if (item.state != WorkItem::State::kLeased || !item.worker_identity.empty() || item.lease_worker_id != worker_id) {
          continue;
        }
        ReturnItem(*job, ref.partition, "worker " + worker_id + " did not come back after the broker restarted", now,
                   OwnerOf(worker_id));
      }
    }
    // Jobs past their deadline fail as EXPIRED, even with no worker to ask.
    double now_unix = wire::UnixNow();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now_unix) {
      uint64_t seq = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      if (JobRecord* job = jobs_.Find(seq)) {
        FinishJob(*job, proto::JOB_STATE_EXPIRED, "its deadline passed before it was proved", now);
      }
    }
    // Retention: results, then request ids (the dedup window).
    double ttl_s = std::chrono::duration<double>(options_.result_ttl).count();
    double dedup_s = std::chrono::duration<double>(options_.dedup_window).count();
    if (!unavailable_) {  // each would be a write that fails
      journal_.ExpireResults(now_unix - ttl_s, kExpiryBudget);
      journal_.ExpireRequests(now_unix - std::max(dedup_s, ttl_s), kExpiryBudget);
    }
  }
  if (!metrics_) return next_heartbeat_;
  if (now >= next_gauges_) {
    ExportGauges(now);
    next_gauges_ = now + std::min<Clock::duration>(options_.heartbeat_interval, kMaxGaugePeriod);
  }
  return std::min(next_heartbeat_, next_gauges_);
}

Clock::duration BrokerCore::OverrunLimit(const std::string& circuit) const {
  Clock::duration limit = options_.lease_overrun_min;
  if (auto seen = proving_seconds_.find(circuit); seen != proving_seconds_.end()) {
    auto scaled = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seen->second * options_.lease_overrun_factor));
    limit = std::max(limit, scaled);
  }
  return limit;
}

void BrokerCore::ReclaimLeases(Clock::time_point now) {
  struct Reclaim {
    std::string identity;
    ItemRef ref;
    bool started;
    std::string why;
  };
  std::vector<Reclaim> due;
  for (auto& [identity, worker] : workers_.all()) {
    // A job from inputs is STARTED when it enters the worker's witness
    // generation: its limit adds the time the generations the worker has
    // started may take, as the worker announced its limits (Ready), so a
    // slow but honest generation is never taken for a hoarding worker.
    Clock::duration generation{};
    if (worker.generation_wall.count() > 0) {
      uint64_t generating = 0;
      for (const ItemRef& ref : worker.leased) {
        const WorkItem* item = LeasedTo(worker, ref);
        if (item && item->started && !jobs_.Find(ref.job_seq)->inputs.empty()) ++generating;
      }
      const uint64_t rounds = (generating + worker.generation_slots - 1) / worker.generation_slots;
      generation = worker.generation_wall * static_cast<int64_t>(rounds);
    }
    bool proving = false;  // a started lease in time: its queued leases wait behind it
    // Only its live leases: an old round's ref times nothing (its item's
    // clocks are the new round's, another worker's).
    for (const ItemRef& ref : worker.leased) {
      const WorkItem* live = LeasedTo(worker, ref);
      if (!live) continue;
      const WorkItem& item = *live;
      const JobRecord* job = jobs_.Find(ref.job_seq);
      if (!item.started || item.started_at == Clock::time_point{}) continue;
      const Clock::duration limit = OverrunLimit(job->circuit_id) + (job->inputs.empty() ? Clock::duration{} : generation);
      if (now - item.started_at > limit) {
        due.push_back({identity, ref, true,
                       "started " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - item.started_at).count()) +
                           " s ago, past its circuit's limit of " +
                           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) + " s"});
      } else {
        proving = true;
      }
    }
    if (proving) continue;
    for (const ItemRef& ref : worker.leased) {
      const WorkItem* live = LeasedTo(worker, ref);
      if (!live) continue;
      const WorkItem& item = *live;
      if (item.started) continue;
      const Clock::time_point since = std::max(item.leased_at, worker.last_progress);
      if (now - since > options_.lease_start_timeout) {
        due.push_back({identity, ref, false,
                       "not started within " + std::to_string(options_.lease_start_timeout.count()) +
                           " ms (--lease-start-timeout) while the worker proved nothing"});
      }
    }
  }
  for (const Reclaim& reclaim : due) {
    WorkerRecord* worker = workers_.Find(reclaim.identity);
    JobRecord* job = jobs_.Find(reclaim.ref.job_seq);
    if (!worker || !job || !worker->leased.count(reclaim.ref) || !LeasedTo(*worker, reclaim.ref)) continue;
    worker->leased.erase(reclaim.ref);
    ++counters_.leases_reclaimed;
    if (metrics_) {
      metrics_->LeaseReclaimed(reclaim.started ? metrics::ReclaimReason::kOverran : metrics::ReclaimReason::kNotStarted);
    }
    const std::string why = "lease taken back from worker " + worker->worker_id + ": " + reclaim.why;
    spdlog::warn("{} ({})", why, ItemName(reclaim.ref.job_seq, reclaim.ref.partition));
    const std::string owner = worker->owner();
    ReturnItem(*job, reclaim.ref.partition, why, now, owner);
    Strike(owner, worker->worker_id, StrikeKind::kReclaimedLease, why, now);
  }
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
  metrics_->SetLive(admission_.items(), admission_.witness_bytes());
  metrics_->epoch.Set(static_cast<double>(epoch_));
}

}  // namespace zkfleet::broker
