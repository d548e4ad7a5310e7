// Draining workers (issue 7's handback part): zkctl drain, SIGTERM, timeout.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

// Submits `count` jobs, one every `gap`, then collects every result; counts
// how often each job was answered.
class Stream {
 public:
  Stream(Fleet& fleet, int count, std::chrono::milliseconds gap) {
    thread_ = std::thread([this, &fleet, count, gap] {
      auto client = fleet.Client();
      for (int j = 0; j < count; ++j) {
        proto::SubmitRequest request;
        request.set_request_id("stream-" + std::to_string(j));
        request.set_circuit_id("c1");
        request.add_witnesses("w");
        submitted_.push_back(client->Submit(request, 5s).job_seq());
        std::this_thread::sleep_for(gap);
      }
      while (answers_.size() < submitted_.size()) {
        auto result = client->NextJobResult(20s);
        if (!result) break;
        ++answers_[result->job_seq()];
        if (result->state() != proto::JOB_STATE_SUCCEEDED) ++failed_;
      }
      if (client->NextJobResult(300ms)) ++extra_;
    });
  }
  void Check() {
    thread_.join();
    EXPECT_EQ(answers_.size(), submitted_.size()) << "jobs lost";
    for (const auto& [seq, count] : answers_) EXPECT_EQ(count, 1) << "job " << seq;
    EXPECT_EQ(failed_, 0);
    EXPECT_EQ(extra_, 0) << "a result arrived twice";
  }

 private:
  std::thread thread_;
  std::vector<uint64_t> submitted_;
  std::map<uint64_t, int> answers_;
  int failed_ = 0;
  int extra_ = 0;
};

std::vector<std::string> WorkerArgs(int delay_ms, const std::string& extra = "") {
  std::vector<std::string> args = {"--instant", "--instant-delay-ms", std::to_string(delay_ms), "--circuit", "c1",
                                   "--capacity", "4"};
  if (!extra.empty()) args.push_back(extra);
  return args;
}

TEST(FleetDrain, ZkctlDrainDuringAStreamLosesNothing) {
  Fleet fleet("drain");
  fleet.StartBroker();
  Process& leaving = fleet.StartWorker("leaving", WorkerArgs(20));
  Process& staying = fleet.StartWorker("staying", WorkerArgs(20));
  fleet.WaitWorkerReady("leaving");
  fleet.WaitWorkerReady("staying");

  Stream stream(fleet, 120, 5ms);
  std::this_thread::sleep_for(250ms);
  std::string output;
  ASSERT_EQ(fleet.Zkctl({"drain", "leaving", "--wait"}, &output), 0) << output;
  EXPECT_NE(output.find("DRAINING"), std::string::npos) << output;
  EXPECT_NE(output.find("RELEASING"), std::string::npos) << output;
  auto code = leaving.WaitExit(5s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  stream.Check();

  std::string log = leaving.Log();
  // Its pinned pool was released, to 0 bytes, before it left.
  auto released = log.find("pinned pool released: 0 bytes held");
  ASSERT_NE(released, std::string::npos) << log;
  EXPECT_LT(released, log.find("-> GONE"));
  auto drained_at = log.find("-> DRAINING");
  ASSERT_NE(drained_at, std::string::npos);
  // Nothing was proved, and no job arrived, after the drain began.
  EXPECT_TRUE(ProcessingLines(log.substr(drained_at)).empty());
  EXPECT_EQ(log.find("worker is DRAINING"), std::string::npos) << "the broker routed a job after the drain";
  // What it handed back was proved by the other worker, oldest first.
  std::set<uint64_t> handed;
  std::string broker_log = ReadFile(fleet.dir() + "/broker.log");
  std::regex requeued(R"(requeued job_seq=(\d+) partition=0 .*handed back by worker leaving)");
  for (auto it = std::sregex_iterator(broker_log.begin(), broker_log.end(), requeued); it != std::sregex_iterator(); ++it) {
    handed.insert(std::stoull((*it)[1].str()));
  }
  std::vector<uint64_t> proved_order;
  for (const auto& p : ProcessingLines(staying.Log())) {
    if (handed.count(p.job_seq)) proved_order.push_back(p.job_seq);
  }
  EXPECT_EQ(proved_order, std::vector<uint64_t>(handed.begin(), handed.end()));
  auto status = fleet.Status();
  EXPECT_EQ(status.workers_size(), 1);
  EXPECT_EQ(status.jobs_completed(), 120u);
  EXPECT_EQ(status.items_handed_back(), handed.size());
  EXPECT_TRUE(staying.running());
}

TEST(FleetDrain, SecondSigtermDoesNotSkipTheHandback) {
  Fleet fleet("sigterm");
  fleet.StartBroker();
  Process& leaving = fleet.StartWorker("leaving", WorkerArgs(1000));
  fleet.WaitWorkerReady("leaving");

  Stream stream(fleet, 12, 5ms);
  // Let it fill its local queue (capacity 4) while proving the first item.
  ASSERT_TRUE(leaving.WaitForLog("processing", 5s));
  for (int i = 0; i < 100 && fleet.Status().workers(0).in_flight() < 4; ++i) std::this_thread::sleep_for(10ms);
  leaving.Signal(SIGTERM);
  // Signals of one kind do not queue: send the second once the first is taken,
  // while the running item (1 s) keeps the drain going.
  ASSERT_TRUE(leaving.WaitForLog("-> DRAINING", 5s));
  leaving.Signal(SIGTERM);
  fleet.StartWorker("staying", WorkerArgs(20));
  auto code = leaving.WaitExit(10s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);
  std::string log = leaving.Log();
  EXPECT_NE(log.find("already DRAINING"), std::string::npos) << log;
  // Three queued items went back: at once, or (one still on the wire when
  // the signal came) as it arrived.
  int handed = 0;
  std::regex handback(R"(handing back (\d+) unstarted)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), handback); it != std::sregex_iterator(); ++it) {
    handed += std::stoi((*it)[1].str());
  }
  EXPECT_EQ(handed, 3) << log;
  stream.Check();
  EXPECT_EQ(fleet.Status().items_handed_back(), 3u);
}

TEST(FleetDrain, DrainTimeoutAbortsAndHandsBackTheRunningItem) {
  Fleet fleet("drain-timeout");
  fleet.StartBroker();
  Process& slow = fleet.StartWorker("slow", {"--instant", "--instant-delay-ms", "20000", "--circuit", "c1",
                                             "--drain-timeout", "0.3"});
  fleet.WaitWorkerReady("slow");
  auto client = fleet.Client();
  proto::SubmitRequest request;
  request.set_request_id("stuck");
  request.set_circuit_id("c1");
  request.add_witnesses("w");
  uint64_t seq = client->Submit(request, 5s).job_seq();
  ASSERT_TRUE(slow.WaitForLog("processing", 5s));

  fleet.StartWorker("quick", WorkerArgs(0));
  fleet.WaitWorkerReady("quick");
  auto started = std::chrono::steady_clock::now();
  std::string output;
  ASSERT_EQ(fleet.Zkctl({"drain", "slow", "--wait"}, &output), 0) << output;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  auto code = slow.WaitExit(5s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0);

  auto result = client->NextJobResult(5s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->job_seq(), seq);
  ASSERT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  EXPECT_EQ(result->partitions(0).worker_id(), "quick");
  EXPECT_EQ(result->partitions(0).attempts(), 2u);  // the aborted lease counted
}

}  // namespace
}  // namespace fleet_test
