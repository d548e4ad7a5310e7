// What BrokerCore's source files (broker_core.cpp, broker_core_clients.cpp,
// broker_core_jobs.cpp, broker_core_admin.cpp, broker_core_workers.cpp,
// broker_core_results.cpp, broker_core_dispatch.cpp) share beyond
// broker_core.hpp; no part of the broker's interface: include it only there.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "zkfleet.pb.h"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/storage/journal.hpp"

namespace zkfleet::broker::detail {

// "job_seq=N partition=P", as the broker's logs name a work item.
std::string ItemName(uint64_t job_seq, uint32_t partition);

// A witness from the journal as frames to send: a mapped witness file cut
// into chunks (no copy), bytes copied out of the store as one frame (no
// further copy).
fleet::WitnessFrames FramesOf(storage::StoredWitness stored);

// "EPOCH.NUMBER", as the broker's logs name a lease.
inline std::string LeaseName(const proto::Lease& lease) {
  return std::to_string(lease.epoch()) + "." + std::to_string(lease.number());
}

// The same lease (lease number 0 is no lease).
inline bool SameLease(const proto::Lease& a, const proto::Lease& b) {
  return a.epoch() == b.epoch() && a.number() == b.number() && a.number() != 0;
}

}  // namespace zkfleet::broker::detail
