// The worker's proving side, run on its own threads: a start thread (memory
// gate, pinned pool, proving keys) and then `lanes` prover threads that take
// items from the LocalQueue in key order and prove them. With two lanes on
// one GPU, item N+1's witness check and upload and item N-1's assembly and
// verification run on the host while item N's kernels run (the engine
// serialises device work per device).
//
// Several devices (--gpus): every device gets --pipeline-depth lanes of its
// own, bound to it (lane i proves on device i % devices). A lane pulls from
// the shared LocalQueue only when it is free, and the queue gives the next
// item to a device with the fewest items running (LocalQueue, "Routing"):
// least-loaded routing by construction, with no per-device queue to
// rebalance. A device that leaves the set (RetireDevice, or a lane that got
// a fatal device error on it) takes no more items: its lanes finish what
// they hold and stop, and the last of them frees that device's keys
// (events::DeviceReleased); the other devices go on. Everything the pipeline
// has to say reaches the WorkerCore as PipelineEvents (pipeline_events.hpp)
// through an EventMailbox.
//
// Ownership: the pipeline owns its threads; everything else is the core's.
//
// Thread-safety: construct, Start() and Join()/Abandon() on the core's
// thread. The pipeline's threads share the LocalQueue, the PinnedPool (both
// thread-safe) and the CircuitSet (its keys are immutable after Load();
// Prove may run on several lanes at once) with it; the mailbox is the only
// way back. RetireDevice and the accessors may be called from any thread;
// StopPoolGrowth from any thread but the pool's growth thread (it joins it,
// so it blocks until the chunks being pinned are done).
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/local_queue.hpp"
#include "zkfleet/worker/memory_source.hpp"
#include "zkfleet/worker/options.hpp"
#include "zkfleet/worker/pinned_pool.hpp"
#include "zkfleet/worker/pipeline_events.hpp"

namespace zkfleet::worker {

class ProvingPipeline {
 public:
  // Nothing is owned; everything must outlive the pipeline.
  ProvingPipeline(const WorkerOptions& options, CircuitSet& circuits, MemorySource& memory, PinnedPool& pool,
                  LocalQueue& queue, EventMailbox& mailbox);
  ~ProvingPipeline();

  // Starts the start thread; it posts MemoryGate, then KeysLoaded or
  // StartFailed, then runs the lanes until the queue is closed.
  void Start();
  // After LocalQueue::Close(): waits for every thread. The last lane to leave
  // frees the proving keys and posts KeysReleased.
  void Join();
  // Leaves the threads running (a lane is inside a proof the drain gave up
  // on); the process must then end with std::_Exit.
  void Abandon();
  // Device `device` (an index in CircuitSet::devices()) leaves: its lanes
  // take no more items, finish the one they prove, and stop; the last frees
  // its keys and posts DeviceReleased. Idempotent; any thread.
  void RetireDevice(size_t device);
  // Stops the pool's background growth and waits for it (at most one batch
  // of chunks): the drain calls it before releasing the pool.
  void StopPoolGrowth();

  int lanes() const { return lanes_; }  // on all devices together
  int depth() const { return depth_; }  // lanes per device
  // True once every lane has stopped and the keys are freed (KeysReleased
  // was posted), e.g. after every device left the set.
  bool keys_released() const { return keys_released_.load(); }
  uint64_t pool_budget() const { return pool_budget_.load(); }
  uint64_t last_available() const { return last_available_.load(); }

 private:
  void StartMain();
  // Waits until budget + margin fit, then starts pinning the pool on its own
  // thread. False when the worker should stop (timeout: StartFailed posted;
  // or a drain).
  bool PassMemoryGate();
  // Waits until --pool-ready bytes are pinned. False when pinning failed
  // first (StartFailed posted) or the worker is draining.
  bool WaitForPoolReady();
  void LaneMain(int lane);
  void GrowPool(PinnedPool::Kind kind, uint64_t bytes);

  const WorkerOptions& options_;
  CircuitSet& circuits_;
  MemorySource& memory_;
  PinnedPool& pool_;
  LocalQueue& queue_;
  EventMailbox& mailbox_;
  const size_t devices_;
  const int depth_;
  const int lanes_;
  std::vector<std::atomic<bool>> retired_;             // per device: take no more items
  std::vector<std::atomic<int>> device_lanes_running_;  // per device
  std::atomic<bool> keys_released_{false};
  std::atomic<uint64_t> pool_budget_{0};
  std::atomic<uint64_t> last_available_{0};
  std::atomic<int> lanes_running_{0};
  std::atomic<bool> stop_growth_{false};
  std::atomic<bool> growth_done_{false};
  std::string growth_error_;  // guarded by threads_mutex_
  uint64_t ready_bytes_ = 0;  // written by the start thread before it reads it
  std::chrono::steady_clock::time_point pin_started_;
  std::thread growth_thread_;  // guarded by threads_mutex_ (created on the start thread)
  std::thread start_thread_;
  std::vector<std::thread> lane_threads_;  // written by the start thread; read after joining it
  std::mutex threads_mutex_;
};

}  // namespace zkfleet::worker
