// CircuitSet changed at run time (issue 49, item 4): Adopt takes a sibling's
// circuits and drops others once no Prove runs, a Prove of an item queued
// before its circuit was replaced fails retryable, and StopChanges releases
// an Adopt that waits for a proof that never ends.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "zkfleet/worker/circuit_set.hpp"

namespace zkfleet::worker {
namespace {

using namespace std::chrono_literals;

proto::Job JobOf(const std::string& circuit) {
  proto::Job job;
  job.set_circuit_id(circuit);
  job.mutable_item()->set_job_seq(1);
  return job;
}

TEST(CircuitSetChange, AdoptTakesAndDropsAndAReplacedCircuitsOldItemIsRetried) {
  CircuitSet set({{"a", "", true, ""}, {"b", "", true, ""}}, engine::EngineOptions{}, 0ms, /*verify=*/false);
  set.Load();
  const uint64_t a_before = set.Version("a");
  auto more = set.Sibling({{"c", "", true, ""}, {"a", "", true, ""}});  // c new, a replaced
  more->Load();
  set.Adopt(std::move(more), {"a", "b"});  // b removed, a replaced
  EXPECT_EQ(set.circuit_ids(), (std::vector<std::string>{"c", "a"}));
  EXPECT_EQ(set.Version("b"), 1u);
  EXPECT_EQ(set.Version("c"), 0u);
  // An item of `a` queued before the change: retryable, not proved with the new a.
  ProveOutcome old = set.Prove(JobOf("a"), {}, 0, a_before);
  EXPECT_FALSE(old.ok);
  EXPECT_TRUE(old.retryable);
  EXPECT_NE(old.error.find("was replaced on this worker"), std::string::npos) << old.error;
  EXPECT_TRUE(set.Prove(JobOf("a"), {}, 0, set.Version("a")).ok);
  ProveOutcome gone = set.Prove(JobOf("b"), {}, 0);
  EXPECT_FALSE(gone.ok);
  EXPECT_TRUE(gone.retryable);
  EXPECT_TRUE(set.Prove(JobOf("c"), {}, 0, 0).ok);
}

TEST(CircuitSetChange, AnAdoptWaitsForRunningProofsAndStopChangesReleasesIt) {
  // A benchmark circuit that "proves" for 300 ms.
  CircuitSet set({{"slow", "", true, ""}}, engine::EngineOptions{}, 300ms, /*verify=*/false);
  set.Load();
  std::thread lane([&] { (void)set.Prove(JobOf("slow"), {}, 0); });
  while (set.proofs_running() == 0) std::this_thread::sleep_for(1ms);
  std::atomic<bool> adopted{false};
  std::thread loader([&] {
    set.Adopt(set.Sibling({{"new", "", true, ""}}), {});
    adopted = true;
  });
  // Read `adopted` first, then the count: had the Adopt returned while the
  // proof ran, this would see both (no new proof starts). The proof's end
  // inside Prove is what releases the Adopt, so Prove's return is no marker.
  int checks_while_proving = 0;
  for (;;) {
    const bool returned = adopted.load();
    if (set.proofs_running() == 0) break;
    EXPECT_FALSE(returned) << "adopted while a proof ran";
    ++checks_while_proving;
    std::this_thread::sleep_for(5ms);
  }
  lane.join();
  loader.join();
  EXPECT_TRUE(adopted);
  EXPECT_EQ(set.circuit_ids(), (std::vector<std::string>{"slow", "new"}));

  // A proof that outlives the worker's patience: StopChanges lets the Adopt go, adopting nothing.
  CircuitSet stuck({{"slow", "", true, ""}}, engine::EngineOptions{}, 2s, /*verify=*/false);
  stuck.Load();
  std::thread long_lane([&stuck] { (void)stuck.Prove(JobOf("slow"), {}, 0); });
  while (stuck.proofs_running() == 0) std::this_thread::sleep_for(1ms);
  std::atomic<bool> returned{false};
  std::thread waiting([&] {
    stuck.Adopt(stuck.Sibling({{"late", "", true, ""}}), {});
    returned = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(returned);
  stuck.StopChanges();
  waiting.join();
  EXPECT_TRUE(returned);
  EXPECT_EQ(stuck.circuit_ids(), std::vector<std::string>{"slow"});
  long_lane.join();
}

}  // namespace
}  // namespace zkfleet::worker
