// Workers the broker knows, keyed by the routing identity of their DEALER
// connection, with the lease set and the credit the broker holds for each.
//
// Thread-safety: not thread-safe; owned by the broker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/broker/job_table.hpp"
#include "zkfleet/wire/work_key.hpp"

namespace zkfleet::broker {

// Whether a worker announcing `prefix` (Ready.fetch_prefixes) would fetch
// `url`: the prefix's scheme and host compared without case, its path as a
// directory ("https://h/a" covers "https://h/a/x", not "https://h/ab").
// Only a routing hint: the worker's fetch::PeerAllowList decides.
bool FetchPrefixCovers(const std::string& prefix, const std::string& url);

// The owner of a worker's faults: "key NAME" for a CURVE key, else "worker ID".
inline std::string StrikeOwner(const std::string& key_name, const std::string& worker_id) {
  return key_name.empty() ? "worker " + worker_id : "key " + key_name;
}

struct WorkerRecord {
  std::string identity;           // ZeroMQ routing id (one connection)
  std::string worker_id;          // from READY; stable across reconnects
  std::string key_name;           // its CURVE key's name ("" in plaintext mode)
  std::string host;
  std::string backend;
  std::set<std::string> circuits;
  std::map<std::string, proto::CircuitKind> circuit_kinds;  // of `circuits` (Ready.circuit_kinds; CIRCOM when absent)
  std::set<std::string> generates;  // of `circuits`: witnesses computed from inputs (jobs from inputs)
  // Ready.generation_wall_s / generation_slots: one generation's limit and
  // how many run at once (bounded by the broker on arrival).
  std::chrono::seconds generation_wall{0};
  uint32_t generation_slots = 1;
  // Ready.fetch_prefixes: where it fetches witnesses by reference from (a
  // routing hint: FetchPrefixCovers).
  std::vector<std::string> fetch_prefixes;
  uint32_t capacity = 0;
  proto::WorkerState state = proto::WORKER_STATE_STARTING;
  // The worker itself reported FAULTED (its engine's proofs failed its own
  // verification, or a device error): only its restart clears that; an
  // admin's undrain clears the broker's holds, not this.
  bool reported_faulted = false;
  uint32_t credit = 0;            // JOBs the broker may still send
  // Items sent to it and not yet answered, handed back or taken back: its
  // busy slots. The lease itself is the item's (WorkItem::lease and
  // worker_identity: BrokerCore::LeasedTo); a ref whose item is leased
  // elsewhere now (its job ended and was retried, RetryJob) keeps its slot
  // busy until the old round's answer comes or the worker goes.
  std::set<wire::ItemRef> leased;
  uint32_t queue_depth = 0;       // as last reported
  uint32_t reported_in_flight = 0;
  proto::MemoryStatus memory;
  Clock::time_point last_seen;
  uint64_t items_completed = 0;
  // Proof of life beyond heartbeats: its last STARTED, RESULT or HANDBACK.
  Clock::time_point last_progress{};
  // Drain bookkeeping: phase timeline and who waits for the end.
  std::vector<proto::DrainPhase> phases;
  std::vector<ReplyTo> drain_waiters;

  bool Dispatchable() const { return state == proto::WORKER_STATE_READY && credit > 0; }
  // Who answers for its faults (StrikeBook): its key, or in plaintext mode its id.
  std::string owner() const { return StrikeOwner(key_name, worker_id); }
};

class WorkerRegistry {
 public:
  WorkerRecord* Find(const std::string& identity);
  WorkerRecord* FindByWorkerId(const std::string& worker_id);
  WorkerRecord& Add(const std::string& identity, const std::string& worker_id);
  void Remove(const std::string& identity);

  // True when a registered worker (any state) announced `circuit`.
  bool AnyHolds(const std::string& circuit) const;
  // True when a registered worker (any state) generates `circuit`'s witnesses.
  bool AnyGenerates(const std::string& circuit) const;

  std::map<std::string, WorkerRecord>& all() { return workers_; }
  const std::map<std::string, WorkerRecord>& all() const { return workers_; }

 private:
  std::map<std::string, WorkerRecord> workers_;              // by identity
  std::unordered_map<std::string, std::string> by_worker_id_;  // worker_id -> identity
};

}  // namespace zkfleet::broker
