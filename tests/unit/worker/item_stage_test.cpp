// ItemStage (item_stage.hpp): work that throws is reported as the stage says
// (its status label, which its metric counts, and its message), retryable,
// and the item comes back.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <variant>

#include "zkfleet/worker/item_stage.hpp"

namespace zkfleet::worker {
namespace {

TEST(ItemStage, WorkThatThrowsIsReportedAsTheStageSays) {
  EventMailbox mailbox;
  ItemStage stage(events::WitnessSource::kFetched, {"transient", "its witness could not be fetched: oops: "}, 1, mailbox,
                  [] {
                    return [](QueuedItem&, const std::atomic<bool>&, events::WitnessPrepared&) {
                      throw std::runtime_error("no handle");
                    };
                  });
  auto item = std::make_unique<QueuedItem>();
  item->key = {proto::PRIORITY_NORMAL, 7, 1};
  const uint64_t generation = stage.Submit(std::move(item));
  std::deque<PipelineEvent> posted;
  for (int i = 0; i < 1000 && posted.empty(); ++i) {
    posted = mailbox.TakeAll();
    if (posted.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(posted.size(), 1u);
  const auto* prepared = std::get_if<events::WitnessPrepared>(&posted.front());
  ASSERT_NE(prepared, nullptr);
  EXPECT_EQ(prepared->source, events::WitnessSource::kFetched);
  EXPECT_EQ(prepared->generation, generation);
  EXPECT_EQ(prepared->verdict, events::WitnessVerdict::kRetryable);
  EXPECT_EQ(prepared->status, "transient");
  EXPECT_EQ(prepared->why, "its witness could not be fetched: oops: no handle");
  ASSERT_NE(prepared->item, nullptr);
  EXPECT_EQ(prepared->item->key.ref().job_seq, 7u);
  stage.Stop();
}

}  // namespace
}  // namespace zkfleet::worker
