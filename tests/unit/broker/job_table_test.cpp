// The work item's state table (job_table.hpp, ItemNext): every move the
// broker makes, and none other.
#include <gtest/gtest.h>

#include <optional>

#include "zkfleet/broker/job_table.hpp"

namespace zkfleet::broker {
namespace {

using State = WorkItem::State;

TEST(ItemStateTable, EveryStateAndEventGoesWhereTheTableSays) {
  struct Row {
    State from;
    ItemEvent event;
    std::optional<State> to;
  };
  const Row rows[] = {
      {State::kQueued, ItemEvent::kLeased, State::kLeased},
      {State::kQueued, ItemEvent::kReturned, std::nullopt},  // not out: nothing to return
      {State::kQueued, ItemEvent::kProved, State::kDone},    // a proof held through a signals check
      {State::kQueued, ItemEvent::kDropped, State::kDropped},
      {State::kLeased, ItemEvent::kLeased, std::nullopt},    // one lease at a time
      {State::kLeased, ItemEvent::kReturned, State::kQueued},
      {State::kLeased, ItemEvent::kProved, State::kDone},
      {State::kLeased, ItemEvent::kDropped, State::kDropped},
      {State::kDone, ItemEvent::kLeased, std::nullopt},      // nothing leaves kDone
      {State::kDone, ItemEvent::kReturned, std::nullopt},
      {State::kDone, ItemEvent::kProved, std::nullopt},      // a result is stored once
      {State::kDone, ItemEvent::kDropped, std::nullopt},
      {State::kDropped, ItemEvent::kLeased, std::nullopt},
      {State::kDropped, ItemEvent::kReturned, std::nullopt},
      {State::kDropped, ItemEvent::kProved, std::nullopt},   // a late proof of an ended job is not stored
      {State::kDropped, ItemEvent::kDropped, State::kDropped},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(ItemNext(row.from, row.event), row.to)
        << ItemStateName(row.from) << " --" << ItemEventName(row.event) << "-->";
  }
}

TEST(ItemStateTable, AMoveTheTableHasNotLeavesTheItemAsItWas) {
  WorkItem item;
  EXPECT_TRUE(item.Move(ItemEvent::kLeased));
  EXPECT_EQ(item.state, State::kLeased);
  EXPECT_FALSE(item.Move(ItemEvent::kLeased));
  EXPECT_EQ(item.state, State::kLeased);
  EXPECT_TRUE(item.Move(ItemEvent::kProved));
  EXPECT_FALSE(item.Move(ItemEvent::kDropped));
  EXPECT_EQ(item.state, State::kDone);
}

}  // namespace
}  // namespace zkfleet::broker
