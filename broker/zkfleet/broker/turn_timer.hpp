// How long the broker thread takes to serve one loop turn (from poll's return
// to the last send), for turns that handled messages: the time a message
// spends inside the broker on each hop. Logged at shutdown; bench/fleet
// reports it next to the end-to-end latency.
//
// Thread-safety: not thread-safe; owned by the broker thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace zkfleet::broker {

class TurnTimer {
 public:
  void Record(std::chrono::nanoseconds turn, size_t messages);
  // "turns=N messages/turn=M p50=.. p99=.. max=.. us" (microseconds).
  std::string Summary() const;

 private:
  // 1 us buckets up to 10 ms; longer turns land in the last bucket.
  static constexpr size_t kBuckets = 10000;
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t turns_ = 0;
  uint64_t messages_ = 0;
  int64_t max_us_ = 0;
};

}  // namespace zkfleet::broker
