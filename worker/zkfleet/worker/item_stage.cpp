#include "zkfleet/worker/item_stage.hpp"

namespace zkfleet::worker {

ItemStage::ItemStage(events::WitnessSource source, Unexpected unexpected, unsigned threads, EventMailbox& mailbox,
                     std::function<Work()> make_work)
    : source_(source), unexpected_(std::move(unexpected)), mailbox_(mailbox) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) {
    threads_.emplace_back([this, make_work] { Run(make_work()); });
  }
}

ItemStage::~ItemStage() { Stop(); }

uint64_t ItemStage::Submit(std::unique_ptr<QueuedItem> item) {
  const wire::ItemRef ref = item->key.ref();
  std::lock_guard lock(mutex_);
  if (stopping_) return 0;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  const uint64_t generation = next_generation_++;
  if (auto old = live_.find(ref); old != live_.end()) old->second.cancel->store(true);  // superseded
  live_[ref] = {cancel, generation};
  ++in_flight_;
  pending_.push_back({std::move(item), std::move(cancel), generation});
  wake_.notify_one();
  return generation;
}

void ItemStage::Cancel(const wire::ItemRef& ref) {
  std::lock_guard lock(mutex_);
  if (auto it = live_.find(ref); it != live_.end()) it->second.cancel->store(true);
}

size_t ItemStage::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

size_t ItemStage::waiting() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

void ItemStage::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [ref, live] : live_) live.cancel->store(true);
    for (Task& task : pending_) task.cancel->store(true);
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void ItemStage::Run(Work work) {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left
      task = std::move(pending_.front());
      pending_.pop_front();
    }
    events::WitnessPrepared event;
    event.source = source_;
    event.ref = task.item->key.ref();
    event.generation = task.generation;
    try {
      work(*task.item, *task.cancel, event);
    } catch (const std::exception& e) {
      // The stage's work reports its own failures; this is the last guard
      // (a thread that throws would end the process).
      event.verdict = events::WitnessVerdict::kRetryable;
      event.status = unexpected_.status;
      event.why = unexpected_.why_prefix + e.what();
    }
    event.item = std::shared_ptr<QueuedItem>(std::move(task.item));
    {
      std::lock_guard lock(mutex_);
      if (auto it = live_.find(event.ref); it != live_.end() && it->second.generation == task.generation) {
        live_.erase(it);
      }
      --in_flight_;
    }
    mailbox_.Post(std::move(event));
  }
}

}  // namespace zkfleet::worker
