// The worker's side of credit flow: which items it holds (queued, running or
// with a result not yet sent) and how much credit is outstanding at the
// broker. Invariant: held + outstanding <= capacity, so the broker can never
// send more than the local queue has room for.
//
// Thread-safety: not thread-safe; owned by the WorkerCore.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "zkfleet/wire/work_key.hpp"

namespace zkfleet::worker {

class CreditLedger {
 public:
  explicit CreditLedger(uint32_t capacity) : capacity_(capacity) {}

  // A JOB arrived. False when the broker sent it without credit or sent an
  // item we already hold (protocol violations; the item is still held so it
  // is answered or handed back).
  bool OnJob(const wire::ItemRef& item);
  // The item's RESULT or HANDBACK was sent. False when it was not held (a
  // result from before a reconnect, or an aborted item): do not send it.
  bool Release(const wire::ItemRef& item);

  // Credit that can be granted now without breaking the invariant, if it is
  // worth a message: at least `batch`, or everything when nothing is
  // outstanding. Records it as outstanding; 0 means send nothing.
  uint32_t TakeGrant(uint32_t batch);

  // A new broker connection: nothing outstanding, and nothing held but
  // `still_held` (items still being proved, announced in READY).
  void Reset(const std::vector<wire::ItemRef>& still_held = {});

  // A new capacity (a device joined or left the worker's set). Credit
  // already granted stays granted: after a shrink, nothing more is granted
  // until held + outstanding is below the new capacity.
  void set_capacity(uint32_t capacity) { capacity_ = capacity; }
  uint32_t capacity() const { return capacity_; }
  size_t held() const { return held_.size(); }
  uint32_t outstanding() const { return outstanding_; }
  const std::set<wire::ItemRef>& held_items() const { return held_; }

 private:
  uint32_t capacity_;
  std::set<wire::ItemRef> held_;
  uint32_t outstanding_ = 0;
};

}  // namespace zkfleet::worker
