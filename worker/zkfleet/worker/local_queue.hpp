// The worker's local priority queue: work items received from the broker and
// not yet proved, ordered (priority desc, job_seq, partition). A newly
// arrived higher-priority item overtakes queued lower-priority ones; items
// being proved are out of the queue and are never preempted. Items start in
// key order; with a pipeline of several lanes more than one may be running.
//
// Thread-safety: thread-safe. The socket thread pushes and takes items back
// (drain); the pipeline's lanes pop and finish them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/fleet/work_key.hpp"
#include "zkfleet/worker/pinned_pool.hpp"

namespace zkfleet::worker {

struct QueuedItem {
  fleet::WorkKey key;
  proto::Job job;
  // The witness (.wtns bytes), received once: into the pinned pool when it
  // had room (the device DMAs from there), else into a heap buffer (a slower,
  // pageable upload). Never copied again.
  PoolBuffer pooled_witness;
  std::unique_ptr<uint8_t[]> heap_witness;
  size_t heap_witness_size = 0;
  std::chrono::steady_clock::time_point arrived;

  std::span<const uint8_t> witness() const {
    if (pooled_witness) return {pooled_witness.data(), pooled_witness.size()};
    return {heap_witness.get(), heap_witness_size};
  }
  bool witness_pinned() const { return static_cast<bool>(pooled_witness); }
};

class LocalQueue {
 public:
  // False (and nothing queued) when an item with this key is already queued
  // or running: keys are unique.
  bool Push(QueuedItem item);

  // Blocks until an item is queued or Close() is called (then nullopt). The
  // item returned is the first by key; it counts as running until
  // FinishRun(its key).
  std::optional<QueuedItem> PopForRun();
  void FinishRun(const fleet::WorkKey& key);

  // Removes and returns every queued (unstarted) item, in key order.
  std::vector<QueuedItem> TakeAllQueued();

  // Wakes PopForRun callers; later pops return nullopt.
  void Close();
  // Waits until `deadline` or Close(); true when closed.
  bool WaitForClose(std::chrono::steady_clock::time_point deadline);

  size_t queued() const;
  size_t running() const;
  std::vector<fleet::WorkKey> running_keys() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<fleet::WorkKey, QueuedItem> items_;
  std::set<fleet::WorkKey> running_;
  bool closed_ = false;
};

}  // namespace zkfleet::worker
