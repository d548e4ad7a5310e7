// ProgressTicker: ticks while it lives, with the time since it started, and
// never after its destructor returns.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "zkfleet/common/progress_ticker.hpp"

namespace zkfleet {
namespace {

using namespace std::chrono_literals;

TEST(ProgressTicker, TicksWhileItLivesAndNeverAfter) {
  std::atomic<int> ticks{0};
  std::atomic<double> last{0};
  {
    ProgressTicker ticker(5ms, [&](double seconds) {
      last = seconds;
      ++ticks;
    });
    const auto until = std::chrono::steady_clock::now() + 10s;  // a loaded machine may be slow to schedule it
    while (ticks < 3 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  }
  const int at_end = ticks;
  EXPECT_GE(at_end, 3);
  EXPECT_GE(last.load(), 0.005);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(ticks, at_end) << "ticked after it was destroyed";
  // Destroyed before its first interval: no tick at all.
  std::atomic<int> none{0};
  { ProgressTicker quiet(1h, [&](double) { ++none; }); }
  EXPECT_EQ(none, 0);
}

}  // namespace
}  // namespace zkfleet
