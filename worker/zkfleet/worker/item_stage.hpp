// A stage that fills items' witness buffers off the core's thread: the fetch
// stage (witnesses by reference) and the generate stage (witnesses computed
// from inputs) are each one of these with their own work. The core
// allocates the buffer (pinned pool, else heap) and submits the item; a
// stage thread runs the work into that buffer and posts an
// events::WitnessPrepared of the stage's source, with the item back, to the
// mailbox. Each submission has a generation, unique per stage, so that a
// cancelled item's late event is never taken for a newer submission of the
// same item (a reconnect, then the broker's redelivery).
//
// Ownership: the stage owns its threads and the items while they are worked
// on; the mailbox is not owned and must outlive the stage.
// Thread-safety: Submit, Cancel, in_flight and Stop are called from the
// core's thread; the stage's threads run the work and post to the mailbox.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/wire/work_key.hpp"
#include "zkfleet/worker/local_queue.hpp"
#include "zkfleet/worker/pipeline_events.hpp"

namespace zkfleet::worker {

class ItemStage {
 public:
  // Fills `item`'s witness and says how in `event` (its verdict, why, and
  // the figures; source, ref, generation and the item are set by the
  // stage). `cancel` turns true when the item is cancelled: the work should
  // end soon.
  using Work =
      std::function<void(QueuedItem& item, const std::atomic<bool>& cancel, events::WitnessPrepared& event)>;

  // How the stage reports work that threw (the last guard: a thread that
  // throws would end the process): retryable, with the stage's own status
  // label (its metric's) and `why_prefix` + the exception's text.
  struct Unexpected {
    std::string status;
    std::string why_prefix;
  };

  // Starts max(1, threads) threads; each calls make_work once and keeps
  // what it returns (its own state: a Fetcher and its connections).
  ItemStage(events::WitnessSource source, Unexpected unexpected, unsigned threads, EventMailbox& mailbox,
            std::function<Work()> make_work);
  ~ItemStage();  // Stop()
  ItemStage(const ItemStage&) = delete;
  ItemStage& operator=(const ItemStage&) = delete;

  // Queues the item; returns its generation (0 when stopped: dropped).
  uint64_t Submit(std::unique_ptr<QueuedItem> item);
  // The item's work ends soon (or never starts); its event still comes, the
  // work's status saying it was cancelled unless it had already finished.
  void Cancel(const wire::ItemRef& ref);
  // Items submitted whose event has not been posted yet.
  size_t in_flight() const;
  // Items submitted that no thread has taken yet.
  size_t waiting() const;
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
  void Run(Work work);

  const events::WitnessSource source_;
  const Unexpected unexpected_;
  EventMailbox& mailbox_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> pending_;            // guarded by mutex_
  std::map<wire::ItemRef, Live> live_;  // guarded by mutex_: the newest submission of each item, not posted yet
  size_t in_flight_ = 0;                // guarded by mutex_: submissions not posted yet
  uint64_t next_generation_ = 1;        // guarded by mutex_
  bool stopping_ = false;               // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace zkfleet::worker
