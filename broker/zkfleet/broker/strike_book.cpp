#include "zkfleet/broker/strike_book.hpp"

#include <algorithm>

namespace zkfleet::broker {

const char* StrikeKindName(StrikeKind kind) {
  switch (kind) {
    case StrikeKind::kRejectedResult: return "rejected result";
    case StrikeKind::kReclaimedLease: return "reclaimed lease";
    case StrikeKind::kOverBound: return "message over a bound";
    case StrikeKind::kLostWork: return "lost started work";
    case StrikeKind::kFalseVerdict: return "false client-fault verdict";
    case StrikeKind::kFalseSignals: return "public signals other keys refuted";
  }
  return "?";
}

void StrikeBook::Expire(std::deque<Strike>& strikes, Clock::time_point now) const {
  if (window_.count() <= 0) return;
  while (!strikes.empty() && now - strikes.front().at >= window_) strikes.pop_front();
}

uint32_t StrikeBook::Add(const std::string& owner, StrikeKind kind, Clock::time_point now) {
  std::deque<Strike>& strikes = strikes_[owner];
  strikes.push_back({kind, now});
  Expire(strikes, now);
  return static_cast<uint32_t>(strikes.size());
}

uint32_t StrikeBook::Count(const std::string& owner, Clock::time_point now) {
  auto it = strikes_.find(owner);
  if (it == strikes_.end()) return 0;
  Expire(it->second, now);
  const auto count = static_cast<uint32_t>(it->second.size());
  if (count == 0) strikes_.erase(it);
  return count;
}

void StrikeBook::ForgiveLostWork(const std::string& owner) {
  auto it = strikes_.find(owner);
  if (it == strikes_.end()) return;
  std::erase_if(it->second, [](const Strike& s) { return s.kind == StrikeKind::kLostWork; });
  if (it->second.empty()) strikes_.erase(it);
}

}  // namespace zkfleet::broker
