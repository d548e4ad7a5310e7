// The worker's drain budget (zkfleet_drain_budget_seconds): --drain-timeout
// plus twice the measured release time of its pool (14 s per 96 GiB from
// cudaHostAlloc, 2 s per 96 GiB of registered huge pages).
#include <gtest/gtest.h>

#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker {
namespace {

TEST(DrainBudget, IsTheDrainTimeoutPlusTwiceTheReleaseTimeOfThePool) {
  constexpr uint64_t kGiB = 1ull << 30;
  EXPECT_DOUBLE_EQ(DrainBudgetSeconds(std::chrono::seconds(60), 0), 60.0);
  EXPECT_DOUBLE_EQ(DrainBudgetSeconds(std::chrono::seconds(60), 96 * kGiB), 60.0 + 2 * 14.0);
  // docs/operations.md's example: 512 GiB releases in about 75 s.
  EXPECT_NEAR(DrainBudgetSeconds(std::chrono::milliseconds(1500), 512 * kGiB), 1.5 + 2 * 74.67, 0.01);
  // Huge pages registered with cudaHostRegister (the default where THP is on).
  EXPECT_NEAR(DrainBudgetSeconds(std::chrono::seconds(60), 96 * kGiB, PinnedPool::Kind::kHugepageRegistered),
              60.0 + 2 * 2.0, 1e-9);
  EXPECT_NEAR(DrainBudgetSeconds(std::chrono::seconds(60), 512 * kGiB, PinnedPool::Kind::kHugepageRegistered),
              60.0 + 2 * 10.67, 0.01);
}

}  // namespace
}  // namespace zkfleet::worker
