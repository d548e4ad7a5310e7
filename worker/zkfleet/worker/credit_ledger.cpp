#include "zkfleet/worker/credit_ledger.hpp"

namespace zkfleet::worker {

bool CreditLedger::OnJob(const wire::ItemRef& item) {
  bool had_credit = outstanding_ > 0;
  if (had_credit) --outstanding_;
  bool fresh = held_.insert(item).second;
  return had_credit && fresh;
}

bool CreditLedger::Release(const wire::ItemRef& item) { return held_.erase(item) > 0; }

uint32_t CreditLedger::TakeGrant(uint32_t batch) {
  uint64_t used = held_.size() + outstanding_;
  if (used >= capacity_) return 0;
  uint32_t room = static_cast<uint32_t>(capacity_ - used);
  if (room < batch && outstanding_ > 0) return 0;
  outstanding_ += room;
  return room;
}

void CreditLedger::Reset(const std::vector<wire::ItemRef>& still_held) {
  held_ = {still_held.begin(), still_held.end()};
  outstanding_ = 0;
}

}  // namespace zkfleet::worker
