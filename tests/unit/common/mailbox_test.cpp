// Mailbox<T> (common/mailbox.hpp): the fd is readable exactly while items
// wait, items come out in order (PutBack ahead of later posts), and posts
// from many threads all arrive once.
#include <gtest/gtest.h>

#include <poll.h>

#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/common/mailbox.hpp"

namespace zkfleet {
namespace {

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

TEST(Mailbox, TheFdIsReadableExactlyWhileItemsWaitAndTheyComeOutInOrder) {
  Mailbox<std::string> box;
  EXPECT_FALSE(Readable(box.fd()));
  EXPECT_TRUE(box.TakeAll().empty());
  box.Post("a");
  box.Post("b");
  EXPECT_TRUE(Readable(box.fd()));
  EXPECT_EQ(box.TakeAll(), (std::deque<std::string>{"a", "b"}));
  EXPECT_FALSE(Readable(box.fd()));
  // Taken but not handled: back ahead of what came since.
  box.Post("c");
  box.PutBack(std::vector<std::string>{"a", "b"});
  EXPECT_TRUE(Readable(box.fd()));
  EXPECT_EQ(box.TakeAll(), (std::deque<std::string>{"a", "b", "c"}));
  box.PutBack(std::vector<std::string>{});
  EXPECT_FALSE(Readable(box.fd()));
  EXPECT_TRUE(box.empty());
}

TEST(Mailbox, PostsFromManyThreadsEachArriveOnce) {
  Mailbox<int> box;
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&box, t] {
      for (int i = 0; i < kEach; ++i) box.Post(t * kEach + i);
    });
  }
  std::vector<int> seen(kThreads * kEach, 0);
  size_t got = 0;
  while (got < seen.size()) {
    pollfd p{box.fd(), POLLIN, 0};
    ASSERT_GE(poll(&p, 1, 10000), 0);
    for (int item : box.TakeAll()) {
      ++seen[item];
      ++got;
    }
  }
  for (std::thread& thread : threads) thread.join();
  for (int count : seen) ASSERT_EQ(count, 1);
  EXPECT_FALSE(Readable(box.fd()));
}

}  // namespace
}  // namespace zkfleet
