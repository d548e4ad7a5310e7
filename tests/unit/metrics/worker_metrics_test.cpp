// WorkerMetrics: state gauges and /ready follow SetState, the drain and
// memory-wait clocks run at scrape time, phases and outcomes land in the
// configured circuit's series, nothing is created per job.
#include "zkfleet/metrics/worker_metrics.hpp"

#include <thread>

#include <gtest/gtest.h>

#include "unit/metrics/collected.hpp"
#include "unit/metrics/http_client.hpp"

namespace zkfleet::metrics {
namespace {

using testing::FindSeries;
using testing::SeriesCount;
using testing::ValueOf;

WorkerIdentity Identity() { return {"w-1", "cpu", "none"}; }

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(WorkerMetricsTest, ConfiguredCircuitsHaveEverySeriesFromStart) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"mul", "sha"}, 90);
  auto f = server.Collect();
  for (const char* circuit : {"mul", "sha"}) {
    for (const char* outcome : {"succeeded", "failed", "error", "handed_back", "aborted"}) {
      EXPECT_EQ(ValueOf(f, "zkfleet_worker_jobs_total", {{"circuit", circuit}, {"outcome", outcome}}), 0)
          << circuit << " " << outcome;
    }
    for (const char* phase : {"queue_wait", "witness_transfer", "build_abc", "ntt", "msm", "prove_total"}) {
      EXPECT_EQ(ValueOf(f, "zkfleet_job_phase_seconds", {{"circuit", circuit}, {"phase", phase}}), 0)
          << circuit << " " << phase;
    }
  }
  EXPECT_EQ(ValueOf(f, "zkfleet_worker_info", {{"worker_id", "w-1"}, {"backend", "cpu"}, {"gpu", "none"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_drain_budget_seconds"), 90);
  EXPECT_EQ(ValueOf(f, "zkfleet_worker_state", {{"state", "STARTING"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_drain_duration_seconds"), 0);
  EXPECT_EQ(ValueOf(f, "zkfleet_memory_wait_seconds"), 0);
}

TEST(WorkerMetricsTest, KeyLoadBytesFollowTheLoad) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"porep"}, 90);
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_worker_key_load_bytes", {{"circuit", "porep"}}), 0);
  metrics.SetKeyLoadBytes("porep", 4096);
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_worker_key_load_bytes", {{"circuit", "porep"}}), 4096);
  metrics.SetKeyLoadBytes("porep", 94564824);
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_worker_key_load_bytes", {{"circuit", "porep"}}), 94564824);
}

// /ready names a long load's progress while the worker is not READY.
TEST(WorkerMetricsTest, ReadyNamesTheKeyLoadsProgressWhileLoading) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"porep"}, 90);
  server.Listen("127.0.0.1:0");
  metrics.SetState(proto::WORKER_STATE_LOADING);
  metrics.SetKeyLoadBytes("porep", 12'300'000'000, 48'400'000'000);
  auto reply = testing::HttpGet(server.port(), "/ready");
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(reply.body, "LOADING: circuit porep 12.3 of 48.4 GB (25%)\n");
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_worker_key_load_bytes", {{"circuit", "porep"}}), 12'300'000'000);
  metrics.SetState(proto::WORKER_STATE_READY);
  EXPECT_EQ(testing::HttpGet(server.port(), "/ready").body, "READY\n");
  metrics.SetState(proto::WORKER_STATE_DRAINING);
  EXPECT_EQ(testing::HttpGet(server.port(), "/ready").body, "DRAINING\n");  // no load detail once loaded
}

TEST(WorkerMetricsTest, StateGaugeIsOneForTheCurrentStateOnly) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"mul"}, 90);
  for (proto::WorkerState state : kWorkerStates) {
    metrics.SetState(state);
    auto f = server.Collect();
    double sum = 0;
    for (proto::WorkerState other : kWorkerStates) {
      double value = ValueOf(f, "zkfleet_worker_state", {{"state", WorkerStateLabel(other)}});
      EXPECT_EQ(value, other == state ? 1 : 0) << WorkerStateLabel(state) << " vs " << WorkerStateLabel(other);
      sum += value;
    }
    EXPECT_EQ(sum, 1);
  }
}

TEST(WorkerMetricsTest, ReadyEndpointIsOkOnlyInReady) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"mul"}, 90);
  server.Listen("127.0.0.1:0");
  EXPECT_EQ(testing::HttpGet(server.port(), "/ready").body, "STARTING\n");
  metrics.SetState(proto::WORKER_STATE_LOADING);
  EXPECT_EQ(testing::HttpGet(server.port(), "/ready").status, 503);
  metrics.SetState(proto::WORKER_STATE_READY);
  EXPECT_EQ(testing::HttpGet(server.port(), "/ready").status, 200);
  metrics.SetState(proto::WORKER_STATE_DRAINING);
  auto reply = testing::HttpGet(server.port(), "/ready");
  EXPECT_EQ(reply.status, 503);
  EXPECT_EQ(reply.body, "DRAINING\n");
  // /metrics still answers while draining, with the scrape-time clock.
  auto scrape = testing::HttpGet(server.port(), "/metrics");
  EXPECT_EQ(scrape.status, 200);
  EXPECT_NE(scrape.body.find("zkfleet_drain_duration_seconds "), std::string::npos) << scrape.body;
}

TEST(WorkerMetricsTest, DrainClockRunsThroughReleasingAndStopsAtGone) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"mul"}, 90);
  metrics.SetState(proto::WORKER_STATE_READY);
  Sleep(20);
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_drain_duration_seconds"), 0);

  metrics.SetState(proto::WORKER_STATE_DRAINING);
  Sleep(60);
  double draining = ValueOf(server.Collect(), "zkfleet_drain_duration_seconds");
  EXPECT_GE(draining, 0.05);
  metrics.SetState(proto::WORKER_STATE_DRAINING);  // a repeated report keeps the start
  metrics.SetState(proto::WORKER_STATE_RELEASING);
  Sleep(60);
  double releasing = ValueOf(server.Collect(), "zkfleet_drain_duration_seconds");
  EXPECT_GE(releasing, draining + 0.05);

  metrics.SetState(proto::WORKER_STATE_GONE);
  double gone = ValueOf(server.Collect(), "zkfleet_drain_duration_seconds");
  Sleep(40);
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_drain_duration_seconds"), gone);
  EXPECT_GE(gone, releasing);
}

TEST(WorkerMetricsTest, MemoryWaitClockCountsOnlyWaitingForMemory) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"mul"}, 90);
  metrics.SetState(proto::WORKER_STATE_WAITING_FOR_MEMORY);
  Sleep(60);
  double waiting = ValueOf(server.Collect(), "zkfleet_memory_wait_seconds");
  EXPECT_GE(waiting, 0.05);
  metrics.SetState(proto::WORKER_STATE_LOADING);
  double last = ValueOf(server.Collect(), "zkfleet_memory_wait_seconds");
  Sleep(40);
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_memory_wait_seconds"), last);
  EXPECT_LT(last, waiting + 1.0);
}

TEST(WorkerMetricsTest, PhasesOutcomesAndMemory) {
  MetricsServer server;
  WorkerMetrics metrics(server, Identity(), {"mul"}, 90);
  size_t series_at_start = SeriesCount(server.Collect());

  proto::PhaseTimings cpu;  // the CPU backend reports no witness transfer
  cpu.set_queue_wait_s(0.002);
  cpu.set_build_abc_s(0.1);
  cpu.set_ntt_s(0.3);
  cpu.set_msm_s(1.2);
  cpu.set_prove_total_s(1.7);
  for (int i = 0; i < 100; ++i) {
    metrics.ObservePhases("mul", cpu);
    metrics.JobEnded("mul", Outcome::kSucceeded);
  }
  metrics.JobEnded("mul", Outcome::kHandedBack);

  proto::MemoryStatus memory;
  memory.set_pool_bytes(96ull << 30);
  memory.set_pool_in_use_bytes(40ull << 30);
  memory.set_bytes_to_release(5ull << 30);
  memory.set_pool_target_bytes(128ull << 30);
  memory.set_pool_mode("hugepage-registered");
  EXPECT_EQ(ValueOf(server.Collect(), "zkfleet_worker_pool_mode", {{"mode", "none"}}), 1);  // before SetMemory
  metrics.SetMemory(memory);

  auto f = server.Collect();
  EXPECT_EQ(SeriesCount(f), series_at_start);
  auto msm = FindSeries(f, "zkfleet_job_phase_seconds", {{"circuit", "mul"}, {"phase", "msm"}});
  ASSERT_TRUE(msm);
  EXPECT_EQ(msm->histogram.sample_count, 100u);
  EXPECT_NEAR(msm->histogram.sample_sum, 120, 1e-9);
  EXPECT_EQ(ValueOf(f, "zkfleet_job_phase_seconds", {{"circuit", "mul"}, {"phase", "witness_transfer"}}), 0);
  EXPECT_EQ(ValueOf(f, "zkfleet_job_phase_seconds", {{"circuit", "mul"}, {"phase", "queue_wait"}}), 100);
  EXPECT_EQ(ValueOf(f, "zkfleet_worker_jobs_total", {{"circuit", "mul"}, {"outcome", "succeeded"}}), 100);
  EXPECT_EQ(ValueOf(f, "zkfleet_worker_jobs_total", {{"circuit", "mul"}, {"outcome", "handed_back"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_pinned_pool_bytes"), static_cast<double>(96ull << 30));
  EXPECT_EQ(ValueOf(f, "zkfleet_pinned_pool_in_use_bytes"), static_cast<double>(40ull << 30));
  EXPECT_EQ(ValueOf(f, "zkfleet_memory_to_release_bytes"), static_cast<double>(5ull << 30));
  EXPECT_EQ(ValueOf(f, "zkfleet_worker_pool_target_bytes"), static_cast<double>(128ull << 30));
  for (std::string_view mode : kPoolModeLabels) {
    EXPECT_EQ(ValueOf(f, "zkfleet_worker_pool_mode", {{"mode", std::string(mode)}}), mode == "hugepage-registered" ? 1 : 0)
        << mode;
  }
  memory.set_pool_mode("cuda-host-alloc");  // after a fallback
  metrics.SetMemory(memory);
  f = server.Collect();
  EXPECT_EQ(ValueOf(f, "zkfleet_worker_pool_mode", {{"mode", "cuda-host-alloc"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_worker_pool_mode", {{"mode", "hugepage-registered"}}), 0);
}

TEST(WorkerMetricsTest, LabelValuesAreTheProtoEnumNamesWithoutPrefix) {
  EXPECT_EQ(WorkerStateLabel(proto::WORKER_STATE_WAITING_FOR_MEMORY), "WAITING_FOR_MEMORY");
  EXPECT_EQ(PriorityLabel(proto::PRIORITY_CRITICAL), "CRITICAL");
  EXPECT_EQ(WorkerStateLabel(static_cast<proto::WorkerState>(99)), "UNKNOWN");
  EXPECT_EQ(PriorityIndex(proto::PRIORITY_UNSPECIFIED), PriorityIndex(proto::PRIORITY_NORMAL));
  EXPECT_EQ(WorkerStateIndex(proto::WORKER_STATE_UNSPECIFIED), -1);
}

}  // namespace
}  // namespace zkfleet::metrics
