// BrokerCore (broker_core.hpp), a client's requests about its jobs: AWAIT,
// GET_JOB, LIST_JOBS, RETRY_JOB, CANCEL. Thread-safety: as BrokerCore (one
// thread).
#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_core_detail.hpp"
#include "zkfleet/broker/field_checks.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/storage/digest.hpp"
#include "zkfleet/wire/local_paths.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/witness_ref.hpp"
#include "zkfleet/wire/worker_state.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {

void BrokerCore::SendUnknownJob(const ReplyTo& to, uint64_t job_seq) {
  SendError(to, proto::ERROR_KIND_UNKNOWN_JOB,
            "job " + std::to_string(job_seq) + " is not known to you (never submitted by your key, or long expired)");
}

void BrokerCore::OnAwait(const ReplyTo& from, const std::string& client, bool any_job,
                         const proto::AwaitRequest& request) {
  const uint64_t seq = request.job_seq();
  // Another client's job answers exactly as one that does not exist.
  auto visible = [&](const std::string& owner) { return any_job || owner == client; };
  if (JobRecord* job = jobs_.Find(seq)) {
    if (!visible(job->client_id)) return SendUnknownJob(from, seq);
    job->waiters.push_back(from);
    return;
  }
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  if (auto stored = journal_.GetJob(seq)) {
    if (!visible(stored->client_id())) return SendUnknownJob(from, seq);
    LoadResult(seq, reply.mutable_job_result());
    return SendClient(from, std::move(reply));
  }
  if (auto stub = journal_.GetStub(seq)) {
    if (!visible(stub->client_id())) return SendUnknownJob(from, seq);
    return SendError(from, proto::ERROR_KIND_RESULT_EXPIRED,
                     "job " + std::to_string(seq) + " ended " + wire::JobStateName(stub->state()) +
                         " but its result passed the broker's retention (--result-ttl); submit its request "
                         "again with the same witnesses to prove it again");
  }
  SendUnknownJob(from, seq);
}

std::optional<proto::JobInfo> BrokerCore::JobInfoOf(uint64_t seq, bool with_stub) {
  proto::JobInfo info;
  info.set_job_seq(seq);
  auto payload_of = [](bool refs, bool inputs) {
    return refs ? proto::JobInfo::PAYLOAD_REFERENCES : inputs ? proto::JobInfo::PAYLOAD_INPUTS
                                                              : proto::JobInfo::PAYLOAD_WITNESSES;
  };
  if (const JobRecord* job = jobs_.Find(seq)) {
    info.set_request_id(job->request_id);
    info.set_circuit_id(job->circuit_id);
    info.set_client_id(job->client_id);
    info.set_state(job->state);
    info.set_priority(job->priority);
    info.set_partitions(static_cast<uint32_t>(job->items.size()));
    info.set_partitions_done(job->items_done);
    uint32_t attempts = 0;
    for (const WorkItem& item : job->items) attempts = std::max(attempts, item.attempts);
    info.set_max_attempts_used(attempts);
    info.set_submitted_unix_s(job->submitted_unix_s);
    info.set_deadline_unix_s(job->deadline_unix_s);
    info.set_payload(payload_of(!job->witness_refs.empty(), !job->inputs.empty()));
    info.set_retries(job->retries);
    *info.mutable_history() = {job->history.begin(), job->history.end()};
    return info;
  }
  if (auto stored = journal_.GetJob(seq)) {
    info.set_request_id(stored->request_id());
    info.set_circuit_id(stored->circuit_id());
    info.set_client_id(stored->client_id());
    info.set_state(stored->state());
    info.set_priority(stored->priority());
    info.set_partitions(stored->partitions());
    uint32_t done = 0, attempts = 0;
    for (const auto& [partition, item] : journal_.Items(seq)) {
      if (item.state() == journal::Item::STATE_DONE) ++done;
      attempts = std::max(attempts, item.attempts());
    }
    info.set_partitions_done(done);
    info.set_max_attempts_used(attempts);
    info.set_submitted_unix_s(stored->submitted_unix_s());
    info.set_deadline_unix_s(stored->deadline_unix_s());
    info.set_finished_unix_s(stored->finished_unix_s());
    info.set_error(stored->error());
    info.set_payload(stored->payload() != proto::JobInfo::PAYLOAD_UNSPECIFIED
                         ? stored->payload()
                         : payload_of(stored->witness_refs_size() > 0, stored->inputs_size() > 0));
    info.set_retries(stored->retries());
    *info.mutable_history() = stored->history();
    return info;
  }
  if (!with_stub) return std::nullopt;
  if (auto stub = journal_.GetStub(seq)) {
    info.set_request_id(stub->request_id());
    info.set_client_id(stub->client_id());
    info.set_state(stub->state());
    info.set_submitted_unix_s(stub->submitted_unix_s());
    info.set_finished_unix_s(stub->finished_unix_s());
    info.set_result_expired(true);
    return info;
  }
  return std::nullopt;
}

void BrokerCore::OnGetJob(const ReplyTo& from, const std::string& client, bool any_job,
                          const proto::GetJobRequest& request) {
  std::optional<proto::JobInfo> info = JobInfoOf(request.job_seq(), /*with_stub=*/true);
  if (!info || !(any_job || info->client_id() == client)) return SendUnknownJob(from, request.job_seq());
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  *reply.mutable_job_info() = std::move(*info);
  SendClient(from, std::move(reply));
}

void BrokerCore::OnListJobs(const ReplyTo& from, const std::string& client, bool any_job,
                            const proto::ListJobsRequest& request) {
  std::string client_filter = request.client_id();
  if (!any_job) {
    if (!client_filter.empty() && client_filter != client) {
      ++counters_.requests_forbidden;
      if (metrics_) metrics_->RequestForbidden();
      return SendError(from, proto::ERROR_KIND_FORBIDDEN,
                       "key '" + client + "' may list its own jobs only, not client '" + client_filter + "'s");
    }
    client_filter = client;
  }
  uint64_t below = 0;
  if (!request.page_token().empty()) {
    char* end = nullptr;
    below = std::strtoull(request.page_token().c_str(), &end, 10);
    if (*end != '\0' || below == 0) {
      return SendError(from, proto::ERROR_KIND_BAD_REQUEST,
                       "page_token '" + request.page_token().substr(0, 64) + "' is not one this broker gave");
    }
  }
  const uint32_t page = request.page_size() == 0 ? 100 : std::min<uint32_t>(request.page_size(), 1000);
  std::set<int> states(request.states().begin(), request.states().end());
  const double after = request.submitted_after_unix_s(), before = request.submitted_before_unix_s();
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  proto::ListJobsReply& out = *reply.mutable_list_jobs_reply();
  // One job: false once the page is full (one more match than the page
  // says that another page follows) or the jobs are older than `after`.
  bool more = false;
  // The loop serves everyone: one listing reads at most this many jobs, and
  // a page that filled no further says where to go on (next_page_token).
  constexpr size_t kExaminedPerCall = 20000;
  size_t examined = 0;
  uint64_t last_examined = 0;
  auto consider = [&](uint64_t seq) {
    if (++examined > kExaminedPerCall) {
      more = true;
      return false;
    }
    last_examined = seq;
    std::optional<proto::JobInfo> info = JobInfoOf(seq, /*with_stub=*/false);
    if (!info) return true;
    // Not a stop: submission times follow job_seq only as far as the clock does.
    if (after > 0 && info->submitted_unix_s() < after) return true;
    if (before > 0 && info->submitted_unix_s() >= before) return true;
    if (!client_filter.empty() && info->client_id() != client_filter) return true;
    if (!request.circuit_id().empty() && info->circuit_id() != request.circuit_id()) return true;
    if (!states.empty() && !states.count(info->state())) return true;
    if (out.jobs_size() == static_cast<int>(page)) {
      more = true;
      return false;
    }
    *out.add_jobs() = std::move(*info);
    return true;
  };
  // The narrowest index the request names: its client, its circuit, or its
  // one state (RUNNING is journaled as QUEUED); else every job, newest first.
  if (!client_filter.empty()) {
    journal_.ScanJobIndex(JobIndex::kClient, client_filter, below, consider);
  } else if (!request.circuit_id().empty()) {
    journal_.ScanJobIndex(JobIndex::kCircuit, request.circuit_id(), below, consider);
  } else if (states.size() == 1) {
    int state = *states.begin() == proto::JOB_STATE_RUNNING ? proto::JOB_STATE_QUEUED : *states.begin();
    journal_.ScanJobIndex(JobIndex::kState, Journal::StateIndexValue(state), below, consider);
  } else {
    journal_.ScanJobsNewestFirst(below, [&](const journal::Job& job) { return consider(job.job_seq()); });
  }
  if (more) {
    // Below the last job listed, or, when the scan budget ran out first, the last one read.
    const bool page_full = out.jobs_size() == static_cast<int>(page);
    out.set_next_page_token(std::to_string(page_full ? out.jobs(out.jobs_size() - 1).job_seq() : last_examined));
  }
  SendClient(from, std::move(reply));
}

void BrokerCore::OnRetryJob(const ReplyTo& from, const std::string& client, bool any_job,
                            const proto::RetryJobRequest& request, Clock::time_point now) {
  const uint64_t seq = request.job_seq();
  auto visible = [&](const std::string& owner) { return any_job || owner == client; };
  auto reply_info = [&] {
    proto::Envelope reply;
    reply.set_correlation_id(from.correlation_id);
    *reply.mutable_job_info() = *JobInfoOf(seq, /*with_stub=*/false);
    SendClient(from, std::move(reply));
  };
  auto not_retryable = [&](const std::string& why) {
    SendError(from, proto::ERROR_KIND_NOT_RETRYABLE, "job " + std::to_string(seq) + ": " + why);
  };
  if (const JobRecord* live = jobs_.Find(seq)) {
    if (!visible(live->client_id)) return SendUnknownJob(from, seq);
    if (request.attempt() != 0 && request.attempt() <= live->retries) return reply_info();  // that retry runs now
    return not_retryable("it has not ended (" + wire::JobStateName(live->state) + "): nothing to retry");
  }
  std::optional<journal::Job> stored = journal_.GetJob(seq);
  if (!stored) {
    if (auto stub = journal_.GetStub(seq); stub && visible(stub->client_id())) {
      return SendError(from, proto::ERROR_KIND_RESULT_EXPIRED,
                       "job " + std::to_string(seq) + " ended " + wire::JobStateName(stub->state()) +
                           " and passed the broker's retention (--result-ttl), its payload with it: submit its "
                           "request again (same request id, same payload) to prove it again");
    }
    return SendUnknownJob(from, seq);
  }
  if (!visible(stored->client_id())) return SendUnknownJob(from, seq);
  if (request.attempt() == 0) {
    return SendError(from, proto::ERROR_KIND_BAD_REQUEST,
                     "RetryJob needs attempt: the retry to make (1 for the first; the job has had " +
                         std::to_string(stored->retries()) + ")");
  }
  // Idempotent per attempt: a retry already made is answered with the job as it is.
  if (request.attempt() <= stored->retries()) return reply_info();
  if (request.attempt() != stored->retries() + 1) {
    return not_retryable("retry " + std::to_string(request.attempt()) + " is not the next one (it has had " +
                         std::to_string(stored->retries()) + ")");
  }
  if (!wire::IsRetryable(stored->state())) {
    return not_retryable("it ended " + wire::JobStateName(stored->state()) +
                         "; only FAILED and DEAD_LETTERED jobs are retried");
  }
  if (stored->deadline_unix_s() > 0 && stored->deadline_unix_s() <= wire::UnixNow()) {
    return not_retryable("its deadline has passed");
  }
  if (!TakesJobsFor(stored->circuit_id())) {
    // Its key was removed (a reload): its proofs could not be checked.
    return not_retryable("the broker has no verification key for circuit '" + stored->circuit_id() +
                         "' now (removed by a reload?), so a new proof could not be checked");
  }
  // What it is proved from again: references are always kept; witnesses and
  // inputs only for a dead-lettered job (FinishJob, JournalJob).
  switch (stored->payload()) {
    case proto::JobInfo::PAYLOAD_REFERENCES: break;
    case proto::JobInfo::PAYLOAD_WITNESSES:
    case proto::JobInfo::PAYLOAD_INPUTS:
      if (stored->state() != proto::JOB_STATE_DEAD_LETTERED) {
        return not_retryable("a FAILED job's witnesses or inputs are not kept (the failure was theirs: a witness or "
                             "input the circuit refuses); fix them and submit a new request");
      }
      if (stored->payload() == proto::JobInfo::PAYLOAD_INPUTS &&
          stored->inputs_size() != static_cast<int>(stored->partitions())) {
        return not_retryable("its inputs are no longer journaled: submit it again");
      }
      break;
    default:
      return not_retryable("it ended under an older broker, which kept nothing to prove it from: submit it again");
  }
  JobRecord job = JobFromJournal(*stored, now);
  if (auto why = admission_.Refusal(job.client_id, job.items.size(), job.witness_bytes)) {
    ++counters_.submits_busy;
    if (metrics_) metrics_->SubmitRefusedBusy();
    return SendError(from, proto::ERROR_KIND_BUSY, *why + "; retry later with the same attempt",
                     static_cast<uint32_t>(options_.busy_retry_after.count()));
  }
  // The round that ended goes into the history; the partitions it did not
  // prove start afresh (no item record: queued, no attempts), with their
  // witnesses, which the journal kept for this.
  proto::JobRound round;
  round.set_round(stored->retries());
  round.set_state(stored->state());
  round.set_error(stored->error());
  round.set_finished_unix_s(stored->finished_unix_s());
  job.history.push_back(round);
  job.retries = stored->retries() + 1;
  for (auto& [partition, item] : journal_.Items(seq)) {
    if (item.state() != journal::Item::STATE_DONE) journal_.DeleteItem(seq, partition);
  }
  JobRecord& added = jobs_.Add(std::move(job));
  ResumeJob(added);
  JournalJob(added, proto::JOB_STATE_QUEUED, 0, "");
  ++counters_.jobs_retried;
  spdlog::info("job {} ({} of client {}): retry {} queued {} partitions", seq, added.request_id, added.client_id,
               added.retries, added.items.size() - added.items_done);
  reply_info();
}

void BrokerCore::OnCancel(const ReplyTo& from, const std::string& client, bool any_job,
                          const proto::CancelRequest& request, Clock::time_point now) {
  const uint64_t seq = request.job_seq();
  auto visible = [&](const std::string& owner) { return any_job || owner == client; };
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  if (JobRecord* job = jobs_.Find(seq)) {
    if (!visible(job->client_id)) return SendUnknownJob(from, seq);
    FinishJob(*job, proto::JOB_STATE_CANCELLED, "cancelled by its client", now);
    reply.mutable_cancel_reply()->set_cancelled(true);
    reply.mutable_cancel_reply()->set_state(proto::JOB_STATE_CANCELLED);
    return SendClient(from, std::move(reply));
  }
  std::optional<proto::JobState> ended;
  std::string owner;
  if (auto stored = journal_.GetJob(seq)) {
    ended = stored->state();
    owner = stored->client_id();
  } else if (auto stub = journal_.GetStub(seq)) {
    ended = stub->state();
    owner = stub->client_id();
  }
  if (!ended || !visible(owner)) return SendUnknownJob(from, seq);
  reply.mutable_cancel_reply()->set_cancelled(false);
  reply.mutable_cancel_reply()->set_state(*ended);
  SendClient(from, std::move(reply));
}

}  // namespace zkfleet::broker
