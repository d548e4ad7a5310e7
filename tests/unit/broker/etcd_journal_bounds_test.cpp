// The SUBMIT bounds of a broker on an etcd journal: defaults that fit one
// transaction, the room the journal keeps for the largest message, and
// refusals in words for bounds that cannot fit.
#include <gtest/gtest.h>

#include "zkfleet/broker/etcd_journal_bounds.hpp"

namespace zkfleet::broker {
namespace {

BrokerOptions EtcdOptions(uint32_t max_txn_ops, uint64_t max_txn_bytes) {
  BrokerOptions options;
  storage::EtcdJournalOptions etcd;
  etcd.max_txn_ops = max_txn_ops;
  etcd.max_txn_bytes = max_txn_bytes;
  options.journal.etcd = etcd;
  return options;
}

TEST(EtcdJournalBounds, DefaultsFitEtcdsOwnDefaultsWithRoomForOneSubmit) {
  BrokerOptions options = EtcdOptions(128, 1u << 20);
  ASSERT_EQ(FitSubmitsToEtcdTransactions(options, false, false), std::nullopt);
  EXPECT_EQ(options.max_partitions, 20u);  // (128 - 8) / 3 = 40 fit; half
  EXPECT_EQ(options.max_inline_job_bytes, kEtcdInlineJobBytes);
  const auto& etcd = *options.journal.etcd;
  // The largest SUBMIT's writes always fit beside what the turn holds when
  // the journal says it is not yet full.
  EXPECT_EQ(etcd.reserve_ops, 8u + 3u * 20u);
  EXPECT_LE(etcd.reserve_ops, etcd.max_txn_ops);
  EXPECT_LT(etcd.reserve_bytes, etcd.max_txn_bytes);
  // Larger transactions, more partitions by default.
  BrokerOptions larger = EtcdOptions(1024, 3u << 20);
  ASSERT_EQ(FitSubmitsToEtcdTransactions(larger, false, false), std::nullopt);
  EXPECT_EQ(larger.max_partitions, 169u);
}

TEST(EtcdJournalBounds, GivenBoundsAreKeptWhenTheyFitAndRefusedInWordsWhenNot) {
  BrokerOptions fits = EtcdOptions(128, 1u << 20);
  fits.max_partitions = 40;
  fits.max_inline_job_bytes = 100000;
  ASSERT_EQ(FitSubmitsToEtcdTransactions(fits, true, true), std::nullopt);
  EXPECT_EQ(fits.max_partitions, 40u);
  EXPECT_EQ(fits.max_inline_job_bytes, 100000u);
  EXPECT_EQ(fits.journal.etcd->reserve_ops, 128u);

  BrokerOptions too_many = EtcdOptions(128, 1u << 20);
  too_many.max_partitions = 41;
  auto why = FitSubmitsToEtcdTransactions(too_many, true, false);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("--max-partitions 41"), std::string::npos) << *why;
  EXPECT_NE(why->find("at most 40 partitions"), std::string::npos) << *why;

  BrokerOptions too_large = EtcdOptions(128, 1u << 20);
  too_large.max_inline_job_bytes = 1u << 20;
  why = FitSubmitsToEtcdTransactions(too_large, false, true);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("--max-inline-job-bytes"), std::string::npos) << *why;
  EXPECT_NE(why->find("--etcd-max-txn-bytes"), std::string::npos) << *why;
}

}  // namespace
}  // namespace zkfleet::broker
