#include "zkfleet/worker/fetch_stage.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::worker {

FetchStage::FetchStage(const fetch::FetchOptions& options, unsigned threads, EventMailbox& mailbox)
    : config_(std::make_shared<const fetch::FetchConfig>(options)), mailbox_(mailbox) {
  for (unsigned i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { Run(); });
}

FetchStage::~FetchStage() { Stop(); }

uint64_t FetchStage::Submit(std::unique_ptr<QueuedItem> item) {
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

void FetchStage::Cancel(const wire::ItemRef& ref) {
  std::lock_guard lock(mutex_);
  if (auto it = live_.find(ref); it != live_.end()) it->second.cancel->store(true);
}

size_t FetchStage::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

void FetchStage::Stop() {
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
    const std::span<uint8_t> into = item.writable_witness();
    PipelineEvent event;
    event.kind = PipelineEvent::Kind::kFetched;
    event.ref = item.key.ref();
    event.generation = task.generation;
    try {
      event.fetch = fetcher.Fetch(request, into, task.cancel.get());
    } catch (const std::exception& e) {
      // Not the job's fault (no handle, an OpenSSL failure): another worker may manage.
      event.fetch.status = fetch::FetchStatus::kTransient;
      event.fetch.why = wire::RedactUrl(ref.url()) + ": the fetch failed on this worker: " + e.what();
    }
    if (event.fetch.status != fetch::FetchStatus::kOk && event.fetch.status != fetch::FetchStatus::kCancelled) {
      spdlog::warn("job_seq={} partition={}: fetching its witness failed ({}): {}", event.ref.job_seq,
                   event.ref.partition, fetch::FetchStatusName(event.fetch.status), event.fetch.why);
    }
    event.fetched = std::shared_ptr<QueuedItem>(std::move(task.item));
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
