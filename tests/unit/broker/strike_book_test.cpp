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
  EXPECT_EQ(book.Add("key a", "w-a", StrikeKind::kRejectedResult, t), 1u);
  EXPECT_EQ(book.Add("key a", "w-a", StrikeKind::kReclaimedLease, t + milliseconds(400)), 2u);
  EXPECT_EQ(book.Add("key b", "w-b", StrikeKind::kRejectedResult, t + milliseconds(500)), 1u);
  EXPECT_EQ(book.Count("key a", t + milliseconds(999)), 2u);
  EXPECT_EQ(book.Count("key a", t + milliseconds(1000)), 1u);  // the first has aged out
  EXPECT_EQ(book.Add("key a", "w-a", StrikeKind::kOverBound, t + milliseconds(1300)), 2u);
  EXPECT_EQ(book.Count("key a", t + milliseconds(2400)), 0u);
  EXPECT_EQ(book.Count("key b", t + milliseconds(1499)), 1u);
  EXPECT_EQ(book.Count("nobody", t), 0u);
}

TEST(StrikeBook, AZeroWindowNeverForgets) {
  StrikeBook book(milliseconds(0));
  Clock::time_point t{};
  book.Add("key a", "w-a", StrikeKind::kRejectedResult, t);
  EXPECT_EQ(book.Count("key a", t + std::chrono::hours(24 * 365)), 1u);
}

TEST(StrikeBook, AVerifiedResultForgivesOnlyLostWork) {
  StrikeBook book(milliseconds(0));
  Clock::time_point t{};
  book.Add("key a", "w-a", StrikeKind::kLostWork, t);
  book.Add("key a", "w-a", StrikeKind::kRejectedResult, t);
  book.Add("key a", "w-a", StrikeKind::kLostWork, t);
  book.Add("key b", "w-b", StrikeKind::kLostWork, t);
  book.ForgiveLostWork("key a");
  EXPECT_EQ(book.Count("key a", t), 1u);
  EXPECT_EQ(book.Count("key b", t), 1u);
  book.Clear("key a");
  EXPECT_EQ(book.Count("key a", t), 0u);
  EXPECT_STREQ(StrikeKindName(StrikeKind::kLostWork), "lost started work");
}

TEST(StrikeBook, SaysWhichWorkerIdsTheStrikesCameFrom) {
  StrikeBook book(milliseconds(1000));
  Clock::time_point t{};
  book.Add("key host", "gpu0", StrikeKind::kReclaimedLease, t);
  book.Add("key host", "gpu0", StrikeKind::kRejectedResult, t + milliseconds(600));
  EXPECT_EQ(book.StruckWorkers("key host", t + milliseconds(700)), (std::set<std::string>{"gpu0"}));
  book.Add("key host", "gpu3", StrikeKind::kLostWork, t + milliseconds(800));
  EXPECT_EQ(book.StruckWorkers("key host", t + milliseconds(900)), (std::set<std::string>{"gpu0", "gpu3"}));
  // gpu0's first strike ages out; its second still counts.
  EXPECT_EQ(book.StruckWorkers("key host", t + milliseconds(1500)), (std::set<std::string>{"gpu0", "gpu3"}));
  EXPECT_EQ(book.StruckWorkers("key host", t + milliseconds(1700)), (std::set<std::string>{"gpu3"}));
  EXPECT_EQ(book.Count("key host", t + milliseconds(900), {"gpu0"}), 1u);  // gpu3's, gpu0 held already
  book.Add("key host", "", StrikeKind::kFalseVerdict, t + milliseconds(1750));  // the key's own word
  EXPECT_EQ(book.StruckWorkers("key host", t + milliseconds(1760)), (std::set<std::string>{"", "gpu3"}));
  EXPECT_TRUE(book.StruckWorkers("nobody", t).empty());
}

}  // namespace
}  // namespace zkfleet::broker
