// Worker configuration (zkworker's command line fills it in).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/worker/memory_source.hpp"

namespace zkfleet::worker {

struct WorkerOptions {
  std::string broker_endpoint = "tcp://127.0.0.1:5556";  // the broker's worker ROUTER
  std::string worker_id;                                  // stable name; default host-pid
  uint32_t capacity = 4;  // items held at once (queued + proving); bounds credit
  // Heartbeat period; a broker silent for `liveness` periods is presumed gone
  // and the worker reconnects (Paranoid Pirate).
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;
  // How long a drain waits for the item being proved before aborting it and
  // handing it back.
  std::chrono::milliseconds drain_timeout{std::chrono::seconds(60)};
  // Testing aid: the dispatcher waits this long after loading before it takes
  // the first item, so the local queue fills first (order tests).
  std::chrono::milliseconds dispatch_start_delay{0};
  // Pinned host pool: its size (bytes or a share of the memory available at
  // start; 0 = no pool) and what must stay free besides it. The memory gate
  // waits until budget + margin fit, at most memory_wait_timeout.
  MemoryBudget pinned_budget{64ull << 20, 0};
  uint64_t memory_margin = 256ull << 20;
  std::chrono::milliseconds memory_wait_timeout{std::chrono::minutes(10)};
  uint64_t pool_chunk_bytes = 64ull << 20;  // allocation and release step
  fleet::SocketLimits limits;
};

}  // namespace zkfleet::worker
