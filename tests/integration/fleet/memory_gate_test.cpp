// Issue 7: the memory gate and the pinned pool's release, with the test-only
// memory source standing in for a cgroup shared by two workers.
#include <gtest/gtest.h>

#include <thread>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;
constexpr uint64_t kMiB = 1 << 20;

std::optional<proto::WorkerInfo> FindWorker(Fleet& fleet, const std::string& id) {
  auto status = fleet.Status();
  for (const auto& w : status.workers()) {
    if (w.worker_id() == id) return w;
  }
  return std::nullopt;
}

TEST(FleetMemory, SecondWorkerWaitsForMemoryUntilTheFirstReleasesItsPool) {
  Fleet fleet("memory-gate");
  fleet.StartBroker();
  // A pretend cgroup of 100 MiB; each worker wants a 64 MiB pool + 16 MiB margin.
  std::vector<std::string> args = {"--instant", "--circuit", "c1", "--pinned-budget", "64MiB", "--pool-chunk",
                                   "16MiB", "--memory-margin", "16MiB", "--test-memory-limit", "100MiB",
                                   "--test-memory-ledger", fleet.dir() + "/ledger"};
  Process& first = fleet.StartWorker("first", args);
  fleet.WaitWorkerReady("first");
  auto holder = FindWorker(fleet, "first");
  ASSERT_TRUE(holder);
  EXPECT_EQ(holder->memory().pool_bytes(), 64 * kMiB);
  EXPECT_EQ(holder->memory().alloc_calls(), 4u);
  EXPECT_EQ(holder->memory().budget_bytes(), 64 * kMiB);
  EXPECT_EQ(holder->memory().pool_target_bytes(), 64 * kMiB);
  // A CPU worker's pool: mlock'ed, or unlocked where RLIMIT_MEMLOCK refuses.
  EXPECT_TRUE(holder->memory().pool_mode() == "mmap-locked" || holder->memory().pool_mode() == "mmap-unlocked")
      << holder->memory().pool_mode();

  Process& second = fleet.StartWorker("second", args);
  ASSERT_TRUE(second.WaitForLog("waiting for memory: need 83886080 bytes .* available 37748736", 10s)) << second.Log();
  for (int i = 0; i < 100; ++i) {
    auto waiting = FindWorker(fleet, "second");
    if (waiting && waiting->state() == proto::WORKER_STATE_WAITING_FOR_MEMORY) break;
    std::this_thread::sleep_for(20ms);
  }
  auto waiting = FindWorker(fleet, "second");
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->state(), proto::WORKER_STATE_WAITING_FOR_MEMORY);
  EXPECT_EQ(waiting->memory().pool_bytes(), 0u);
  // It stays there while the first holds its pool.
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(FindWorker(fleet, "second")->state(), proto::WORKER_STATE_WAITING_FOR_MEMORY);

  std::string output;
  ASSERT_EQ(fleet.Zkctl({"drain", "first", "--wait"}, &output), 0) << output;
  EXPECT_NE(output.find("RELEASING"), std::string::npos) << output;
  auto code = first.WaitExit(5s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  // The pool went back in chunks, to 0, before the worker left.
  std::string log = first.Log();
  auto released = log.find("pinned pool released: 0 bytes held");
  ASSERT_NE(released, std::string::npos) << log;
  EXPECT_NE(log.find("releasing the pinned pool: 16777216 bytes still held"), std::string::npos) << log;
  EXPECT_LT(released, log.find("-> GONE"));

  fleet.WaitWorkerReady("second");
  EXPECT_EQ(FindWorker(fleet, "second")->memory().pool_bytes(), 64 * kMiB);
  auto client = fleet.Client();
  proto::SubmitRequest request;
  std::vector<std::string> witnesses;
  request.set_request_id("after-handover");
  request.set_circuit_id("c1");
  witnesses.push_back("w");
  client->Submit(request, witnesses, 5s);
  auto result = client->NextJobResult(5s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(result->partitions(0).worker_id(), "second");
}

// --pool-ready below the budget: READY once that much is pinned, the rest
// pinned while the worker serves; heartbeats show the target, and the pool
// reaches it. Without it (the default) READY waits for the whole pool.
TEST(FleetMemory, PoolReadyBelowTheBudgetServesWhileTheRestIsPinned) {
  Fleet fleet("memory-pool-ready");
  fleet.StartBroker();
  Process& early = fleet.StartWorker(
      "early", {"--instant", "--circuit", "c1", "--pinned-budget", "512MiB", "--pool-chunk", "16MiB",
                "--pool-ready", "32MiB", "--memory-margin", "0"});
  fleet.WaitWorkerReady("early");
  auto worker = FindWorker(fleet, "early");
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->memory().pool_target_bytes(), 512 * kMiB);
  EXPECT_GE(worker->memory().pool_bytes(), 32 * kMiB);
  ASSERT_TRUE(early.WaitForLog("the rest is pinned in the background", 5s)) << early.Log();
  // (32 chunks pinned 8 at a time: READY sees the first 8 long before the last.)
  ASSERT_TRUE(early.WaitForLog("pinned pool complete: 536870912 bytes", 10s)) << early.Log();
  for (int i = 0; i < 100 && FindWorker(fleet, "early")->memory().pool_bytes() < 512 * kMiB; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(FindWorker(fleet, "early")->memory().pool_bytes(), 512 * kMiB);
  // READY came before the pool was complete, in the log's order.
  const std::string log = early.Log();
  EXPECT_LT(log.find("the rest is pinned in the background"), log.find("pinned pool complete")) << log;

  Process& whole = fleet.StartWorker("whole", {"--instant", "--circuit", "c1", "--pinned-budget", "64MiB",
                                               "--pool-chunk", "16MiB", "--memory-margin", "0"});
  fleet.WaitWorkerReady("whole");
  EXPECT_EQ(FindWorker(fleet, "whole")->memory().pool_bytes(), 64 * kMiB);
  EXPECT_EQ(whole.Log().find("the rest is pinned in the background"), std::string::npos) << whole.Log();
}

TEST(FleetMemory, GateGivesUpAfterTheTimeout) {
  Fleet fleet("memory-timeout");
  fleet.StartBroker();
  Process& worker = fleet.StartWorker(
      "starved", {"--instant", "--circuit", "c1", "--pinned-budget", "64MiB", "--memory-margin", "0",
                  "--memory-wait-timeout", "0.3", "--test-memory-limit", "10MiB", "--test-memory-ledger",
                  fleet.dir() + "/ledger"});
  auto code = worker.WaitExit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_NE(worker.Log().find("memory gate: 67108864 bytes"), std::string::npos) << worker.Log();
}

}  // namespace
}  // namespace fleet_test
