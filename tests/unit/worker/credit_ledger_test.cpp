#include <gtest/gtest.h>

#include "zkfleet/worker/credit_ledger.hpp"

namespace zkfleet::worker {
namespace {

TEST(CreditLedger, NeverGrantsBeyondCapacity) {
  CreditLedger ledger(4);
  EXPECT_EQ(ledger.TakeGrant(1), 4u);
  EXPECT_EQ(ledger.TakeGrant(1), 0u);  // all outstanding
  EXPECT_TRUE(ledger.OnJob({1, 0}));
  EXPECT_TRUE(ledger.OnJob({2, 0}));
  EXPECT_EQ(ledger.TakeGrant(1), 0u);  // 2 held + 2 outstanding
  EXPECT_TRUE(ledger.Release({1, 0}));
  EXPECT_EQ(ledger.TakeGrant(1), 1u);
  EXPECT_EQ(ledger.held() + ledger.outstanding(), 4u);
}

TEST(CreditLedger, BatchesSmallGrantsWhileCreditIsOutstanding) {
  CreditLedger ledger(8);
  EXPECT_EQ(ledger.TakeGrant(2), 8u);
  for (uint64_t seq = 1; seq <= 8; ++seq) ledger.OnJob({seq, 0});
  ledger.Release({1, 0});
  // Nothing outstanding: even one slot is granted at once (no stall).
  EXPECT_EQ(ledger.TakeGrant(2), 1u);
  ledger.Release({2, 0});
  EXPECT_EQ(ledger.TakeGrant(2), 0u);  // 1 outstanding, room 1 < batch 2
  ledger.Release({3, 0});
  EXPECT_EQ(ledger.TakeGrant(2), 2u);
}

TEST(CreditLedger, FlagsJobsWithoutCreditAndDuplicates) {
  CreditLedger ledger(2);
  EXPECT_FALSE(ledger.OnJob({1, 0}));  // no credit granted
  ledger.TakeGrant(1);
  EXPECT_FALSE(ledger.OnJob({1, 0}));  // already held
  EXPECT_FALSE(ledger.Release({7, 0}));
  ledger.Reset();
  EXPECT_EQ(ledger.held(), 0u);
  EXPECT_EQ(ledger.outstanding(), 0u);
}

// A device left a multi-device worker: the capacity shrinks; credit already
// granted stays, nothing more is granted until the items held fit.
TEST(CreditLedger, AShrunkCapacityGrantsNothingUntilTheHeldItemsFit) {
  CreditLedger ledger(8);
  EXPECT_EQ(ledger.TakeGrant(1), 8u);
  for (uint64_t seq = 1; seq <= 6; ++seq) EXPECT_TRUE(ledger.OnJob({seq, 0}));
  ledger.set_capacity(4);
  EXPECT_EQ(ledger.capacity(), 4u);
  EXPECT_TRUE(ledger.OnJob({7, 0})) << "credit granted before the shrink is still honoured";
  for (uint64_t seq = 1; seq <= 3; ++seq) ledger.Release({seq, 0});
  EXPECT_EQ(ledger.TakeGrant(1), 0u) << "4 held + 1 outstanding >= 4";
  EXPECT_TRUE(ledger.OnJob({8, 0}));
  for (uint64_t seq = 4; seq <= 6; ++seq) ledger.Release({seq, 0});
  EXPECT_EQ(ledger.held(), 2u);
  EXPECT_EQ(ledger.TakeGrant(1), 2u);
}

}  // namespace
}  // namespace zkfleet::worker
