#include "zkfleet/broker/admission.hpp"

namespace zkfleet::broker {

std::optional<std::string> Admission::Refusal(const std::string& client, uint64_t items, uint64_t bytes) const {
  auto over = [](uint64_t used, uint64_t more, uint64_t limit) { return used + more > limit; };
  if (over(total_.items, items, limits_.max_items)) {
    return "the broker holds " + std::to_string(total_.items) + " live work items (limit " +
           std::to_string(limits_.max_items) + ")";
  }
  if (over(total_.bytes, bytes, limits_.max_witness_bytes)) {
    return "the broker holds " + std::to_string(total_.bytes) + " bytes of witnesses (limit " +
           std::to_string(limits_.max_witness_bytes) + ")";
  }
  Usage mine;
  if (auto it = by_client_.find(client); it != by_client_.end()) mine = it->second;
  if (over(mine.items, items, limits_.max_items_per_client)) {
    return "client '" + client + "' has " + std::to_string(mine.items) + " live work items (limit " +
           std::to_string(limits_.max_items_per_client) + " per client)";
  }
  if (over(mine.bytes, bytes, limits_.max_witness_bytes_per_client)) {
    return "client '" + client + "' has " + std::to_string(mine.bytes) + " bytes of witnesses queued (limit " +
           std::to_string(limits_.max_witness_bytes_per_client) + " per client)";
  }
  return std::nullopt;
}

void Admission::Add(const std::string& client, uint64_t items, uint64_t bytes) {
  total_.items += items;
  total_.bytes += bytes;
  Usage& mine = by_client_[client];
  mine.items += items;
  mine.bytes += bytes;
}

void Admission::Remove(const std::string& client, uint64_t items, uint64_t bytes) {
  total_.items -= std::min(total_.items, items);
  total_.bytes -= std::min(total_.bytes, bytes);
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return;
  it->second.items -= std::min(it->second.items, items);
  it->second.bytes -= std::min(it->second.bytes, bytes);
  if (it->second.items == 0 && it->second.bytes == 0) by_client_.erase(it);
}

}  // namespace zkfleet::broker
