// BrokerMetrics: every metric the broker exports, created once when the
// broker starts (per-circuit series once per circuit, never per job).
// docs/metrics.md describes each one.
//
// The broker updates them where it updates BrokerCounters; the gauges
// (queue, workers by state) are set from its periodic tick.
//
// Thread-safety: all methods are thread-safe (prometheus-cpp metrics are
// atomic; the circuit table has a mutex), so scrapes may run concurrently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "zkfleet.pb.h"
#include "zkfleet/metrics/labels.hpp"
#include "zkfleet/metrics/metrics_server.hpp"

namespace zkfleet::metrics {

// Why the broker refused a worker's RESULT (zkfleet_broker_results_rejected_total{reason}).
enum class ResultRejectReason { kInvalidProof, kWrongPublicSignals, kMalformed, kCount };
// What failed in the broker's storage (zkfleet_broker_storage_faults_total{kind}).
enum class StorageFaultKind { kWrite, kWitness, kCount };
// Why a lease was taken back (zkfleet_broker_leases_reclaimed_total{reason}).
enum class ReclaimReason { kNotStarted, kOverran, kRevoked, kCount };

class BrokerMetrics {
 public:
  // Per-circuit job counters. Pointers into the registry, valid as long as
  // the MetricsServer.
  struct Circuit {
    std::array<prometheus::Counter*, kPriorities.size()> submitted{};  // by priority
    std::array<prometheus::Counter*, kPriorities.size()> completed{};
    std::array<prometheus::Counter*, kFailReasonLabels.size()> failed{};  // by FailReason
  };

  // Registers the broker's metrics in `server`'s registry. At most
  // `max_circuits` distinct circuit label values are created; later circuits
  // share the circuit="_other" series.
  explicit BrokerMetrics(MetricsServer& server, size_t max_circuits = 64);
  BrokerMetrics(const BrokerMetrics&) = delete;
  BrokerMetrics& operator=(const BrokerMetrics&) = delete;

  // The series of `circuit_id`, created on first use (when a worker announces
  // the circuit, or at its first job). Cheap after that: one map lookup.
  Circuit& ForCircuit(const std::string& circuit_id);

  // Job life. PRIORITY_UNSPECIFIED counts as NORMAL, as the broker treats it.
  void JobSubmitted(const std::string& circuit_id, proto::Priority priority);
  void JobCompleted(const std::string& circuit_id, proto::Priority priority);
  // Also counts zkfleet_jobs_dead_lettered_total for kDeadLettered.
  void JobFailed(const std::string& circuit_id, FailReason reason);
  void JobCancelled() { jobs_cancelled.Increment(); }
  void ItemRedelivered() { items_redelivered.Increment(); }
  void ItemHandedBack() { items_handed_back.Increment(); }
  void WorkerLost() { workers_lost.Increment(); }
  void SubmitRefusedBusy() { submits_refused_busy.Increment(); }
  void RequestForbidden() { requests_forbidden.Increment(); }
  // A peer refused at the CURVE/ZAP handshake. `endpoint`: "clients" or
  // "workers"; `reason`: unknown_key, wrong_endpoint or mechanism (all six
  // series exist from the start).
  void AuthRejected(const std::string& endpoint, const std::string& reason);
  // A gRPC call answered (the front door): zkfleet_broker_grpc_requests_total{method,code},
  // code as gRPC names it (OK, NOT_FOUND, PERMISSION_DENIED, UNAUTHENTICATED, ...).
  void GrpcAnswered(const std::string& method, const std::string& code) {
    grpc_requests_family_.Add({{"method", method}, {"code", code}}).Increment();
  }
  // A TLS handshake the gRPC front door refused, before any call:
  // zkfleet_broker_grpc_tls_refused_total{reason} (no_certificate,
  // certificate_not_trusted, other). Any thread (gRPC's).
  void GrpcTlsRefused(const std::string& reason) { grpc_tls_refused_family_.Add({{"reason", reason}}).Increment(); }
  // Application bytes (the Envelope and the frames after it; not CURVE's
  // overhead) received from and sent to each socket: `workers` false =
  // clients. zkfleet_broker_received_bytes_total{socket},
  // zkfleet_broker_sent_bytes_total{socket}: what one job costs the broker's
  // network (a job from inputs: its input.json and a few hundred bytes).
  void Received(bool workers, uint64_t bytes) { received_bytes[workers ? 1 : 0]->Increment(static_cast<double>(bytes)); }
  void Sent(bool workers, uint64_t bytes) { sent_bytes[workers ? 1 : 0]->Increment(static_cast<double>(bytes)); }
  void ResultStale() { results_stale.Increment(); }
  void ResultRejected(ResultRejectReason reason) { results_rejected[static_cast<size_t>(reason)]->Increment(); }
  void StorageFault(StorageFaultKind kind) { storage_faults[static_cast<size_t>(kind)]->Increment(); }
  void LeaseReclaimed(ReclaimReason reason) { leases_reclaimed[static_cast<size_t>(reason)]->Increment(); }
  void RegistrationRefused() { registrations_refused.Increment(); }
  // IngressGuard (its own thread): a connection cut for holding too much
  // unread, by endpoint ("clients", "workers"); what all of them held.
  void ConnectionCut(const std::string& endpoint) { connections_cut_family_.Add({{"endpoint", endpoint}}).Increment(); }
  void SetHeldBytes(uint64_t bytes) { held_bytes.Set(static_cast<double>(bytes)); }
  void ObserveVerify(double seconds) { result_verify_seconds.Observe(seconds); }
  void SetUnavailable(bool on) { unavailable.Set(on ? 1 : 0); }
  // Leadership (--journal etcd://): standing by (false) or serving (true).
  void SetLeader(bool on) {
    if (on && is_leader.Value() == 0) leader_elections_won.Increment();
    is_leader.Set(on ? 1 : 0);
  }
  void JournalCommitted(double seconds) { journal_commit_seconds.Observe(seconds); }
  // Live jobs' work items and witness bytes (the admission limits' usage).
  void SetLive(size_t items, uint64_t witness_bytes) {
    live_items.Set(static_cast<double>(items));
    live_witness_bytes.Set(static_cast<double>(witness_bytes));
  }
  void MessageDropped(DropReason reason) { messages_dropped[static_cast<size_t>(reason)]->Increment(); }

  // Time a work item waited in the broker's queue, from SUBMIT to its first lease.
  void ObserveQueueWait(proto::Priority priority, double seconds);

  // Gauges, set from the broker's tick.
  void SetQueue(proto::Priority priority, size_t depth, double oldest_age_seconds);
  // Registered workers in `state` (every state not set keeps its last value:
  // set all of kWorkerStates each time).
  void SetWorkers(proto::WorkerState state, size_t count);

  // Unlabelled counters (jobs_dead_lettered: through JobFailed only, which
  // counts it with the failure).
  prometheus::Counter& jobs_dead_lettered;
  prometheus::Counter& jobs_cancelled;
  prometheus::Counter& items_redelivered;
  prometheus::Counter& items_handed_back;
  prometheus::Counter& workers_lost;
  prometheus::Counter& submits_refused_busy;
  prometheus::Counter& requests_forbidden;
  prometheus::Counter& results_stale;
  prometheus::Counter& registrations_refused;
  prometheus::Gauge& is_leader;
  prometheus::Counter& leader_elections_won;
  prometheus::Gauge& unavailable;
  prometheus::Gauge& held_bytes;
  prometheus::Histogram& result_verify_seconds;
  prometheus::Gauge& live_items;
  prometheus::Gauge& live_witness_bytes;
  prometheus::Gauge& epoch;
  prometheus::Histogram& journal_commit_seconds;

  // Labelled series, indexed like the label sets in labels.hpp.
  std::array<prometheus::Counter*, kDropReasonLabels.size()> messages_dropped{};
  std::array<prometheus::Gauge*, kPriorities.size()> queue_depth{};
  std::array<prometheus::Gauge*, kPriorities.size()> queue_oldest_age_seconds{};
  std::array<prometheus::Histogram*, kPriorities.size()> queue_wait_seconds{};
  std::array<prometheus::Gauge*, kWorkerStates.size()> workers_by_state{};
  std::array<prometheus::Counter*, static_cast<size_t>(ResultRejectReason::kCount)> results_rejected{};
  std::array<prometheus::Counter*, 2> received_bytes{};  // clients, workers
  std::array<prometheus::Counter*, 2> sent_bytes{};
  std::array<prometheus::Counter*, static_cast<size_t>(StorageFaultKind::kCount)> storage_faults{};
  std::array<prometheus::Counter*, static_cast<size_t>(ReclaimReason::kCount)> leases_reclaimed{};

 private:
  const size_t max_circuits_;
  prometheus::Family<prometheus::Counter>& submitted_family_;
  prometheus::Family<prometheus::Counter>& completed_family_;
  prometheus::Family<prometheus::Counter>& failed_family_;
  prometheus::Family<prometheus::Counter>& auth_rejected_family_;
  prometheus::Family<prometheus::Counter>& connections_cut_family_;
  prometheus::Family<prometheus::Counter>& grpc_requests_family_;
  prometheus::Family<prometheus::Counter>& grpc_tls_refused_family_;

  std::mutex circuits_mutex_;
  std::map<std::string, Circuit, std::less<>> circuits_;  // node-based: references stay valid
};

}  // namespace zkfleet::metrics
