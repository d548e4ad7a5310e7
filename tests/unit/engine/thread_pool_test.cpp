#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::cpu {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool(4);
  for (size_t n : {0, 1, 7, 1000, 12345}) {
    std::vector<std::atomic<int>> hits(n);
    pool.ParallelFor(n, [&](size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) hits[i]++;
    });
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.RunTasks(10, [](size_t i) { if (i == 7) throw std::runtime_error("boom"); }), std::runtime_error);
  // Still usable afterwards.
  std::atomic<int> count{0};
  pool.RunTasks(10, [&](size_t) { count++; });
  EXPECT_EQ(count.load(), 10);
}

TEST(ThreadPool, ConcurrentCallersDoNotInterfere) {
  ThreadPool pool(2);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 20; ++rep) pool.ParallelFor(1000, [&](size_t b, size_t e) { total += static_cast<long>(e - b); });
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4L * 20 * 1000);
}

}  // namespace
}  // namespace zkfleet::cpu
