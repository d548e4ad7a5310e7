// The worker's local queue: key order, overtaking, uniqueness, handback.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "zkfleet/worker/local_queue.hpp"

namespace zkfleet::worker {
namespace {

QueuedItem Item(proto::Priority priority, uint64_t seq, uint32_t partition) {
  QueuedItem item;
  item.key = {priority, seq, partition};
  item.job.mutable_item()->set_job_seq(seq);
  item.job.mutable_item()->set_partition(partition);
  item.arrived = std::chrono::steady_clock::now();
  return item;
}

TEST(LocalQueue, PopsInKeyOrderAndHigherPriorityOvertakes) {
  LocalQueue queue;
  ASSERT_TRUE(queue.Push(Item(proto::PRIORITY_LOW, 1, 0)));
  ASSERT_TRUE(queue.Push(Item(proto::PRIORITY_NORMAL, 2, 1)));
  ASSERT_TRUE(queue.Push(Item(proto::PRIORITY_NORMAL, 2, 0)));
  auto first = queue.PopForRun();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->key, (wire::WorkKey{proto::PRIORITY_NORMAL, 2, 0}));
  // A critical job arriving now overtakes the queued items, not the running one.
  ASSERT_TRUE(queue.Push(Item(proto::PRIORITY_CRITICAL, 3, 0)));
  EXPECT_EQ(queue.running_keys(), std::vector<wire::WorkKey>{first->key});
  queue.FinishRun(first->key);
  std::vector<wire::WorkKey> order;
  for (int i = 0; i < 3; ++i) {
    auto item = queue.PopForRun();
    order.push_back(item->key);
    queue.FinishRun(item->key);
  }
  std::vector<wire::WorkKey> expected = {
      {proto::PRIORITY_CRITICAL, 3, 0}, {proto::PRIORITY_NORMAL, 2, 1}, {proto::PRIORITY_LOW, 1, 0}};
  EXPECT_EQ(order, expected);
}

TEST(LocalQueue, KeysAreUniqueIncludingTheRunningOne) {
  LocalQueue queue;
  ASSERT_TRUE(queue.Push(Item(proto::PRIORITY_HIGH, 5, 0)));
  EXPECT_FALSE(queue.Push(Item(proto::PRIORITY_HIGH, 5, 0)));
  auto running = queue.PopForRun();
  EXPECT_FALSE(queue.Push(Item(proto::PRIORITY_HIGH, 5, 0)));
  EXPECT_EQ(queue.queued(), 0u);
  queue.FinishRun(running->key);
  EXPECT_TRUE(queue.Push(Item(proto::PRIORITY_HIGH, 5, 0)));  // redelivered later: fine
}

TEST(LocalQueue, TakeAllQueuedLeavesTheRunningItem) {
  LocalQueue queue;
  queue.Push(Item(proto::PRIORITY_NORMAL, 1, 0));
  queue.Push(Item(proto::PRIORITY_NORMAL, 2, 0));
  queue.Push(Item(proto::PRIORITY_HIGH, 3, 0));
  auto running = queue.PopForRun();
  auto taken = queue.TakeAllQueued();
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].key.job_seq, 1u);
  EXPECT_EQ(taken[1].key.job_seq, 2u);
  EXPECT_EQ(queue.running(), 1u);
  EXPECT_EQ(queue.queued(), 0u);
}

// A pipeline's lanes: two items run at once, they started in key order, and
// each finishes on its own.
TEST(LocalQueue, SeveralItemsRunAtOnceStartingInKeyOrder) {
  LocalQueue queue;
  queue.Push(Item(proto::PRIORITY_NORMAL, 2, 0));
  queue.Push(Item(proto::PRIORITY_NORMAL, 1, 0));
  queue.Push(Item(proto::PRIORITY_NORMAL, 3, 0));
  auto a = queue.PopForRun();
  auto b = queue.PopForRun();
  EXPECT_EQ(a->key.job_seq, 1u);
  EXPECT_EQ(b->key.job_seq, 2u);
  EXPECT_EQ(queue.running(), 2u);
  EXPECT_FALSE(queue.Push(Item(proto::PRIORITY_NORMAL, 2, 0)));  // running: unique
  queue.FinishRun(b->key);
  EXPECT_EQ(queue.running_keys(), std::vector<wire::WorkKey>{a->key});
  queue.FinishRun(a->key);
  EXPECT_EQ(queue.running(), 0u);
  EXPECT_EQ(queue.queued(), 1u);
}

// Waits until `n` callers are blocked in PopForRun (no timing: it polls the
// count the queue keeps). PopForRun counts itself under the mutex and only
// then waits, which releases it: once this reads `n`, they are waiting.
void WaitForWaiters(const LocalQueue& queue, size_t n) {
  while (queue.waiting() != n) std::this_thread::yield();
}

TEST(LocalQueue, CloseWakesABlockedDispatcher) {
  LocalQueue queue;
  std::optional<QueuedItem> popped = Item(proto::PRIORITY_LOW, 1, 0);
  std::atomic<bool> returned{false};
  std::thread dispatcher([&] {
    popped = queue.PopForRun();
    returned = true;
  });
  WaitForWaiters(queue, 1);  // blocked, not merely started: Close must wake it
  queue.Close();
  // A Close that does not wake it would hang the join: fail instead, then
  // release it with Wake() (it sees closed_) so that the test can end.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!returned && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(returned) << "Close() did not wake the blocked dispatcher";
  if (!returned) queue.Wake();
  dispatcher.join();
  EXPECT_FALSE(popped.has_value());
}

// Several devices: lanes pop for their device (group); an item goes to a
// waiting device with the fewest items running.
TEST(LocalQueue, AnItemGoesToTheWaitingDeviceWithTheFewestRunning) {
  LocalQueue queue;
  queue.Push(Item(proto::PRIORITY_NORMAL, 1, 0));
  auto first = queue.PopForRun(/*group=*/0);
  ASSERT_TRUE(first);
  EXPECT_EQ(queue.running_in(0), 1u);
  std::optional<QueuedItem> on0, on1;
  std::thread lane0([&] { on0 = queue.PopForRun(0); });  // device 0's second lane
  std::thread lane1([&] { on1 = queue.PopForRun(1); });  // device 1's only lane
  WaitForWaiters(queue, 2);
  queue.Push(Item(proto::PRIORITY_NORMAL, 2, 0));
  lane1.join();  // device 1 runs nothing: it takes item 2
  ASSERT_TRUE(on1);
  EXPECT_EQ(on1->key.job_seq, 2u);
  EXPECT_EQ(queue.running_in(1), 1u);
  EXPECT_EQ(queue.running_in(0), 1u);
  // Device 1 has no lane waiting now: device 0 takes the next one.
  queue.Push(Item(proto::PRIORITY_NORMAL, 3, 0));
  lane0.join();
  ASSERT_TRUE(on0);
  EXPECT_EQ(on0->key.job_seq, 3u);
  EXPECT_EQ(queue.running_in(0), 2u);
  queue.FinishRun(on0->key);
  queue.FinishRun(first->key);
  EXPECT_EQ(queue.running_in(0), 0u);
  EXPECT_EQ(queue.running_in(1), 1u);
}

// While device 0 runs more than device 1, device 0's waiting lane takes
// nothing; once device 1's lane is busy too it may.
TEST(LocalQueue, ABusierDeviceWaitsWhileALessBusyOneHasALaneFree) {
  LocalQueue queue;
  queue.Push(Item(proto::PRIORITY_NORMAL, 1, 0));
  auto running = queue.PopForRun(0);
  std::optional<QueuedItem> on0;
  std::thread lane0([&] { on0 = queue.PopForRun(0); });
  WaitForWaiters(queue, 1);
  std::optional<QueuedItem> on1;
  std::thread lane1([&] { on1 = queue.PopForRun(1); });
  WaitForWaiters(queue, 2);
  queue.Push(Item(proto::PRIORITY_NORMAL, 2, 0));
  queue.Push(Item(proto::PRIORITY_NORMAL, 3, 0));
  lane1.join();
  lane0.join();
  ASSERT_TRUE(on0 && on1);
  EXPECT_EQ(on1->key.job_seq, 2u) << "the first item goes to the idle device";
  EXPECT_EQ(on0->key.job_seq, 3u);
}

TEST(LocalQueue, ALaneWhoseDeviceLeftIsWokenAndTakesNothing) {
  LocalQueue queue;
  std::atomic<bool> leave{false};
  std::optional<QueuedItem> popped = Item(proto::PRIORITY_LOW, 9, 0);
  std::thread lane([&] { popped = queue.PopForRun(1, &leave); });
  WaitForWaiters(queue, 1);
  leave = true;
  queue.Wake();
  lane.join();
  EXPECT_FALSE(popped.has_value());
  queue.Push(Item(proto::PRIORITY_NORMAL, 1, 0));
  EXPECT_FALSE(queue.PopForRun(1, &leave).has_value()) << "a device that left takes no item";
  EXPECT_EQ(queue.queued(), 1u);
  EXPECT_EQ(queue.PopForRun(0)->key.job_seq, 1u) << "the others still do";
}

}  // namespace
}  // namespace zkfleet::worker
