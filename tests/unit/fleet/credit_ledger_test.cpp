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

}  // namespace
}  // namespace zkfleet::worker
