#include "zkfleet/broker/turn_timer.hpp"

#include <algorithm>
#include <cstdio>

namespace zkfleet::broker {

void TurnTimer::Record(std::chrono::nanoseconds turn, size_t messages) {
  int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(turn).count();
  ++counts_[static_cast<size_t>(std::clamp<int64_t>(us, 0, kBuckets - 1))];
  ++turns_;
  messages_ += messages;
  max_us_ = std::max(max_us_, us);
}

std::string TurnTimer::Summary() const {
  auto percentile = [&](double q) -> int64_t {
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(turns_));
    uint64_t seen = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen > rank) return static_cast<int64_t>(b);
    }
    return static_cast<int64_t>(kBuckets - 1);
  };
  char text[256];
  std::snprintf(text, sizeof(text), "turns=%llu messages/turn=%.1f p50=%lld us p99=%lld us p99.9=%lld us max=%lld us",
                static_cast<unsigned long long>(turns_),
                turns_ ? static_cast<double>(messages_) / static_cast<double>(turns_) : 0.0,
                static_cast<long long>(percentile(0.5)), static_cast<long long>(percentile(0.99)),
                static_cast<long long>(percentile(0.999)), static_cast<long long>(max_us_));
  return text;
}

}  // namespace zkfleet::broker
