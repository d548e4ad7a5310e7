// BrokerCore: the public signals of jobs from inputs (issue 47, item 4).
//
// A client that submits inputs often cannot know the public signals (the
// circuit's outputs); without its digest, a verified proof shows only that
// the prover knows *a* witness for the signals it chose (another job's
// proof verifies too). So the signals must not rest on one worker's word:
// the broker holds the verified proof and gives the item, as a signals_only
// lease, to a worker of another key, which computes the witness from the
// same inputs and answers with its public signals (a witness generation,
// no proof). The prover's signals and another key's agreeing deliver the
// proof; two keys outvoting the prover get it struck and the item proved
// again bound to their signals; keys that cannot be told apart fail the job
// (no proof is better than a wrong one). A fleet where no other key serves
// the circuit, or a wait past --verdict-confirm-wait-s, delivers the
// prover's proof with PartitionResult.signals_keys = 1: the client sees
// that one key vouches for the signals.
#include "zkfleet/broker/broker_core.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_core_detail.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/wire/public_digest.hpp"

namespace zkfleet::broker {

using detail::ItemName;

bool BrokerCore::NeedsSignalsCheck(const JobRecord& job, uint32_t partition) const {
  if (job.inputs.empty() || partition < job.public_digests.size()) return false;
  const WorkItem& item = job.items[partition];
  if (!item.agreed_public_digest.empty()) return false;
  const VerificationKeys::Entry* key =
      options_.verification_keys ? options_.verification_keys->Find(job.circuit_id) : nullptr;
  return key && key->n_public > 0;
}

void BrokerCore::RequeueForCheck(JobRecord& job, uint32_t partition) {
  WorkItem& item = job.items[partition];
  item.verifying = false;
  item.worker_identity.clear();
  item.lease_worker_id.clear();
  item.lease = {};
  // A finished proof or a finished check is no failed attempt.
  if (item.started && item.attempts > 0) --item.attempts;
  item.started = false;
  MoveItem(job, partition, ItemEvent::kReturned);
  queue_.Insert(job.queue(), job.key(partition));
}

void BrokerCore::HoldForSignalsCheck(JobRecord& job, uint32_t partition, const std::string& worker_id,
                                     const std::string& owner, proto::PartitionResult proof, Clock::time_point now) {
  WorkItem& item = job.items[partition];
  std::string why;
  // The broker wrote this public.json itself (canonical), so it reads.
  const auto digest = wire::PublicSignalsDigestOfJson(proof.public_json(), &why);
  if (!digest) {
    return RejectResult(worker_id, owner, job, partition, metrics::ResultRejectReason::kMalformed,
                        "its public signals cannot be read: " + why, now);
  }
  WorkItem::SignalsCheck check;
  check.proof = std::move(proof);
  check.prover = owner;
  check.prover_worker_id = worker_id;
  check.votes[owner] = *digest;
  check.asked.insert(owner);
  item.signals_check = std::move(check);
  ResolveSignals(job, partition, /*wait_over=*/false, now);
}

void BrokerCore::OnSignalsAnswer(WorkerRecord& worker, JobRecord& job, uint32_t partition,
                                 const proto::Result& result, Clock::time_point now) {
  WorkItem& item = job.items[partition];
  if (!result.ok() && result.retryable()) {
    // Its worker could not compute it now (device, memory): another may.
    ReturnItem(job, partition, "worker " + worker.worker_id + " could not check its signals: " + result.error(), now,
               worker.owner(), /*refund_attempt=*/true);
    return;
  }
  std::string vote;  // "": this key found no witness for the inputs
  if (result.ok()) {
    std::string why;
    const auto digest = wire::PublicSignalsDigestOfJson(result.public_json(), &why);
    if (!digest) {
      return RejectResult(worker.worker_id, worker.owner(), job, partition, metrics::ResultRejectReason::kMalformed,
                          "its public signals cannot be read: " + why, now);
    }
    vote = *digest;
  }
  item.signals_check->votes[worker.owner()] = vote;
  item.signals_check->asked.insert(worker.owner());
  spdlog::info("{}: worker {} computed {} from its inputs", ItemName(job.job_seq, partition), worker.worker_id,
               vote.empty() ? std::string("no witness (") + result.error() + ")"
                            : "public signals " + wire::DigestHex(vote).substr(0, 16));
  ResolveSignals(job, partition, /*wait_over=*/false, now);
}

void BrokerCore::ResolveSignals(JobRecord& job, uint32_t partition, bool wait_over, Clock::time_point now) {
  WorkItem& item = job.items[partition];
  WorkItem::SignalsCheck& check = *item.signals_check;
  wait_over = wait_over || (check.deadline != Clock::time_point{} && now >= check.deadline);
  const std::string name = ItemName(job.job_seq, partition);
  std::map<std::string, uint32_t> tally;  // digest -> keys
  for (const auto& [owner, digest] : check.votes) ++tally[digest];
  const std::string& mine = check.votes.at(check.prover);

  auto dissenters_of = [&](const std::string& digest) {
    std::vector<std::string> owners;
    for (const auto& [owner, vote] : check.votes) {
      if (vote != digest) owners.push_back(owner);
    }
    return owners;
  };
  if (tally[mine] >= 2) {
    // Another key computed the prover's signals: the proof is delivered.
    ++counters_.signals_confirmed;
    for (const std::string& owner : dissenters_of(mine)) {
      Strike(owner, "", StrikeKind::kFalseSignals, name + ": its public signals differ from two other keys'", now);
    }
    proto::PartitionResult proof = std::move(check.proof);
    proof.set_signals_keys(tally[mine]);
    const std::string worker_id = check.prover_worker_id, prover = check.prover;
    item.signals_check.reset();
    return AcceptResult(job, partition, worker_id, prover, std::move(proof), now);
  }
  for (const auto& [digest, keys] : tally) {
    if (keys < 2 || digest.empty()) continue;
    // Two keys agree on other signals: the prover's proof is of something
    // else. Struck; the item is proved again, bound to their signals.
    ++counters_.signals_disputed;
    spdlog::error("{}: worker {}'s proof carries public signals that two other keys refute; it is proved again",
                  name, check.prover_worker_id);
    for (const std::string& owner : dissenters_of(digest)) {
      Strike(owner, "", StrikeKind::kFalseSignals, name + ": its public signals differ from two other keys'", now);
    }
    item.failed_on = check.prover;
    item.agreed_public_digest = digest;
    item.agreed_public_keys = keys;
    item.signals_check.reset();
    if (item.state == WorkItem::State::kLeased) RequeueForCheck(job, partition);
    return;
  }
  // Undecided: ask a key that has not answered yet, while one serves the
  // circuit in this broker life and the wait lasts.
  bool another_key = false;
  if (auto seen = circuit_owners_.find(job.queue()); seen != circuit_owners_.end()) {
    for (const std::string& owner : seen->second) another_key = another_key || !check.asked.count(owner);
  }
  if (another_key && !wait_over) {
    if (check.deadline == Clock::time_point{}) {
      check.deadline = now + options_.verdict_confirm_wait;
      verdict_deadlines_.insert({check.deadline, {job.job_seq, partition}});
    }
    if (check.votes.size() > 1) ++counters_.signals_disputed;
    spdlog::info("{}: asking a worker of another key for its public signals (within {} ms)", name,
                 options_.verdict_confirm_wait.count());
    if (item.state == WorkItem::State::kLeased) RequeueForCheck(job, partition);
    return;
  }
  if (check.votes.size() == 1) {
    // Nobody else serves the circuit (or came in time): one key vouches.
    spdlog::warn("{}: no worker of another key checked its public signals{}; delivered on one key's word "
                 "(signals_keys = 1)",
                 name, wait_over ? " in time" : "");
    proto::PartitionResult proof = std::move(check.proof);
    proof.set_signals_keys(1);
    const std::string worker_id = check.prover_worker_id, prover = check.prover;
    item.signals_check.reset();
    if (item.state == WorkItem::State::kQueued) queue_.Erase(job.queue(), job.key(partition));
    return AcceptResult(job, partition, worker_id, prover, std::move(proof), now);
  }
  // Keys disagree and nobody can break the tie: no proof is delivered.
  ++counters_.signals_disputed;
  if (item.state == WorkItem::State::kQueued) queue_.Erase(job.queue(), job.key(partition));
  item.signals_check.reset();
  MoveItem(job, partition, ItemEvent::kDropped);
  FinishJob(job, proto::JOB_STATE_FAILED,
            "partition " + std::to_string(partition) + ": workers of " + std::to_string(tally.size()) +
                " keys computed different public signals from its inputs and no other key could decide; no proof "
                "is delivered (submit it with public_signals_sha256 to bind the signals)",
            now);
}

}  // namespace zkfleet::broker
