#include "zkfleet/worker/fetch_stage.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::worker {

FetchStage::FetchStage(const fetch::FetchOptions& options, unsigned threads, EventMailbox& mailbox)
    : config_(std::make_shared<const fetch::FetchConfig>(options)), mailbox_(mailbox) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { Run(); });
}

FetchStage::~FetchStage() { Stop(); }

void FetchStage::Submit(std::unique_ptr<QueuedItem> item) {
  const wire::ItemRef ref = item->key.ref();
  std::lock_guard lock(mutex_);
  if (stopping_) return;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  cancels_[ref] = cancel;
  pending_.push_back({std::move(item), std::move(cancel)});
  wake_.notify_one();
}

void FetchStage::Cancel(const wire::ItemRef& ref) {
  std::lock_guard lock(mutex_);
  if (auto it = cancels_.find(ref); it != cancels_.end()) it->second->store(true);
}

size_t FetchStage::in_flight() const {
  std::lock_guard lock(mutex_);
  return cancels_.size();
}

void FetchStage::Stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& [ref, cancel] : cancels_) cancel->store(true);
  }
  wake_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void FetchStage::Run() {
  fetch::Fetcher fetcher(config_);
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, nothing left
      task = std::move(pending_.front());
      pending_.pop_front();
    }
    QueuedItem& item = *task.item;
    const proto::WitnessRef& ref = item.job.witness_ref();
    fetch::FetchRequest request{ref.url(), ref.size(), ref.sha256()};
    const std::span<const uint8_t> buffer = item.witness();
    const std::span<uint8_t> into(const_cast<uint8_t*>(buffer.data()), buffer.size());
    PipelineEvent event;
    event.kind = PipelineEvent::Kind::kFetched;
    event.ref = item.key.ref();
    event.fetch = fetcher.Fetch(request, into, task.cancel.get());
    if (event.fetch.status != fetch::FetchStatus::kOk && event.fetch.status != fetch::FetchStatus::kCancelled) {
      spdlog::warn("job_seq={} partition={}: fetching its witness failed ({}): {}", event.ref.job_seq,
                   event.ref.partition, fetch::FetchStatusName(event.fetch.status), event.fetch.why);
    }
    event.fetched = std::shared_ptr<QueuedItem>(std::move(task.item));
    {
      std::lock_guard lock(mutex_);
      cancels_.erase(event.ref);
    }
    mailbox_.Post(std::move(event));
  }
}

}  // namespace zkfleet::worker
