// The fetch stage: witnesses by reference (proto::WitnessRef in a JOB),
// fetched straight into the item's buffer in the pinned pool on the stage's
// own threads (one fetch::Fetcher each, so connections are reused), while the
// pipeline's lanes prove earlier items. The core allocates the buffer and
// hands the item over; the stage fills it (the one copy: libcurl's write
// callback or pread, hashed as the bytes arrive) and posts a kFetched
// PipelineEvent with the item back and the FetchResult: the core queues it
// for a lane only when the size and the SHA-256 matched.
//
// Ownership: the stage owns its threads and the items while they are
// fetched; the mailbox is not owned and must outlive the stage.
// Thread-safety: Submit, Cancel, in_flight and Stop are called from the
// core's thread; the stage's threads only post to the mailbox.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "zkfleet/fetch/fetcher.hpp"
#include "zkfleet/wire/work_key.hpp"
#include "zkfleet/worker/local_queue.hpp"
#include "zkfleet/worker/proving_pipeline.hpp"

namespace zkfleet::worker {

class FetchStage {
 public:
  // Validates `options` (allowed prefixes, CA bundle, client certificate):
  // throws zkfleet::Error with the reason when they cannot be used. Starts
  // max(1, threads) threads.
  FetchStage(const fetch::FetchOptions& options, unsigned threads, EventMailbox& mailbox);
  ~FetchStage();  // Stop()
  FetchStage(const FetchStage&) = delete;
  FetchStage& operator=(const FetchStage&) = delete;

  // Fetches the witness `item->job.witness_ref()` names into
  // `item->witness()` (allocated with exactly its size); posts kFetched
  // carrying the returned generation, unique per submission, so that a
  // cancelled fetch's late event is never taken for a newer fetch of the
  // same item (a reconnect, then the broker's redelivery).
  uint64_t Submit(std::unique_ptr<QueuedItem> item);
  // The item's fetch ends soon (or never starts); its kFetched still comes,
  // with FetchStatus::kCancelled unless it had already finished.
  void Cancel(const wire::ItemRef& ref);
  // Items submitted whose kFetched has not been posted yet.
  size_t in_flight() const;
  // Cancels everything, waits for the threads; later Submits are dropped.
  void Stop();

 private:
  struct Task {
    std::unique_ptr<QueuedItem> item;
    std::shared_ptr<std::atomic<bool>> cancel;
    uint64_t generation = 0;
  };
  struct Live {
    std::shared_ptr<std::atomic<bool>> cancel;
    uint64_t generation = 0;
  };
  void Run();

  std::shared_ptr<const fetch::FetchConfig> config_;
  EventMailbox& mailbox_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> pending_;                                            // guarded by mutex_
  std::map<wire::ItemRef, Live> live_;  // guarded by mutex_: the newest submission of each item, not posted yet
  size_t in_flight_ = 0;                // guarded by mutex_: submissions not posted yet
  uint64_t next_generation_ = 1;        // guarded by mutex_
  bool stopping_ = false;                                               // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace zkfleet::worker
