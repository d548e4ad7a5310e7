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

uint32_t StrikeBook::Add(const std::string& owner, const std::string& worker_id, StrikeKind kind,
                         Clock::time_point now) {
  std::deque<Strike>& strikes = strikes_[owner];
  strikes.push_back({kind, now, worker_id});
  Expire(strikes, now);
  return static_cast<uint32_t>(strikes.size());
}

uint32_t StrikeBook::Count(const std::string& owner, Clock::time_point now, const std::set<std::string>& except) {
  auto it = strikes_.find(owner);
  if (it == strikes_.end()) return 0;
  Expire(it->second, now);
  if (it->second.empty()) {
    strikes_.erase(it);
    return 0;
  }
  return static_cast<uint32_t>(std::count_if(it->second.begin(), it->second.end(),
                                             [&except](const Strike& s) { return !except.count(s.worker_id); }));
}

std::set<std::string> StrikeBook::StruckWorkers(const std::string& owner, Clock::time_point now) {
  std::set<std::string> ids;
  auto it = strikes_.find(owner);
  if (it == strikes_.end()) return ids;
  Expire(it->second, now);
  for (const Strike& strike : it->second) ids.insert(strike.worker_id);
  return ids;
}

void StrikeBook::ForgiveLostWork(const std::string& owner) {
  auto it = strikes_.find(owner);
  if (it == strikes_.end()) return;
  std::erase_if(it->second, [](const Strike& s) { return s.kind == StrikeKind::kLostWork; });
  if (it->second.empty()) strikes_.erase(it);
}

}  // namespace zkfleet::broker
