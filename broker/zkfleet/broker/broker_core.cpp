// BrokerCore (broker_core.hpp), part 1 of 4: construction, recovery from the
// journal, the journal records of jobs and items, what goes out (replies,
// errors, worker messages) and the status report. The other parts:
// broker_core_clients.cpp, broker_core_jobs.cpp and broker_core_admin.cpp
// (client requests), broker_core_workers.cpp and broker_core_results.cpp
// (worker messages and results), broker_core_dispatch.cpp (returns, finishing,
// dispatch, the tick). Thread-safety: as BrokerCore (one thread).
#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>
#include <functional>

#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_core_detail.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {

namespace detail {

std::string ItemName(uint64_t job_seq, uint32_t partition) {
  return "job_seq=" + std::to_string(job_seq) + " partition=" + std::to_string(partition);
}

fleet::WitnessFrames FramesOf(storage::StoredWitness stored) {
  if (stored.mapped()) {
    const storage::StoredWitness::Mapping mapping = stored.ReleaseMapping();
    if (mapping.size == 0) return {};
    return fleet::ChunkWitness(fleet::FrameFromMapping(mapping.base, mapping.size));
  }
  fleet::WitnessFrames witness;
  witness.chunks.push_back(fleet::FrameFromString(stored.TakeBytes()));
  return witness;
}

}  // namespace detail

BrokerCore::BrokerCore(BrokerOptions options, Journal& journal, metrics::BrokerMetrics* metrics)
    : options_(std::move(options)), journal_(journal), admission_(options_.admission), metrics_(metrics) {
  epoch_ = journal_.BeginLife();
  Recover(Clock::now());
}

BrokerCore::BrokerCore(BrokerOptions options, Journal& journal, metrics::BrokerMetrics* metrics, const Resume& resume)
    : options_(std::move(options)), journal_(journal), admission_(options_.admission), metrics_(metrics) {
  epoch_ = resume.epoch;
  next_lease_ = resume.next_lease;
  next_verify_id_ = resume.next_verify_id;
  counters_ = resume.counters;
  allowed_worker_keys_ = resume.worker_keys;
  allowed_client_keys_ = resume.client_keys;
  counters_.jobs_recovered = 0;
  counters_.leases_recovered = 0;
  Recover(Clock::now());
  // Clients waiting on live connections wait on: each gets its result once.
  for (const auto& [seq, waiters] : resume.waiters) {
    if (JobRecord* job = jobs_.Find(seq)) {
      job->waiters.insert(job->waiters.end(), waiters.begin(), waiters.end());
      continue;
    }
    proto::Envelope result;
    if (!LoadResult(seq, result.mutable_job_result())) continue;
    for (const ReplyTo& waiter : waiters) {
      result.set_correlation_id(waiter.correlation_id);
      SendClient(waiter, result);
    }
  }
}

BrokerCore::Resume BrokerCore::ResumeState() const {
  Resume resume{epoch_, next_lease_, next_verify_id_, counters_, allowed_worker_keys_, allowed_client_keys_, {}};
  for (const auto& [seq, job] : jobs_.all()) {
    if (!job.waiters.empty()) resume.waiters[seq] = job.waiters;
  }
  return resume;
}

bool BrokerCore::InKnownCircuitGrace(const std::string& circuit, Clock::time_point now, bool from_inputs) const {
  const auto& known = from_inputs ? known_generators_ : known_circuits_;
  return known.count(circuit) && life_began_ && now - *life_began_ < options_.KnownCircuitGrace();
}

bool BrokerCore::TakesJobsFor(const std::string& circuit) const {
  return (options_.verification_keys && options_.verification_keys->Find(circuit)) ||
         options_.unverified_circuits.count(circuit) || options_.unverified_circuits.count("*");
}

namespace {

// Adds the circuits of `owner` new to `known` (and the journal, through
// `remember`), within the table's bound and the owner's share of it.
void RememberFor(const std::string& owner, const std::set<std::string>& circuits, std::set<std::string>& known,
                 std::map<std::string, size_t>& by_owner, size_t max_total, size_t max_per_owner,
                 const std::function<bool(const std::string&)>& takes_jobs,
                 const std::function<void(const std::string&)>& remember) {
  size_t& mine = by_owner[owner];
  size_t refused = 0;
  for (const std::string& circuit : circuits) {
    if (known.count(circuit) || !takes_jobs(circuit)) continue;
    if (known.size() >= max_total || mine >= max_per_owner) {
      ++refused;
      continue;
    }
    known.insert(circuit);
    ++mine;
    remember(circuit);  // a journal write only for a circuit new to this journal
  }
  if (refused > 0) {
    spdlog::warn("{}: {} announced circuit(s) not remembered for the restart grace ({} of {} remembered for it, "
                 "{} of {} in all)",
                 owner, refused, mine, max_per_owner, known.size(), max_total);
  }
}

}  // namespace

void BrokerCore::RememberCircuits(const std::string& owner, const std::set<std::string>& circuits) {
  RememberFor(owner, circuits, known_circuits_, known_by_owner_, kMaxKnownCircuits, kMaxKnownCircuitsPerOwner,
              [this](const std::string& c) { return TakesJobsFor(c); },
              [&](const std::string& c) { journal_.RememberCircuit(c, owner); });
}

void BrokerCore::RememberGenerators(const std::string& owner, const std::set<std::string>& circuits) {
  RememberFor(owner, circuits, known_generators_, known_generators_by_owner_, kMaxKnownCircuits,
              kMaxKnownCircuitsPerOwner, [this](const std::string& c) { return TakesJobsFor(c); },
              [&](const std::string& c) { journal_.RememberGenerator(c, owner); });
}

void BrokerCore::Recover(Clock::time_point now) {
  for (auto& [circuit, owner] : journal_.KnownCircuitOwners()) {
    if (known_circuits_.size() >= kMaxKnownCircuits) break;
    if (known_circuits_.insert(std::move(circuit)).second) ++known_by_owner_[owner];
  }
  for (auto& [circuit, owner] : journal_.KnownGeneratorOwners()) {
    if (known_generators_.size() >= kMaxKnownCircuits) break;
    if (known_generators_.insert(std::move(circuit)).second) ++known_generators_by_owner_[owner];
  }
  std::vector<uint64_t> live;
  journal_.ForEachJob([&](const journal::Job& stored) {
    if (wire::IsTerminal(stored.state())) return;
    jobs_.Add(JobFromJournal(stored, now));
    live.push_back(stored.job_seq());
  });
  for (uint64_t seq : live) {
    ResumeJob(*jobs_.Find(seq));
    ++counters_.jobs_recovered;
  }
  spdlog::info("journal {}: broker epoch {}, next job_seq {}, {} live jobs recovered ({} items queued, {} started "
               "leases waiting for their workers)",
               journal_.options().dir.string(), epoch_, journal_.next_job_seq(), counters_.jobs_recovered,
               queue_.size(), counters_.leases_recovered);
}

JobRecord BrokerCore::JobFromJournal(const journal::Job& stored, Clock::time_point now) const {
  JobRecord job;
  job.job_seq = stored.job_seq();
  job.client_id = stored.client_id();
  job.request_id = stored.request_id();
  job.circuit_id = stored.circuit_id();
  job.priority = stored.priority();
  job.witness_bytes = stored.witness_bytes();
  job.payload_hash = stored.payload_hash();
  job.submitted_unix_s = stored.submitted_unix_s();
  job.deadline_unix_s = stored.deadline_unix_s();
  job.witness_refs.assign(stored.witness_refs().begin(), stored.witness_refs().end());
  job.public_digests.assign(stored.public_signals_sha256().begin(), stored.public_signals_sha256().end());
  job.inputs.assign(stored.inputs().begin(), stored.inputs().end());
  job.retries = stored.retries();
  job.history.assign(stored.history().begin(), stored.history().end());
  // Steady-clock times do not survive a restart; rebuild from the wall clock.
  job.submitted_at = now - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                               std::max(0.0, wire::UnixNow() - stored.submitted_unix_s())));
  job.items.resize(stored.partitions());
  uint64_t per_item = stored.partitions() ? stored.witness_bytes() / stored.partitions() : 0;
  for (auto& item : job.items) item.witness_bytes = per_item;
  for (size_t p = 0; p < job.witness_refs.size() && p < job.items.size(); ++p) {
    job.items[p].witness_bytes = job.witness_refs[p].size();
  }
  for (size_t p = 0; p < job.inputs.size() && p < job.items.size(); ++p) {
    job.items[p].witness_bytes = job.inputs[p].size();
  }
  return job;
}

void BrokerCore::ResumeJob(JobRecord& job) {
  const uint64_t seq = job.job_seq;
  for (auto& [partition, stored] : journal_.Items(seq)) {
    if (partition >= job.items.size()) continue;
    WorkItem& item = job.items[partition];
    item.attempts = stored.attempts();
    item.failed_on = stored.failed_on();
    switch (stored.state()) {
      case journal::Item::STATE_DONE:
        item.state = WorkItem::State::kDone;
        ++job.items_done;
        break;
      case journal::Item::STATE_DROPPED: item.state = WorkItem::State::kDropped; break;
      case journal::Item::STATE_STARTED:
        // Its worker may still be proving it: the lease waits for that
        // worker's READY (which lists it) until the liveness window ends.
        item.state = WorkItem::State::kLeased;
        item.started = true;
        item.ever_leased = true;
        item.lease = stored.lease();
        item.lease_worker_id = stored.worker_id();
        item.orphan_until = {};  // the window starts at the first Tick (the loop is serving then)
        orphans_[stored.worker_id()].insert({seq, partition});
        // Only the key that held it may claim it back.
        if (!stored.worker_key().empty()) worker_keys_.emplace(stored.worker_id(), stored.worker_key());
        ++counters_.leases_recovered;
        break;
      default: break;
    }
  }
  job.state = proto::JOB_STATE_QUEUED;
  for (uint32_t p = 0; p < job.items.size(); ++p) {
    const WorkItem& item = job.items[p];
    if (item.state == WorkItem::State::kQueued) queue_.Insert(job.queue(), job.key(p));
    if (item.state != WorkItem::State::kQueued) job.state = proto::JOB_STATE_RUNNING;
  }
  admission_.Add(job.client_id, job.items.size(), job.witness_bytes);
  if (job.deadline_unix_s > 0) deadlines_.insert({job.deadline_unix_s, seq});
}

void BrokerCore::CountDroppedFrame(metrics::DropReason reason) {
  switch (reason) {
    case metrics::DropReason::kMalformed: ++counters_.frames_malformed; break;
    case metrics::DropReason::kOversized: ++counters_.frames_oversized; break;
    case metrics::DropReason::kVersion: ++counters_.frames_wrong_version; break;
  }
  if (metrics_) metrics_->MessageDropped(reason);
}

// ------------------------------------------------------------------ journal

void BrokerCore::JournalJob(const JobRecord& job, proto::JobState state, double finished_unix_s,
                            const std::string& error) {
  journal::Job stored;
  stored.set_job_seq(job.job_seq);
  stored.set_client_id(job.client_id);
  stored.set_request_id(job.request_id);
  stored.set_circuit_id(job.circuit_id);
  stored.set_priority(job.priority);
  stored.set_state(state);
  stored.set_partitions(static_cast<uint32_t>(job.items.size()));
  stored.set_submitted_unix_s(job.submitted_unix_s);
  stored.set_deadline_unix_s(job.deadline_unix_s);
  stored.set_finished_unix_s(finished_unix_s);
  stored.set_error(error);
  stored.set_witness_bytes(job.witness_bytes);
  stored.set_payload_hash(job.payload_hash);
  stored.set_payload(!job.witness_refs.empty() ? proto::JobInfo::PAYLOAD_REFERENCES
                     : !job.inputs.empty()     ? proto::JobInfo::PAYLOAD_INPUTS
                                               : proto::JobInfo::PAYLOAD_WITNESSES);
  *stored.mutable_witness_refs() = {job.witness_refs.begin(), job.witness_refs.end()};
  *stored.mutable_public_signals_sha256() = {job.public_digests.begin(), job.public_digests.end()};
  stored.set_retries(job.retries);
  *stored.mutable_history() = {job.history.begin(), job.history.end()};
  // A finished job's inputs are not needed again (a resubmission is
  // recognised by the payload hash): a live job keeps them, as a witness's
  // bytes, and so does a dead-lettered one, which RetryJob may run again
  // (as its witnesses: FinishJob).
  if (state == proto::JOB_STATE_QUEUED || state == proto::JOB_STATE_DEAD_LETTERED) {
    *stored.mutable_inputs() = {job.inputs.begin(), job.inputs.end()};
  }
  journal_.PutJob(stored);
}

void BrokerCore::MoveItem(JobRecord& job, uint32_t partition, ItemEvent event) {
  WorkItem& item = job.items[partition];
  const WorkItem::State from = item.state;
  if (item.Move(event)) return;
  // The move is made all the same, as it was before the table: a bug is
  // reported (and fails the tests), not compounded by a state the rest of
  // the broker does not expect after this event.
  item.state = ItemEventTarget(event);
  ++counters_.invalid_item_moves;
  spdlog::error("{}: no move '{}' from state {} in the work item's table (a broker bug); made anyway",
                detail::ItemName(job.job_seq, partition), ItemEventName(event), ItemStateName(from));
}

void BrokerCore::JournalItem(const JobRecord& job, uint32_t partition, const proto::PartitionResult* result) {
  const WorkItem& item = job.items[partition];
  journal::Item stored;
  stored.set_attempts(item.attempts);
  stored.set_failed_on(item.failed_on);
  switch (item.state) {
    case WorkItem::State::kDone:
      stored.set_state(journal::Item::STATE_DONE);
      if (result) *stored.mutable_result() = *result;
      break;
    case WorkItem::State::kDropped: stored.set_state(journal::Item::STATE_DROPPED); break;
    case WorkItem::State::kLeased:
      stored.set_state(item.started ? journal::Item::STATE_STARTED : journal::Item::STATE_QUEUED);
      if (item.started) {
        *stored.mutable_lease() = item.lease;
        stored.set_worker_id(item.lease_worker_id);
        if (auto bound = worker_keys_.find(item.lease_worker_id); bound != worker_keys_.end()) {
          stored.set_worker_key(bound->second);
        }
      }
      break;
    case WorkItem::State::kQueued: stored.set_state(journal::Item::STATE_QUEUED); break;
  }
  journal_.PutItem(job.job_seq, partition, stored);
}


// ------------------------------------------------------------------ output

void BrokerCore::SendClient(const ReplyTo& to, proto::Envelope envelope) {
  outbox_.push_back({Outgoing::To::kClient, to.identity, std::move(envelope)});
}

void BrokerCore::SendError(const ReplyTo& to, proto::ErrorKind kind, const std::string& message,
                           uint32_t retry_after_ms) {
  proto::Envelope reply = wire::MakeErrorReply(kind, message, to.correlation_id);
  reply.mutable_error()->set_retry_after_ms(retry_after_ms);
  SendClient(to, std::move(reply));
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
    for (const auto& circuit : worker.circuits) {
      info->add_circuits(circuit);
      const auto kind = worker.circuit_kinds.find(circuit);
      info->add_circuit_kinds(kind == worker.circuit_kinds.end() ? proto::CIRCUIT_KIND_CIRCOM : kind->second);
    }
    for (const auto& circuit : worker.generates) info->add_generates(circuit);
    info->set_credit(worker.credit);
    info->set_in_flight(static_cast<uint32_t>(worker.leased.size()));
    info->set_queue_depth(worker.queue_depth);
    *info->mutable_memory() = worker.memory;
    info->set_last_seen_s(std::chrono::duration<double>(now - worker.last_seen).count());
    info->set_capacity(worker.capacity);
    info->set_items_completed(worker.items_completed);
    info->set_key_name(worker.key_name);
  }
  status.set_jobs_submitted(counters_.jobs_submitted);
  status.set_jobs_completed(counters_.jobs_completed);
  status.set_jobs_failed(counters_.jobs_failed);
  status.set_jobs_dead_lettered(counters_.jobs_dead_lettered);
  status.set_items_redelivered(counters_.items_redelivered);
  status.set_next_job_seq(journal_.next_job_seq());
  status.set_frames_malformed(counters_.frames_malformed);
  status.set_frames_wrong_version(counters_.frames_wrong_version);
  status.set_frames_oversized(counters_.frames_oversized);
  status.set_results_stale(counters_.results_stale);
  status.set_replies_undeliverable(counters_.replies_undeliverable);
  status.set_items_handed_back(counters_.items_handed_back);
  status.set_jobs_cancelled(counters_.jobs_cancelled);
  status.set_jobs_in_table(jobs_.size());
  status.set_jobs_expired(counters_.jobs_expired);
  status.set_submits_busy(counters_.submits_busy);
  status.set_queued_witness_bytes(admission_.witness_bytes());
  status.set_broker_epoch(epoch_);
  status.set_journal_commits(journal_.stats().commits);
  status.set_jobs_recovered(counters_.jobs_recovered);
  status.set_jobs_retried(counters_.jobs_retried);
  status.set_auth_rejected_unknown_key(counters_.auth_rejected_unknown_key);
  status.set_auth_rejected_wrong_endpoint(counters_.auth_rejected_wrong_endpoint);
  status.set_auth_rejected_mechanism(counters_.auth_rejected_mechanism);
  status.set_requests_forbidden(counters_.requests_forbidden);
  status.set_results_rejected(counters_.results_rejected);
  status.set_leases_reclaimed(counters_.leases_reclaimed);
  status.set_registrations_refused(counters_.registrations_refused);
  status.set_storage_faults(counters_.storage_faults);
  status.set_unavailable(unavailable_.has_value());
  if (unavailable_) status.set_unavailable_reason(*unavailable_);
  return status;
}

}  // namespace zkfleet::broker
