// Draining workers (issue 7's handback part): zkctl drain, SIGTERM, timeout;
// and the worker's /metrics served through DRAINING and RELEASING.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "fleet_harness.hpp"
#include "unit/metrics/http_client.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

// Submits `count` jobs, one every `gap`, then collects every result; counts
// how often each job was answered and keeps who proved it, at which attempt.
class Stream {
 public:
  Stream(Fleet& fleet, int count, std::chrono::milliseconds gap) {
    thread_ = std::thread([this, &fleet, count, gap] {
      auto client = fleet.Client();
      for (int j = 0; j < count; ++j) {
        proto::SubmitRequest request;
        std::vector<std::string> witnesses;
        request.set_request_id("stream-" + std::to_string(j));
        request.set_circuit_id("c1");
        witnesses.push_back("w");
        submitted_.push_back(client->Submit(request, witnesses, 5s).job_seq());
        std::this_thread::sleep_for(gap);
      }
      while (answers_.size() < submitted_.size()) {
        auto result = client->NextJobResult(20s);
        if (!result) break;
        ++answers_[result->job_seq()];
        if (result->state() != proto::JOB_STATE_SUCCEEDED) ++failed_;
        if (result->partitions_size() > 0) {
          proved_by_[result->job_seq()] = {result->partitions(0).worker_id(), result->partitions(0).attempts()};
        }
      }
      if (client->NextJobResult(300ms)) ++extra_;
    });
  }
  // A test that stops early (a failed ASSERT) still joins the thread before
  // its counters go: never a running thread over destroyed members.
  ~Stream() {
    if (thread_.joinable()) thread_.join();
  }
  void Check() {
    thread_.join();
    EXPECT_EQ(answers_.size(), submitted_.size()) << "jobs lost";
    for (const auto& [seq, count] : answers_) EXPECT_EQ(count, 1) << "job " << seq;
    EXPECT_EQ(failed_, 0);
    EXPECT_EQ(extra_, 0) << "a result arrived twice";
  }
  // After Check(): the worker that proved job `seq`, and its attempt number.
  std::pair<std::string, uint32_t> ProvedBy(uint64_t seq) const {
    auto it = proved_by_.find(seq);
    return it == proved_by_.end() ? std::pair<std::string, uint32_t>{"<no result>", 0} : it->second;
  }

 private:
  std::thread thread_;
  std::vector<uint64_t> submitted_;
  std::map<uint64_t, int> answers_;
  std::map<uint64_t, std::pair<std::string, uint32_t>> proved_by_;
  int failed_ = 0;
  int extra_ = 0;
};

// The in-flight count (queued + running) the broker sees for `worker_id`.
uint32_t InFlight(Fleet& fleet, const std::string& worker_id) {
  const auto status = fleet.Status();  // named: workers() refers into it
  for (const auto& w : status.workers()) {
    if (w.worker_id() == worker_id) return w.in_flight();
  }
  return 0;
}

// Sum of N over the worker log's "handing back N unstarted" lines.
int HandedBackUnstarted(const std::string& log) {
  int handed = 0;
  std::regex handback(R"(handing back (\d+) unstarted)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), handback); it != std::sregex_iterator(); ++it) {
    handed += std::stoi((*it)[1].str());
  }
  return handed;
}

std::vector<std::string> WorkerArgs(int delay_ms, const std::string& extra = "") {
  std::vector<std::string> args = {"--instant", "--instant-delay-ms", std::to_string(delay_ms), "--circuit", "c1",
                                   "--capacity", "4"};
  if (!extra.empty()) args.push_back(extra);
  return args;
}

TEST(FleetDrain, ZkctlDrainDuringAStreamLosesNothing) {
  Fleet fleet("drain");
  fleet.StartBroker();
  // 50 ms proofs: the two workers take 40 jobs/s, well below what the stream
  // submits even on a loaded machine (each SUBMIT waits for an fsync), so
  // their queues stay full. (At 20 ms a loaded CI machine once submitted
  // slower than they proved, and "leaving" never held 3 items.)
  Process& leaving = fleet.StartWorker("leaving", WorkerArgs(50));
  Process& staying = fleet.StartWorker("staying", WorkerArgs(50));
  fleet.WaitWorkerReady("leaving");
  fleet.WaitWorkerReady("staying");

  Stream stream(fleet, 120, 5ms);
  std::this_thread::sleep_for(250ms);
  // Drain while "leaving" holds unstarted items (the stream outpaces the two
  // workers, so their queues stay full): those must be handed back.
  // (Scaled: under TSan, beside the suite's heavy cases, 1 s was once too short.)
  const auto until = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(std::chrono::milliseconds(1000));
  while (std::chrono::steady_clock::now() < until && InFlight(fleet, "leaving") < 3) std::this_thread::sleep_for(5ms);
  if (InFlight(fleet, "leaving") < 3u) {
    stream.Check();  // joins the stream's thread: a test that stops here must not abort the binary
    FAIL() << "leaving never held queued items";
  }
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
  // Nothing started after the drain began but what a lane had already taken
  // (its "processing" line may follow the DRAINING line; the worker names
  // those items), and no job arrived.
  const auto running_at = log.find("running item(s) finish first:", drained_at);
  ASSERT_NE(running_at, std::string::npos) << log;
  const std::string finishing = log.substr(running_at, log.find('\n', running_at) - running_at);
  for (const Processed& line : ProcessingLines(log.substr(drained_at))) {
    EXPECT_NE(finishing.find(" job_seq=" + std::to_string(line.job_seq) + " partition=" +
                             std::to_string(line.partition) + ";"),
              std::string::npos)
        << "job_seq " << line.job_seq << " started after the drain began: " << finishing;
  }
  EXPECT_EQ(log.find("worker is DRAINING"), std::string::npos) << "the broker routed a job after the drain";
  // What it handed back was proved by the other worker, oldest first.
  std::set<uint64_t> handed;
  std::string broker_log = ReadFile(fleet.dir() + "/broker.log");
  std::regex requeued(R"(requeued job_seq=(\d+) partition=0 .*handed back by worker leaving)");
  for (auto it = std::sregex_iterator(broker_log.begin(), broker_log.end(), requeued); it != std::sregex_iterator(); ++it) {
    handed.insert(std::stoull((*it)[1].str()));
  }
  // Something was handed back (a drain that handed back nothing would make
  // every check below vacuous), as the worker says, and each of those jobs
  // was proved once by the other worker at its original job_seq, with the
  // attempt refunded.
  ASSERT_GT(handed.size(), 0u) << "nothing was handed back:\n" << log;
  EXPECT_EQ(HandedBackUnstarted(log), static_cast<int>(handed.size())) << log;
  for (uint64_t seq : handed) {
    EXPECT_EQ(stream.ProvedBy(seq), (std::pair<std::string, uint32_t>{"staying", 1u})) << "job " << seq;
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
  EXPECT_EQ(HandedBackUnstarted(log), 3) << log;
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
  std::vector<std::string> witnesses;
  request.set_request_id("stuck");
  request.set_circuit_id("c1");
  witnesses.push_back("w");
  uint64_t seq = client->Submit(request, witnesses, 5s).job_seq();
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

// One look at a worker's HTTP endpoints: /metrics, then /ready.
struct Scrape {
  bool ok = false;         // /metrics answered 200
  std::string state;       // the zkfleet_worker_state series at 1
  double handed_back = -1;
  double to_release = -1;
  double drain_seconds = -1;
  int ready_status = 0;
};

Scrape ScrapeWorker(int port) {
  Scrape scrape;
  auto metrics = zkfleet::testing::HttpGet(port, "/metrics", 1s);
  scrape.ok = metrics.status == 200;
  if (scrape.ok) {
    for (const char* state : {"STARTING", "WAITING_FOR_MEMORY", "LOADING", "READY", "DRAINING", "RELEASING", "GONE"}) {
      if (SampleValue(metrics.body, std::string("zkfleet_worker_state{state=\"") + state + "\"}") == 1) {
        scrape.state = state;
      }
    }
    scrape.handed_back = SampleValue(metrics.body, "zkfleet_worker_jobs_total{circuit=\"c1\",outcome=\"handed_back\"}");
    scrape.to_release = SampleValue(metrics.body, "zkfleet_memory_to_release_bytes");
    scrape.drain_seconds = SampleValue(metrics.body, "zkfleet_drain_duration_seconds");
  }
  scrape.ready_status = zkfleet::testing::HttpGet(port, "/ready", 1s).status;
  // The process may end between the two requests: a scrape counts as served
  // only when both were answered (seen in CI: /metrics said RELEASING, then
  // /ready got no answer because the worker had exited).
  if (scrape.ready_status == 0) scrape.ok = false;
  return scrape;
}

TEST(FleetDrain, MetricsStayServedWhileDrainingAndReleasing) {
  Fleet fleet("drain-metrics");
  int broker_metrics = FreePort();
  int worker_metrics = FreePort();
  fleet.StartBroker({"--metrics-listen", "127.0.0.1:" + std::to_string(broker_metrics)});
  // A pool of 128 small chunks: RELEASING frees one per loop turn, here 10 ms
  // apart (--test-release-pause-ms), so it lasts over a second, and DRAINING
  // waits for a 600 ms proof.
  Process& leaving = fleet.StartWorker(
      "leaving", {"--instant", "--instant-delay-ms", "600", "--circuit", "c1", "--capacity", "4", "--pinned-budget",
                  "32MiB", "--pool-chunk", "256KiB", "--memory-margin", "0", "--test-release-pause-ms", "10",
                  "--metrics-listen",
                  "127.0.0.1:" + std::to_string(worker_metrics)});
  fleet.WaitWorkerReady("leaving");
  Scrape before = ScrapeWorker(worker_metrics);
  ASSERT_TRUE(before.ok);
  EXPECT_EQ(before.state, "READY");
  EXPECT_EQ(before.ready_status, 200);
  EXPECT_EQ(before.drain_seconds, 0);

  Stream stream(fleet, 8, 5ms);
  ASSERT_TRUE(leaving.WaitForLog("processing", 5s));
  for (int i = 0; i < 100 && fleet.Status().workers(0).in_flight() < 4; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(fleet.Status().workers(0).in_flight(), 4u);

  std::vector<Scrape> scrapes;
  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    while (!stop) {
      scrapes.push_back(ScrapeWorker(worker_metrics));
      std::this_thread::sleep_for(10ms);
    }
  });
  leaving.Signal(SIGTERM);  // also proves no HTTP thread takes SIGTERM: that would kill it (exit 143)
  fleet.StartWorker("staying", {"--instant", "--circuit", "c1"});
  auto code = leaving.WaitExit(15s);
  stop = true;
  scraper.join();
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << leaving.Log();
  stream.Check();

  // States in order; the server answered until the process ended.
  std::vector<std::string> seen;
  size_t served = 0;
  while (served < scrapes.size() && scrapes[served].ok) {
    if (seen.empty() || seen.back() != scrapes[served].state) seen.push_back(scrapes[served].state);
    ++served;
  }
  for (size_t i = served; i < scrapes.size(); ++i) EXPECT_FALSE(scrapes[i].ok) << "served again after a failure";
  std::map<std::string, int> per_state;
  for (size_t i = 0; i < served; ++i) ++per_state[scrapes[i].state];
  std::string summary;
  for (const auto& [state, count] : per_state) summary += state + "=" + std::to_string(count) + " ";
  std::printf("scrapes by state: %s(then %zu refused)\n", summary.c_str(), scrapes.size() - served);
  std::vector<std::string> order = {"READY", "DRAINING", "RELEASING", "GONE"};
  auto position = [&](const std::string& state) { return std::find(order.begin(), order.end(), state) - order.begin(); };
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LT(position(seen[i - 1]), position(seen[i])) << seen[i];
  EXPECT_NE(std::find(seen.begin(), seen.end(), "DRAINING"), seen.end());
  ASSERT_NE(std::find(seen.begin(), seen.end(), "RELEASING"), seen.end()) << "RELEASING never scraped";
  ASSERT_GT(served, 0u);
  EXPECT_TRUE(scrapes[served - 1].state == "RELEASING" || scrapes[served - 1].state == "GONE")
      << "the last answer was in " << scrapes[served - 1].state;

  double most_to_release = 0;
  for (size_t i = 0; i < served; ++i) {
    const Scrape& scrape = scrapes[i];
    if (scrape.state == "DRAINING" || scrape.state == "RELEASING") {
      EXPECT_EQ(scrape.ready_status, 503) << "/ready while " << scrape.state;
      EXPECT_GT(scrape.drain_seconds, 0) << scrape.state;
    }
    if (scrape.state == "RELEASING") {
      // The three queued items went back before the running one finished.
      EXPECT_EQ(scrape.handed_back, 3);
      most_to_release = std::max(most_to_release, scrape.to_release);
    }
  }
  EXPECT_GT(most_to_release, 0) << "zkfleet_memory_to_release_bytes stayed 0 while RELEASING";

  // The broker counted the same: the handback, and every job once.
  auto broker = zkfleet::testing::HttpGet(broker_metrics, "/metrics", 2s);
  ASSERT_EQ(broker.status, 200);
  EXPECT_EQ(SampleValue(broker.body, "zkfleet_work_items_handed_back_total"), 3);
  EXPECT_EQ(SampleValue(broker.body, "zkfleet_jobs_completed_total{circuit=\"c1\",priority=\"NORMAL\"}"), 8);
  EXPECT_EQ(SampleValue(broker.body, "zkfleet_workers_lost_total"), 0);
}

}  // namespace
}  // namespace fleet_test
