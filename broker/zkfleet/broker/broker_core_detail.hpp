// What BrokerCore's source files (broker_core.cpp, broker_core_clients.cpp,
// broker_core_jobs.cpp, broker_core_admin.cpp, broker_core_workers.cpp,
// broker_core_dispatch.cpp) share beyond
// broker_core.hpp; no part of the broker's interface: include it only there.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/storage/journal.hpp"

namespace zkfleet::broker::detail {

// "job_seq=N partition=P", as the broker's logs name a work item.
std::string ItemName(uint64_t job_seq, uint32_t partition);

// A witness from the journal as frames to send: a mapped witness file cut
// into chunks (no copy), bytes copied out of the store as one frame (no
// further copy).
fleet::WitnessFrames FramesOf(storage::StoredWitness stored);

}  // namespace zkfleet::broker::detail
