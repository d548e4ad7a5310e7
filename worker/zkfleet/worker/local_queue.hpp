// The worker's local priority queue: work items received from the broker and
// not yet proved, ordered (priority desc, job_seq, partition). A newly
// arrived higher-priority item overtakes queued lower-priority ones; items
// being proved are out of the queue and are never preempted. Items start in
// key order; with a pipeline of several lanes more than one may be running.
//
// Routing between devices: every lane pops for a group (its device). When
// several groups have a lane waiting, the next item goes to a group with the
// fewest items running (ties: whichever lane wakes first), so a worker with
// several GPUs spreads items over them (least loaded first) and a GPU whose
// lanes are all busy takes nothing. With one group this is plain key order.
//
// A queued item's job carries no lease: the WorkerCore holds the only copy.
//
// Thread-safety: thread-safe. The core's thread pushes and takes items back
// (drain, reconnect); the pipeline's lanes pop and finish them.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <map>
#include <set>
#include <string>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/wire/work_key.hpp"
#include "zkfleet/worker/pinned_pool.hpp"

namespace zkfleet::worker {

struct QueuedItem {
  wire::WorkKey key;
  proto::Job job;
  // The witness (.wtns bytes), received once: into the pinned pool when it
  // had room (the device DMAs from there), else into a heap buffer (a slower,
  // pageable upload). Never copied again.
  PoolBuffer pooled_witness;
  std::unique_ptr<uint8_t[]> heap_witness;
  size_t heap_witness_size = 0;
  std::chrono::steady_clock::time_point arrived;  // in this queue (for a generated witness: when it was done)
  uint64_t circuit_version = 0;  // CircuitSet::Version of its circuit when it was queued
  // A job from inputs (generate_stage.hpp): seconds its witness waited for a
  // generator, and the generator's run.
  double generation_queue_s = 0;
  double witness_generation_s = 0;

  std::span<const uint8_t> witness() const {
    if (pooled_witness) return {pooled_witness.data(), pooled_witness.size()};
    return {heap_witness.get(), heap_witness_size};
  }
  // Where the receive (or the fetch stage) writes it.
  std::span<uint8_t> writable_witness() {
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

  // Blocks until an item is queued and `group` may take it (see the top of
  // this file), or Close() is called, or `*leave` is set (and Wake() called):
  // then nullopt. The item returned is the first by key; it counts as
  // running in `group` until FinishRun(its key).
  std::optional<QueuedItem> PopForRun(int group = 0, const std::atomic<bool>* leave = nullptr);
  void FinishRun(const wire::WorkKey& key);
  // Wakes every PopForRun caller to check its `leave` flag.
  void Wake();

  // Removes and returns every queued (unstarted) item, in key order.
  std::vector<QueuedItem> TakeAllQueued();
  // The same for the queued items of `circuits` only.
  std::vector<QueuedItem> TakeQueuedOf(const std::set<std::string>& circuits);

  // Wakes PopForRun callers; later pops return nullopt.
  void Close();
  // Waits until `deadline` or Close(); true when closed.
  bool WaitForClose(std::chrono::steady_clock::time_point deadline);

  size_t queued() const;
  size_t running() const;
  std::vector<wire::WorkKey> running_keys() const;
  size_t running_in(int group) const;  // items running in `group`
  size_t waiting() const;              // callers blocked in PopForRun (tests)

 private:
  struct Group {
    size_t running = 0;
    size_t waiting = 0;
  };
  // True when `group` has no more items running than any other group with a
  // lane waiting. Called with the mutex held.
  bool LeastLoaded(int group) const;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<wire::WorkKey, QueuedItem> items_;
  std::map<wire::WorkKey, int> running_;  // and the group running it
  std::map<int, Group> groups_;
  bool closed_ = false;
};

}  // namespace zkfleet::worker
