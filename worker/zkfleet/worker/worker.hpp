// A worker process. Three parts, one file each:
//  * the socket loop (worker.cpp, the thread that calls Run): owns the DEALER
//    connected to the broker and the worker's one state machine
//    (worker_state.hpp); it receives JOBs with their witness frames straight
//    into the pinned pool, grants credit, heartbeats and sends results;
//  * the proving pipeline (proving_pipeline.hpp, its own threads): memory
//    gate, pool, keys, then lanes that prove items in key order and post
//    typed events back;
//  * the device set (devices.hpp, on the socket thread): with --gpus the
//    worker proves on several devices; one that faults leaves the set (its
//    lanes stop, its keys are freed, the credit it took shrinks) and the
//    worker goes FAULTED only when none is left (worker_drain.cpp);
//  * the drain sequence (worker_drain.cpp, on the socket thread): announce
//    DRAINING, hand back unstarted items, let running ones finish (or abort
//    them after drain_timeout), free the keys, then the pool chunk by chunk
//    while heartbeats report the bytes still held, then DISCONNECT.
//
// Metrics: given a WorkerMetrics, the socket thread reports every state
// change, the memory of each heartbeat, each result (phase timings, outcome),
// each handback and each dropped frame (docs/metrics.md, "Wiring").
//
// Thread-safety: construct and Run() on one thread. Only the socket thread
// touches the WorkerMetrics and the state.
#pragma once

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "zkfleet.pb.h"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/metrics/worker_metrics.hpp"
#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/credit_ledger.hpp"
#include "zkfleet/worker/devices.hpp"
#include "zkfleet/worker/local_queue.hpp"
#include "zkfleet/worker/memory_source.hpp"
#include "zkfleet/worker/options.hpp"
#include "zkfleet/worker/pinned_pool.hpp"
#include "zkfleet/worker/proving_pipeline.hpp"
#include "zkfleet/wire/worker_state.hpp"

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

class Worker {
 public:
  using Clock = std::chrono::steady_clock;

  // `metrics` may be null (nothing exported); otherwise it is not owned and
  // must outlive the worker.
  Worker(zmq::context_t& context, WorkerOptions options, std::unique_ptr<CircuitSet> circuits,
         std::unique_ptr<MemorySource> memory, metrics::WorkerMetrics* metrics = nullptr);
  ~Worker();

  // Serves until the worker has drained and left (returns 0) or could not
  // start or lost its device (returns 1). `signal_fd` is a signalfd for
  // SIGINT/SIGTERM (-1: none); each signal starts (or continues) the drain.
  int Run(int signal_fd);

  // True when Run() returned while a lane was still inside an aborted proof:
  // the process must end with std::_Exit, not by unwinding.
  bool pipeline_abandoned() const { return pipeline_abandoned_; }

 private:
  // What the drain sequence is waiting for, in RELEASING.
  enum class ReleaseStep { kKeys, kPool };

  // ---- state (worker.cpp)
  // Applies `event` through the state table; false (logged) when not allowed.
  bool Transition(wire::WorkerEvent event, const std::string& why);

  // ---- socket loop (worker.cpp)
  void Connect();
  void Reconnect(const std::string& why);
  void Send(proto::Envelope& envelope);
  void SendReady();
  void SendHeartbeat();
  void GrantCredit();
  void OnBrokerMessage(proto::Envelope& message, fleet::Frames& frames);
  void OnJob(proto::Job& job, fleet::WitnessFrames& witness);
  // A leased JOB whose witness frames are not what it announced: answered at
  // once as failed (not retryable), so its lease does not hang.
  void FailUnreadableJob(const proto::Job& job, const std::string& why);
  void OnPipelineEvent(PipelineEvent& event);
  void OnResult(PipelineEvent& event);
  proto::MemoryStatus Memory() const;
  // The circuit of a held item, forgotten once its result or handback is sent.
  std::string ForgetCircuit(const wire::ItemRef& item);
  // `ref` with the lease it was sent under (answers must carry it).
  void ToWire(const wire::ItemRef& ref, proto::WorkItemRef* wire) const;
  // Sends STARTED for the items a lane began whose result is not out yet.
  void FlushStarted();
  void HandBack(const std::vector<wire::ItemRef>& unstarted, const std::vector<wire::ItemRef>& aborted,
                const std::string& reason);

  // ---- faults and the drain sequence (worker_drain.cpp)
  // An engine fault was caught on `device` (counted, logged); after too many
  // the device leaves the set.
  void OnEngineFault(const std::string& circuit, size_t device, const std::string& detail);
  // Device `device` leaves the set (`lost`: a sticky device error): its lanes
  // stop, its keys are freed, the worker's capacity shrinks by one device's
  // share; FAULTED (fatal when a device was lost) once no device is left.
  void RetireDevice(size_t device, const std::string& why, bool lost);
  // Leaves READY for FAULTED: the broker is told at once (it stops routing
  // and requeues our leases without charging an attempt), queued items are
  // handed back. `fatal`: then disconnect and make Run() return 1 (only a new
  // process can use the device again).
  void EnterFaulted(const std::string& why, bool fatal);
  void BeginDrain(const std::string& why);
  void CheckDrain();
  void StartReleasing(bool abandon_running);
  void ReleasePoolChunk();
  void Leave(const std::string& reason, int exit_code);
  bool finished() const { return state_ == proto::WORKER_STATE_GONE; }

  zmq::context_t& context_;
  WorkerOptions options_;
  std::unique_ptr<CircuitSet> circuits_;
  DeviceSet devices_;  // the devices of circuits_; owned by the socket thread
  std::unique_ptr<MemorySource> memory_;
  metrics::WorkerMetrics* metrics_;  // not owned; may be null
  PinnedPool pool_;    // declared before queue_: queued items hold pool buffers
  LocalQueue queue_;
  CreditLedger ledger_;
  EventMailbox mailbox_;
  std::unique_ptr<ProvingPipeline> pipeline_;

  // Owned by the socket thread. The DEALER lives in its own context so that
  // Run() can terminate it (flushing DISCONNECT, up to the linger) even when
  // an abandoned lane still runs.
  zmq::context_t broker_context_{1};
  zmq::socket_t dealer_;
  proto::WorkerState state_ = proto::WORKER_STATE_STARTING;
  Clock::time_point state_since_;
  // Every item the ledger holds: its circuit (per-circuit metrics) and the
  // lease it came under (echoed in STARTED, RESULT, HANDBACK and READY).
  struct HeldItem {
    std::string circuit;
    proto::Lease lease;
  };
  std::map<wire::ItemRef, HeldItem> held_;
  std::vector<wire::ItemRef> started_unsent_;  // began proving; STARTED not sent yet
  Clock::time_point started_hold_until_{};       // --test-hold-started-ms: FlushStarted waits until then
  Clock::time_point broker_last_seen_;
  Clock::time_point next_send_failure_log_{};  // rate limit of Send()'s warning
  // Silence after which we reconnect: liveness x heartbeat, doubled after
  // each fruitless reconnect up to kMaxSilence (Paranoid Pirate's back-off),
  // back to the start once the broker speaks.
  Clock::duration silence_limit_{};
  // A registration the broker refused (another live process with our id, or
  // an id bound to another key): we try again once, a heartbeat later, not in
  // a tight loop, and ignore the DISCONNECTs our old connection still gets.
  std::optional<std::pair<Clock::time_point, std::string>> retry_registration_;
  Clock::time_point drain_deadline_;
  ReleaseStep release_step_ = ReleaseStep::kKeys;
  int exit_code_ = 0;
  bool pipeline_abandoned_ = false;
};

}  // namespace zkfleet::worker
