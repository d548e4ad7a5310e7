// BrokerMetrics: bounded label sets, created at start, per-circuit series once
// per circuit (capped), and the counters/gauges move as documented.
#include "zkfleet/metrics/broker_metrics.hpp"

#include <gtest/gtest.h>

#include "unit/metrics/collected.hpp"

namespace zkfleet::metrics {
namespace {

using testing::SeriesCount;
using testing::ValueOf;

TEST(BrokerMetricsTest, FixedSeriesExistFromStartWithZero) {
  MetricsServer server;
  BrokerMetrics metrics(server);
  auto families = server.Collect();
  for (const char* priority : {"LOW", "NORMAL", "HIGH", "CRITICAL"}) {
    EXPECT_EQ(ValueOf(families, "zkfleet_queue_depth", {{"priority", priority}}), 0) << priority;
    EXPECT_EQ(ValueOf(families, "zkfleet_queue_oldest_age_seconds", {{"priority", priority}}), 0) << priority;
    EXPECT_EQ(ValueOf(families, "zkfleet_broker_queue_wait_seconds", {{"priority", priority}}), 0) << priority;
  }
  for (const char* state : {"STARTING", "WAITING_FOR_MEMORY", "LOADING", "READY", "DRAINING", "RELEASING", "GONE"}) {
    EXPECT_EQ(ValueOf(families, "zkfleet_broker_workers", {{"state", state}}), 0) << state;
  }
  for (const char* reason : {"malformed", "oversized", "version"}) {
    EXPECT_EQ(ValueOf(families, "zkfleet_messages_dropped_total", {{"reason", reason}}), 0) << reason;
  }
  EXPECT_EQ(ValueOf(families, "zkfleet_jobs_dead_lettered_total"), 0);
  EXPECT_EQ(ValueOf(families, "zkfleet_work_items_redelivered_total"), 0);
  // No circuit known yet: no per-circuit series.
  EXPECT_EQ(ValueOf(families, "zkfleet_jobs_submitted_total", {{"circuit", "c"}, {"priority", "LOW"}}), -1);
}

TEST(BrokerMetricsTest, JobCountersByCircuitPriorityAndReason) {
  MetricsServer server;
  BrokerMetrics metrics(server);
  metrics.JobSubmitted("mul", proto::PRIORITY_HIGH);
  metrics.JobSubmitted("mul", proto::PRIORITY_UNSPECIFIED);  // counted as NORMAL
  metrics.JobCompleted("mul", proto::PRIORITY_HIGH);
  metrics.JobFailed("mul", FailReason::kProveError);
  metrics.JobFailed("mul", FailReason::kDeadLettered);
  metrics.ItemRedelivered();
  metrics.ItemRedelivered();
  metrics.WorkerLost();
  metrics.MessageDropped(DropReason::kOversized);

  auto f = server.Collect();
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_submitted_total", {{"circuit", "mul"}, {"priority", "HIGH"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_submitted_total", {{"circuit", "mul"}, {"priority", "NORMAL"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_submitted_total", {{"circuit", "mul"}, {"priority", "LOW"}}), 0);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_completed_total", {{"circuit", "mul"}, {"priority", "HIGH"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_failed_total", {{"circuit", "mul"}, {"reason", "prove_error"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_failed_total", {{"circuit", "mul"}, {"reason", "dead_lettered"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_dead_lettered_total"), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_work_items_redelivered_total"), 2);
  EXPECT_EQ(ValueOf(f, "zkfleet_workers_lost_total"), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_messages_dropped_total", {{"reason", "oversized"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_messages_dropped_total", {{"reason", "malformed"}}), 0);
}

TEST(BrokerMetricsTest, GaugesAndQueueWait) {
  MetricsServer server;
  BrokerMetrics metrics(server);
  metrics.SetQueue(proto::PRIORITY_CRITICAL, 7, 12.5);
  metrics.SetWorkers(proto::WORKER_STATE_READY, 3);
  metrics.SetWorkers(proto::WORKER_STATE_DRAINING, 1);
  metrics.SetWorkers(proto::WORKER_STATE_UNSPECIFIED, 9);  // no series: ignored
  metrics.ObserveQueueWait(proto::PRIORITY_LOW, 0.2);
  metrics.ObserveQueueWait(proto::PRIORITY_LOW, 3);

  auto f = server.Collect();
  EXPECT_EQ(ValueOf(f, "zkfleet_queue_depth", {{"priority", "CRITICAL"}}), 7);
  EXPECT_EQ(ValueOf(f, "zkfleet_queue_oldest_age_seconds", {{"priority", "CRITICAL"}}), 12.5);
  EXPECT_EQ(ValueOf(f, "zkfleet_broker_workers", {{"state", "READY"}}), 3);
  EXPECT_EQ(ValueOf(f, "zkfleet_broker_workers", {{"state", "DRAINING"}}), 1);
  auto wait = testing::FindSeries(f, "zkfleet_broker_queue_wait_seconds", {{"priority", "LOW"}});
  ASSERT_TRUE(wait);
  EXPECT_EQ(wait->histogram.sample_count, 2u);
  EXPECT_DOUBLE_EQ(wait->histogram.sample_sum, 3.2);
  // Buckets from 1 ms to 10 min (+Inf).
  ASSERT_FALSE(wait->histogram.bucket.empty());
  EXPECT_DOUBLE_EQ(wait->histogram.bucket.front().upper_bound, 0.001);
  EXPECT_DOUBLE_EQ(wait->histogram.bucket[wait->histogram.bucket.size() - 2].upper_bound, 600);
}

TEST(BrokerMetricsTest, SeriesAreCreatedOncePerCircuitNeverPerJob) {
  MetricsServer server;
  BrokerMetrics metrics(server);
  metrics.ForCircuit("mul");
  size_t after_first_circuit = SeriesCount(server.Collect());
  for (int i = 0; i < 1000; ++i) {
    metrics.JobSubmitted("mul", proto::PRIORITY_NORMAL);
    metrics.JobCompleted("mul", proto::PRIORITY_NORMAL);
    metrics.ObserveQueueWait(proto::PRIORITY_NORMAL, 0.01);
  }
  EXPECT_EQ(SeriesCount(server.Collect()), after_first_circuit);
  EXPECT_EQ(&metrics.ForCircuit("mul"), &metrics.ForCircuit("mul"));
}

TEST(BrokerMetricsTest, CircuitLabelsAreCappedIntoOther) {
  MetricsServer server;
  BrokerMetrics metrics(server, /*max_circuits=*/2);
  metrics.JobSubmitted("a", proto::PRIORITY_LOW);
  metrics.JobSubmitted("b", proto::PRIORITY_LOW);
  size_t with_two = SeriesCount(server.Collect());
  metrics.JobSubmitted("c", proto::PRIORITY_LOW);
  size_t with_other = SeriesCount(server.Collect());
  for (int i = 0; i < 50; ++i) metrics.JobSubmitted("unknown-" + std::to_string(i), proto::PRIORITY_LOW);

  auto f = server.Collect();
  EXPECT_EQ(SeriesCount(f), with_other);
  EXPECT_GT(with_other, with_two);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_submitted_total", {{"circuit", "a"}, {"priority", "LOW"}}), 1);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_submitted_total", {{"circuit", "_other"}, {"priority", "LOW"}}), 51);
  EXPECT_EQ(ValueOf(f, "zkfleet_jobs_submitted_total", {{"circuit", "c"}, {"priority", "LOW"}}), -1);
}

}  // namespace
}  // namespace zkfleet::metrics
