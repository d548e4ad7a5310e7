// The worker's local queue: key order, overtaking, uniqueness, handback.
#include <gtest/gtest.h>

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
  EXPECT_EQ(first->key, (fleet::WorkKey{proto::PRIORITY_NORMAL, 2, 0}));
  // A critical job arriving now overtakes the queued items, not the running one.
  ASSERT_TRUE(queue.Push(Item(proto::PRIORITY_CRITICAL, 3, 0)));
  EXPECT_EQ(queue.running_keys(), std::vector<fleet::WorkKey>{first->key});
  queue.FinishRun(first->key);
  std::vector<fleet::WorkKey> order;
  for (int i = 0; i < 3; ++i) {
    auto item = queue.PopForRun();
    order.push_back(item->key);
    queue.FinishRun(item->key);
  }
  std::vector<fleet::WorkKey> expected = {
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
  EXPECT_EQ(queue.running_keys(), std::vector<fleet::WorkKey>{a->key});
  queue.FinishRun(a->key);
  EXPECT_EQ(queue.running(), 0u);
  EXPECT_EQ(queue.queued(), 1u);
}

TEST(LocalQueue, CloseWakesABlockedDispatcher) {
  LocalQueue queue;
  std::optional<QueuedItem> popped = Item(proto::PRIORITY_LOW, 1, 0);
  std::thread dispatcher([&] { popped = queue.PopForRun(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  queue.Close();
  dispatcher.join();
  EXPECT_FALSE(popped.has_value());
}

}  // namespace
}  // namespace zkfleet::worker
