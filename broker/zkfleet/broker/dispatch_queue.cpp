#include "zkfleet/broker/dispatch_queue.hpp"

namespace zkfleet::broker {

bool DispatchQueue::Insert(const std::string& circuit, const wire::WorkKey& key) {
  if (!queues_[circuit].insert(key).second) return false;
  ++depth_[key.priority];
  ++size_;
  return true;
}

bool DispatchQueue::Erase(const std::string& circuit, const wire::WorkKey& key) {
  auto it = queues_.find(circuit);
  if (it == queues_.end() || it->second.erase(key) == 0) return false;
  if (it->second.empty()) queues_.erase(it);
  --depth_[key.priority];
  --size_;
  return true;
}

std::optional<wire::WorkKey> DispatchQueue::Front(const std::string& circuit) const {
  auto it = queues_.find(circuit);
  if (it == queues_.end()) return std::nullopt;
  return *it->second.begin();
}

std::optional<uint64_t> DispatchQueue::OldestSeq(proto::Priority priority) const {
  std::optional<uint64_t> oldest;
  for (const auto& [circuit, keys] : queues_) {
    // Keys of one priority are contiguous and ordered by job_seq.
    auto it = keys.lower_bound(wire::WorkKey{priority, 0, 0});
    if (it != keys.end() && it->priority == priority && (!oldest || it->job_seq < *oldest)) oldest = it->job_seq;
  }
  return oldest;
}

}  // namespace zkfleet::broker
