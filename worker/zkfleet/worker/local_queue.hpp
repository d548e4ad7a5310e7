// The worker's local priority queue: work items received from the broker and
// not yet proved, ordered (priority desc, job_seq, partition). A newly
// arrived higher-priority item overtakes queued lower-priority ones; the item
// being proved is out of the queue and is never preempted.
//
// Thread-safety: thread-safe. The socket thread pushes and takes items back
// (drain); the one dispatcher thread pops and finishes them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/fleet/work_key.hpp"
#include "zkfleet/worker/pinned_pool.hpp"

namespace zkfleet::worker {

struct QueuedItem {
  fleet::WorkKey key;
  proto::Job job;  // job.witness is empty while the witness sits in `witness`
  PoolBuffer witness;  // the witness in the pinned pool, when it had room
  std::chrono::steady_clock::time_point arrived;
};

class LocalQueue {
 public:
  // False (and nothing queued) when an item with this key is already queued
  // or running: keys are unique.
  bool Push(QueuedItem item);

  // Blocks until an item is queued or Close() is called (then nullopt). The
  // item returned is the first by key; it counts as running until FinishRun.
  std::optional<QueuedItem> PopForRun();
  void FinishRun();

  // Removes and returns every queued (unstarted) item, in key order.
  std::vector<QueuedItem> TakeAllQueued();

  // Wakes PopForRun callers; later pops return nullopt.
  void Close();
  // Waits until `deadline` or Close(); true when closed.
  bool WaitForClose(std::chrono::steady_clock::time_point deadline);

  size_t queued() const;
  bool running() const;
  std::optional<fleet::WorkKey> running_key() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<fleet::WorkKey, QueuedItem> items_;
  std::optional<fleet::WorkKey> running_;
  bool closed_ = false;
};

}  // namespace zkfleet::worker
