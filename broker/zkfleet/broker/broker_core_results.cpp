// BrokerCore (broker_core.hpp), what a worker answers for its leases:
// STARTED, RESULT (checked, then verified off the loop before it is stored,
// OnVerified), the client-fault verdicts a worker of another key confirms,
// and HANDBACK. Thread-safety: as BrokerCore (one thread).
#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_core_detail.hpp"
#include "zkfleet/engine/wtns.hpp"
#include "zkfleet/broker/field_checks.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/worker_state.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {

namespace {

using detail::ItemName;
using detail::LeaseName;
using detail::SameLease;
using wire::ItemRef;

}  // namespace

JobRecord* BrokerCore::LiveLease(WorkerRecord& worker, const proto::WorkItemRef& wire) {
  ItemRef ref = wire::FromProto(wire);
  if (!worker.leased.count(ref)) return nullptr;
  const WorkItem* item = LeasedTo(worker, ref);
  if (!item || !SameLease(item->lease, wire.lease())) return nullptr;
  return jobs_.Find(ref.job_seq);
}

void BrokerCore::MarkStarted(JobRecord& job, uint32_t partition, Clock::time_point now) {
  WorkItem& item = job.items[partition];
  if (item.started) return;
  item.started = true;
  item.started_at = now;
  ++item.attempts;
  JournalItem(job, partition);  // not waited for: losing it only under-counts an attempt
}

void BrokerCore::OnStarted(WorkerRecord& worker, const proto::Started& started, Clock::time_point now) {
  for (const proto::WorkItemRef& wire : started.items()) {
    if (JobRecord* job = LiveLease(worker, wire)) {
      if (!job->items[wire.partition()].started) worker.last_progress = now;
      MarkStarted(*job, wire.partition(), now);
    }
  }
}

void BrokerCore::OnResult(WorkerRecord& worker, proto::Result& result, Clock::time_point now) {
  const proto::WorkItemRef& wire = result.item();
  ItemRef ref = wire::FromProto(wire);
  JobRecord* job = LiveLease(worker, wire);
  bool confused = job && (result.circuit_id() != job->circuit_id || result.request_id() != job->request_id);
  if (!job || confused) {
    // Only the live lease's holder may answer, for that lease's job. Anything
    // else (an old lease, an earlier broker life, a worker declared dead, a
    // duplicate, a mix-up) is dropped: it can never become another job's proof.
    const bool holds_ref = worker.leased.count(ref) > 0;
    if (holds_ref && !jobs_.Find(ref.job_seq)) {
      worker.leased.erase(ref);  // the job was cancelled or failed meanwhile: the answer is moot
      return;
    }
    // A ref whose item is no longer leased to this worker (the job ended and
    // was retried, RetryJob: the item's lease is another's now) frees its
    // slot. Its live lease stays, answered with a confused request id or an
    // older lease number.
    if (holds_ref && !job && !LeasedTo(worker, ref)) worker.leased.erase(ref);
    ++counters_.results_stale;
    if (metrics_) metrics_->ResultStale();
    spdlog::warn("dropped a stale result from worker {} for {} lease {}{}", worker.worker_id,
                 ItemName(ref.job_seq, ref.partition), LeaseName(wire.lease()),
                 confused ? " (circuit or request id do not match the leased job)" : "");
    return;
  }
  worker.last_progress = now;
  WorkItem& item = TakeAnswer(worker, *job, ref, now);
  if (item.signals_check) return OnSignalsAnswer(worker, *job, ref.partition, result, now);
  if (result.ok()) {
    proto::PartitionResult out;
    out.set_partition(ref.partition);
    out.set_proof_json(std::move(*result.mutable_proof_json()));
    out.set_public_json(std::move(*result.mutable_public_json()));
    out.set_proof_bytes(std::move(*result.mutable_proof_bytes()));
    *out.mutable_timings() = result.timings();
    out.set_worker_id(worker.worker_id);
    out.set_attempts(item.attempts);
    const VerificationKeys::Entry* key =
        options_.verification_keys ? options_.verification_keys->Find(job->circuit_id) : nullptr;
    if (!key) {
      if (TakesJobsFor(job->circuit_id)) {
        return AcceptResult(*job, ref.partition, worker.worker_id, worker.owner(), std::move(out), now);
      }
      // Its key went (a restart without it): nothing may be stored unchecked,
      // and the worker is not to blame.
      item.verifying = false;
      return FinishJob(*job, proto::JOB_STATE_FAILED,
                       "the broker has no verification key for circuit '" + job->circuit_id +
                           "' any more, so the proof could not be checked; give the broker its key and retry the job",
                       now);
    }
    // The broker checks the proof before it stores it: off this thread.
    // A witness by reference or from inputs binds through the client's
    // digest instead (optional for inputs: without it the proof is checked
    // against the public signals it carries).
    const bool unread = job->witness_unread();
    if (!unread && item.expected_public.empty() && key->n_public > 0) {
      // Leased in an earlier broker life: read what its witness commits to
      // now. Without it nothing can be checked: fail closed, as the broker's
      // storage fault (not the worker's, not the client's).
      std::string fault = "its public signals cannot be read", why;
      if (auto stored = journal_.ReadWitness(job->job_seq, ref.partition, &fault)) {
        const std::string_view bytes = stored->bytes();
        const std::span<const uint8_t> whole(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        if (auto values = engine::PublicSignalsOfWtns({&whole, 1}, key->n_public, &why)) {
          item.expected_public = *values;
        }
        fault = why;
      }
      if (item.expected_public.empty()) {
        ++counters_.storage_faults;
        if (metrics_) metrics_->StorageFault(metrics::StorageFaultKind::kWitness);
        MoveItem(*job, ref.partition, ItemEvent::kDropped);
        item.worker_identity.clear();
        return FinishJob(*job, proto::JOB_STATE_FAILED,
                         "broker storage fault: the stored witness of partition " + std::to_string(ref.partition) +
                             " cannot be read to check its proof (" + fault + "); submit it again under a new "
                             "request id",
                         now);
      }
    }
    VerifyTask task;
    task.id = next_verify_id_++;
    task.verifier = key->verifier;
    task.proof_json = out.proof_json();
    task.public_json = out.public_json();
    task.kind = key->kind;
    task.proof_bytes = out.proof_bytes();
    if (unread) {
      if (ref.partition < job->public_digests.size()) task.expected_public_digest = job->public_digests[ref.partition];
      if (!item.agreed_public_digest.empty()) task.expected_public_digest = item.agreed_public_digest;
      if (key->n_public == 0) task.expected_public.emplace();
    } else if (!item.expected_public.empty() || key->n_public == 0) {
      task.expected_public = item.expected_public;
    }
    item.verifying = true;
    item.verify_id = task.id;
    verifying_[task.id] = {ref, worker.worker_id, worker.owner(), std::move(out)};
    verify_outbox_.push_back(std::move(task));
    return;
  }
  item.worker_identity.clear();
  if (result.retryable()) {
    ReturnItem(*job, ref.partition, "worker " + worker.worker_id + " failed it: " + result.error(), now,
               worker.owner());
    return;
  }
  // "The client's fault" from one worker is a claim, not a fact: when a
  // worker of another key has served the circuit in this broker life, the
  // item goes to such a worker (the attempt refunded: no proof failed on its
  // merits; never to a claimant's key again), waiting for one up to
  // --verdict-confirm-wait-s. Two keys agreeing, the wait running out, or a
  // fleet of one key (nobody else to ask) make it final.
  const std::string verdict = "partition " + std::to_string(ref.partition) + " failed on worker " + worker.worker_id +
                              ": " + result.error();
  if (item.refused_by.empty()) item.first_refusal = verdict;
  item.refused_by.insert(worker.owner());
  bool another_key = false;
  if (auto seen = circuit_owners_.find(job->queue()); seen != circuit_owners_.end()) {
    for (const std::string& owner : seen->second) another_key = another_key || !item.refused_by.count(owner);
  }
  if (item.refused_by.size() < 2 && another_key) {
    spdlog::warn("{}: worker {} says it is the client's fault ({}); asking a worker of another key (within {} ms)",
                 ItemName(job->job_seq, ref.partition), worker.worker_id, result.error(),
                 options_.verdict_confirm_wait.count());
    if (item.refused_by.size() == 1) {
      item.refusal_deadline = now + options_.verdict_confirm_wait;
      verdict_deadlines_.insert({item.refusal_deadline, {job->job_seq, ref.partition}});
    }
    ReturnItem(*job, ref.partition, "worker " + worker.worker_id + " declared it the client's fault", now,
               worker.owner(), /*refund_attempt=*/true);
    return;
  }
  MoveItem(*job, ref.partition, ItemEvent::kDropped);
  FinishJob(*job, proto::JOB_STATE_FAILED, item.first_refusal, now);
}

// How often a second opinion whose wait ended while its lease was out is
// looked at again.
constexpr auto kVerdictRecheck = std::chrono::seconds(1);

void BrokerCore::ExpireVerdicts(Clock::time_point now) {
  while (!verdict_deadlines_.empty() && verdict_deadlines_.begin()->first <= now) {
    const auto [deadline, ref] = *verdict_deadlines_.begin();
    verdict_deadlines_.erase(verdict_deadlines_.begin());
    JobRecord* job = jobs_.Find(ref.job_seq);
    if (!job || ref.partition >= job->items.size()) continue;
    WorkItem& item = job->items[ref.partition];
    Clock::time_point& item_deadline =
        item.signals_check ? item.signals_check->deadline : item.refusal_deadline;
    if (item_deadline != deadline || (!item.signals_check && item.refused_by.empty())) continue;
    if (item.state == WorkItem::State::kLeased) {
      // A lease out to another key decides when it answers; should it come
      // back unanswered (its worker gone, the lease reclaimed), the wait is
      // over then: looked at again shortly, never left waiting in the queue.
      item_deadline = now + kVerdictRecheck;
      verdict_deadlines_.insert({item_deadline, ref});
      continue;
    }
    if (item.state != WorkItem::State::kQueued) continue;
    if (item.signals_check) {
      // A held proof's signals check ends with the votes it has.
      ResolveSignals(*job, ref.partition, /*wait_over=*/true, now);
      continue;
    }
    spdlog::warn("{}: no worker of another key confirmed or refuted '{}' within {} ms: it is final",
                 ItemName(ref.job_seq, ref.partition), item.first_refusal, options_.verdict_confirm_wait.count());
    queue_.Erase(job->queue(), job->key(ref.partition));
    MoveItem(*job, ref.partition, ItemEvent::kDropped);
    FinishJob(*job, proto::JOB_STATE_FAILED, item.first_refusal, now);
  }
}


WorkItem& BrokerCore::TakeAnswer(WorkerRecord& worker, JobRecord& job, const ItemRef& ref, Clock::time_point now) {
  worker.leased.erase(ref);
  WorkItem& item = job.items[ref.partition];
  if (!item.started) {  // a RESULT implies it started
    item.started = true;
    item.started_at = now;
    ++item.attempts;
  }
  return item;
}

void BrokerCore::AcceptResult(JobRecord& job, uint32_t partition, const std::string& worker_id,
                              const std::string& owner, proto::PartitionResult out, Clock::time_point now) {
  WorkItem& item = job.items[partition];
  // The key proves: its crashes were not an attack. (Per key, not per worker
  // id: a job that crashes every prover it meets must not fault a fleet of
  // one key through the crashes of several of its workers.)
  strikes_.ForgiveLostWork(owner);
  // Keys that called this provable item the client's fault were wrong.
  for (const std::string& claimant : item.refused_by) {
    if (claimant != owner) {
      Strike(claimant, "", StrikeKind::kFalseVerdict,
             ItemName(job.job_seq, partition) + " was called the client's fault, and " + owner + " proved it", now);
    }
  }
  item.refused_by.clear();
  if (WorkerRecord* worker = workers_.FindByWorkerId(worker_id)) ++worker->items_completed;
  if (item.started_at != Clock::time_point{}) {
    // The circuit's proving time, smoothed so one slow answer moves it little.
    const double seconds = std::chrono::duration<double>(now - item.started_at).count();
    auto [it, fresh] = proving_seconds_.try_emplace(job.circuit_id, seconds);
    if (!fresh) it->second = 0.9 * it->second + 0.1 * seconds;
  }
  item.worker_identity.clear();
  item.verifying = false;
  MoveItem(job, partition, ItemEvent::kProved);
  JournalItem(job, partition, &out);
  journal_.DeleteWitness(job.job_seq, partition);
  if (++job.items_done == job.items.size()) FinishJob(job, proto::JOB_STATE_SUCCEEDED, "", now);
}

void BrokerCore::RejectResult(const std::string& worker_id, const std::string& owner, JobRecord& job,
                              uint32_t partition, metrics::ResultRejectReason reason, const std::string& why,
                              Clock::time_point now) {
  ++counters_.results_rejected;
  if (metrics_) metrics_->ResultRejected(reason);
  spdlog::error("rejected the RESULT of worker {} for {}: {}; the item goes to another worker", worker_id,
                ItemName(job.job_seq, partition), why);
  job.items[partition].verifying = false;
  // The worker's fault, not the job's: the attempt is refunded, so a forging
  // worker cannot dead-letter a job.
  ReturnItem(job, partition, "worker " + worker_id + "'s RESULT was rejected: " + why, now, owner,
             /*refund_attempt=*/true);
  // Struck even when the worker has gone meanwhile: the strike is its owner's.
  Strike(owner, worker_id, StrikeKind::kRejectedResult, "worker " + worker_id + "'s RESULT rejected: " + why, now);
}

void BrokerCore::OnVerified(const VerifyVerdict& verdict, Clock::time_point now) {
  if (metrics_) metrics_->ObserveVerify(verdict.seconds);
  auto pending = verifying_.find(verdict.id);
  if (pending == verifying_.end()) return;
  Verifying done = std::move(pending->second);
  verifying_.erase(pending);
  JobRecord* job = jobs_.Find(done.ref.job_seq);
  if (!job || done.ref.partition >= job->items.size()) return;  // ended meanwhile
  WorkItem& item = job->items[done.ref.partition];
  if (item.state != WorkItem::State::kLeased || !item.verifying || item.verify_id != verdict.id) return;
  if (verdict.ok) {
    // The client gets what was verified, as the broker writes it.
    done.result.set_proof_json(verdict.proof_json);
    done.result.set_public_json(verdict.public_json);
    if (!item.agreed_public_digest.empty()) done.result.set_signals_keys(item.agreed_public_keys);
    if (NeedsSignalsCheck(*job, done.ref.partition)) {
      return HoldForSignalsCheck(*job, done.ref.partition, done.worker_id, done.owner, std::move(done.result), now);
    }
    return AcceptResult(*job, done.ref.partition, done.worker_id, done.owner, std::move(done.result), now);
  }
  metrics::ResultRejectReason reason = metrics::ResultRejectReason::kInvalidProof;
  if (verdict.reason == VerifyReason::kWrongPublicSignals) reason = metrics::ResultRejectReason::kWrongPublicSignals;
  if (verdict.reason == VerifyReason::kMalformed) reason = metrics::ResultRejectReason::kMalformed;
  RejectResult(done.worker_id, done.owner, *job, done.ref.partition, reason,
               "the broker's verification failed: " + verdict.why, now);
}

void BrokerCore::OnHandback(WorkerRecord& worker, const proto::Handback& handback, Clock::time_point now) {
  auto give_back = [&](const proto::WorkItemRef& wire, bool started) {
    JobRecord* job = LiveLease(worker, wire);
    ItemRef ref = wire::FromProto(wire);
    if (!job) {
      // Not (or no longer) its live lease; if the job ended, or the item is
      // leased elsewhere now, its slot just goes.
      if (worker.leased.count(ref) && !LeasedTo(worker, ref)) worker.leased.erase(ref);
      return;
    }
    worker.leased.erase(ref);
    ++counters_.items_handed_back;
    if (metrics_) metrics_->ItemHandedBack();
    if (started) MarkStarted(*job, ref.partition, now);  // aborted: it ran, the attempt counts
    ReturnItem(*job, ref.partition, "handed back by worker " + worker.worker_id + " (" + handback.reason() + ")", now,
               started ? worker.owner() : std::string());
  };
  for (const auto& item : handback.items()) give_back(item, false);
  for (const auto& item : handback.aborted()) give_back(item, true);
  spdlog::info("worker {} handed back {} unstarted and {} aborted items ({})", worker.worker_id,
               handback.items_size(), handback.aborted_size(), handback.reason());
}

}  // namespace zkfleet::broker
