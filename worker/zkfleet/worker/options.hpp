// The worker core's and pipeline's configuration (zkworker's command line
// fills it in); the broker connection's is ConnectionOptions
// (worker_session.hpp). Plain data.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "zkfleet/witgen/witness_generator.hpp"
#include "zkfleet/fetch/fetcher.hpp"
#include "zkfleet/worker/memory_source.hpp"
#include "zkfleet/worker/pinned_pool.hpp"

namespace zkfleet::worker {

struct WorkerOptions {
  std::string worker_id;  // stable name; default host-pid
  // Items held at once (queued + proving) per device: the worker's credit is
  // bounded by capacity x the devices still in its set.
  uint32_t capacity = 4;
  // How long a drain waits for the item being proved before aborting it and
  // handing it back.
  std::chrono::milliseconds drain_timeout{std::chrono::seconds(60)};
  // TEST ONLY: a pause between pool chunks while RELEASING (0 in production:
  // release as fast as the kernel frees), so a test can observe that state.
  std::chrono::milliseconds test_release_pause{0};
  // TEST ONLY: STARTED messages are withheld this long after an item starts
  // (0 in production: sent at once), so a test can kill the broker while it
  // has leased an item that is running but not yet journaled as STARTED.
  std::chrono::milliseconds test_hold_started{0};
  // TEST ONLY: a pause between an item's run ending and its result reaching
  // the core (0 in production), so a test can make that window as
  // wide as a loaded machine sometimes does.
  std::chrono::milliseconds test_hold_result{0};
  // Items proved at once per device (the pipeline's lanes); 0 = 2 on the
  // CUDA backend (host work overlaps device work), 1 otherwise.
  int pipeline_depth = 0;
  // Testing aid: the dispatcher waits this long after loading before it takes
  // the first item, so the local queue fills first (order tests).
  std::chrono::milliseconds dispatch_start_delay{0};
  // Pinned host pool: its size (bytes or a share of the memory available at
  // start; 0 = no pool) and what must stay free besides it. The memory gate
  // waits until budget + margin fit, at most memory_wait_timeout.
  MemoryBudget pinned_budget{64ull << 20, 0};
  uint64_t memory_margin = 256ull << 20;
  std::chrono::milliseconds memory_wait_timeout{std::chrono::minutes(10)};
  uint64_t pool_chunk_bytes = 0;  // allocation and release step; 0 = the pool kind's default
  // How the pool is pinned (--pool-mode): auto = huge pages registered with
  // cudaHostRegister where transparent huge pages are on, else cudaHostAlloc.
  PoolModeRequest pool_mode = PoolModeRequest::kAuto;
  // Pool bytes pinned before READY (0 = the whole pool). The pool is pinned
  // while the keys load either way; a smaller value makes the worker READY
  // sooner and pins the rest while it proves (which slows the first proofs).
  uint64_t pool_ready_bytes = 0;
  // Engine faults (a proof that failed verification although the witness
  // satisfies the circuit; the item is re-proved on the CPU and sent): after
  // fault_threshold of them within fault_window the worker leaves READY for
  // FAULTED and takes no more work. 0 = never.
  uint32_t fault_threshold = 3;
  std::chrono::seconds fault_window{std::chrono::minutes(10)};
  // For logs and metrics: the device proofs run on ("0", "1", ... for CUDA;
  // "none" on the CPU backend; "0,1" for several; each device's own label is
  // in CircuitSet::devices()).
  std::string device_label = "none";
  // Witnesses by reference (fetch_stage.hpp): the prefixes the worker may
  // fetch from (fetch.allow; none = it takes no references and answers such
  // a JOB as retryable elsewhere), TLS, timeouts and retries; the threads
  // fetching at once.
  fetch::FetchOptions fetch;
  unsigned fetch_threads = 4;
  // The largest witness by reference the worker takes (a JOB names the size;
  // the buffer is allocated before the first byte arrives, in the pool or,
  // without room there, on the heap: fetch_threads x this bounds the heap).
  // 4 GiB: a BN254 witness of 2^27 signals.
  uint64_t max_fetch_bytes = 4ull << 30;
  // Jobs from inputs (generate_stage.hpp): generators run at once (each a
  // child process on one core), and how they are compiled and limited.
  unsigned witgen_threads = 2;
  witgen::WitnessGeneratorOptions witgen;
};

}  // namespace zkfleet::worker
