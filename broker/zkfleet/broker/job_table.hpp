// The live jobs (accepted, not yet ended), in memory. Finished jobs live only
// in the journal (results until --result-ttl, then a stub until the dedup
// window ends), so memory holds what is queued or running and nothing more.
// Witness bytes are not held here either: they are read from the journal
// when an item is leased (or, for witnesses by reference, fetched by the
// worker).
//
// Thread-safety: not thread-safe; owned by the broker thread.
#pragma once

#include <chrono>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/wire/work_key.hpp"

namespace zkfleet::broker {

using Clock = std::chrono::steady_clock;

// What happens to a work item; ItemNext says where each takes it.
enum class ItemEvent {
  kLeased,    // dispatched to a worker
  kReturned,  // back to the queue: handed back, its lease reclaimed, a retryable failure, a signals check
  kProved,    // its verified proof is stored (from its lease, or held while its signals were checked)
  kDropped,   // its job ended without it (failed, cancelled, dead-lettered, expired)
};
const char* ItemEventName(ItemEvent event);

// One partition of a job.
struct WorkItem {
  enum class State {
    kQueued,   // in the DispatchQueue
    kLeased,   // sent to a worker (or an orphaned lease recovered from the journal), answer pending
    kDone,     // its result is in the journal
    kDropped,  // the job ended before this item did
  };
  // Moves `state` by the table (ItemNext); false, the state unchanged, for a
  // move the table has not (a bug, never a client's: BrokerCore::MoveItem
  // reports it).
  // The journal's recovery sets `state` directly (an item's starting point).
  bool Move(ItemEvent event);
  State state = State::kQueued;
  uint32_t attempts = 0;        // leases that started (STARTED or a RESULT)
  uint64_t witness_bytes = 0;
  bool ever_leased = false;     // its queue wait (SUBMIT to first lease) was recorded
  // The current lease, while kLeased.
  proto::Lease lease;
  bool started = false;         // the lease holder reported it started (journaled)
  std::string worker_identity;  // routing id of the holder; "" = orphaned (see below)
  std::string lease_worker_id;  // worker_id of the holder
  // An orphaned lease: recovered from the journal after a broker restart, its
  // worker not (yet) back. It goes back to the queue at this time unless that
  // worker's READY claims it.
  Clock::time_point orphan_until{};
  // The owner (its key, or its worker id in plaintext mode) of the last
  // worker whose attempt at this item failed (a retryable error, a lost
  // lease, FAULTED): the retry goes to another key while a READY worker of
  // one holds the circuit. A new worker id of the same key is no escape.
  std::string failed_on;
  // Owners whose worker declared this item the client's fault (a RESULT not
  // ok and not retryable), and the first such verdict. One worker's verdict
  // is a claim: the item goes to another key's worker first, and a proof
  // from there is a strike against each claimant (issue 47). Not journaled:
  // after a restart a claim is asked for again.
  std::set<std::string> refused_by;
  std::string first_refusal;
  Clock::time_point refusal_deadline{};  // then the first verdict is final, unless another key answered
  // When the current lease was sent and, once STARTED, when it started (the
  // broker's clock: the start deadline and the overrun check use them).
  Clock::time_point leased_at{};
  Clock::time_point started_at{};
  // Its RESULT came from the lease holder and waits for the broker's
  // verification (the item stays kLeased; the worker's lease set no longer
  // holds it): the id of that verification (BrokerCore::verifying_), so a
  // verdict on an earlier lease's RESULT is never taken for this one's.
  bool verifying = false;
  uint64_t verify_id = 0;
  // The public signals its proof must carry: w[1..nPublic] of its witness,
  // read when it is dispatched (empty until then, for a circuit without a
  // verification key, or for a witness by reference: JobRecord::public_digests).
  std::vector<std::array<uint64_t, 6>> expected_public;
  // A job from inputs without the client's digest (issue 47): a verified
  // proof's public signals are its prover's word until a worker of another
  // key computes the same from the inputs (signals_only leases, one key at
  // a time). Set while the check runs; not journaled (after a restart the
  // item is proved and checked again).
  struct SignalsCheck {
    proto::PartitionResult proof;  // the prover's verified proof, held
    std::string prover;            // its owner (WorkerRecord::owner())
    std::string prover_worker_id;
    // Owner -> SHA-256 of the public signals its worker computed ("": it
    // found no witness). The prover's vote is its proof's signals.
    std::map<std::string, std::string> votes;
    std::set<std::string> asked;   // the owners in votes: never asked twice
    Clock::time_point deadline{};  // then the check ends with the votes it has
  };
  std::optional<SignalsCheck> signals_check;
  // Two keys agreed on signals other than the prover's: a new proof must
  // carry these (the prover was struck); agreed_public_keys: how many agreed.
  std::string agreed_public_digest;
  uint32_t agreed_public_keys = 0;
};

// The one table of a work item's moves: kQueued -> kLeased (dispatch);
// kLeased -> kQueued (returned); kQueued or kLeased -> kDone (proved: a proof
// held through a signals check is stored while the item waits in the queue or
// on a signals lease); kQueued or kLeased -> kDropped, and kDropped stays
// kDropped (a job's end drops every item not done, some already dropped).
// Nothing leaves kDone. nullopt: no such move.
std::optional<WorkItem::State> ItemNext(WorkItem::State from, ItemEvent event);
// Where `event` takes an item from any state it is allowed in.
WorkItem::State ItemEventTarget(ItemEvent event);
const char* ItemStateName(WorkItem::State state);

// Someone to send the JobResult to: routing id and the correlation id to echo.
struct ReplyTo {
  std::string identity;
  uint64_t correlation_id = 0;
};

struct JobRecord {
  uint64_t job_seq = 0;
  std::string client_id;
  std::string request_id;
  std::string circuit_id;
  proto::Priority priority = proto::PRIORITY_NORMAL;
  proto::JobState state = proto::JOB_STATE_QUEUED;  // QUEUED or RUNNING here
  std::vector<WorkItem> items;   // index = partition
  uint32_t items_done = 0;
  uint64_t witness_bytes = 0;    // all partitions
  std::string payload_hash;      // XXH3-128 of circuit and witnesses or references (idempotency)
  // A job of witnesses by reference (index = partition): journaled instead of
  // the bytes, sent with each JOB; empty for inline witnesses. With them the
  // public-signals digests each proof must match (none without a key).
  std::vector<proto::WitnessRef> witness_refs;
  std::vector<std::string> public_digests;
  // A job from inputs (index = partition): each partition's input.json,
  // journaled with the job and sent in each JOB (the worker computes the
  // witness); empty otherwise. public_digests are optional then (none, or
  // one per partition).
  std::vector<std::string> inputs;
  std::vector<ReplyTo> waiters;  // the submitter, AWAITs and duplicate SUBMITs: each gets the JobResult once
  // RetryJob: rounds made so far and how each earlier round ended (journaled).
  uint32_t retries = 0;
  std::vector<proto::JobRound> history;
  double submitted_unix_s = 0;
  double deadline_unix_s = 0;    // 0 = none
  Clock::time_point submitted_at;

  wire::WorkKey key(uint32_t partition) const { return {priority, job_seq, partition}; }
  // The broker stores no witness of this job (references, inputs): nothing
  // to read at dispatch, the client's digests (if any) bind the proofs.
  bool witness_unread() const { return !witness_refs.empty() || !inputs.empty(); }
  // Its items' queue in the DispatchQueue (QueueOf).
  std::string queue() const;
};

// The DispatchQueue holds one queue per circuit, and one more per circuit for
// jobs from inputs ("\x01" + circuit: ids hold no control bytes), served only
// by workers that generate the circuit's witnesses. CircuitOfQueue gives the
// circuit back and says which kind of queue it is.
std::string QueueOf(const std::string& circuit, bool from_inputs);
std::string_view CircuitOfQueue(const std::string& queue, bool* from_inputs);

class JobTable {
 public:
  // Adds a job (accepted now, or recovered from the journal). Its job_seq
  // must be new.
  JobRecord& Add(JobRecord job);
  JobRecord* Find(uint64_t job_seq);
  const JobRecord* Find(uint64_t job_seq) const;
  // The job ended: it leaves memory.
  void Erase(uint64_t job_seq);

  size_t size() const { return jobs_.size(); }
  const std::unordered_map<uint64_t, JobRecord>& all() const { return jobs_; }

 private:
  std::unordered_map<uint64_t, JobRecord> jobs_;
};

}  // namespace zkfleet::broker
