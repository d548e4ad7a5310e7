// A worker process is three parts:
//  * the session (worker_session.hpp, the thread that calls Run): owns the
//    DEALER connected to the broker, the heartbeat timer, liveness and
//    reconnects, the multipart receive, the signalfd and the poll loop. It
//    decodes what arrives, hands it to the core and sends the core's outbox;
//  * the core (this file; worker_core.cpp, worker_core_drain.cpp), without
//    sockets: the worker's one state machine (wire/worker_state.hpp), the
//    credit ledger, the only copy of each item's lease, the witness receive
//    into the pinned pool, the device set, faults and the drain sequence. It
//    takes decoded envelopes, pipeline events and ticks, each with the time
//    `now`, and fills an outbox; unit tests drive it directly
//    (tests/unit/worker/worker_core_test.cpp);
//  * two witness stages, siblings that prepare an item's witness in the
//    pinned pool while the lanes prove, each on its own threads and posting
//    back an events::WitnessPrepared: the fetch stage (fetch_stage.hpp,
//    only with --fetch-allow) for witnesses by reference, the generate stage
//    (generate_stage.hpp, --witgen-threads, only with --generator) for
//    witnesses computed from a job's input.json;
//  * the proving pipeline (proving_pipeline.hpp, its own threads): memory
//    gate, pool, keys, then lanes that pop items from the LocalQueue, prove
//    them and post PipelineEvents (pipeline_events.hpp: an item reference and
//    its outcome, never a lease) to the core's EventMailbox.
//
// Leases: the broker's lease of each held item lives in one place, the
// core's held-item map, replaced by the newest JOB for that item. Items go
// into the LocalQueue without it; every STARTED, RESULT, HANDBACK and READY
// is stamped with it as it leaves, so an answer always carries the newest
// lease, and one for an item no longer held is discarded.
//
// Devices: with --gpus the worker proves on several devices; one that faults
// leaves the set (its lanes stop, its keys are freed, the credit it took
// shrinks) and the worker goes FAULTED only when none is left.
//
// The drain sequence (worker_core_drain.cpp): announce DRAINING, hand back
// unstarted items, let running ones finish (or abort them after
// drain_timeout), free the keys, then the pool chunk by chunk while
// heartbeats report the bytes still held, then DISCONNECT and GONE.
//
// Metrics: given a WorkerMetrics, the core reports every state change, the
// memory of each heartbeat, each result (phase timings, outcome), each
// handback and each message it drops (an unreadable JOB, a type brokers do
// not send); the session counts the messages it cannot decode
// (docs/metrics.md, "Wiring").
//
// Ownership: the core owns the circuits, the memory source, the pinned pool,
// the LocalQueue, the mailbox and the pipeline (not started until
// StartPipeline()). The WorkerMetrics is not owned.
//
// Thread-safety: not thread-safe; owned by one thread (the session's). The
// pipeline's threads share with it only what is thread-safe or fixed after
// construction: the LocalQueue and the mailbox (their way in and out), the
// PinnedPool (its observer, run on the pool's growth thread, reads only the
// worker id and the MemorySource), the CircuitSet (immutable keys) and the
// MemorySource; the WorkerMetrics is thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/metrics/worker_metrics.hpp"
#include "zkfleet/wire/work_key.hpp"
#include "zkfleet/wire/worker_state.hpp"
#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/credit_ledger.hpp"
#include "zkfleet/worker/devices.hpp"
#include "zkfleet/worker/fetch_stage.hpp"
#include "zkfleet/worker/generate_stage.hpp"
#include "zkfleet/worker/local_queue.hpp"
#include "zkfleet/worker/memory_source.hpp"
#include "zkfleet/worker/options.hpp"
#include "zkfleet/worker/pinned_pool.hpp"
#include "zkfleet/worker/proving_pipeline.hpp"

namespace zkfleet::worker {

// The id a worker gets without --id: "<host name>-<pid>".
std::string DefaultWorkerId();

// What a drain may take, for zkfleet_drain_budget_seconds: the drain timeout
// plus twice the expected release time of a pool of `pool_bytes` pinned as
// `kind` (measured on the H200 host: 1.8 s per 96 GiB of huge-page memory
// registered with cudaHostRegister, 14 s per 96 GiB from cudaHostAlloc;
// docs/operations.md, "Sizing the stop timeout").
double DrainBudgetSeconds(std::chrono::milliseconds drain_timeout, uint64_t pool_bytes,
                          PinnedPool::Kind kind = PinnedPool::Kind::kCudaHost);

// A JOB's witness as it arrived: its chunks, in order, not owned (the core
// copies them into the pinned pool before OnBrokerMessage returns).
using WitnessChunks = std::vector<std::span<const uint8_t>>;

class WorkerCore {
 public:
  using Clock = std::chrono::steady_clock;

  // `metrics` may be null (nothing exported); otherwise it is not owned and
  // must outlive the core. The pipeline is built but not started.
  WorkerCore(WorkerOptions options, std::unique_ptr<CircuitSet> circuits, std::unique_ptr<MemorySource> memory,
             metrics::WorkerMetrics* metrics, Clock::time_point now);
  // Stops the pipeline (StopPipeline) if that was not done.
  ~WorkerCore();
  WorkerCore(const WorkerCore&) = delete;
  WorkerCore& operator=(const WorkerCore&) = delete;

  // Starts the pipeline's threads (the memory gate, then the lanes).
  void StartPipeline();
  // After GONE: waits for the pipeline's threads, or leaves them running
  // when a lane is inside an aborted proof (pipeline_abandoned()).
  void StopPipeline();

  // A new connection to the broker: READY (in the outbox). On a reconnect
  // (`reconnect`) the broker treats it as a new incarnation and requeues what
  // READY does not list: queued items are dropped here (it redelivers them),
  // running ones keep their leases, outstanding credit is forgotten and
  // granted again.
  void OnConnected(bool reconnect, Clock::time_point now);
  // One decoded envelope from the broker: a JOB (with its `witness`, whose
  // size the session checked against witness_bytes), a HEARTBEAT, a DRAIN.
  // Anything else is dropped and counted (DISCONNECT belongs to the session).
  void OnBrokerMessage(proto::Envelope& message, const WitnessChunks& witness, Clock::time_point now);
  // A JOB whose witness frames are not what it announced: answered at once as
  // failed (not retryable), so its lease does not hang.
  void OnUnreadableJob(const proto::Job& job, const std::string& why);
  // An event a lane, the start thread or a witness stage posted (from mailbox()).
  void OnPipelineEvent(PipelineEvent& event, Clock::time_point now);
  // Circuits changed at run time (zkworker's SIGHUP): `specs` is the whole
  // new list. Circuits that go, or whose files changed, take no more work at
  // once: their queued items are handed back and READY leaves them out. New
  // ones (and new files) load on a thread of their own while the worker
  // proves the rest; the CircuitSet then adopts them (the lanes wait for the
  // proofs running then) and READY announces them (CircuitsChanged). A load
  // that fails changes nothing but the removals (logged). One change at a
  // time, in READY only.
  void ReloadCircuits(std::vector<CircuitSpec> specs, Clock::time_point now);
  // SIGINT/SIGTERM or the broker's DRAIN: starts (or continues) the drain.
  void BeginDrain(const std::string& why, Clock::time_point now);
  // A HEARTBEAT with the state and memory (the session's timer).
  void SendHeartbeat();
  // STARTED for the items a lane began whose result is not out yet, in one
  // envelope (unless --test-hold-started-ms holds them back). The session
  // calls it right after a batch of pipeline events, before it reads the
  // broker's messages, so the broker counts an attempt as soon as it can
  // (a worker killed mid-proof has then spent one); Tick() sends what a hold
  // kept back.
  void FlushStarted(Clock::time_point now);
  // Flushes STARTED, moves the drain on (drain timeout, one pool chunk per
  // call while releasing it). Returns when it wants the next call
  // (Clock::time_point::max(): nothing pending).
  Clock::time_point Tick(Clock::time_point now);

  // Envelopes produced so far, in order; the session sends and clears them.
  std::vector<proto::Envelope>& outbox() { return outbox_; }

  proto::WorkerState state() const { return state_; }
  // GONE: the session disconnects and Run() returns exit_code().
  bool finished() const { return state_ == proto::WORKER_STATE_GONE; }
  int exit_code() const { return exit_code_; }
  // True when the core left while a lane was still inside an aborted proof:
  // the process must end with std::_Exit, not by unwinding.
  bool pipeline_abandoned() const { return pipeline_abandoned_; }

  const WorkerOptions& options() const { return options_; }
  const CircuitSet& circuits() const { return *circuits_; }
  const DeviceSet& devices() const { return devices_; }
  const CreditLedger& ledger() const { return ledger_; }
  EventMailbox& mailbox() { return mailbox_; }
  // For tests, which play the lanes: pop items, finish runs.
  LocalQueue& queue() { return queue_; }
  PinnedPool& pool() { return pool_; }
  // The lease `item` is held under; nullptr when it is not held.
  const proto::Lease* lease(const wire::ItemRef& item) const;

 private:
  // What the drain sequence is waiting for, in RELEASING.
  enum class ReleaseStep { kKeys, kPool };

  // ---- state, messages, results (worker_core.cpp)
  // Applies `event` through the state table; false (logged) when not allowed.
  bool Transition(wire::WorkerEvent event, const std::string& why);
  void Send(proto::Envelope envelope) { outbox_.push_back(std::move(envelope)); }
  void SendReady();
  // READY again on this connection (the circuits changed): the broker takes
  // it as an update of what this worker announces; leases and credit stay.
  void Reannounce();
  // An item of a circuit a reload takes away or replaces goes back to the
  // broker unstarted; true when it did.
  bool HandBackIfLeaving(const wire::ItemRef& ref, const std::string& circuit);
  // One handler per event (OnPipelineEvent visits them).
  void On(events::MemoryGate& event);
  void On(events::KeysLoaded& event);
  void On(events::StartFailed& event);
  void On(events::ProofStarted& event);
  void On(events::ProofFinished& event);
  void On(events::DeviceReleased& event);
  void On(events::KeysReleased& event);
  // A witness stage is done with an item: queued for a lane, or answered.
  void On(events::WitnessPrepared& event);
  // A reload's load and adoption are done.
  void On(events::CircuitsChanged& event);
  void GrantCredit();
  void OnJob(proto::Job& job, const WitnessChunks& witness, Clock::time_point now);
  // Gives `item` a witness buffer of `size` bytes: in the pinned pool when it
  // has room (the device DMAs from there), else on the heap (a slower,
  // pageable upload). False when not even the heap has it.
  bool AllocateWitness(QueuedItem& item, size_t size);
  // A JOB whose witness is a reference (to the fetch stage) or is computed
  // from inputs (to the generate stage): its buffer allocated, then to the
  // stage. STARTED goes out now: preparing the witness is work on the item.
  void PrepareWitness(QueuedItem item, events::WitnessSource source);
  // A signals_only JOB: answers with its computed witness's public signals.
  void AnswerSignals(const wire::ItemRef& ref, const QueuedItem& item);
  // Answers a held item as failed without proving it (`retryable`: the
  // worker's trouble, another worker may succeed; else the job's).
  void FailItem(const wire::ItemRef& ref, const proto::Job& job, const std::string& why, bool retryable);
  // Items whose witness is being prepared stop (drain, fault, reconnect);
  // their events are then discarded. Returns them.
  std::vector<wire::ItemRef> CancelPreparations();
  proto::MemoryStatus Memory() const;
  // The circuit of a held item, forgotten (with its lease) once its result or
  // handback is sent.
  std::string Forget(const wire::ItemRef& item);
  // `ref` with the lease it is held under (answers must carry it).
  void ToWire(const wire::ItemRef& ref, proto::WorkItemRef* wire) const;
  void HandBack(const std::vector<wire::ItemRef>& unstarted, const std::vector<wire::ItemRef>& aborted,
                const std::string& reason);

  // ---- faults and the drain sequence (worker_core_drain.cpp)
  // An engine fault was caught on `device` (counted, logged); after too many
  // the device leaves the set.
  void OnEngineFault(const std::string& circuit, size_t device, const std::string& detail, Clock::time_point now);
  // Device `device` leaves the set (`lost`: a sticky device error): its lanes
  // stop, its keys are freed, the worker's capacity shrinks by one device's
  // share; FAULTED (fatal when a device was lost) once no device is left.
  void RetireDevice(size_t device, const std::string& why, bool lost);
  // Leaves READY for FAULTED: the broker is told at once (it stops routing
  // and requeues our leases without charging an attempt), queued items are
  // handed back. `fatal`: then disconnect and exit 1 (only a new process can
  // use the device again).
  void EnterFaulted(const std::string& why, bool fatal);
  void CheckDrain(Clock::time_point now);
  void StartReleasing(bool abandon_running);
  void ReleasePoolChunk();
  void Leave(const std::string& reason, int exit_code);

  WorkerOptions options_;
  std::unique_ptr<CircuitSet> circuits_;
  DeviceSet devices_;  // the devices of circuits_
  std::unique_ptr<MemorySource> memory_;
  metrics::WorkerMetrics* metrics_;  // not owned; may be null
  PinnedPool pool_;    // declared before queue_: queued items hold pool buffers
  LocalQueue queue_;
  CreditLedger ledger_;
  EventMailbox mailbox_;
  std::unique_ptr<ProvingPipeline> pipeline_;
  std::unique_ptr<FetchStage> fetch_stage_;  // only with --fetch-allow
  std::unique_ptr<GenerateStage> generate_stage_;  // only with circuits that have a generator
  // Handed to a witness stage (with the stage's generation), not back yet.
  std::map<wire::ItemRef, uint64_t> preparing_;
  // STARTED went out when its witness's preparation began (the lane's
  // ProofStarted sends none again).
  std::set<wire::ItemRef> started_when_prepared_;
  bool pipeline_stopped_ = false;
  // A run-time circuit change (ReloadCircuits): the circuits going or being
  // replaced (their JOBs are handed back, READY leaves them out) and the
  // thread loading the new ones.
  std::set<std::string> leaving_;
  std::thread reload_thread_;
  bool reload_adds_ = false;  // the change loads circuits: READY again when it is adopted

  std::vector<proto::Envelope> outbox_;
  Clock::time_point now_;  // of the call being handled (state change logs)
  proto::WorkerState state_ = proto::WORKER_STATE_STARTING;
  Clock::time_point state_since_;
  // Every item the ledger holds: its circuit (per-circuit metrics) and the
  // newest lease the broker sent it under (the only copy: echoed in STARTED,
  // RESULT, HANDBACK and READY).
  struct HeldItem {
    std::string circuit;
    proto::Lease lease;
  };
  std::map<wire::ItemRef, HeldItem> held_;
  std::vector<wire::ItemRef> started_unsent_;  // began proving; STARTED not sent yet
  Clock::time_point started_hold_until_{};       // --test-hold-started-ms: FlushStarted waits until then
  Clock::time_point drain_deadline_;
  ReleaseStep release_step_ = ReleaseStep::kKeys;
  int exit_code_ = 0;
  bool pipeline_abandoned_ = false;
};

}  // namespace zkfleet::worker
