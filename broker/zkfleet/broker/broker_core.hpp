// The broker's logic, without sockets: it consumes decoded envelopes from
// clients and workers plus clock ticks, and produces envelopes to send (the
// outbox). BrokerServer owns the sockets and feeds it; unit tests drive it
// directly.
//
// What it guarantees (docs/protocol.md has the full story):
//  * a job is accepted only once it is in the journal: the SUBMIT reply sits
//    in the outbox, which the server sends only after Journal::Commit();
//  * job_seq comes from one persisted counter and never repeats, across
//    restarts too; a restarted core replays the journal: queued items keep
//    their keys, started leases wait `liveness` heartbeats for their worker;
//  * work items wait in a queue keyed (priority desc, job_seq, partition) and
//    a returned item goes back under its original key;
//  * an item is leased to one worker at a time, under a unique lease
//    (broker epoch, counter); a RESULT or HANDBACK is accepted only for the
//    live lease, from its holder, for the same circuit and request: anything
//    else is stale, dropped and counted;
//  * a lease counts as an attempt only once the worker reported it started;
//    after max_attempts started leases without a result the job is
//    dead-lettered;
//  * (client, request id) is the idempotency key, remembered for the dedup
//    window: the same payload returns the existing job, another payload is
//    refused (REQUEST_ID_REUSED);
//  * a job's JobResult goes to each waiter (submitter, AWAIT, duplicate
//    SUBMIT) once; only the submitting client may await or cancel it;
//  * live jobs are bounded (Admission): over a limit a SUBMIT gets BUSY;
//  * once the broker has seen a worker DRAINING it routes nothing more to it;
//    a FAULTED worker gets nothing more either, and its leases go back
//    without charging an attempt;
//  * an item whose attempt failed on a worker is not retried there while
//    another READY worker holds its circuit.
//
// Metrics: given a BrokerMetrics, the core updates it next to each
// BrokerCounters increment and exports the queue and worker gauges from
// Tick() (at least every second). Without one (unit tests) it counts only.
//
// Sources, by seam: broker_core.cpp (construction, recovery, journal
// records, output, status), broker_core_clients.cpp (the client dispatch,
// SUBMIT), broker_core_jobs.cpp (requests about jobs), broker_core_admin.cpp
// (the admin's requests, reloads), broker_core_workers.cpp (worker
// registration, state, strikes, removal), broker_core_results.cpp (STARTED,
// RESULT, verdicts, HANDBACK),
// broker_core_dispatch.cpp (returns, finishing, dispatch, the tick); what
// they share beyond this header is in broker_core_detail.hpp.
//
// Thread-safety: not thread-safe; owned by the broker thread. The
// BrokerMetrics it updates is thread-safe (scrapes read it concurrently).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/broker/counters.hpp"
#include "zkfleet/broker/admission.hpp"
#include "zkfleet/broker/peer_allow_list.hpp"
#include "zkfleet/broker/dispatch_queue.hpp"
#include "zkfleet/broker/job_table.hpp"
#include "zkfleet/broker/options.hpp"
#include "zkfleet/broker/result_verifier.hpp"
#include "zkfleet/broker/strike_book.hpp"
#include "zkfleet/broker/worker_registry.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"

namespace zkfleet::broker {

// Who sent a message, as the transport authenticated it: BrokerServer reads
// the ZAP handler's verdict (User-Id, Role) from each message.
struct Peer {
  bool authenticated = false;  // false only with --insecure-plaintext (a trusted network)
  std::string key_name;        // its CURVE key's name in the allow-list
  Role role = Role::kAdmin;    // clients; an unauthenticated peer may do everything but
                               // touch another declared client's jobs
};

// A message for the server to send.
struct Outgoing {
  enum class To { kClient, kWorker };
  Outgoing() = default;
  Outgoing(To to, std::string identity, proto::Envelope envelope, fleet::Frames frames = {})
      : to(to), identity(std::move(identity)), envelope(std::move(envelope)), frames(std::move(frames)) {}
  To to = To::kClient;
  std::string identity;
  proto::Envelope envelope;
  fleet::Frames frames;  // sent after the envelope: a JOB's witness
};

class BrokerCore {
 public:
  // Starts a new broker life on `journal` (not owned; it must outlive the
  // core): bumps its epoch and recovers the live jobs it holds. `metrics` may
  // be null (nothing exported); otherwise it is not owned and must outlive
  // the core. Throws zkfleet::Error when the journal cannot be read.
  BrokerCore(BrokerOptions options, Journal& journal, metrics::BrokerMetrics* metrics = nullptr);

  // What a rebuilt core carries over from the one it replaces.
  struct Resume {
    uint64_t epoch = 0;       // the same broker life: nothing is written to start it
    uint64_t next_lease = 1;  // lease numbers go on, so none repeats within the epoch
    uint64_t next_verify_id = 1;  // verdicts of the old core's tasks match nothing in the new one
    BrokerCounters counters;
    // The allow-listed keys (CURVE), as last set.
    std::optional<std::set<std::string>> worker_keys, client_keys;
    // Clients waiting for live jobs' results (AWAIT, SUBMIT) on connections
    // that stay open.
    std::map<uint64_t, std::vector<ReplyTo>> waiters;
  };
  // Rebuilds the core from what the journal last committed, without writing
  // (BrokerServer, after a journal write failed: the turn's writes were
  // aborted, so the old core's memory no longer matches the journal).
  // Workers are forgotten; each one's next message is answered DISCONNECT
  // and it registers again, claiming what it still proves.
  BrokerCore(BrokerOptions options, Journal& journal, metrics::BrokerMetrics* metrics, const Resume& resume);
  Resume ResumeState() const;

  // While `reason` is set the broker takes no new work: a SUBMIT of a new
  // request is refused with UNAVAILABLE (retryable) naming it. Everything
  // else is served as far as the journal allows.
  void SetUnavailable(std::optional<std::string> reason) { unavailable_ = std::move(reason); }
  const std::optional<std::string>& unavailable() const { return unavailable_; }

  // One decoded, version-checked envelope from a client / a worker. With an
  // authenticated `peer` the client identity is its key's name (the
  // envelope's client_id is ignored) and its role is checked per request.
  // `frames`: the frames that followed the envelope (a SUBMIT's witnesses,
  // one per partition; any other request must come without).
  void HandleClient(const std::string& identity, proto::Envelope& message, Clock::time_point now,
                    const Peer& peer = {}, fleet::Frames frames = {});
  void HandleWorker(const std::string& identity, proto::Envelope& message, Clock::time_point now,
                    const Peer& peer = {});

  // Leases queued items to dispatchable workers, best item first; appends the
  // JOBs to the outbox. Called after each batch of incoming messages.
  void Dispatch(Clock::time_point now);

  // Sends heartbeats, declares silent workers dead (their leases go back to
  // the queue), requeues orphaned leases whose worker did not come back,
  // expires jobs past their deadline, old results and old request ids, and
  // sets the metrics' gauges. Returns when it wants the next call.
  Clock::time_point Tick(Clock::time_point now);

  // RESULTs of circuits with a verification key wait for the broker's check:
  // each becomes a task here, which the server hands to a ResultVerifier (off
  // this thread) and whose verdict it feeds back to OnVerified. Until then
  // the item stays leased; a valid proof is stored then, an invalid one is
  // the worker's fault (a strike) and the item goes to another worker.
  std::vector<VerifyTask>& verify_outbox() { return verify_outbox_; }
  void OnVerified(const VerifyVerdict& verdict, Clock::time_point now);
  size_t verifications_pending() const { return verifying_.size(); }

  // The CURVE keys the allow-lists admit now (at start and after each
  // reload). Messages from any other key's connections are refused from now
  // on, and workers of removed keys are removed (their leases requeue).
  // Never called in plaintext mode: nothing is checked then.
  void SetAllowedKeys(std::set<std::string> worker_keys, std::set<std::string> client_keys, Clock::time_point now);

  // The verification keys from now on (a reload; BrokerServer::Reload
  // decides them, keeping a busy circuit's key). A registered worker that
  // announced a circuit of another kind than its new key gets no job of it.
  void SetVerificationKeys(std::shared_ptr<const VerificationKeys> keys);
  // An admin's RELOAD naming workers (or "*"): each connected one is sent
  // a ReloadCommand; `reply` says who was told and which ids are unknown.
  void TellWorkersToReload(const proto::ReloadRequest& request, proto::ReloadReply& reply);
  // Circuits with jobs not yet done, and how many.
  std::map<std::string, size_t> LiveJobsByCircuit() const;
  // What answers an admin's RELOAD: the server's reload (file I/O on this
  // thread, as for SIGHUP). Without one, RELOAD is refused.
  using Reloader = std::function<proto::ReloadReply()>;
  void set_reloader(Reloader reloader) { reloader_ = std::move(reloader); }

  // A frame was dropped unread (the server's decoder, or a message of a type
  // the sender must not send): counts it by reason.
  void CountDroppedFrame(metrics::DropReason reason);

  // A send to this worker failed (gone or its queue full): forget it and
  // requeue its leases.
  void WorkerUnreachable(const std::string& identity, Clock::time_point now);

  // Messages produced so far; the server sends and clears them.
  std::vector<Outgoing>& outbox() { return outbox_; }

  BrokerCounters& counters() { return counters_; }
  const BrokerCounters& counters() const { return counters_; }
  proto::StatusReply Status(Clock::time_point now) const;

  // For tests and logs.
  const JobTable& jobs() const { return jobs_; }
  const Admission& admission() const { return admission_; }
  uint64_t epoch() const { return epoch_; }
  Journal& journal() { return journal_; }
  const WorkerRegistry& workers() const { return workers_; }
  const DispatchQueue& queue() const { return queue_; }
  // The peer's key was removed from its allow-list (SetAllowedKeys) since it
  // connected: its messages are answered once, then its connection is cut.
  bool KeyRemoved(bool worker_side, const Peer& peer) const {
    const auto& allowed = worker_side ? allowed_worker_keys_ : allowed_client_keys_;
    return peer.authenticated && allowed && !allowed->count(peer.key_name);
  }
  // The strikes of `owner` (a key, or a plaintext worker id) within the window.
  uint32_t strikes(const std::string& owner, Clock::time_point now) { return strikes_.Count(owner, now); }

 private:
  // Replays the journal's live jobs (constructor).
  void Recover(Clock::time_point now);
  // A job as its journal record holds it (no items' states yet).
  JobRecord JobFromJournal(const journal::Job& stored, Clock::time_point now) const;
  // A job just added to the table from the journal takes its items' states
  // from their records, and its place in the queue, admission and deadlines.
  void ResumeJob(JobRecord& job);
  // RetryJob (broker_core_jobs.cpp).
  void OnRetryJob(const ReplyTo& from, const std::string& client, bool any_job, const proto::RetryJobRequest& request,
                  Clock::time_point now);

  // Client requests. `client` is the requester's identity (Envelope.client_id).
  void OnSubmit(const ReplyTo& from, const std::string& client, proto::SubmitRequest& request,
                fleet::Frames& witnesses, Clock::time_point now);
  // Why the SUBMIT's public_signals_sha256 cannot be taken (wrong count or
  // size, or, when the circuit's key gives nPublic, a witness committing to
  // other public signals, or none for witnesses by reference, which the
  // broker cannot read; optional for jobs from inputs); nullopt when they
  // can (or need not be there).
  std::optional<std::string> CheckPublicSignalsDigests(const proto::SubmitRequest& request, size_t partitions,
                                                       const std::vector<fleet::WitnessFrames>& witnesses) const;
  // A SUBMIT whose (client, request id) is known: the existing job, or a refusal.
  void OnDuplicateSubmit(const ReplyTo& from, const journal::Request& known, const std::string& payload_hash);
  // `any_job`: an admin may await or cancel every client's jobs.
  void OnAwait(const ReplyTo& from, const std::string& client, bool any_job, const proto::AwaitRequest& request);
  // `any_job`: observe and admin keys read every client's jobs.
  void OnGetJob(const ReplyTo& from, const std::string& client, bool any_job, const proto::GetJobRequest& request);
  void OnListJobs(const ReplyTo& from, const std::string& client, bool any_job, const proto::ListJobsRequest& request);
  // A job's JobInfo: live (the table), ended (the journal) or, `with_stub`,
  // past its result retention; nullopt when unknown.
  std::optional<proto::JobInfo> JobInfoOf(uint64_t job_seq, bool with_stub);
  void OnCancel(const ReplyTo& from, const std::string& client, bool any_job, const proto::CancelRequest& request,
                Clock::time_point now);
  void OnDrainWorker(const std::string& identity, uint64_t correlation_id, const proto::DrainWorkerRequest& request);
  void OnUndrainWorker(const std::string& identity, uint64_t correlation_id,
                       const proto::UndrainWorkerRequest& request);
  // The same answer for a job that does not exist and one the caller may not
  // see, so no client learns which job numbers exist.
  void SendUnknownJob(const ReplyTo& to, uint64_t job_seq);

  // Worker messages.
  void OnReady(const std::string& identity, const proto::Ready& ready, const Peer& peer, Clock::time_point now);
  void OnStarted(WorkerRecord& worker, const proto::Started& started, Clock::time_point now);
  void OnResult(WorkerRecord& worker, proto::Result& result, Clock::time_point now);
  void OnHandback(WorkerRecord& worker, const proto::Handback& handback, Clock::time_point now);
  void OnWorkerState(WorkerRecord& worker, proto::WorkerState reported, Clock::time_point now);
  // A READY that cannot register: answered DISCONNECT with `why`, counted.
  void RefuseRegistration(const std::string& identity, const std::string& worker_id, const Peer& peer,
                          const std::string& why);
  // The RESULT for the live lease `ref` of `worker` came: the lease leaves
  // the worker's set and the item counts as started (an attempt).
  WorkItem& TakeAnswer(WorkerRecord& worker, JobRecord& job, const wire::ItemRef& ref, Clock::time_point now);
  // Stores an accepted (verified, or of an unverified circuit) result.
  void AcceptResult(JobRecord& job, uint32_t partition, const std::string& worker_id, const std::string& owner,
                    proto::PartitionResult out, Clock::time_point now);
  // The worker's RESULT for `partition` was refused (`why`): counted, a
  // strike against the worker, the item goes to another worker.
  void RejectResult(const std::string& worker_id, const std::string& owner, JobRecord& job, uint32_t partition,
                    metrics::ResultRejectReason reason, const std::string& why, Clock::time_point now);
  // What a READY announces (circuits and their kinds, generators, fetch
  // prefixes) into `worker`, at registration or when it announces anew.
  void TakeAnnouncement(WorkerRecord& worker, const proto::Ready& ready);
  // A circuit the worker announced of another kind than the operator's
  // verification key for it (a .zkey where the broker has a .vk, or the
  // reverse) would only ever send proofs the broker refuses: it is dropped
  // from the worker's circuits (logged), so no job of it goes there.
  void DropCircuitsOfAnotherKind(WorkerRecord& worker);
  // A fault the broker saw of `owner` (WorkerRecord::owner()), earned by its
  // worker `worker_id` ("": by the key as a whole). Enough of them within the
  // window make a verdict: FAULTED for that worker id alone when every strike
  // came from it (one bad GPU does not idle the other workers of its host's
  // key), for every worker of the owner, live or to come, when they came from
  // several ids or from none. True when `worker_id` (or the whole owner) is
  // FAULTED now.
  bool Strike(const std::string& owner, const std::string& worker_id, StrikeKind kind, const std::string& why,
              Clock::time_point now);
  // The owner of `worker_id`'s faults: the key it was first registered with, or the id.
  std::string OwnerOf(const std::string& worker_id) const;
  // Items whose client-fault verdict waits for a second opinion, by the
  // time the first one becomes final.
  std::set<std::pair<Clock::time_point, wire::ItemRef>> verdict_deadlines_;
  // The owners whose workers served each queue (QueueOf) in this broker
  // life: who could give a second opinion.
  std::map<std::string, std::set<std::string>> circuit_owners_;
  void ExpireVerdicts(Clock::time_point now);

  // Public signals of jobs from inputs (broker_core_signals.cpp; issue 47).
  // True when a verified proof of this item must wait for another key's
  // signals: a job from inputs, no client digest for the partition, a
  // circuit with public signals, not already bound by two keys.
  bool NeedsSignalsCheck(const JobRecord& job, uint32_t partition) const;
  // Holds the verified proof and asks a worker of another key for the
  // signals (or accepts it at once where no other key serves the circuit).
  void HoldForSignalsCheck(JobRecord& job, uint32_t partition, const std::string& worker_id, const std::string& owner,
                           proto::PartitionResult proof, Clock::time_point now);
  // The RESULT of a signals_only lease.
  void OnSignalsAnswer(WorkerRecord& worker, JobRecord& job, uint32_t partition, const proto::Result& result,
                       Clock::time_point now);
  // Decides on the votes: deliver the held proof, re-prove with two keys'
  // signals, ask another key, or fail the job. `wait_over`: the deadline
  // passed, so nobody else is asked.
  void ResolveSignals(JobRecord& job, uint32_t partition, bool wait_over, Clock::time_point now);
  // Back to the queue for another lease, no attempt charged.
  void RequeueForCheck(JobRecord& job, uint32_t partition);
  // Every lease of `worker` goes back (its attempts refunded): it is FAULTED
  // or its key was revoked.
  void ReturnAllLeases(WorkerRecord& worker, const std::string& why, Clock::time_point now);
  // Takes back leases not STARTED in time and started ones that overran.
  void ReclaimLeases(Clock::time_point now);
  // How long a started lease of `circuit` may run.
  Clock::duration OverrunLimit(const std::string& circuit) const;
  // A worker left for good (dead, or gone after its drain): its drain hold ends.
  void ForgetDrainHold(const std::string& worker_id);

  // Moves `worker` to `state`, keeping the drain timeline; never moves a
  // draining worker back towards READY.
  void SetWorkerState(WorkerRecord& worker, proto::WorkerState state);
  // Removes the worker; its leases return to the queue (started ones as
  // lost attempts), except those listed in `keep`, which are returned to the
  // caller (a new connection of the same worker claims them). Started work
  // lost this way is a strike against the worker's owner (`charge_owner`:
  // not when an administrator revoked its key): a key that takes jobs,
  // starts them and leaves is FAULTED before it can use up other clients'
  // attempts, and the lost items' attempts are refunded when it is.
  std::set<wire::ItemRef> RemoveWorker(const std::string& identity, const std::string& why, bool graceful,
                                       Clock::time_point now, const std::set<wire::ItemRef>& keep = {},
                                       bool charge_owner = true);
  // The item `ref` names while its live lease is `worker`'s (kLeased and sent
  // to this connection), else null: an ended job, or an old round's ref.
  WorkItem* LeasedTo(const WorkerRecord& worker, const wire::ItemRef& ref);
  // How many of the worker's refs are still its live leases (LeasedTo).
  size_t LiveLeaseCount(const WorkerRecord& worker);

  // The live lease of `ref` held by `worker` is `lease`: returns the job and
  // item, else null (and the caller counts it stale).
  JobRecord* LiveLease(WorkerRecord& worker, const proto::WorkItemRef& ref);

  // Item `partition` of `job` came back unfinished (lease lost, handed back,
  // failed retryably). A started lease has been counted as an attempt: once
  // max_attempts are used the job is dead-lettered; otherwise the item is
  // requeued at its original key.
  // `failed_on`: the owner (WorkerRecord::owner()) of the worker whose
  // attempt failed (kept in the item so the retry goes to another key), or
  // "" (unstarted handback). `refund_attempt`: the failure was the worker's
  // (FAULTED, a rejected RESULT), so a started lease is not counted.
  void ReturnItem(JobRecord& job, uint32_t partition, const std::string& why, Clock::time_point now,
                  const std::string& failed_on = "", bool refund_attempt = false);
  // The item began under its current lease: counts the attempt, journals it.
  void MarkStarted(JobRecord& job, uint32_t partition, Clock::time_point now);
  // Ends the job: journals its end, sends its result to every waiter and
  // drops it from memory. `job` is invalid afterwards.
  void FinishJob(JobRecord& job, proto::JobState state, const std::string& error, Clock::time_point now);
  // The JobResult of a finished job, from the journal; false when the journal
  // no longer holds its results.
  bool LoadResult(uint64_t job_seq, proto::JobResult* out);
  void JournalJob(const JobRecord& job, proto::JobState state, double finished_unix_s, const std::string& error);
  // Moves a work item by its table (job_table.hpp, ItemNext). A move the
  // table has not is a bug: logged and counted (invalid_item_moves), and
  // made anyway (the event's target state, as before the table).
  void MoveItem(JobRecord& job, uint32_t partition, ItemEvent event);
  void JournalItem(const JobRecord& job, uint32_t partition, const proto::PartitionResult* result = nullptr);

  void SendClient(const ReplyTo& to, proto::Envelope envelope);
  void SendError(const ReplyTo& to, proto::ErrorKind kind, const std::string& message, uint32_t retry_after_ms = 0);
  void SendWorker(const std::string& identity, proto::Envelope envelope);

  // Seconds since the oldest job with an item queued at `priority` was
  // submitted; 0 when none is queued.
  double OldestQueuedAgeSeconds(proto::Priority priority, Clock::time_point now) const;
  // Sets the queue and worker gauges of metrics_.
  void ExportGauges(Clock::time_point now);

  // The dispatchable worker serving `queue` (QueueOf: holding its circuit,
  // and generating its witnesses for a queue of jobs from inputs) with the
  // fewest leases, or null. The workers of `avoid` (an owner, as
  // WorkerRecord::owner(); "" = none) are skipped while a READY worker of
  // another owner serves the queue.
  // Workers of the owners in `exclude` are never picked; with `fetch_url`
  // (a witness by reference), only workers whose Ready.fetch_prefixes cover it.
  WorkerRecord* PickWorker(const std::string& queue, const std::string& avoid,
                           const std::set<std::string>* exclude = nullptr, const std::string* fetch_url = nullptr);

  BrokerOptions options_;
  Journal& journal_;
  uint64_t epoch_ = 0;
  uint64_t next_lease_ = 1;
  Admission admission_;
  JobTable jobs_;
  // Leases recovered from the journal whose worker has not come back, by worker_id.
  // (Each one's lease is the item's: WorkItem::lease, lease_worker_id.)
  std::map<std::string, std::set<wire::ItemRef>> orphans_;
  // Live jobs with a deadline: (deadline_unix_s, job_seq).
  std::set<std::pair<double, uint64_t>> deadlines_;
  DispatchQueue queue_;
  WorkerRegistry workers_;
  BrokerCounters counters_;
  metrics::BrokerMetrics* metrics_;  // not owned; may be null
  std::vector<Outgoing> outbox_;
  Clock::time_point next_heartbeat_{};
  Clock::time_point next_gauges_{};
  std::optional<std::string> unavailable_;

  // Worker ids and the key each was first registered with (this broker
  // life, and leases recovered from the journal): a worker is its key.
  std::map<std::string, std::string> worker_keys_;
  // States the broker holds for a worker id whatever the worker says:
  // DRAINING until it leaves, FAULTED until an admin undrains it.
  std::map<std::string, proto::WorkerState> held_states_;
  // Keys whose verdict holds every worker id, new ones included (Strike).
  std::set<std::string> faulted_keys_;
  // Worker ids that left and have not registered again, with why and when
  // (the newest kMaxDeparted): an UNDRAIN of one says it left and how to
  // bring it back, not just that it is unknown.
  static constexpr size_t kMaxDeparted = 1024;
  std::map<std::string, std::string> departed_;
  std::deque<std::string> departed_order_;
  StrikeBook strikes_{options_.strike_window};
  // Circuits workers have announced, in any life of this journal (bounded by
  // kMaxKnownCircuits), and when this life began (the first time seen by a
  // handler or Tick: tests drive the clock): a SUBMIT for a known circuit
  // within KnownCircuitGrace() of it waits for its worker to reconnect.
  std::set<std::string> known_circuits_;
  static constexpr size_t kMaxKnownCircuits = 4096;
  // One key cannot fill the table for the others (issue 47): at most this
  // many names per owner, and only circuits the broker takes jobs for (a
  // verification key, or --unverified-circuits).
  static constexpr size_t kMaxKnownCircuitsPerOwner = 512;
  std::map<std::string, size_t> known_by_owner_;            // circuits
  std::map<std::string, size_t> known_generators_by_owner_;  // generators
  std::optional<Clock::time_point> life_began_;
  void NoteTime(Clock::time_point now) {
    if (!life_began_) life_began_ = now;
  }
  // `from_inputs`: the circuit must be one a worker generated witnesses for.
  bool InKnownCircuitGrace(const std::string& circuit, Clock::time_point now, bool from_inputs = false) const;
  void RememberCircuits(const std::string& owner, const std::set<std::string>& circuits);
  // True when a SUBMIT for `circuit` can be accepted: a verification key, or listed unverified.
  bool TakesJobsFor(const std::string& circuit) const;
  // Circuits workers announced in Ready.generates (any life, bounded alike).
  std::set<std::string> known_generators_;
  void RememberGenerators(const std::string& owner, const std::set<std::string>& circuits);
  // Allow-listed keys (CURVE only; unset in plaintext mode).
  std::optional<std::set<std::string>> allowed_worker_keys_, allowed_client_keys_;
  Reloader reloader_;
  // Results waiting for verification, by task id.
  struct Verifying {
    wire::ItemRef ref;  // its item's verify_id is this verification's id while it is the one awaited
    std::string worker_id;
    std::string owner;  // of worker_id's faults, taken when the RESULT came
    proto::PartitionResult result;
  };
  std::map<uint64_t, Verifying> verifying_;
  uint64_t next_verify_id_ = 1;
  std::vector<VerifyTask> verify_outbox_;
  // A smoothed proving time per circuit (STARTED to RESULT, accepted ones):
  // the overrun check's yardstick.
  std::map<std::string, double> proving_seconds_;
};

}  // namespace zkfleet::broker
