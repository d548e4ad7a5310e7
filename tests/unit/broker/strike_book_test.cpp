// StrikeBook (broker/strike_book.hpp): strikes per owner, counted within a
// window, lost-work strikes forgiven by a verified result, all cleared by an
// administrator.
#include <gtest/gtest.h>

#include "zkfleet/broker/strike_book.hpp"

namespace zkfleet::broker {
namespace {

using std::chrono::milliseconds;

TEST(StrikeBook, CountsPerOwnerWithinTheWindow) {
  StrikeBook book(milliseconds(1000));
  Clock::time_point t{};
  EXPECT_EQ(book.Add("key a", StrikeKind::kRejectedResult, t), 1u);
  EXPECT_EQ(book.Add("key a", StrikeKind::kReclaimedLease, t + milliseconds(400)), 2u);
  EXPECT_EQ(book.Add("key b", StrikeKind::kRejectedResult, t + milliseconds(500)), 1u);
  EXPECT_EQ(book.Count("key a", t + milliseconds(999)), 2u);
  EXPECT_EQ(book.Count("key a", t + milliseconds(1000)), 1u);  // the first has aged out
  EXPECT_EQ(book.Add("key a", StrikeKind::kOverBound, t + milliseconds(1300)), 2u);
  EXPECT_EQ(book.Count("key a", t + milliseconds(2400)), 0u);
  EXPECT_EQ(book.Count("key b", t + milliseconds(1499)), 1u);
  EXPECT_EQ(book.Count("nobody", t), 0u);
}

TEST(StrikeBook, AZeroWindowNeverForgets) {
  StrikeBook book(milliseconds(0));
  Clock::time_point t{};
  book.Add("key a", StrikeKind::kRejectedResult, t);
  EXPECT_EQ(book.Count("key a", t + std::chrono::hours(24 * 365)), 1u);
}

TEST(StrikeBook, AVerifiedResultForgivesOnlyLostWork) {
  StrikeBook book(milliseconds(0));
  Clock::time_point t{};
  book.Add("key a", StrikeKind::kLostWork, t);
  book.Add("key a", StrikeKind::kRejectedResult, t);
  book.Add("key a", StrikeKind::kLostWork, t);
  book.Add("key b", StrikeKind::kLostWork, t);
  book.ForgiveLostWork("key a");
  EXPECT_EQ(book.Count("key a", t), 1u);
  EXPECT_EQ(book.Count("key b", t), 1u);
  book.Clear("key a");
  EXPECT_EQ(book.Count("key a", t), 0u);
  EXPECT_STREQ(StrikeKindName(StrikeKind::kLostWork), "lost started work");
}

}  // namespace
}  // namespace zkfleet::broker
