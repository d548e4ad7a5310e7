#include "zkfleet/worker/local_queue.hpp"

namespace zkfleet::worker {

bool LocalQueue::Push(QueuedItem item) {
  {
    std::lock_guard lock(mutex_);
    if (running_.count(item.key)) return false;
    wire::WorkKey key = item.key;
    if (!items_.emplace(key, std::move(item)).second) return false;
  }
  changed_.notify_all();
  return true;
}

bool LocalQueue::LeastLoaded(int group) const {
  const auto mine = groups_.find(group);
  const size_t running = mine == groups_.end() ? 0 : mine->second.running;
  for (const auto& [id, other] : groups_) {
    if (id != group && other.waiting > 0 && other.running < running) return false;
  }
  return true;
}

std::optional<QueuedItem> LocalQueue::PopForRun(int group, const std::atomic<bool>* leave) {
  std::unique_lock lock(mutex_);
  Group& mine = groups_[group];  // std::map: the reference stays valid
  ++mine.waiting;
  changed_.wait(lock, [&] { return closed_ || (leave && *leave) || (!items_.empty() && LeastLoaded(group)); });
  --mine.waiting;
  std::optional<QueuedItem> item;
  if (!closed_ && !(leave && *leave)) {
    auto first = items_.begin();
    item = std::move(first->second);
    items_.erase(first);
    running_.emplace(item->key, group);
    ++mine.running;
  }
  lock.unlock();
  // Fewer waiters (and one more item running here) may let another group's
  // lane take the next item.
  changed_.notify_all();
  return item;
}

void LocalQueue::FinishRun(const wire::WorkKey& key) {
  {
    std::lock_guard lock(mutex_);
    auto it = running_.find(key);
    if (it == running_.end()) return;
    --groups_[it->second].running;
    running_.erase(it);
  }
  changed_.notify_all();
}

void LocalQueue::Wake() {
  { std::lock_guard lock(mutex_); }  // a flag set before this is seen by every waiter
  changed_.notify_all();
}

std::vector<QueuedItem> LocalQueue::TakeQueuedOf(const std::set<std::string>& circuits) {
  std::lock_guard lock(mutex_);
  std::vector<QueuedItem> taken;
  for (auto it = items_.begin(); it != items_.end();) {
    if (circuits.count(it->second.job.circuit_id())) {
      taken.push_back(std::move(it->second));
      it = items_.erase(it);
    } else {
      ++it;
    }
  }
  return taken;
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

std::vector<wire::WorkKey> LocalQueue::running_keys() const {
  std::lock_guard lock(mutex_);
  std::vector<wire::WorkKey> keys;
  for (const auto& [key, group] : running_) keys.push_back(key);
  return keys;
}

size_t LocalQueue::running_in(int group) const {
  std::lock_guard lock(mutex_);
  auto it = groups_.find(group);
  return it == groups_.end() ? 0 : it->second.running;
}

size_t LocalQueue::waiting() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const auto& [id, group] : groups_) n += group.waiting;
  return n;
}

}  // namespace zkfleet::worker
