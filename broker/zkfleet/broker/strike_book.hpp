// The faults the broker has seen of each worker owner: strikes, counted per
// owner (a worker's CURVE key, or its worker id in plaintext mode), never
// per connection or per worker id, so that a new process, a new --id or a
// new READY does not wipe them. Enough strikes within a window make the
// owner FAULTED (BrokerCore acts on the count this returns).
//
//   kRejectedResult  a RESULT the broker refused (forged, replayed, malformed)
//   kReclaimedLease  a lease taken back (never started, or overran)
//   kOverBound       a message over one of the protocol's bounds
//   kLostWork        a connection that went away with started items, whose
//                    attempts were then charged to other clients' jobs
//   kFalseVerdict    a worker said a job was the client's fault (not
//                    retryable), and another key's worker proved it
//
// Each strike names the worker id it came from ("" when no one worker can
// answer for it: a false verdict or false signals are the key's word). The
// verdict then falls on what the strikes point at (BrokerCore::Strike): the
// one worker id that earned them all, or the whole key when they came from
// several ids (a key that changes ids to shed its strikes, or a host whose
// GPUs fail together) or from none.
//
// A crash that loses started work is what an honest worker does too (a
// killed process, an OOM): a verified RESULT from the owner forgives its
// kLostWork strikes. The other kinds are forgiven only by age (the window)
// or by an administrator (Clear: `zkctl undrain`).
//
// Thread-safety: not thread-safe; owned by the broker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "zkfleet/broker/job_table.hpp"

namespace zkfleet::broker {

enum class StrikeKind { kRejectedResult, kReclaimedLease, kOverBound, kLostWork, kFalseVerdict, kFalseSignals };
const char* StrikeKindName(StrikeKind kind);  // "rejected result", ...

class StrikeBook {
 public:
  // Strikes older than `window` no longer count (0: they never expire).
  explicit StrikeBook(std::chrono::milliseconds window) : window_(window) {}

  // Records a strike against `owner`, earned by its worker `worker_id` ("":
  // by the key as a whole); returns the owner's strikes now counted.
  uint32_t Add(const std::string& owner, const std::string& worker_id, StrikeKind kind, Clock::time_point now);
  // The owner's strikes within the window, but those of the worker ids
  // `except` names.
  uint32_t Count(const std::string& owner, Clock::time_point now, const std::set<std::string>& except = {});
  // The worker ids the owner's strikes within the window came from ("" among
  // them when one was the key's as a whole).
  std::set<std::string> StruckWorkers(const std::string& owner, Clock::time_point now);
  // A verified RESULT from `owner`: its kLostWork strikes are forgiven.
  void ForgiveLostWork(const std::string& owner);
  // An administrator's pardon (zkctl undrain): every strike of `owner` goes.
  void Clear(const std::string& owner) { strikes_.erase(owner); }

 private:
  struct Strike {
    StrikeKind kind;
    Clock::time_point at;
    std::string worker_id;
  };
  void Expire(std::deque<Strike>& strikes, Clock::time_point now) const;

  std::chrono::milliseconds window_;
  std::map<std::string, std::deque<Strike>> strikes_;  // by owner, oldest first
};

}  // namespace zkfleet::broker
