// Back-pressure: what the broker may hold. Live jobs (accepted, not ended)
// count against limits on work items and witness bytes, in total and per
// client; a SUBMIT that would cross one is refused at once with BUSY and a
// retry-after hint, so a burst can never exhaust the broker's memory or disk.
//
// Thread-safety: not thread-safe; owned by the broker thread.
#pragma once

#include <cstdint>
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

namespace zkfleet::broker {

struct AdmissionLimits {
  uint64_t max_items = 1'000'000;               // live work items, all clients
  uint64_t max_witness_bytes = 64ull << 30;     // live witness bytes, all clients
  uint64_t max_items_per_client = 250'000;
  uint64_t max_witness_bytes_per_client = 16ull << 30;
};

class Admission {
 public:
  explicit Admission(AdmissionLimits limits) : limits_(limits) {}

  // Why a job of `items` items and `bytes` witness bytes from `client` cannot
  // be accepted now; nullopt when it can.
  std::optional<std::string> Refusal(const std::string& client, uint64_t items, uint64_t bytes) const;
  void Add(const std::string& client, uint64_t items, uint64_t bytes);
  void Remove(const std::string& client, uint64_t items, uint64_t bytes);

  uint64_t items() const { return total_.items; }
  uint64_t witness_bytes() const { return total_.bytes; }
  const AdmissionLimits& limits() const { return limits_; }

 private:
  struct Usage {
    uint64_t items = 0;
    uint64_t bytes = 0;
  };
  AdmissionLimits limits_;
  Usage total_;
  std::unordered_map<std::string, Usage> by_client_;  // no zero entries kept
};

}  // namespace zkfleet::broker
