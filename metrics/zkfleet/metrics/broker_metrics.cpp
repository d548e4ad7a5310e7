#include "zkfleet/metrics/broker_metrics.hpp"

#include "zkfleet/metrics/buckets.hpp"

namespace zkfleet::metrics {
namespace {

prometheus::Counter& UnlabelledCounter(prometheus::Registry& registry, const std::string& name,
                                       const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& registry, const std::string& name,
                                                       const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}

}  // namespace

BrokerMetrics::BrokerMetrics(MetricsServer& server, size_t max_circuits)
    : jobs_dead_lettered(UnlabelledCounter(server.registry(), "zkfleet_jobs_dead_lettered_total",
                                           "Jobs given up after a work item was leased --max-attempts times")),
      jobs_cancelled(UnlabelledCounter(server.registry(), "zkfleet_jobs_cancelled_total",
                                       "Jobs cancelled by a client before they ended")),
      items_redelivered(UnlabelledCounter(server.registry(), "zkfleet_work_items_redelivered_total",
                                          "Work items put back in the queue after a lost lease, a retryable "
                                          "failure or a drain handback")),
      items_handed_back(UnlabelledCounter(server.registry(), "zkfleet_work_items_handed_back_total",
                                          "Work items a draining worker returned (unstarted or aborted)")),
      workers_lost(UnlabelledCounter(server.registry(), "zkfleet_workers_lost_total",
                                     "Workers removed without a clean DISCONNECT (silent or unreachable)")),
      submits_refused_busy(UnlabelledCounter(server.registry(), "zkfleet_broker_submits_refused_busy_total",
                                             "SUBMITs refused with BUSY: a live-job limit (total or per client) "
                                             "would have been crossed")),
      requests_forbidden(UnlabelledCounter(server.registry(), "zkfleet_broker_requests_forbidden_total",
                                           "Client requests refused with FORBIDDEN: the authenticated key's role "
                                           "does not allow them")),
      results_stale(UnlabelledCounter(server.registry(), "zkfleet_broker_results_stale_total",
                                      "RESULTs dropped: not for a live lease of the sender (old lease, earlier "
                                      "broker life, worker declared dead, wrong job)")),
      registrations_refused(UnlabelledCounter(server.registry(), "zkfleet_broker_registrations_refused_total",
                                              "Worker READYs refused: the worker id is bound to another key, or "
                                              "that worker is already connected")),
      is_leader(prometheus::BuildGauge()
                    .Name("zkfleet_broker_is_leader")
                    .Help("1 while this broker serves: it leads its etcd journal's brokers (--journal etcd://), or "
                          "it keeps an LMDB journal; 0 while it stands by")
                    .Register(server.registry())
                    .Add({})),
      leader_elections_won(UnlabelledCounter(server.registry(), "zkfleet_broker_leader_elections_won_total",
                                             "Times this broker became the leader of its etcd journal")),
      unavailable(prometheus::BuildGauge()
                      .Name("zkfleet_broker_unavailable")
                      .Help("1 while the broker refuses new work because its journal cannot be written")
                      .Register(server.registry())
                      .Add({})),
      held_bytes(prometheus::BuildGauge()
                     .Name("zkfleet_broker_held_bytes")
                     .Help("Bytes peers have sent over TCP that the broker has not read yet (buffered by libzmq "
                           "and the kernel), at the ingress guard's last look")
                     .Register(server.registry())
                     .Add({})),
      result_verify_seconds(prometheus::BuildHistogram()
                                .Name("zkfleet_broker_result_verify_seconds")
                                .Help("Time to verify one RESULT's proof and public signals (off the loop thread)")
                                .Register(server.registry())
                                .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.002, 0.005, 0.01,
                                                                                 0.025, 0.05, 0.1, 0.25, 1})),
      live_items(prometheus::BuildGauge()
                     .Name("zkfleet_broker_live_items")
                     .Help("Work items of live jobs (accepted, not ended): what --max-live-items bounds")
                     .Register(server.registry())
                     .Add({})),
      live_witness_bytes(prometheus::BuildGauge()
                             .Name("zkfleet_broker_live_witness_bytes")
                             .Help("Witness bytes of live jobs, held in the journal: what --max-live-witness-bytes "
                                   "bounds")
                             .Register(server.registry())
                             .Add({})),
      epoch(prometheus::BuildGauge()
                .Name("zkfleet_broker_epoch")
                .Help("The broker's life: bumped at every start (a change means it restarted)")
                .Register(server.registry())
                .Add({})),
      journal_commit_seconds(prometheus::BuildHistogram()
                                 .Name("zkfleet_broker_journal_commit_seconds")
                                 .Help("Time to make one loop turn's journal writes durable (group commit)")
                                 .Register(server.registry())
                                 .Add({}, prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001,
                                                                                  0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                                  0.1, 0.25, 1})),
      max_circuits_(max_circuits),
      submitted_family_(CounterFamily(server.registry(), "zkfleet_jobs_submitted_total",
                                      "Jobs accepted by the broker (duplicates of a known request id excluded)")),
      completed_family_(CounterFamily(server.registry(), "zkfleet_jobs_completed_total",
                                      "Jobs whose every partition was proved")),
      failed_family_(CounterFamily(server.registry(), "zkfleet_jobs_failed_total",
                                   "Jobs that ended without proofs, by reason (dead letters included)")),
      auth_rejected_family_(CounterFamily(server.registry(), "zkfleet_broker_auth_rejected_total",
                                          "Peers refused at the CURVE handshake by the broker's ZAP handler, by "
                                          "endpoint (clients, workers) and reason (unknown_key, wrong_endpoint, "
                                          "mechanism)")),
      connections_cut_family_(CounterFamily(server.registry(), "zkfleet_broker_connections_cut_total",
                                            "Connections the broker shut down because they held more unread bytes "
                                            "than their bound (--max-held-bytes-per-connection, --max-held-bytes), "
                                            "by endpoint (clients, workers)")),
      grpc_requests_family_(CounterFamily(server.registry(), "zkfleet_broker_grpc_requests_total",
                                          "gRPC calls the broker's front door answered, by method and status code "
                                          "(UNAUTHENTICATED: no certificate the allow-list names)")),
      grpc_tls_refused_family_(CounterFamily(server.registry(), "zkfleet_broker_grpc_tls_refused_total",
                                             "TLS handshakes the gRPC front door refused before any call, by reason "
                                             "(no_certificate, certificate_not_trusted: expired or of another CA, "
                                             "other)")) {
  prometheus::Registry& registry = server.registry();
  for (const char* reason : {"no_certificate", "certificate_not_trusted", "other"}) {
    grpc_tls_refused_family_.Add({{"reason", reason}});
  }
  // Every RPC's OK and UNAUTHENTICATED series exist from the start (at 0).
  for (const char* method : {"SubmitJob", "GetJob", "AwaitJob", "CancelJob", "ListJobs", "RetryJob", "GetStatus",
                             "ListWorkers", "DrainWorker"}) {
    for (const char* code : {"OK", "UNAUTHENTICATED"}) grpc_requests_family_.Add({{"method", method}, {"code", code}});
  }
  auto& rejected = CounterFamily(registry, "zkfleet_broker_results_rejected_total",
                                 "RESULTs that failed the broker's verification, by reason; the worker is blamed "
                                 "and the item goes to another worker");
  const char* reject_reasons[] = {"invalid_proof", "wrong_public_signals", "malformed"};
  for (size_t i = 0; i < results_rejected.size(); ++i) results_rejected[i] = &rejected.Add({{"reason", reject_reasons[i]}});
  auto& received = CounterFamily(registry, "zkfleet_broker_received_bytes_total",
                                 "Bytes of messages (Envelope and frames, without CURVE's overhead) received, by "
                                 "socket (clients, workers)");
  auto& sent = CounterFamily(registry, "zkfleet_broker_sent_bytes_total",
                             "Bytes of messages (Envelope and frames, without CURVE's overhead) sent, by socket "
                             "(clients, workers)");
  const char* sockets[] = {"clients", "workers"};
  for (size_t i = 0; i < 2; ++i) {
    received_bytes[i] = &received.Add({{"socket", sockets[i]}});
    sent_bytes[i] = &sent.Add({{"socket", sockets[i]}});
  }
  auto& faults = CounterFamily(registry, "zkfleet_broker_storage_faults_total",
                               "Storage faults: journal writes that failed (kind=write) and stored witnesses that "
                               "were missing, short or did not match their hash (kind=witness)");
  const char* fault_kinds[] = {"write", "witness"};
  for (size_t i = 0; i < storage_faults.size(); ++i) storage_faults[i] = &faults.Add({{"kind", fault_kinds[i]}});
  auto& reclaimed = CounterFamily(registry, "zkfleet_broker_leases_reclaimed_total",
                                  "Leases the broker took back, by reason: not_started (no STARTED within the "
                                  "start deadline), overran (ran far past the circuit's proving time), revoked "
                                  "(the worker's key was removed)");
  const char* reclaim_reasons[] = {"not_started", "overran", "revoked"};
  for (size_t i = 0; i < leases_reclaimed.size(); ++i) leases_reclaimed[i] = &reclaimed.Add({{"reason", reclaim_reasons[i]}});
  for (const char* endpoint : {"clients", "workers"}) {
    connections_cut_family_.Add({{"endpoint", endpoint}});
    for (const char* reason : {"unknown_key", "wrong_endpoint", "mechanism"}) {
      auth_rejected_family_.Add({{"endpoint", endpoint}, {"reason", reason}});
    }
  }

  auto& dropped = CounterFamily(registry, "zkfleet_messages_dropped_total",
                                "Frames dropped unread: malformed, above --max-message-bytes, or another "
                                "protocol version");
  for (size_t i = 0; i < kDropReasonLabels.size(); ++i) {
    messages_dropped[i] = &dropped.Add({{"reason", std::string(kDropReasonLabels[i])}});
  }

  auto& depth = prometheus::BuildGauge()
                    .Name("zkfleet_queue_depth")
                    .Help("Work items waiting in the broker's queue, by priority")
                    .Register(registry);
  auto& age = prometheus::BuildGauge()
                  .Name("zkfleet_queue_oldest_age_seconds")
                  .Help("Age of the oldest work item waiting in the broker's queue (0 when empty), by priority")
                  .Register(registry);
  auto& wait = prometheus::BuildHistogram()
                   .Name("zkfleet_broker_queue_wait_seconds")
                   .Help("Time from SUBMIT to a work item's first lease to a worker, by priority")
                   .Register(registry);
  for (size_t i = 0; i < kPriorities.size(); ++i) {
    prometheus::Labels labels{{"priority", PriorityLabel(kPriorities[i])}};
    queue_depth[i] = &depth.Add(labels);
    queue_oldest_age_seconds[i] = &age.Add(labels);
    queue_wait_seconds[i] = &wait.Add(labels, DurationBuckets());
  }

  auto& workers = prometheus::BuildGauge()
                      .Name("zkfleet_broker_workers")
                      .Help("Registered workers, by the state they last reported")
                      .Register(registry);
  for (size_t i = 0; i < kWorkerStates.size(); ++i) {
    workers_by_state[i] = &workers.Add({{"state", WorkerStateLabel(kWorkerStates[i])}});
  }
}

BrokerMetrics::Circuit& BrokerMetrics::ForCircuit(const std::string& circuit_id) {
  std::lock_guard<std::mutex> lock(circuits_mutex_);
  return BoundedCircuitSeries(circuits_, max_circuits_, circuit_id, [this](Circuit& circuit, const std::string& label) {
    for (size_t i = 0; i < kPriorities.size(); ++i) {
      prometheus::Labels labels{{"circuit", label}, {"priority", PriorityLabel(kPriorities[i])}};
      circuit.submitted[i] = &submitted_family_.Add(labels);
      circuit.completed[i] = &completed_family_.Add(labels);
    }
    for (size_t i = 0; i < kFailReasonLabels.size(); ++i) {
      circuit.failed[i] = &failed_family_.Add({{"circuit", label}, {"reason", std::string(kFailReasonLabels[i])}});
    }
  });
}

void BrokerMetrics::JobSubmitted(const std::string& circuit_id, proto::Priority priority) {
  ForCircuit(circuit_id).submitted[PriorityIndex(priority)]->Increment();
}

void BrokerMetrics::JobCompleted(const std::string& circuit_id, proto::Priority priority) {
  ForCircuit(circuit_id).completed[PriorityIndex(priority)]->Increment();
}

void BrokerMetrics::JobFailed(const std::string& circuit_id, FailReason reason) {
  ForCircuit(circuit_id).failed[static_cast<size_t>(reason)]->Increment();
  if (reason == FailReason::kDeadLettered) jobs_dead_lettered.Increment();
}

void BrokerMetrics::ObserveQueueWait(proto::Priority priority, double seconds) {
  queue_wait_seconds[PriorityIndex(priority)]->Observe(seconds);
}

void BrokerMetrics::SetQueue(proto::Priority priority, size_t depth, double oldest_age_seconds) {
  int i = PriorityIndex(priority);
  queue_depth[i]->Set(static_cast<double>(depth));
  queue_oldest_age_seconds[i]->Set(oldest_age_seconds);
}

void BrokerMetrics::SetWorkers(proto::WorkerState state, size_t count) {
  int i = WorkerStateIndex(state);
  if (i >= 0) workers_by_state[i]->Set(static_cast<double>(count));
}

void BrokerMetrics::AuthRejected(const std::string& endpoint, const std::string& reason) {
  auth_rejected_family_.Add({{"endpoint", endpoint}, {"reason", reason}}).Increment();
}

}  // namespace zkfleet::metrics
