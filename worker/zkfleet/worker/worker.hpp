// A worker process: the socket thread (the caller of Run) owns the DEALER
// connected to the broker and the worker's state machine; one dispatcher
// thread loads the circuits, then takes items from the LocalQueue in key order
// and proves them one at a time, handing results back over an inproc PAIR.
//
// States (proto::WorkerState, the one enum): STARTING -> (WAITING_FOR_MEMORY
// while the memory gate finds too little memory for the pinned pool's budget
// plus margin) -> LOADING (pool allocated, keys loading) -> READY -> DRAINING
// -> RELEASING -> GONE, or READY -> FAULTED (repeated engine faults: stays
// connected, takes no work; a fatal device error: hands back and exits 1).
// SIGINT/SIGTERM or a broker DrainCommand start the
// drain: the broker is told at once, unstarted items are handed back, the
// running item finishes (or is aborted and handed back after drain_timeout),
// the proving keys are released, then the pool chunk by chunk (heartbeats
// report the bytes still held), then DISCONNECT and Run() returns 0.
//
// Metrics: given a WorkerMetrics, the socket thread reports every state
// change, the memory of each heartbeat, each result (phase timings, outcome),
// each handback and each dropped frame (docs/metrics.md, "Wiring").
//
// Thread-safety: construct and Run() on one thread. The dispatcher thread
// shares only the LocalQueue (thread-safe) and the CircuitSet (which it alone
// uses for proving) with it. Only the socket thread touches the WorkerMetrics.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "zkfleet.pb.h"
#include "zkfleet/metrics/worker_metrics.hpp"
#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/credit_ledger.hpp"
#include "zkfleet/worker/local_queue.hpp"
#include "zkfleet/worker/memory_source.hpp"
#include "zkfleet/worker/options.hpp"
#include "zkfleet/worker/pinned_pool.hpp"

namespace zkfleet::worker {

// The id a worker gets without --id: "<host name>-<pid>".
std::string DefaultWorkerId();

// What a drain may take, for zkfleet_drain_budget_seconds: the drain timeout
// plus twice the expected release time of a pool of `pool_bytes` (14 s per
// 96 GiB measured; docs/operations.md, "Sizing the stop timeout").
double DrainBudgetSeconds(std::chrono::milliseconds drain_timeout, uint64_t pool_bytes);

class Worker {
 public:
  using Clock = std::chrono::steady_clock;

  // `metrics` may be null (nothing exported); otherwise it is not owned and
  // must outlive the worker.
  Worker(zmq::context_t& context, WorkerOptions options, std::unique_ptr<CircuitSet> circuits,
         std::unique_ptr<MemorySource> memory, metrics::WorkerMetrics* metrics = nullptr);
  ~Worker();

  // Serves until the worker has drained and left (returns 0) or could not
  // load its circuits (returns 1). `signal_fd` is a signalfd for
  // SIGINT/SIGTERM (-1: none); each signal starts (or continues) the drain.
  int Run(int signal_fd);

  // True when Run() returned while the dispatcher was still inside an aborted
  // proof: the process must end with std::_Exit, not by unwinding.
  bool dispatcher_abandoned() const { return dispatcher_abandoned_; }

 private:
  void DispatcherMain();
  // Dispatcher thread, before loading: waits until budget + margin fit, then
  // allocates the pool. False when the worker should stop (timeout, drain).
  bool PassMemoryGate(const std::function<void(char, const std::string&)>& emit);

  void Connect();
  void Reconnect(const std::string& why);
  void Send(proto::Envelope& envelope);
  void SendReady();
  void SendHeartbeat();
  void GrantCredit();
  void SetState(proto::WorkerState state);

  void OnBrokerMessage(proto::Envelope& message);
  void OnJob(proto::Job& job);
  void OnDispatcherEvent(const zmq::message_t& kind, const zmq::message_t& payload);

  // An engine fault was caught (counted, logged); FAULTED after too many.
  void OnEngineFault(const std::string& circuit, const std::string& detail);
  // Leaves READY for FAULTED: the broker is told at once (it stops routing
  // and requeues our leases without charging an attempt), queued items are
  // handed back. `exit`: then disconnect and make Run() return 1 (a fatal
  // device error: only a new process can use the device again).
  void EnterFaulted(const std::string& why, bool exit);
  void BeginDrain(const std::string& why);
  void CheckDrain();
  void StartReleasing();
  void ReleasePoolChunk();
  void Finish();
  void HandBack(const std::vector<fleet::ItemRef>& unstarted, const std::vector<fleet::ItemRef>& aborted,
                const std::string& reason);
  proto::MemoryStatus Memory() const;
  // The circuit of a held item, forgotten once its result or handback is sent.
  std::string ForgetCircuit(const fleet::ItemRef& item);
  // `ref` with the lease it was sent under (answers must carry it).
  void ToWire(const fleet::ItemRef& ref, proto::WorkItemRef* wire) const;
  // Sends STARTED for the items the dispatcher began whose result is not
  // already out (a RESULT implies it started).
  void FlushStarted();

  zmq::context_t& context_;
  WorkerOptions options_;
  std::unique_ptr<CircuitSet> circuits_;
  std::unique_ptr<MemorySource> memory_;
  metrics::WorkerMetrics* metrics_;  // not owned; may be null
  PinnedPool pool_;    // declared before queue_: queued items hold pool buffers
  LocalQueue queue_;
  std::atomic<uint64_t> pool_budget_{0};
  std::atomic<uint64_t> last_available_{0};
  CreditLedger ledger_;
  std::string events_endpoint_;  // inproc address of the dispatcher -> socket thread PAIR

  // Owned by the socket thread. The DEALER lives in its own context so that
  // Run() can terminate it (flushing DISCONNECT, up to the linger) even when
  // an abandoned dispatcher still holds its inproc socket in context_.
  zmq::context_t broker_context_{1};
  zmq::socket_t dealer_;
  zmq::socket_t events_;
  proto::WorkerState state_ = proto::WORKER_STATE_STARTING;
  // Every item the ledger holds: its circuit (per-circuit metrics) and the
  // lease it came under (echoed in STARTED, RESULT, HANDBACK and READY).
  struct HeldItem {
    std::string circuit;
    proto::Lease lease;
  };
  std::map<fleet::ItemRef, HeldItem> held_;
  std::vector<fleet::ItemRef> started_unsent_;  // began proving; STARTED not sent yet
  Clock::time_point broker_last_seen_;
  Clock::time_point next_send_failure_log_{};  // rate limit of Send()'s warning
  // Silence after which we reconnect: liveness x heartbeat, doubled after
  // each fruitless reconnect up to kMaxSilence (Paranoid Pirate's back-off),
  // back to the start once the broker speaks.
  Clock::duration silence_limit_{};
  Clock::time_point drain_deadline_;
  Clock::time_point state_since_;
  bool keys_released_ = false;
  bool aborted_running_ = false;
  bool finished_ = false;
  int exit_code_ = 0;
  bool dispatcher_abandoned_ = false;
  std::deque<Clock::time_point> recent_faults_;  // engine faults within fault_window

  std::thread dispatcher_;
};

}  // namespace zkfleet::worker
