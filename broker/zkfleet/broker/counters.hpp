// The broker's counters: created once at start and owned by the broker thread.
// StatusReply (zkctl status) reports them. BrokerCore updates the matching
// Prometheus metrics (zkfleet::metrics::BrokerMetrics, docs/metrics.md) next
// to each increment, when it has them.
//
// Thread-safety: plain integers, written and read by the broker thread only.
#pragma once

#include <cstdint>

namespace zkfleet::broker {

struct BrokerCounters {
  uint64_t jobs_submitted = 0;
  uint64_t jobs_duplicate = 0;      // SUBMITs answered from an existing request id
  uint64_t jobs_refused = 0;        // SUBMITs answered with an ErrorReply
  uint64_t jobs_completed = 0;
  uint64_t jobs_failed = 0;
  uint64_t jobs_dead_lettered = 0;
  uint64_t jobs_cancelled = 0;
  uint64_t items_dispatched = 0;
  uint64_t items_redelivered = 0;
  uint64_t items_handed_back = 0;
  uint64_t results_stale = 0;
  uint64_t replies_undeliverable = 0;
  uint64_t frames_malformed = 0;
  uint64_t frames_wrong_version = 0;
  uint64_t frames_oversized = 0;
  uint64_t workers_lost = 0;        // declared dead (silence) or unreachable
  uint64_t jobs_expired = 0;        // deadline passed before they were proved
  uint64_t submits_busy = 0;        // SUBMITs refused over an admission limit
  uint64_t jobs_recovered = 0;      // live jobs replayed from the journal at start
  uint64_t jobs_retried = 0;        // RetryJob rounds started
  uint64_t leases_recovered = 0;    // started leases replayed (orphaned until claimed)
  uint64_t requests_forbidden = 0;  // refused: the key's role does not allow the request
  uint64_t results_rejected = 0;    // RESULTs that failed the broker's verification
  uint64_t leases_reclaimed = 0;    // not started in time, overran, or the worker's key was revoked
  uint64_t registrations_refused = 0;  // READYs refused (id bound to another key, or already live)
  uint64_t storage_faults = 0;      // failed journal writes, damaged or missing witnesses
  uint64_t fields_refused = 0;      // messages refused for a field over its bound
  // Jobs from inputs without a client digest: proofs whose public signals a
  // worker of another key computed the same (confirmed), and checks where
  // keys disagreed (disputed; a strike or a failed job follows).
  uint64_t signals_confirmed = 0;
  uint64_t signals_disputed = 0;
  // Peers refused at the CURVE handshake (the server counts them).
  uint64_t auth_rejected_unknown_key = 0;
  uint64_t auth_rejected_wrong_endpoint = 0;
  uint64_t auth_rejected_mechanism = 0;
  // Work-item moves the table refused (job_table.hpp, ItemNext): a broker
  // bug, logged; tests expect 0.
  uint64_t invalid_item_moves = 0;
};

}  // namespace zkfleet::broker
