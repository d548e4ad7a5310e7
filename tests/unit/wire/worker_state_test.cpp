// The worker's state table: every state a worker passes through on the
// normal, drained, faulted and failed paths, and what the table refuses.
#include <gtest/gtest.h>

#include <vector>

#include "zkfleet/wire/worker_state.hpp"

namespace zkfleet::wire {
namespace {

using S = proto::WorkerState;

// Applies `events` from STARTING; the states visited, or an empty vector
// when an event was refused.
std::vector<S> Walk(const std::vector<WorkerEvent>& events) {
  std::vector<S> states = {S::WORKER_STATE_STARTING};
  for (WorkerEvent event : events) {
    auto next = NextState(states.back(), event);
    if (!next) return {};
    states.push_back(*next);
  }
  return states;
}

TEST(WorkerStateTable, NormalLifeStartsWaitsLoadsServesDrainsAndLeaves) {
  EXPECT_EQ(Walk({WorkerEvent::kMemoryShort, WorkerEvent::kMemoryFits, WorkerEvent::kLoaded, WorkerEvent::kDrain,
                  WorkerEvent::kItemsSettled, WorkerEvent::kReleased}),
            (std::vector<S>{S::WORKER_STATE_STARTING, S::WORKER_STATE_WAITING_FOR_MEMORY, S::WORKER_STATE_LOADING,
                            S::WORKER_STATE_READY, S::WORKER_STATE_DRAINING, S::WORKER_STATE_RELEASING,
                            S::WORKER_STATE_GONE}));
}

TEST(WorkerStateTable, DrainIsAcceptedWhileStartingAndOnlyOnce) {
  for (auto before : {std::vector<WorkerEvent>{}, {WorkerEvent::kMemoryShort}, {WorkerEvent::kMemoryFits}}) {
    before.push_back(WorkerEvent::kDrain);
    auto states = Walk(before);
    ASSERT_FALSE(states.empty());
    EXPECT_EQ(states.back(), S::WORKER_STATE_DRAINING);
  }
  EXPECT_FALSE(NextState(S::WORKER_STATE_DRAINING, WorkerEvent::kDrain));
  EXPECT_FALSE(NextState(S::WORKER_STATE_RELEASING, WorkerEvent::kDrain));
  EXPECT_FALSE(NextState(S::WORKER_STATE_GONE, WorkerEvent::kDrain));
}

TEST(WorkerStateTable, FaultsStopWorkAndAFatalOneLeaves) {
  EXPECT_EQ(NextState(S::WORKER_STATE_READY, WorkerEvent::kEngineFaults), S::WORKER_STATE_FAULTED);
  // A faulted worker can still be drained, and a fatal error makes it leave.
  EXPECT_EQ(NextState(S::WORKER_STATE_FAULTED, WorkerEvent::kDrain), S::WORKER_STATE_DRAINING);
  EXPECT_EQ(NextState(S::WORKER_STATE_DRAINING, WorkerEvent::kFatal), S::WORKER_STATE_FAULTED);
  EXPECT_EQ(NextState(S::WORKER_STATE_FAULTED, WorkerEvent::kLeave), S::WORKER_STATE_GONE);
  // Faults counted while draining do not take it back to FAULTED.
  EXPECT_FALSE(NextState(S::WORKER_STATE_DRAINING, WorkerEvent::kEngineFaults));
  // Only a fatal error leads to leave.
  EXPECT_FALSE(NextState(S::WORKER_STATE_READY, WorkerEvent::kLeave));
}

TEST(WorkerStateTable, NothingLeadsBackTowardsReadyOrOutOfGone) {
  const WorkerEvent all[] = {WorkerEvent::kMemoryShort, WorkerEvent::kMemoryFits, WorkerEvent::kLoaded,
                             WorkerEvent::kStartFailed, WorkerEvent::kEngineFaults, WorkerEvent::kDrain,
                             WorkerEvent::kItemsSettled, WorkerEvent::kReleased, WorkerEvent::kFatal,
                             WorkerEvent::kLeave};
  for (WorkerEvent event : all) {
    EXPECT_FALSE(NextState(S::WORKER_STATE_GONE, event)) << WorkerEventName(event);
    for (S from : {S::WORKER_STATE_DRAINING, S::WORKER_STATE_RELEASING, S::WORKER_STATE_FAULTED}) {
      auto next = NextState(from, event);
      EXPECT_TRUE(!next || *next != S::WORKER_STATE_READY) << WorkerEventName(event);
    }
  }
  // A failed start leaves from any starting state (and from a drain that
  // began while loading), never after READY.
  EXPECT_EQ(NextState(S::WORKER_STATE_LOADING, WorkerEvent::kStartFailed), S::WORKER_STATE_GONE);
  EXPECT_EQ(NextState(S::WORKER_STATE_DRAINING, WorkerEvent::kStartFailed), S::WORKER_STATE_GONE);
  EXPECT_EQ(NextState(S::WORKER_STATE_RELEASING, WorkerEvent::kStartFailed), S::WORKER_STATE_GONE);
  EXPECT_FALSE(NextState(S::WORKER_STATE_READY, WorkerEvent::kStartFailed));
  EXPECT_FALSE(NextState(S::WORKER_STATE_FAULTED, WorkerEvent::kStartFailed));
}

// The broker's rule for a leaving worker comes from the same table: the drain
// path is DRAINING, RELEASING, GONE, and every other state is off it.
TEST(WorkerStateTable, DrainStepFollowsTheTablesWayOut) {
  EXPECT_EQ(DrainStep(S::WORKER_STATE_DRAINING), 1);
  EXPECT_EQ(DrainStep(S::WORKER_STATE_RELEASING), 2);
  EXPECT_EQ(DrainStep(S::WORKER_STATE_GONE), 3);
  for (S off : {S::WORKER_STATE_UNSPECIFIED, S::WORKER_STATE_STARTING, S::WORKER_STATE_WAITING_FOR_MEMORY,
                S::WORKER_STATE_LOADING, S::WORKER_STATE_READY, S::WORKER_STATE_FAULTED}) {
    EXPECT_EQ(DrainStep(off), 0) << off;
  }
  // Each step is the table's next state after the one before.
  EXPECT_EQ(DrainStep(*NextState(S::WORKER_STATE_READY, WorkerEvent::kDrain)), 1);
  EXPECT_EQ(DrainStep(*NextState(S::WORKER_STATE_DRAINING, WorkerEvent::kItemsSettled)), 2);
  EXPECT_EQ(DrainStep(*NextState(S::WORKER_STATE_RELEASING, WorkerEvent::kReleased)), 3);
  // From any state the table lets a worker drain, the drain is step 1.
  for (S from : {S::WORKER_STATE_STARTING, S::WORKER_STATE_WAITING_FOR_MEMORY, S::WORKER_STATE_LOADING,
                 S::WORKER_STATE_READY, S::WORKER_STATE_FAULTED}) {
    EXPECT_EQ(DrainStep(*NextState(from, WorkerEvent::kDrain)), 1) << from;
  }
}

}  // namespace
}  // namespace zkfleet::wire
