#include "zkfleet/worker/local_queue.hpp"

namespace zkfleet::worker {

bool LocalQueue::Push(QueuedItem item) {
  {
    std::lock_guard lock(mutex_);
    if (running_.count(item.key)) return false;
    fleet::WorkKey key = item.key;
    if (!items_.emplace(key, std::move(item)).second) return false;
  }
  changed_.notify_all();
  return true;
}

std::optional<QueuedItem> LocalQueue::PopForRun() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return closed_ || !items_.empty(); });
  if (closed_) return std::nullopt;
  auto first = items_.begin();
  QueuedItem item = std::move(first->second);
  items_.erase(first);
  running_.insert(item.key);
  return item;
}

void LocalQueue::FinishRun(const fleet::WorkKey& key) {
  std::lock_guard lock(mutex_);
  running_.erase(key);
}

std::vector<QueuedItem> LocalQueue::TakeAllQueued() {
  std::lock_guard lock(mutex_);
  std::vector<QueuedItem> taken;
  taken.reserve(items_.size());
  for (auto& [key, item] : items_) taken.push_back(std::move(item));
  items_.clear();
  return taken;
}

void LocalQueue::Close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

bool LocalQueue::WaitForClose(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return changed_.wait_until(lock, deadline, [&] { return closed_; });
}

size_t LocalQueue::queued() const {
  std::lock_guard lock(mutex_);
  return items_.size();
}

size_t LocalQueue::running() const {
  std::lock_guard lock(mutex_);
  return running_.size();
}

std::vector<fleet::WorkKey> LocalQueue::running_keys() const {
  std::lock_guard lock(mutex_);
  return {running_.begin(), running_.end()};
}

}  // namespace zkfleet::worker
