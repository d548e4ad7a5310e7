// BrokerCore (broker_core_test_support.hpp): a job's life, submitted,
// dispatched by priority within credit, proved, answered once; retries,
// dead letters, drains, cancels, status, the metrics, FAULTED workers and
// the grace for known circuits after a restart.
#include "unit/broker/broker_core_test_support.hpp"

namespace zkfleet::broker {
namespace {

TEST_F(BrokerCoreTest, UnknownCircuitIsRefusedUnlessAcceptUnrouted) {
  auto out = Submit("cl", "r1", proto::PRIORITY_NORMAL, 1, "nobody-has-it");
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);
  EXPECT_NE(out[0].envelope.error().message().find("nobody-has-it"), std::string::npos);
  EXPECT_EQ(core_->jobs().size(), 0u);

  BrokerOptions options;
  options.accept_unrouted = true;
  Make(options);
  out = Submit("cl", "r1", proto::PRIORITY_NORMAL, 1, "nobody-has-it");
  ASSERT_TRUE(out[0].envelope.has_submit_reply());
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  EXPECT_EQ(core_->queue().size(), 1u);
}

TEST_F(BrokerCoreTest, DispatchesByPriorityThenSeqThenPartitionWithinCredit) {
  Ready("wA", "A", {"c1"}, 0);
  Submit("cl", "low", proto::PRIORITY_LOW, 1);       // seq 1
  Submit("cl", "norm", proto::PRIORITY_NORMAL, 2);   // seq 2
  Submit("cl", "crit", proto::PRIORITY_CRITICAL, 1); // seq 3
  Submit("cl", "norm2", proto::PRIORITY_NORMAL, 1);  // seq 4
  EXPECT_TRUE(Dispatch().empty());  // no credit, nothing sent
  Credit("wA", 3);
  auto jobs = Dispatch();
  using J = std::tuple<std::string, uint64_t, uint32_t>;
  EXPECT_EQ(jobs, (std::vector<J>{{"wA", 3, 0}, {"wA", 2, 0}, {"wA", 2, 1}}));
  Credit("wA", 10);
  EXPECT_EQ(Dispatch(), (std::vector<J>{{"wA", 4, 0}, {"wA", 1, 0}}));
}

TEST_F(BrokerCoreTest, JobSeqIsMonotonicAndNeverReused) {
  Ready("wA", "A", {"c1"}, 0);
  uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto out = Submit("cl", "r" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
    uint64_t seq = out[0].envelope.submit_reply().job_seq();
    EXPECT_GT(seq, last);
    last = seq;
  }
  // Refused submits consume no sequence number, expired jobs do not return theirs.
  Submit("cl", "bad", proto::PRIORITY_NORMAL, 0);
  EXPECT_EQ(core_->journal().next_job_seq(), last + 1);
}

TEST_F(BrokerCoreTest, ResultGoesToTheSubmitterOnceAndStaleResultsAreIgnored) {
  Ready("wA", "A", {"c1"}, 4);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 2u);
  Result("wA", 1, 0);
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());  // one partition still out
  Result("wA", 1, 1);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(results[0].partitions_size(), 2);
  EXPECT_EQ(results[0].partitions(1).proof_json(), "proof-1-1");
  EXPECT_EQ(results[0].partitions(1).worker_id(), "A");
  // The same result again (a duplicate) changes nothing and answers nobody.
  Result("wA", 1, 1);
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());
  EXPECT_EQ(core_->counters().results_stale, 1u);
}

TEST_F(BrokerCoreTest, DeadWorkersItemsGoBackAheadOfNewerJobsOfTheirPriority) {
  Ready("wA", "A", {"c1"}, 2);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);  // seq 1, leased to A
  ASSERT_EQ(Dispatch().size(), 2u);
  Started("wA", 1, 0);  // A began partition 0 (partition 1 stays unstarted in its queue)
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1);  // seq 2, queued
  Submit("cl", "r3", proto::PRIORITY_HIGH, 1);    // seq 3, queued
  // A falls silent; B registers and keeps talking.
  now_ += milliseconds(200);
  Ready("wB", "B", {"c1"}, 0);
  now_ += milliseconds(200);
  Heartbeat("wB", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->workers().all().count("wA"), 0u);
  EXPECT_EQ(core_->counters().items_redelivered, 2u);
  Credit("wB", 10);
  using J = std::tuple<std::string, uint64_t, uint32_t>;
  EXPECT_EQ(Dispatch(), (std::vector<J>{{"wB", 3, 0}, {"wB", 1, 0}, {"wB", 1, 1}, {"wB", 2, 0}}));
  // A comes back with a late result for its lost lease: stale.
  Result("wA", 1, 0);
  EXPECT_EQ(core_->counters().results_stale, 1u);
  Result("wB", 1, 0);
  Result("wB", 1, 1);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].partitions(0).attempts(), 2u);  // A's lost lease had started: it counts
  EXPECT_EQ(results[0].partitions(1).attempts(), 1u);  // A never started it: it does not
  EXPECT_EQ(results[0].partitions(0).worker_id(), "B");
}

TEST_F(BrokerCoreTest, DeadLettersAfterMaxAttempts) {
  BrokerOptions options;
  options.max_attempts = 2;
  Make(options);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1, "c1");  // refused: no worker yet
  Ready("w1", "A", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    ASSERT_EQ(Dispatch().size(), 1u) << "attempt " << attempt;
    // The worker dies while proving; a new one takes over.
    std::string identity = "w" + std::to_string(attempt);
    Started(identity, 1, 0);
    core_->WorkerUnreachable(identity, now_);
    Ready("w" + std::to_string(attempt + 1), "A", {"c1"}, 1);
  }
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_DEAD_LETTERED);
  EXPECT_NE(results[0].error().find("--max-attempts 2"), std::string::npos) << results[0].error();
  EXPECT_TRUE(Dispatch().empty());
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 1u);
}

TEST_F(BrokerCoreTest, RetryableFailureRetriesFinalFailureFails) {
  Ready("wA", "A", {"c1"}, 10);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 2);
  ASSERT_EQ(Dispatch().size(), 3u);
  Result("wA", 1, 0, /*ok=*/false, /*retryable=*/true);
  auto again = Dispatch();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(std::get<1>(again[0]), 1u);
  Result("wA", 2, 1, /*ok=*/false, /*retryable=*/false);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].job_seq(), 2u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_FAILED);
  EXPECT_NE(results[0].error().find("boom"), std::string::npos);
  Result("wA", 2, 0);  // the other partition's late result is dropped quietly
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());
}

TEST_F(BrokerCoreTest, ResubmittedRequestIdReturnsTheExistingJob) {
  Ready("wA", "A", {"c1"}, 10);
  Submit("cl", "same", proto::PRIORITY_NORMAL, 1);
  // Same client identity (anonymous), another connection, same payload.
  auto dup = Submit("other", "same", proto::PRIORITY_HIGH, 1, "c1", 7);
  ASSERT_EQ(dup.size(), 1u);
  EXPECT_TRUE(dup[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(dup[0].envelope.submit_reply().job_seq(), 1u);
  ASSERT_EQ(Dispatch().size(), 1u);  // proved once
  Result("wA", 1, 0);
  auto out = Take();
  EXPECT_EQ(ResultsTo(out, "cl").size(), 1u);
  ASSERT_EQ(ResultsTo(out, "other").size(), 1u);  // the duplicate waits too
  EXPECT_EQ(ResultsTo(out, "other")[0].job_seq(), 1u);
  // After the end: reply and the stored result at once, nothing dispatched.
  auto late = Submit("third", "same", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(late.size(), 2u);
  EXPECT_TRUE(late[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(late[1].envelope.job_result().partitions(0).proof_json(), "proof-1-0");
  EXPECT_TRUE(Dispatch().empty());
  EXPECT_EQ(core_->counters().jobs_submitted, 1u);
}

// The idempotency key is (client identity, request id) and covers the payload.
TEST_F(BrokerCoreTest, RequestIdIsScopedPerClientAndBoundToItsPayload) {
  Ready("wA", "A", {"c1"}, 10);
  Submit("cl", "same", proto::PRIORITY_NORMAL, 1, "c1", 1, "alice");
  // Another witness under the same (client, request id): refused, nothing queued.
  auto reused = Submit("cl", "same", proto::PRIORITY_NORMAL, 1, "c1", 2, "alice", "other-witness");
  ASSERT_EQ(reused.size(), 1u);
  ASSERT_TRUE(reused[0].envelope.has_error());
  EXPECT_EQ(reused[0].envelope.error().kind(), proto::ERROR_KIND_REQUEST_ID_REUSED);
  EXPECT_NE(reused[0].envelope.error().message().find("request id reused with a different witness"), std::string::npos);
  // Without witnesses it is a lookup (zkctl submit --request-id R): the existing job.
  auto lookup = Submit("cl", "same", proto::PRIORITY_NORMAL, 0, "c1", 9, "alice");
  ASSERT_EQ(lookup.size(), 1u);
  ASSERT_TRUE(lookup[0].envelope.has_submit_reply()) << lookup[0].envelope.DebugString();
  EXPECT_TRUE(lookup[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(lookup[0].envelope.submit_reply().job_seq(), 1u);
  // Another client may use the same request id: its own job, its own proof.
  auto bob = Submit("cl2", "same", proto::PRIORITY_NORMAL, 1, "c1", 3, "bob", "bobs-witness");
  ASSERT_EQ(bob.size(), 1u);
  EXPECT_FALSE(bob[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(bob[0].envelope.submit_reply().job_seq(), 2u);
  ASSERT_EQ(Dispatch().size(), 2u);
  Result("wA", 1, 0);
  Result("wA", 2, 0);
  auto out = Take();
  ASSERT_EQ(ResultsTo(out, "cl").size(), 2u);  // the submitter and the lookup
  EXPECT_EQ(ResultsTo(out, "cl")[0].job_seq(), 1u);
  ASSERT_EQ(ResultsTo(out, "cl2").size(), 1u);
  EXPECT_EQ(ResultsTo(out, "cl2")[0].job_seq(), 2u);
  // Bob cannot await or cancel Alice's job.
  proto::Envelope await;
  await.set_client_id("bob");
  await.mutable_await()->set_job_seq(1);
  core_->HandleClient("cl2", await, now_);
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  // Answered exactly as a job that does not exist: no client learns which exist.
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_JOB);
  const std::string foreign_answer = out[0].envelope.error().message();
  await.mutable_await()->set_job_seq(99);
  core_->HandleClient("cl2", await, now_);
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_JOB);
  EXPECT_EQ(out[0].envelope.error().message(), "job 99" + foreign_answer.substr(std::string("job 1").size()));
  EXPECT_EQ(core_->counters().jobs_submitted, 2u);
}

TEST_F(BrokerCoreTest, ResultsExpireAfterTtl) {
  BrokerOptions options;
  options.result_ttl = milliseconds(500);
  Make(options);
  Ready("wA", "A", {"c1"}, 10);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  Dispatch();
  Result("wA", 1, 0);
  Take();
  proto::Envelope await;
  await.mutable_await()->set_job_seq(1);
  core_->HandleClient("cl", await, now_);
  ASSERT_EQ(ResultsTo(Take(), "cl").size(), 1u);
  now_ += milliseconds(300);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  core_->HandleClient("cl", await, now_);
  ASSERT_EQ(ResultsTo(Take(), "cl").size(), 1u) << "still within the retention";
  // Retention is wall-clock time (it survives restarts): let it pass.
  std::this_thread::sleep_for(milliseconds(600));
  now_ += milliseconds(300);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  core_->HandleClient("cl", await, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  // Its own kind, not UNKNOWN_JOB: the job existed and can be proved again.
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_RESULT_EXPIRED);
  EXPECT_NE(out[0].envelope.error().message().find("retention"), std::string::npos);
  // The request id is still remembered (dedup window): a lookup (no
  // witnesses) says the result expired and queues nothing...
  auto lookup = Submit("cl", "r1", proto::PRIORITY_NORMAL, 0);
  ASSERT_EQ(lookup.size(), 1u);
  EXPECT_TRUE(lookup[0].envelope.submit_reply().duplicate());
  EXPECT_TRUE(lookup[0].envelope.submit_reply().result_expired());
  EXPECT_EQ(lookup[0].envelope.submit_reply().state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(Dispatch().empty());
  // ...other witnesses under the same request id are still a reuse...
  auto reused = Submit("cl", "r1", proto::PRIORITY_NORMAL, 1, "c1", 1, "", "other");
  ASSERT_EQ(reused.size(), 1u);
  EXPECT_EQ(reused[0].envelope.error().kind(), proto::ERROR_KIND_REQUEST_ID_REUSED);
  // ...and the same witnesses prove it again, as a new job.
  auto again = Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_FALSE(again[0].envelope.submit_reply().duplicate());
  EXPECT_FALSE(again[0].envelope.submit_reply().result_expired());
  EXPECT_EQ(again[0].envelope.submit_reply().job_seq(), 2u);
  ASSERT_EQ(Dispatch().size(), 1u);
  Result("wA", 2, 0);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  // Now the request id names the new job.
  auto lookup2 = Submit("cl", "r1", proto::PRIORITY_NORMAL, 0);
  ASSERT_GE(lookup2.size(), 1u);
  EXPECT_EQ(lookup2[0].envelope.submit_reply().job_seq(), 2u);
  EXPECT_FALSE(lookup2[0].envelope.submit_reply().result_expired());
}

TEST_F(BrokerCoreTest, DrainingWorkerGetsNothingAndHandbackRequeuesWithoutAnAttempt) {
  Ready("wA", "A", {"c1"}, 2);
  Ready("wB", "B", {"c1"}, 0);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  ASSERT_EQ(Dispatch().size(), 2u);  // both to A
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1);
  proto::Envelope drain;
  drain.set_correlation_id(9);
  drain.mutable_drain_worker()->set_worker_id("A");
  drain.mutable_drain_worker()->set_wait(true);
  core_->HandleClient("ctl", drain, now_);
  auto out = Take();
  bool commanded = false;
  for (auto& o : out) commanded |= o.identity == "wA" && o.envelope.has_drain();
  EXPECT_TRUE(commanded);
  // The broker's view changed at once: credit A grants now is not used.
  Credit("wA", 5);
  EXPECT_TRUE(Dispatch().empty());
  // A hands back one unstarted item and finishes the other.
  proto::Envelope handback;
  auto* hb = handback.mutable_handback();
  hb->set_reason("draining");
  *hb->add_items() = Ref(1, 1);
  core_->HandleWorker("wA", handback, now_);
  Result("wA", 1, 0);
  Heartbeat("wA", proto::WORKER_STATE_READY);  // stale state: must not undo the drain
  Heartbeat("wA", proto::WORKER_STATE_RELEASING);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("drained");
  core_->HandleWorker("wA", bye, now_);
  out = Take();
  bool finished = false;
  for (auto& o : out) {
    if (o.identity == "ctl" && o.envelope.has_drain_worker_reply() && o.envelope.drain_worker_reply().finished()) {
      finished = true;
      const auto& phases = o.envelope.drain_worker_reply().phases();
      ASSERT_EQ(phases.size(), 3);
      EXPECT_EQ(phases[0].state(), proto::WORKER_STATE_DRAINING);
      EXPECT_EQ(phases[1].state(), proto::WORKER_STATE_RELEASING);
      EXPECT_EQ(phases[2].state(), proto::WORKER_STATE_GONE);
    }
  }
  EXPECT_TRUE(finished);
  Credit("wB", 5);
  using J = std::tuple<std::string, uint64_t, uint32_t>;
  EXPECT_EQ(Dispatch(), (std::vector<J>{{"wB", 1, 1}, {"wB", 2, 0}}));
  Result("wB", 1, 1);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].partitions(1).attempts(), 1u);  // the handback was not an attempt
}

TEST_F(BrokerCoreTest, CancelDropsQueuedItemsAndIgnoresLateResults) {
  Ready("wA", "A", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  ASSERT_EQ(Dispatch().size(), 1u);
  proto::Envelope cancel;
  cancel.mutable_cancel()->set_job_seq(1);
  core_->HandleClient("ctl", cancel, now_);
  auto out = Take();
  EXPECT_EQ(ResultsTo(out, "cl").at(0).state(), proto::JOB_STATE_CANCELLED);
  EXPECT_EQ(core_->queue().size(), 0u);
  Result("wA", 1, 0);
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());
  EXPECT_EQ(core_->counters().jobs_cancelled, 1u);
}

TEST_F(BrokerCoreTest, StatusReportsQueuesAndWorkers) {
  Ready("wA", "A", {"c1", "c2"}, 0);
  Submit("cl", "r1", proto::PRIORITY_HIGH, 3);
  now_ += milliseconds(250);
  auto status = core_->Status(now_);
  ASSERT_EQ(status.queues_size(), 4);
  EXPECT_EQ(status.queues(0).priority(), proto::PRIORITY_CRITICAL);
  EXPECT_EQ(status.queues(1).priority(), proto::PRIORITY_HIGH);
  EXPECT_EQ(status.queues(1).depth(), 3u);
  EXPECT_NEAR(status.queues(1).oldest_age_s(), 0.25, 1e-6);
  ASSERT_EQ(status.workers_size(), 1);
  EXPECT_EQ(status.workers(0).worker_id(), "A");
  EXPECT_EQ(status.workers(0).circuits_size(), 2);
}

// ------------------------------------------------------------------ metrics

TEST_F(BrokerCoreTest, MetricsCountAJobsLifeByCircuitAndPriority) {
  Ready("wA", "A", {"c1", "c2"}, 10);
  // The announced circuits have their series before any job.
  EXPECT_EQ(Metric("zkfleet_jobs_submitted_total", {{"circuit", "c2"}, {"priority", "NORMAL"}}), 0);
  EXPECT_EQ(Metric("zkfleet_jobs_completed_total", {{"circuit", "c2"}, {"priority", "LOW"}}), 0);
  EXPECT_EQ(Metric("zkfleet_jobs_failed_total", {{"circuit", "c2"}, {"reason", "dead_lettered"}}), 0);

  Submit("cl", "r1", proto::PRIORITY_HIGH, 2);
  Submit("cl", "r1", proto::PRIORITY_HIGH, 2);  // a duplicate is not a new job
  EXPECT_EQ(Metric("zkfleet_jobs_submitted_total", {{"circuit", "c1"}, {"priority", "HIGH"}}), 1);
  EXPECT_EQ(Metric("zkfleet_jobs_completed_total", {{"circuit", "c1"}, {"priority", "HIGH"}}), 0);
  now_ += milliseconds(250);
  ASSERT_EQ(Dispatch().size(), 2u);
  // One queue-wait observation per work item, SUBMIT to lease.
  EXPECT_EQ(Metric("zkfleet_broker_queue_wait_seconds", {{"priority", "HIGH"}}), 2);
  EXPECT_NEAR(HistogramSum("zkfleet_broker_queue_wait_seconds", {{"priority", "HIGH"}}), 0.5, 1e-9);
  Result("wA", 1, 0);
  EXPECT_EQ(Metric("zkfleet_jobs_completed_total", {{"circuit", "c1"}, {"priority", "HIGH"}}), 0);
  Result("wA", 1, 1);
  EXPECT_EQ(Metric("zkfleet_jobs_completed_total", {{"circuit", "c1"}, {"priority", "HIGH"}}), 1);

  // UNSPECIFIED counts as NORMAL, as the broker treats it.
  Submit("cl", "r2", proto::PRIORITY_UNSPECIFIED, 1, "c2");
  EXPECT_EQ(Metric("zkfleet_jobs_submitted_total", {{"circuit", "c2"}, {"priority", "NORMAL"}}), 1);
  EXPECT_EQ(Metric("zkfleet_jobs_failed_total", {{"circuit", "c1"}, {"reason", "prove_error"}}), 0);
}

TEST_F(BrokerCoreTest, MetricsCountFailuresCancelsRedeliveriesAndDeadLetters) {
  BrokerOptions options;
  options.max_attempts = 2;
  Make(options);
  Ready("wA", "A", {"c1"}, 10);
  Submit("cl", "fails", proto::PRIORITY_NORMAL, 1);     // seq 1
  Submit("cl", "cancelled", proto::PRIORITY_NORMAL, 2); // seq 2
  Submit("cl", "dies", proto::PRIORITY_LOW, 1);         // seq 3
  ASSERT_EQ(Dispatch().size(), 4u);

  Result("wA", 1, 0, /*ok=*/false, /*retryable=*/false);
  EXPECT_EQ(Metric("zkfleet_jobs_failed_total", {{"circuit", "c1"}, {"reason", "prove_error"}}), 1);

  proto::Envelope cancel;
  cancel.mutable_cancel()->set_job_seq(2);
  core_->HandleClient("ctl", cancel, now_);
  EXPECT_EQ(Metric("zkfleet_jobs_cancelled_total"), 1);

  // A retryable failure requeues (a redelivery); its second lease is not a
  // second queue wait.
  Result("wA", 3, 0, /*ok=*/false, /*retryable=*/true);
  EXPECT_EQ(Metric("zkfleet_work_items_redelivered_total"), 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("wA", 3, 0);
  EXPECT_EQ(Metric("zkfleet_broker_queue_wait_seconds", {{"priority", "LOW"}}), 1);
  EXPECT_EQ(Metric("zkfleet_broker_queue_wait_seconds", {{"priority", "NORMAL"}}), 3);

  // The worker falls silent: lost, and its lease was the job's last attempt.
  now_ += milliseconds(400);
  core_->Tick(now_);
  EXPECT_EQ(Metric("zkfleet_workers_lost_total"), 1);
  EXPECT_EQ(Metric("zkfleet_jobs_failed_total", {{"circuit", "c1"}, {"reason", "dead_lettered"}}), 1);
  EXPECT_EQ(Metric("zkfleet_jobs_dead_lettered_total"), 1);
  EXPECT_EQ(Metric("zkfleet_work_items_redelivered_total"), 1);
  EXPECT_EQ(Metric("zkfleet_jobs_completed_total", {{"circuit", "c1"}, {"priority", "NORMAL"}}), 0);
  // The counters zkctl status shows agree.
  EXPECT_EQ(core_->counters().jobs_failed, 1u);
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 1u);
  EXPECT_EQ(core_->counters().workers_lost, 1u);
}

TEST_F(BrokerCoreTest, MetricsCountHandbacksAndDroppedFrames) {
  Ready("wA", "A", {"c1"}, 2);
  Ready("wB", "B", {"c1"}, 0);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  ASSERT_EQ(Dispatch().size(), 2u);
  proto::Envelope drain;
  drain.mutable_drain_worker()->set_worker_id("A");
  core_->HandleClient("ctl", drain, now_);
  proto::Envelope handback;
  *handback.mutable_handback()->add_items() = Ref(1, 1);
  core_->HandleWorker("wA", handback, now_);
  EXPECT_EQ(Metric("zkfleet_work_items_handed_back_total"), 1);
  EXPECT_EQ(Metric("zkfleet_work_items_redelivered_total"), 1);
  Result("wA", 1, 0);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("drained");
  core_->HandleWorker("wA", bye, now_);
  EXPECT_EQ(Metric("zkfleet_workers_lost_total"), 0);  // a clean leave is not a loss
  Credit("wB", 5);
  ASSERT_EQ(Dispatch().size(), 1u);
  EXPECT_EQ(Metric("zkfleet_broker_queue_wait_seconds", {{"priority", "NORMAL"}}), 2);

  proto::Envelope not_a_request;
  not_a_request.mutable_heartbeat();
  core_->HandleClient("cl", not_a_request, now_);
  core_->CountDroppedFrame(metrics::DropReason::kOversized);
  core_->CountDroppedFrame(metrics::DropReason::kVersion);
  core_->CountDroppedFrame(metrics::DropReason::kVersion);
  EXPECT_EQ(Metric("zkfleet_messages_dropped_total", {{"reason", "malformed"}}), 1);
  EXPECT_EQ(Metric("zkfleet_messages_dropped_total", {{"reason", "oversized"}}), 1);
  EXPECT_EQ(Metric("zkfleet_messages_dropped_total", {{"reason", "version"}}), 2);
  EXPECT_EQ(core_->counters().frames_malformed, 1u);
  EXPECT_EQ(core_->counters().frames_oversized, 1u);
  EXPECT_EQ(core_->counters().frames_wrong_version, 2u);
}

TEST_F(BrokerCoreTest, MetricsGaugesFollowTheQueueAndTheWorkersEachTick) {
  Ready("wA", "A", {"c1"}, 0);
  Ready("wB", "B", {"c1"}, 0);
  Heartbeat("wB", proto::WORKER_STATE_DRAINING);
  Submit("cl", "r1", proto::PRIORITY_HIGH, 3);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1);
  now_ += milliseconds(250);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  Heartbeat("wB", proto::WORKER_STATE_DRAINING);
  Clock::time_point next = core_->Tick(now_);
  EXPECT_LE(next, now_ + milliseconds(100));  // the gauges are refreshed at least every heartbeat
  EXPECT_EQ(Metric("zkfleet_queue_depth", {{"priority", "HIGH"}}), 3);
  EXPECT_EQ(Metric("zkfleet_queue_depth", {{"priority", "NORMAL"}}), 1);
  EXPECT_EQ(Metric("zkfleet_queue_depth", {{"priority", "LOW"}}), 0);
  EXPECT_NEAR(Metric("zkfleet_queue_oldest_age_seconds", {{"priority", "HIGH"}}), 0.25, 1e-9);
  EXPECT_EQ(Metric("zkfleet_queue_oldest_age_seconds", {{"priority", "CRITICAL"}}), 0);
  EXPECT_EQ(Metric("zkfleet_broker_workers", {{"state", "READY"}}), 1);
  EXPECT_EQ(Metric("zkfleet_broker_workers", {{"state", "DRAINING"}}), 1);
  EXPECT_EQ(Metric("zkfleet_broker_workers", {{"state", "GONE"}}), 0);

  Credit("wA", 10);
  ASSERT_EQ(Dispatch().size(), 4u);
  now_ = next;
  Heartbeat("wA", proto::WORKER_STATE_READY);
  Heartbeat("wB", proto::WORKER_STATE_DRAINING);
  core_->Tick(now_);
  EXPECT_EQ(Metric("zkfleet_queue_depth", {{"priority", "HIGH"}}), 0);
  EXPECT_EQ(Metric("zkfleet_queue_oldest_age_seconds", {{"priority", "HIGH"}}), 0);
  // B leaves: no longer counted in any state.
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("drained");
  core_->HandleWorker("wB", bye, now_);
  now_ += milliseconds(100);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  EXPECT_EQ(Metric("zkfleet_broker_workers", {{"state", "DRAINING"}}), 0);
  EXPECT_EQ(Metric("zkfleet_broker_workers", {{"state", "READY"}}), 1);
}

TEST_F(BrokerCoreTest, WorksWithoutMetrics) {
  Make({}, /*with_metrics=*/false);
  Ready("wA", "A", {"c1"}, 10);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Result("wA", 1, 0);
  core_->CountDroppedFrame(metrics::DropReason::kMalformed);
  // Without metrics the core's next call is the heartbeat, not a gauge refresh.
  EXPECT_EQ(core_->Tick(now_), now_ + milliseconds(100));
  EXPECT_EQ(core_->counters().jobs_completed, 1u);
  EXPECT_EQ(core_->counters().frames_malformed, 1u);
  EXPECT_EQ(Metric("zkfleet_jobs_completed_total", {{"circuit", "c1"}, {"priority", "NORMAL"}}), -1);
}

// ------------------------------------------------------------------ FAULTED workers and retries

// A worker reporting FAULTED (repeated engine faults, a sticky device error)
// gets nothing more, never goes back to READY, and what it held is requeued
// without charging an attempt: with --max-attempts 1 the job still succeeds
// on another worker.
TEST_F(BrokerCoreTest, FaultedWorkerGetsNothingAndItsLeasesReturnUncharged) {
  BrokerOptions options;
  options.max_attempts = 1;
  Make(options);
  Ready("wA", "A", {"c1"}, 3);
  Ready("wB", "B", {"c1"}, 0);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 3);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 3u);
  for (auto& [identity, seq, partition] : jobs) EXPECT_EQ(identity, "wA");

  Heartbeat("wA", proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_FAULTED);
  EXPECT_TRUE(core_->workers().all().at("wA").leased.empty());
  EXPECT_EQ(core_->queue().size(), 3u);
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty()) << "requeued, not dead-lettered";
  for (uint32_t p = 0; p < 3; ++p) EXPECT_EQ(core_->jobs().Find(1)->items[p].attempts, 0u) << "partition " << p;

  // Credit and a READY heartbeat from the faulted worker change nothing.
  Credit("wA", 10);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_FAULTED);
  EXPECT_TRUE(Dispatch().empty());
  // Its late results are stale.
  Result("wA", 1, 0);
  EXPECT_EQ(core_->counters().results_stale, 1u);

  Credit("wB", 3);
  jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 3u);
  for (auto& [identity, seq, partition] : jobs) {
    EXPECT_EQ(identity, "wB");
    Result("wB", seq, partition);
  }
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  for (const auto& part : results[0].partitions()) EXPECT_EQ(part.attempts(), 1u);

  now_ += milliseconds(100);
  Heartbeat("wA", proto::WORKER_STATE_FAULTED);
  Heartbeat("wB", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  EXPECT_EQ(Metric("zkfleet_broker_workers", {{"state", "FAULTED"}}), 1);
  EXPECT_EQ(Metric("zkfleet_broker_workers", {{"state", "READY"}}), 1);
  EXPECT_EQ(core_->Status(now_).workers_size(), 2);

  // A faulted worker may still drain and leave.
  Heartbeat("wA", proto::WORKER_STATE_DRAINING);
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_DRAINING);
}

// A faulted worker that exits (sticky device error: FAULTED, then DISCONNECT)
// loses nothing and charges nothing.
TEST_F(BrokerCoreTest, FaultedWorkerThatExitsChargesNoAttempt) {
  BrokerOptions options;
  options.max_attempts = 1;
  Make(options);
  Ready("wA", "A", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Heartbeat("wA", proto::WORKER_STATE_FAULTED);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("faulted: fatal device error");
  core_->HandleWorker("wA", bye, now_);
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());
  Ready("wB", "B", {"c1"}, 1);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "wB");
  EXPECT_EQ(core_->jobs().Find(1)->items[0].attempts, 0u);  // leased, not started yet
  Started("wB", 1, 0);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].attempts, 1u);
}

// The retry of an item that failed on a worker (retryable error) does not go
// back to that worker while another READY worker holds the circuit, even if
// only the failed one has credit right now; it waits for the other's credit.
TEST_F(BrokerCoreTest, RetryAvoidsTheWorkerThatFailedTheItemWhileAnotherHoldsTheCircuit) {
  Ready("wA", "A", {"c1"}, 5);
  Ready("wB", "B", {"c1"}, 0);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(std::get<0>(jobs[0]), "wA");
  Result("wA", 1, 0, /*ok=*/false, /*retryable=*/true);
  EXPECT_TRUE(Dispatch().empty()) << "the retry went back to the worker that just failed it";
  // Other items still go to A.
  Submit("cl", "r2", proto::PRIORITY_LOW, 1, "c2");  // refused: nobody holds c2
  Credit("wB", 1);
  jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "wB");
  EXPECT_EQ(core_->jobs().Find(1)->items[0].attempts, 1u);  // B's lease has not started yet
  Result("wB", 1, 0);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
}

// The same for a lost lease (the worker died mid-proof and came back) and an
// aborted handback; but when no other READY worker holds the circuit (B is
// DRAINING) the failed worker does get the retry rather than nobody.
TEST_F(BrokerCoreTest, RetryGoesBackToTheFailedWorkerOnlyWhenNoOtherReadyWorkerHoldsTheCircuit) {
  Ready("wA", "A", {"c1"}, 1);
  Ready("wB", "B", {"c1"}, 0);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  core_->WorkerUnreachable("wA", now_);
  Ready("wA2", "A", {"c1"}, 1);  // A again, new connection
  EXPECT_TRUE(Dispatch().empty());
  Heartbeat("wB", proto::WORKER_STATE_DRAINING);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "wA2");
  // Aborted handback: B is gone, C holds the circuit: the retry waits for C.
  Ready("wC", "C", {"c1"}, 0);
  proto::Envelope back;
  auto* handback = back.mutable_handback();
  handback->set_reason("drain timeout");
  *handback->add_aborted() = Ref(1, 0);
  core_->HandleWorker("wA2", back, now_);
  Credit("wA2", 1);
  EXPECT_TRUE(Dispatch().empty());
  Credit("wC", 1);
  jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "wC");
}

// ------------------------------------------------------------------ restart grace (issue 28)

// Just after a restart no worker has reconnected yet: a SUBMIT for a circuit
// the journal knows (a worker announced it in an earlier life) is queued, not
// refused for good; one for a circuit never announced still is. After the
// grace (2 x liveness x heartbeat by default) the usual rule holds.
TEST_F(BrokerCoreTest, AfterARestartKnownCircuitsAreQueuedUntilTheirWorkersReconnect) {
  Ready("wA", "A", {"c1"}, 2);
  Commit();
  Restart();
  core_->Tick(now_);  // the new life begins
  auto queued = Submit("cl", "r1", proto::PRIORITY_NORMAL, 1, "c1");
  ASSERT_EQ(queued.size(), 1u);
  EXPECT_FALSE(queued[0].envelope.has_error()) << queued[0].envelope.error().message();
  EXPECT_EQ(queued[0].envelope.submit_reply().job_seq(), 1u);
  auto never = Submit("cl", "r2", proto::PRIORITY_NORMAL, 1, "c-never-announced");
  ASSERT_EQ(never.size(), 1u);
  EXPECT_EQ(never[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);
  // The worker reconnects and gets the queued job.
  Ready("wA", "A", {"c1"}, 2);
  ASSERT_EQ(Dispatch().size(), 1u);
  Result("wA", 1, 0);
  ASSERT_EQ(ResultsTo(Take(), "cl").size(), 1u);

  // Another restart, and no worker comes back within the grace: refused again.
  Commit();
  Restart();
  core_->Tick(now_);
  now_ += 2 * options_.liveness * options_.heartbeat_interval + std::chrono::milliseconds(1);
  core_->Tick(now_);
  Take();
  auto late = Submit("cl", "r3", proto::PRIORITY_NORMAL, 1, "c1");
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);
}

// Workers (hostile ones too) cannot grow the remembered circuits without
// bound: at most kMaxKnownCircuits names reach the journal.
TEST_F(BrokerCoreTest, RememberedCircuitsAreBounded) {
  for (int w = 0; w < 20; ++w) {  // 20 workers x 256 circuits = 5120 names
    std::vector<std::string> circuits;
    for (int c = 0; c < 256; ++c) circuits.push_back("w" + std::to_string(w) + "-c" + std::to_string(c));
    Ready("conn" + std::to_string(w), "worker" + std::to_string(w), circuits, 1);
  }
  Commit();
  EXPECT_EQ(journal_->KnownCircuits().size(), 4096u);
}

}  // namespace
}  // namespace zkfleet::broker
