// The broker's logic, without sockets: it consumes decoded envelopes from
// clients and workers plus clock ticks, and produces envelopes to send (the
// outbox). BrokerServer owns the sockets and feeds it; unit tests drive it
// directly.
//
// What it guarantees (docs/protocol.md has the full story):
//  * job_seq comes from one monotonic counter and is never reused;
//  * work items wait in a queue keyed (priority desc, job_seq, partition) and
//    a returned item goes back under its original key;
//  * an item is leased to one worker at a time and a worker never receives
//    more JOBs than the credit it granted; each lease is an attempt, and after
//    max_attempts lost leases the job is dead-lettered;
//  * a job's JobResult goes to its submitter once; a SUBMIT with a known
//    request id returns the existing job without proving again;
//  * once the broker has seen a worker DRAINING it routes nothing more to it;
//  * a worker that reports FAULTED gets nothing more either, and every item
//    leased to it goes back to the queue without charging an attempt;
//  * an item whose attempt failed on a worker (retryable error, lost lease,
//    FAULTED) is not retried there while another READY worker holds its
//    circuit (it waits for that worker's credit instead).
//
// Metrics: given a BrokerMetrics, the core updates it next to each
// BrokerCounters increment and exports the queue and worker gauges from
// Tick() (at least every second). Without one (unit tests) it counts only.
//
// Thread-safety: not thread-safe; owned by the broker thread. The
// BrokerMetrics it updates is thread-safe (scrapes read it concurrently).
#pragma once

#include <string>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/broker/counters.hpp"
#include "zkfleet/broker/dispatch_queue.hpp"
#include "zkfleet/broker/job_table.hpp"
#include "zkfleet/broker/options.hpp"
#include "zkfleet/broker/worker_registry.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"

namespace zkfleet::broker {

// A message for the server to send.
struct Outgoing {
  enum class To { kClient, kWorker };
  To to = To::kClient;
  std::string identity;
  proto::Envelope envelope;
};

class BrokerCore {
 public:
  // `metrics` may be null (nothing exported); otherwise it is not owned and
  // must outlive the core.
  explicit BrokerCore(BrokerOptions options, metrics::BrokerMetrics* metrics = nullptr);

  // One decoded, version-checked envelope from a client / a worker.
  void HandleClient(const std::string& identity, proto::Envelope& message, Clock::time_point now);
  void HandleWorker(const std::string& identity, proto::Envelope& message, Clock::time_point now);

  // Leases queued items to dispatchable workers, best item first; appends the
  // JOBs to the outbox. Called after each batch of incoming messages.
  void Dispatch(Clock::time_point now);

  // Sends heartbeats, declares silent workers dead (their leases go back to
  // the queue), expires old results and sets the metrics' gauges. Returns
  // when it wants the next call.
  Clock::time_point Tick(Clock::time_point now);

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
  const WorkerRegistry& workers() const { return workers_; }
  const DispatchQueue& queue() const { return queue_; }

 private:
  // Client requests.
  void OnSubmit(const std::string& identity, uint64_t correlation_id, proto::SubmitRequest& request, Clock::time_point now);
  void OnAwait(const std::string& identity, uint64_t correlation_id, const proto::AwaitRequest& request);
  void OnCancel(const std::string& identity, uint64_t correlation_id, const proto::CancelRequest& request, Clock::time_point now);
  void OnDrainWorker(const std::string& identity, uint64_t correlation_id, const proto::DrainWorkerRequest& request);

  // Worker messages.
  void OnReady(const std::string& identity, const proto::Ready& ready, Clock::time_point now);
  void OnResult(WorkerRecord& worker, proto::Result& result, Clock::time_point now);
  void OnHandback(WorkerRecord& worker, const proto::Handback& handback, Clock::time_point now);
  void OnWorkerState(WorkerRecord& worker, proto::WorkerState reported, Clock::time_point now);

  // Moves `worker` to `state`, keeping the drain timeline; never moves a
  // draining worker back towards READY.
  void SetWorkerState(WorkerRecord& worker, proto::WorkerState state);
  // Removes the worker; its leases return to the queue as lost attempts.
  void RemoveWorker(const std::string& identity, const std::string& why, bool graceful, Clock::time_point now);

  // Item `partition` of `job` came back unfinished. `count_attempt` is false
  // for an unstarted handback. Requeues at the original key, or dead-letters
  // the job once the attempts are used up.
  // `failed_on`: the worker_id whose attempt failed (kept in the item so the
  // retry goes elsewhere), or "" (unstarted handback).
  void ReturnItem(JobRecord& job, uint32_t partition, bool count_attempt, const std::string& why, Clock::time_point now,
                  const std::string& failed_on = "");
  void FinishJob(JobRecord& job, proto::JobState state, const std::string& error, Clock::time_point now);
  void FillResult(const JobRecord& job, proto::JobResult* out) const;

  void SendClient(const ReplyTo& to, proto::Envelope envelope);
  void SendError(const std::string& identity, uint64_t correlation_id, proto::ErrorKind kind, const std::string& message);
  void SendWorker(const std::string& identity, proto::Envelope envelope);

  // Seconds since the oldest job with an item queued at `priority` was
  // submitted; 0 when none is queued.
  double OldestQueuedAgeSeconds(proto::Priority priority, Clock::time_point now) const;
  // Sets the queue and worker gauges of metrics_.
  void ExportGauges(Clock::time_point now);

  // The dispatchable worker holding `circuit` with the most credit, or null.
  // The worker `avoid` (a worker_id; "" = none) is skipped while another
  // READY worker holds the circuit.
  WorkerRecord* PickWorker(const std::string& circuit, const std::string& avoid);

  BrokerOptions options_;
  JobTable jobs_;
  DispatchQueue queue_;
  WorkerRegistry workers_;
  BrokerCounters counters_;
  metrics::BrokerMetrics* metrics_;  // not owned; may be null
  std::vector<Outgoing> outbox_;
  Clock::time_point next_heartbeat_{};
  Clock::time_point next_gauges_{};
};

}  // namespace zkfleet::broker
