// BrokerCore without sockets: envelopes in, outbox out. The core updates a
// BrokerMetrics (read back through MetricsServer::Collect, no HTTP) in every
// test but one, which checks that it also works without.
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "unit/metrics/collected.hpp"
#include "zkfleet/broker/broker_core.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"
#include "zkfleet/metrics/metrics_server.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {
namespace {

using std::chrono::milliseconds;

class BrokerCoreTest : public ::testing::Test {
 protected:
  BrokerCoreTest() { Make({}); }
  // Every move of every work item went by the table (job_table.hpp,
  // ItemNext), in every broker life of the test.
  void TearDown() override {
    CountInvalidMoves();
    EXPECT_EQ(invalid_item_moves_, 0u) << "a work item moved against its state table (the log names it)";
  }
  void CountInvalidMoves() {
    if (core_) invalid_item_moves_ += std::exchange(core_->counters().invalid_item_moves, 0);
  }
  ~BrokerCoreTest() override {
    core_.reset();
    journal_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A fresh core on a fresh journal.
  void Make(BrokerOptions options, bool with_metrics = true) {
    options.heartbeat_interval = milliseconds(100);
    // These tests' workers send no real proofs (the verification tests set keys).
    if (!options.verification_keys) options.unverified_circuits.insert("*");
    options.liveness = 3;
    CountInvalidMoves();
    core_.reset();  // before the metrics and the journal it points to
    journal_.reset();
    std::filesystem::remove_all(dir_);
    options.journal.dir = dir_;
    options_ = options;
    journal_ = Journal::Open(options.journal);
    metrics_.reset();
    server_ = std::make_unique<metrics::MetricsServer>();
    if (with_metrics) metrics_ = std::make_unique<metrics::BrokerMetrics>(*server_);
    core_ = std::make_unique<BrokerCore>(options, *journal_, metrics_.get());
    now_ = Clock::time_point{} + std::chrono::hours(1);
  }

  // The server's end of a loop turn: the journal commits.
  void Commit() { journal_->Commit(); }

  // The broker process dies (what was not committed is lost) and starts
  // again on the same data directory.
  void Restart() {
    CountInvalidMoves();
    core_.reset();
    journal_.reset();
    journal_ = Journal::Open(options_.journal);
    core_ = std::make_unique<BrokerCore>(options_, *journal_, metrics_.get());
    leases_.clear();
  }

  // A counter or gauge (a histogram's count), -1 when the series is absent.
  double Metric(const std::string& name, const testing::LabelMap& labels = {}) const {
    return testing::ValueOf(server_->Collect(), name, labels);
  }
  double HistogramSum(const std::string& name, const testing::LabelMap& labels) const {
    auto series = testing::FindSeries(server_->Collect(), name, labels);
    return series ? series->histogram.sample_sum : -1;
  }

  std::vector<Outgoing> Take() {
    std::vector<Outgoing> out;
    out.swap(core_->outbox());
    return out;
  }

  void Ready(const std::string& identity, const std::string& id, std::vector<std::string> circuits, uint32_t credit,
             uint32_t capacity = 100) {
    proto::Envelope e;
    auto* ready = e.mutable_ready();
    ready->set_worker_id(id);
    for (auto& c : circuits) ready->add_circuits(c);
    ready->set_capacity(capacity);
    ready->set_state(proto::WORKER_STATE_READY);
    // Where these tests' witnesses by reference live.
    for (const char* prefix : {"https://store.internal/", "file:///mnt/witnesses/", "file:///srv/", "http://127.0.0.1:1/"}) {
      ready->add_fetch_prefixes(prefix);
    }
    core_->HandleWorker(identity, e, now_);
    if (credit > 0) Credit(identity, credit);
  }

  void Credit(const std::string& identity, uint32_t n) {
    proto::Envelope e;
    e.mutable_credit()->set_credits(n);
    core_->HandleWorker(identity, e, now_);
  }

  void Heartbeat(const std::string& identity, proto::WorkerState state) {
    proto::Envelope e;
    e.mutable_heartbeat()->set_state(state);
    core_->HandleWorker(identity, e, now_);
  }

  // An admin's UNDRAIN of `worker_id`: the state the broker answers with.
  proto::WorkerState UndrainAsAdmin(const std::string& worker_id) {
    proto::Envelope undrain;
    undrain.mutable_undrain_worker()->set_worker_id(worker_id);
    core_->HandleClient("admin", undrain, now_);
    auto out = Take();
    EXPECT_EQ(out.size(), 1u);
    if (out.size() != 1 || !out[0].envelope.has_undrain_worker_reply()) {
      ADD_FAILURE() << "no UNDRAIN reply";
      return proto::WORKER_STATE_UNSPECIFIED;
    }
    return out[0].envelope.undrain_worker_reply().state();
  }

  // Submits and returns the reply envelope(s) sent to `client` (a routing
  // identity; `client_id` is the client identity, "" = anonymous).
  std::vector<Outgoing> Submit(const std::string& client, const std::string& request_id, proto::Priority priority,
                               int partitions, const std::string& circuit = "c1", uint64_t correlation = 1,
                               const std::string& client_id = "", const std::string& witness_tag = "w") {
    proto::Envelope e;
    e.set_correlation_id(correlation);
    e.set_client_id(client_id);
    auto* submit = e.mutable_submit();
    submit->set_request_id(request_id);
    submit->set_circuit_id(circuit);
    submit->set_priority(priority);
    fleet::Frames frames;
    for (int p = 0; p < partitions; ++p) frames.push_back(fleet::FrameFromString(witness_tag + std::to_string(p)));
    for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
    core_->HandleClient(client, e, now_, {}, std::move(frames));
    return Take();
  }

  // Submits these witnesses (circuit c1) from connection `client`; returns what was sent to it.
  std::vector<Outgoing> SubmitWitnesses(const std::string& client, const std::string& request_id,
                                        const std::vector<std::string>& witnesses, double deadline_unix_s = 0) {
    proto::Envelope e;
    e.set_correlation_id(1);
    auto* submit = e.mutable_submit();
    submit->set_request_id(request_id);
    submit->set_circuit_id("c1");
    fleet::Frames frames;
    for (const auto& witness : witnesses) frames.push_back(fleet::FrameFromString(witness));
    for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
    submit->set_deadline_unix_s(deadline_unix_s);
    core_->HandleClient(client, e, now_, {}, std::move(frames));
    return Take();
  }

  // The worker reports it started proving the item.
  void Started(const std::string& identity, uint64_t seq, uint32_t partition) {
    proto::Envelope e;
    *e.mutable_started()->add_items() = Ref(seq, partition);
    core_->HandleWorker(identity, e, now_);
  }

  // The item with the lease it was last sent under (from Dispatch()).
  proto::WorkItemRef Ref(uint64_t seq, uint32_t partition) {
    proto::WorkItemRef ref;
    ref.set_job_seq(seq);
    ref.set_partition(partition);
    if (auto it = leases_.find({seq, partition}); it != leases_.end()) *ref.mutable_lease() = it->second.item().lease();
    return ref;
  }

  // JOBs in the outbox (dispatch runs first), as (identity, seq, partition).
  std::vector<std::tuple<std::string, uint64_t, uint32_t>> Dispatch() {
    core_->Dispatch(now_);
    std::vector<std::tuple<std::string, uint64_t, uint32_t>> jobs;
    for (auto& out : Take()) {
      if (out.envelope.has_job()) {
        const auto& job = out.envelope.job();
        jobs.emplace_back(out.identity, job.item().job_seq(), job.item().partition());
        leases_[{job.item().job_seq(), job.item().partition()}] = job;
      }
    }
    return jobs;
  }

  void Result(const std::string& identity, uint64_t seq, uint32_t partition, bool ok = true, bool retryable = false) {
    proto::Envelope e;
    auto* result = e.mutable_result();
    *result->mutable_item() = Ref(seq, partition);
    if (auto it = leases_.find({seq, partition}); it != leases_.end()) {
      result->set_circuit_id(it->second.circuit_id());
      result->set_request_id(it->second.request_id());
    }
    result->set_ok(ok);
    result->set_retryable(retryable);
    result->set_proof_json("proof-" + std::to_string(seq) + "-" + std::to_string(partition));
    result->set_error(ok ? "" : "boom");
    core_->HandleWorker(identity, e, now_);
  }

  static std::vector<proto::JobResult> ResultsTo(const std::vector<Outgoing>& out, const std::string& client) {
    std::vector<proto::JobResult> results;
    for (auto& o : out) {
      if (o.to == Outgoing::To::kClient && o.identity == client && o.envelope.has_job_result()) {
        results.push_back(o.envelope.job_result());
      }
    }
    return results;
  }

  std::string dir_ = ::testing::TempDir() + "zkfleet-broker-core-" + std::to_string(getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  BrokerOptions options_;
  std::unique_ptr<metrics::MetricsServer> server_;
  std::unique_ptr<metrics::BrokerMetrics> metrics_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<BrokerCore> core_;
  uint64_t invalid_item_moves_ = 0;  // summed over the test's broker lives (CountInvalidMoves)
  Clock::time_point now_;
  std::map<std::pair<uint64_t, uint32_t>, proto::Job> leases_;  // last JOB sent per item
};

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

}  // namespace
}  // namespace zkfleet::broker

// ------------------------------------------------------------------ FAULTED workers and retries

namespace zkfleet::broker {
namespace {

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

// ------------------------------------------------------------------ durability (issue 13)

// A proof from an earlier broker life (or an earlier lease) can never become
// another job's result: job_seq never repeats, and a RESULT is accepted only
// under the item's live lease.
TEST_F(BrokerCoreTest, StaleResultFromAPreviousBrokerLifeOrLeaseIsRefused) {
  Ready("wA", "A", {"c1"}, 2);
  Submit("clientA", "a", proto::PRIORITY_NORMAL, 1, "c1", 1, "", "witness-A");
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("wA", 1, 0);
  proto::Job old_job = leases_.at({1, 0});
  EXPECT_EQ(old_job.item().lease().epoch(), core_->epoch());
  Commit();
  uint64_t old_epoch = core_->epoch();

  Restart();  // kill -9 and start again on the same data directory
  EXPECT_EQ(core_->epoch(), old_epoch + 1);
  // Client B submits a different witness: a new job_seq, never 1 again.
  Ready("wB", "B", {"c1"}, 0);
  auto reply = Submit("clientB", "b", proto::PRIORITY_NORMAL, 1, "c1", 1, "", "witness-B");
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(reply[0].envelope.submit_reply().job_seq(), 2u);

  // The old worker, still on its old connection, answers job 1 under the old lease.
  proto::Envelope late;
  auto* result = late.mutable_result();
  *result->mutable_item() = old_job.item();
  result->set_circuit_id("c1");
  result->set_request_id("a");
  result->set_ok(true);
  result->set_proof_json("proof-of-A");
  core_->HandleWorker("wA", late, now_);
  EXPECT_EQ(core_->counters().results_stale, 1u);
  // It registers again without claiming job 1 and repeats the result: still stale.
  Ready("wA", "A", {"c1"}, 0);
  core_->HandleWorker("wA", late, now_);
  EXPECT_EQ(core_->counters().results_stale, 2u);
  auto out = Take();
  EXPECT_TRUE(ResultsTo(out, "clientA").empty());
  EXPECT_TRUE(ResultsTo(out, "clientB").empty());

  // A live holder answering under a wrong lease number is refused too.
  Credit("wB", 2);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 2u);
  proto::Envelope forged;
  *forged.mutable_result()->mutable_item() = Ref(2, 0);
  forged.mutable_result()->mutable_item()->mutable_lease()->set_number(Ref(2, 0).lease().number() + 1000);
  forged.mutable_result()->set_circuit_id("c1");
  forged.mutable_result()->set_request_id("b");
  forged.mutable_result()->set_ok(true);
  core_->HandleWorker("wB", forged, now_);
  EXPECT_EQ(core_->counters().results_stale, 3u);
  // ...and so is the right lease with another job's request id.
  proto::Envelope confused;
  *confused.mutable_result() = forged.result();
  *confused.mutable_result()->mutable_item() = Ref(2, 0);
  confused.mutable_result()->set_request_id("a");
  core_->HandleWorker("wB", confused, now_);
  EXPECT_EQ(core_->counters().results_stale, 4u);
  EXPECT_TRUE(ResultsTo(Take(), "clientB").empty());

  // The real answers are accepted, each for its own job.
  Result("wB", 1, 0);
  Result("wB", 2, 0);
  out = Take();
  EXPECT_TRUE(ResultsTo(out, "clientA").empty()) << "clientA's old connection is gone; it AWAITs again";
  ASSERT_EQ(ResultsTo(out, "clientB").size(), 1u);
  EXPECT_EQ(ResultsTo(out, "clientB")[0].partitions(0).proof_json(), "proof-2-0");
  proto::Envelope await;
  await.mutable_await()->set_job_seq(1);
  core_->HandleClient("clientA2", await, now_);
  auto mine = ResultsTo(Take(), "clientA2");
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].partitions(0).proof_json(), "proof-1-0");
  EXPECT_EQ(mine[0].partitions(0).attempts(), 2u);  // the lost started lease counted
}

// RetryJob (issue 32): a dead-lettered job lives again under its job_seq.
// A lease from its failed round, still held by a worker that was proving
// another partition, neither keeps that worker's slot nor, when the worker
// goes, takes the new round's lease of that partition away.
TEST_F(BrokerCoreTest, ARetriedJobIsNotDisturbedByLeasesOfItsFailedRound) {
  BrokerOptions options;
  options.max_attempts = 1;
  Make(options);
  Ready("wA", "A", {"c1"}, 1);
  Ready("wB", "B", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 2u);
  std::map<uint32_t, std::string> holder;
  for (auto& [identity, seq, partition] : jobs) holder[partition] = identity;
  Started(holder[0], 1, 0);
  Started(holder[1], 1, 1);
  // p0's worker is lost after p0's one attempt: the job is dead-lettered
  // while the other worker still holds p1.
  core_->WorkerUnreachable(holder[0], now_);
  auto dead = ResultsTo(Take(), "cl");
  ASSERT_EQ(dead.size(), 1u);
  ASSERT_EQ(dead[0].state(), proto::JOB_STATE_DEAD_LETTERED);
  const std::string old_holder = holder[1];
  ASSERT_EQ(core_->workers().all().at(old_holder).leased.size(), 1u);
  const proto::WorkItemRef old_lease = Ref(1, 1);  // the failed round's lease of p1

  proto::Envelope retry;
  retry.mutable_retry_job()->set_job_seq(1);
  retry.mutable_retry_job()->set_attempt(1);
  core_->HandleClient("cl", retry, now_);
  auto answered = Take();
  ASSERT_EQ(answered.size(), 1u);
  ASSERT_TRUE(answered[0].envelope.has_job_info()) << answered[0].envelope.DebugString();
  EXPECT_EQ(answered[0].envelope.job_info().retries(), 1u);
  // A new worker takes both partitions of the new round.
  Ready("wC", "C", {"c1"}, 2);
  jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 2u);
  for (auto& [identity, seq, partition] : jobs) {
    EXPECT_EQ(identity, "wC");
    Started("wC", seq, partition);
  }
  // The old round's answer from the worker that kept p1: stale, and its slot is freed.
  proto::Envelope late;
  *late.mutable_result()->mutable_item() = old_lease;
  late.mutable_result()->set_circuit_id("c1");
  late.mutable_result()->set_request_id("r1");
  late.mutable_result()->set_ok(true);
  late.mutable_result()->set_proof_json("old-round");
  core_->HandleWorker(old_holder, late, now_);
  EXPECT_TRUE(core_->workers().all().at(old_holder).leased.empty());
  EXPECT_EQ(core_->jobs().Find(1)->items[1].state, WorkItem::State::kLeased) << "the new round's lease stays";
  // That worker goes: wC's leases of the new round stay.
  core_->WorkerUnreachable(old_holder, now_);
  EXPECT_EQ(core_->jobs().Find(1)->items[1].state, WorkItem::State::kLeased);
  EXPECT_EQ(core_->jobs().Find(1)->items[1].lease_worker_id, "C");
  Result("wC", 1, 0);
  Result("wC", 1, 1);
  proto::Envelope await;
  await.mutable_await()->set_job_seq(1);
  core_->HandleClient("cl2", await, now_);
  auto done = ResultsTo(Take(), "cl2");
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done[0].partitions(1).proof_json(), "proof-1-1") << "the new round's proof, not the old one";
}

// Restart = resume: queued items keep their order, job_seq continues, a
// worker that comes back claiming its in-progress item keeps the lease, an
// unclaimed started lease is requeued after the liveness window, finished
// results stay retrievable.
TEST_F(BrokerCoreTest, RestartResumesFromTheJournal) {
  Ready("wA", "A", {"c1"}, 2);
  Submit("cl", "done", proto::PRIORITY_NORMAL, 1);   // seq 1: proved before the crash
  Submit("cl", "run", proto::PRIORITY_NORMAL, 2);    // seq 2: p0 started on A, p1 leased but unstarted
  ASSERT_EQ(Dispatch().size(), 2u);                  // 1/0 and 2/0
  Result("wA", 1, 0);
  Credit("wA", 1);
  ASSERT_EQ(Dispatch().size(), 1u);                  // 2/1
  Started("wA", 2, 0);
  Submit("cl", "low", proto::PRIORITY_LOW, 1);       // seq 3
  Submit("cl", "crit", proto::PRIORITY_CRITICAL, 1); // seq 4
  Ready("wB", "B", {"c2"}, 0);
  Submit("cl", "other", proto::PRIORITY_NORMAL, 1, "c2");  // seq 5, started on B
  Credit("wB", 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("wB", 5, 0);
  proto::WorkItemRef a_running = Ref(2, 0);
  Commit();
  Take();

  Restart();
  EXPECT_EQ(core_->counters().jobs_recovered, 4u);   // 2, 3, 4, 5
  EXPECT_EQ(core_->counters().leases_recovered, 2u); // 2/0 on A, 5/0 on B
  EXPECT_EQ(core_->queue().size(), 3u);              // 2/1 (unstarted: back at once), 3, 4
  // Finished results are still there.
  proto::Envelope await;
  await.mutable_await()->set_job_seq(1);
  core_->HandleClient("cl-new", await, now_);
  auto results = ResultsTo(Take(), "cl-new");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].partitions(0).proof_json(), "proof-1-0");

  // A comes back (new connection) still proving 2/0: the lease is its again.
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("A");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_capacity(10);
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  *ready.mutable_ready()->add_in_progress() = a_running;
  core_->HandleWorker("wA2", ready, now_);
  Credit("wA2", 3);
  using J = std::tuple<std::string, uint64_t, uint32_t>;
  EXPECT_EQ(Dispatch(), (std::vector<J>{{"wA2", 4, 0}, {"wA2", 2, 1}, {"wA2", 3, 0}}));
  // Its result under the recovered lease is accepted.
  proto::Envelope result;
  *result.mutable_result()->mutable_item() = a_running;
  result.mutable_result()->set_circuit_id("c1");
  result.mutable_result()->set_request_id("run");
  result.mutable_result()->set_ok(true);
  result.mutable_result()->set_proof_json("proof-2-0-recovered");
  core_->HandleWorker("wA2", result, now_);
  Result("wA2", 2, 1);
  await.mutable_await()->set_job_seq(2);
  core_->HandleClient("cl-new", await, now_);
  results = ResultsTo(Take(), "cl-new");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).proof_json(), "proof-2-0-recovered");
  EXPECT_EQ(core_->counters().results_stale, 0u);

  // B never comes back: after the liveness window its started lease is requeued.
  EXPECT_EQ(core_->queue().size(), 0u);
  core_->Tick(now_);  // the serving loop's first tick starts the window
  now_ += milliseconds(200);
  Heartbeat("wA2", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  EXPECT_EQ(core_->queue().size(), 0u) << "still within the liveness window";
  now_ += milliseconds(150);
  Heartbeat("wA2", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->queue().size(), 1u);
  EXPECT_EQ(core_->jobs().Find(5)->items[0].attempts, 1u);  // B's start counted once
  // job_seq continues after the highest ever given.
  auto reply = Submit("cl", "after", proto::PRIORITY_NORMAL, 1);
  ASSERT_TRUE(reply[0].envelope.has_submit_reply()) << reply[0].envelope.DebugString();
  EXPECT_EQ(reply[0].envelope.submit_reply().job_seq(), 6u);
}

// A SUBMIT is answered only after the commit that makes it durable; a crash
// before the commit loses a job nobody was told about.
TEST_F(BrokerCoreTest, AnUncommittedSubmitIsNeverAcknowledgedAndLeavesNoTrace) {
  Ready("wA", "A", {"c1"}, 0);
  Submit("cl", "kept", proto::PRIORITY_NORMAL, 1);
  Commit();
  auto reply = Submit("cl", "lost", proto::PRIORITY_NORMAL, 1);  // in the outbox, not yet sent
  ASSERT_EQ(reply.size(), 1u);
  Restart();  // the server never committed this turn, so never sent the reply
  EXPECT_EQ(core_->jobs().size(), 1u);
  EXPECT_NE(core_->jobs().Find(1), nullptr);
  // The client retries the unanswered SUBMIT: a new job, proved once.
  Ready("wA", "A", {"c1"}, 0);
  auto retry = Submit("cl", "lost", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_FALSE(retry[0].envelope.submit_reply().duplicate());
}

TEST_F(BrokerCoreTest, OverALimitSubmitsGetBusyWithARetryHintAndNothingIsAccepted) {
  BrokerOptions options;
  options.admission.max_items_per_client = 3;
  options.admission.max_items = 4;
  options.busy_retry_after = milliseconds(250);
  Make(options);
  Ready("wA", "A", {"c1"}, 0);
  Submit("cl", "a1", proto::PRIORITY_NORMAL, 2, "c1", 1, "alice");
  auto busy = Submit("cl", "a2", proto::PRIORITY_NORMAL, 2, "c1", 2, "alice");  // 4 > 3 for alice
  ASSERT_EQ(busy.size(), 1u);
  ASSERT_TRUE(busy[0].envelope.has_error());
  EXPECT_EQ(busy[0].envelope.error().kind(), proto::ERROR_KIND_BUSY);
  EXPECT_EQ(busy[0].envelope.error().retry_after_ms(), 250u);
  EXPECT_NE(busy[0].envelope.error().message().find("client 'alice'"), std::string::npos);
  Submit("cl", "b1", proto::PRIORITY_NORMAL, 2, "c1", 3, "bob");  // total 4: fits
  auto full = Submit("cl", "b2", proto::PRIORITY_NORMAL, 1, "c1", 4, "bob");  // total 5 > 4
  ASSERT_TRUE(full[0].envelope.has_error());
  EXPECT_EQ(full[0].envelope.error().kind(), proto::ERROR_KIND_BUSY);
  EXPECT_EQ(core_->counters().submits_busy, 2u);
  EXPECT_EQ(core_->jobs().size(), 2u);
  EXPECT_EQ(Metric("zkfleet_broker_submits_refused_busy_total"), 2);
  // Room frees as jobs end: the same request id is then accepted.
  Credit("wA", 2);
  ASSERT_EQ(Dispatch().size(), 2u);
  Result("wA", 1, 0);
  Result("wA", 1, 1);
  Take();
  auto accepted = Submit("cl", "a2", proto::PRIORITY_NORMAL, 2, "c1", 5, "alice");
  ASSERT_TRUE(accepted[0].envelope.has_submit_reply());
  EXPECT_FALSE(accepted[0].envelope.submit_reply().duplicate());
}

TEST_F(BrokerCoreTest, AJobPastItsDeadlineExpiresInsteadOfBeingProved) {
  BrokerOptions options;
  options.accept_unrouted = true;
  Make(options);
  SubmitWitnesses("cl", "stale-soon", {"w"}, wire::UnixNow() + 0.2);
  std::this_thread::sleep_for(milliseconds(300));  // deadlines are wall-clock times
  Ready("wA", "A", {"c1"}, 5);
  core_->Dispatch(now_);
  auto out = Take();
  for (auto& o : out) EXPECT_FALSE(o.envelope.has_job()) << "an expired job is never leased";
  auto results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_EXPIRED);
  EXPECT_EQ(core_->counters().jobs_expired, 1u);
  EXPECT_EQ(Metric("zkfleet_jobs_failed_total", {{"circuit", "c1"}, {"reason", "expired"}}), 1);
}

// Large witnesses are journaled once, as their own file, read back when the
// item is leased and deleted when it is proved.
TEST_F(BrokerCoreTest, LargeWitnessesGoToTheirOwnFilesAndLeaveWithTheirResult) {
  BrokerOptions options;
  options.journal.blob_threshold = 64;
  Make(options);
  Ready("wA", "A", {"c1"}, 0);
  const std::string witness(1000, 'x');
  SubmitWitnesses("cl", "big", {witness, "small"});
  Commit();
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/blobs/1-0"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/blobs/1-1"));
  EXPECT_EQ(journal_->stats().blob_files_written, 1u);
  Restart();  // read back after a restart too
  Ready("wA", "A", {"c1"}, 2);
  core_->Dispatch(now_);
  std::map<uint32_t, std::string> sent;
  for (auto& out : Take()) {
    if (out.envelope.has_job()) {
      std::string bytes;  // the witness travels in frames of its own
      for (const auto& frame : out.frames) bytes += frame.to_string();
      EXPECT_EQ(bytes.size(), out.envelope.job().witness_bytes());
      sent[out.envelope.job().item().partition()] = bytes;
      leases_[{1, out.envelope.job().item().partition()}] = out.envelope.job();
    }
  }
  EXPECT_EQ(sent[0], witness);
  EXPECT_EQ(sent[1], "small");
  Result("wA", 1, 0);
  Commit();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/blobs/1-0"));
}

// A SUBMIT whose witnesses add up to more than one connection may hold
// unread (--max-held-bytes-per-connection) is refused as TOO_LARGE, naming
// the bound, though each witness is under --max-witness-bytes: the ingress
// guard would cut such a message's connection before it arrives whole, and
// one that slips between its looks gets the same answer.
TEST_F(BrokerCoreTest, SubmitLargerThanAConnectionMayHoldIsRefused) {
  BrokerOptions options;
  options.max_held_bytes_per_connection = 10000;
  Make(options);
  Ready("wA", "A", {"c1"}, 0);
  auto refused = SubmitWitnesses("cl", "big", {std::string(6000, 'w'), std::string(6000, 'w')});
  ASSERT_EQ(refused.size(), 1u);
  ASSERT_TRUE(refused[0].envelope.has_error());
  EXPECT_EQ(refused[0].envelope.error().kind(), proto::ERROR_KIND_TOO_LARGE);
  EXPECT_NE(refused[0].envelope.error().message().find("--max-held-bytes-per-connection"), std::string::npos)
      << refused[0].envelope.error().message();
  EXPECT_EQ(core_->jobs().size(), 0u);
  auto accepted = SubmitWitnesses("cl", "fits", {std::string(6000, 'w')});
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_TRUE(accepted[0].envelope.has_submit_reply());
}

// With the journal on etcd (--max-inline-job-bytes, set by --journal etcd://),
// a SUBMIT whose inline witnesses add up to more than the bound is refused
// TOO_LARGE, naming the bound and witnesses by reference; nothing is kept.
TEST_F(BrokerCoreTest, InlineWitnessesOverTheInlineBoundAreRefusedNamingWitnessesByReference) {
  BrokerOptions options;
  options.max_inline_job_bytes = 10000;
  Make(options);
  Ready("wA", "A", {"c1"}, 0);
  auto refused = SubmitWitnesses("cl", "big", {std::string(6000, 'w'), std::string(6000, 'w')});
  ASSERT_EQ(refused.size(), 1u);
  ASSERT_TRUE(refused[0].envelope.has_error());
  EXPECT_EQ(refused[0].envelope.error().kind(), proto::ERROR_KIND_TOO_LARGE);
  const std::string& message = refused[0].envelope.error().message();
  EXPECT_NE(message.find("--max-inline-job-bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("by reference"), std::string::npos) << message;
  EXPECT_EQ(core_->jobs().size(), 0u);
  auto accepted = SubmitWitnesses("cl", "fits", {std::string(6000, 'w')});
  ASSERT_EQ(accepted.size(), 1u);
  EXPECT_TRUE(accepted[0].envelope.has_submit_reply());
}

// A witness larger than a chunk arrives in several frames: it is journaled
// whole (one blob file) and leaves in chunks that add up to the same bytes.
// Frames that do not add up to the announced sizes are refused, nothing kept.
TEST_F(BrokerCoreTest, ChunkedWitnessesAreReassembledOnlyOnDiskAndRefusedWhenSizesDisagree) {
  Ready("wA", "A", {"c1"}, 0);
  std::string witness(2 * fleet::kWitnessChunkBytes + 5, '\0');
  for (size_t i = 0; i < witness.size(); i += 4093) witness[i] = static_cast<char>(i >> 12);
  auto submit = [&](const std::string& id, std::vector<uint64_t> sizes) {
    proto::Envelope e;
    e.set_correlation_id(7);
    e.mutable_submit()->set_request_id(id);
    e.mutable_submit()->set_circuit_id("c1");
    for (uint64_t size : sizes) e.mutable_submit()->add_witness_bytes(size);
    std::vector<fleet::WitnessFrames> witnesses;
    witnesses.push_back(fleet::ChunkWitness(fleet::FrameFromString(witness)));
    witnesses.push_back(fleet::ChunkWitness(fleet::FrameFromString("small")));
    core_->HandleClient("cl", e, now_, {}, fleet::FlattenWitnesses(std::move(witnesses)));
    return Take();
  };
  // Sizes that cut a frame in two: refused, nothing queued or journaled.
  auto refused = submit("bad", {witness.size() - 1, 6});
  ASSERT_EQ(refused.size(), 1u);
  ASSERT_TRUE(refused[0].envelope.has_error());
  EXPECT_EQ(refused[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(refused[0].envelope.error().message().find("witness_bytes"), std::string::npos);
  EXPECT_EQ(core_->jobs().size(), 0u);

  auto accepted = submit("good", {witness.size(), 5});
  ASSERT_TRUE(accepted[0].envelope.has_submit_reply());
  Commit();
  EXPECT_EQ(std::filesystem::file_size(dir_ + "/blobs/1-0"), witness.size());
  Ready("wA", "A", {"c1"}, 2);
  core_->Dispatch(now_);
  std::map<uint32_t, std::string> sent;
  std::map<uint32_t, size_t> frames;
  for (auto& out : Take()) {
    if (!out.envelope.has_job()) continue;
    const uint32_t p = out.envelope.job().item().partition();
    for (const auto& frame : out.frames) sent[p] += frame.to_string();
    frames[p] = out.frames.size();
    EXPECT_EQ(out.envelope.job().witness_bytes(), sent[p].size());
  }
  EXPECT_EQ(frames[0], 3u);  // 4 MiB + 4 MiB + 5 bytes
  EXPECT_TRUE(sent[0] == witness);
  EXPECT_EQ(sent[1], "small");
}

// With authentication the key is the client identity and its role decides
// what it may ask (issue 14).
TEST_F(BrokerCoreTest, AuthenticatedKeysAreTheIdentityAndRolesAreEnforced) {
  Ready("wA", "A", {"c1"}, 10);
  auto as = [&](const std::string& name, Role role) {
    Peer peer;
    peer.authenticated = true;
    peer.key_name = name;
    peer.role = role;
    return peer;
  };
  auto send = [&](const std::string& identity, proto::Envelope e, const Peer& peer) {
    fleet::Frames frames;
    if (e.has_submit()) frames.push_back(fleet::FrameFromString("w"));
    core_->HandleClient(identity, e, now_, peer, std::move(frames));
    return Take();
  };
  auto error_kind = [](const std::vector<Outgoing>& out) {
    return out.size() == 1 && out[0].envelope.has_error() ? out[0].envelope.error().kind() : proto::ERROR_KIND_UNSPECIFIED;
  };
  const Peer alice = as("alice", Role::kSubmit), bob = as("bob", Role::kSubmit);
  const Peer watcher = as("grafana", Role::kObserve), ops = as("ops", Role::kAdmin);
  proto::Envelope submit;
  submit.set_client_id("bob");  // a declared identity does not count once authenticated
  submit.mutable_submit()->set_request_id("r1");
  submit.mutable_submit()->set_circuit_id("c1");
  submit.mutable_submit()->add_witness_bytes(1);
  auto out = send("cl-alice", submit, alice);
  ASSERT_TRUE(out[0].envelope.has_submit_reply());
  EXPECT_EQ(core_->jobs().Find(1)->client_id, "alice");

  proto::Envelope await;
  await.mutable_await()->set_job_seq(1);
  EXPECT_EQ(error_kind(send("cl-bob", await, bob)), proto::ERROR_KIND_UNKNOWN_JOB);
  EXPECT_EQ(error_kind(send("cl-watch", await, watcher)), proto::ERROR_KIND_FORBIDDEN);
  EXPECT_EQ(error_kind(send("cl-watch", submit, watcher)), proto::ERROR_KIND_FORBIDDEN);
  proto::Envelope drain;
  drain.mutable_drain_worker()->set_worker_id("A");
  EXPECT_EQ(error_kind(send("cl-alice", drain, alice)), proto::ERROR_KIND_FORBIDDEN);
  proto::Envelope status;
  status.mutable_status();
  EXPECT_EQ(error_kind(send("cl-alice", status, alice)), proto::ERROR_KIND_FORBIDDEN);
  EXPECT_TRUE(send("cl-watch", status, watcher)[0].envelope.has_status_reply());
  EXPECT_EQ(core_->counters().requests_forbidden, 4u);
  EXPECT_EQ(Metric("zkfleet_broker_requests_forbidden_total"), 4);
  // Nothing changed: the worker is READY, the job still queued for alice.
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_READY);
  EXPECT_EQ(core_->jobs().size(), 1u);
  // An admin may await any job (and drain).
  EXPECT_TRUE(send("cl-ops", await, ops).empty());  // waits for the result
  ASSERT_EQ(Dispatch().size(), 1u);
  Result("wA", 1, 0);
  auto results = Take();
  EXPECT_EQ(ResultsTo(results, "cl-alice").size(), 1u);
  EXPECT_EQ(ResultsTo(results, "cl-ops").size(), 1u);
  EXPECT_EQ(ResultsTo(results, "cl-bob").size(), 0u);
}

// One broker per data directory: a second one is refused with a clear error;
// readers (zkctl journal) are not.
TEST_F(BrokerCoreTest, ASecondBrokerOnTheSameDataDirectoryIsRefused) {
  try {
    auto second = Journal::Open(options_.journal);
    ADD_FAILURE() << "a second journal opened " << dir_ << " for writing";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("in use by another zkbroker"), std::string::npos) << e.what();
  }
  JournalOptions reader = options_.journal;
  reader.read_only = true;
  auto inspection = Journal::Open(reader);
  EXPECT_EQ(inspection->epoch(), core_->epoch());
}

// A damaged store is refused with a clear error and left as it was.
TEST_F(BrokerCoreTest, ADamagedStoreIsRefusedClearly) {
  core_.reset();
  journal_.reset();
  const std::string store = dir_ + "/data.mdb";
  { std::ofstream(store, std::ios::trunc) << "not an lmdb file"; }
  try {
    Journal::Open(options_.journal);
    ADD_FAILURE() << "a damaged store was opened";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir_), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::filesystem::file_size(store), std::string("not an lmdb file").size());
}

// A data directory restored from an inconsistent copy may lack a witness
// file: the job fails with a clear error, the broker keeps serving.
TEST_F(BrokerCoreTest, AMissingWitnessFileFailsItsJobClearly) {
  BrokerOptions options;
  options.journal.blob_threshold = 64;
  Make(options);
  Ready("wA", "A", {"c1"}, 0);
  SubmitWitnesses("cl", "big", {std::string(1000, 'x')});
  Commit();
  std::filesystem::remove(dir_ + "/blobs/1-0");
  Credit("wA", 1);
  core_->Dispatch(now_);
  auto out = Take();
  for (auto& o : out) EXPECT_FALSE(o.envelope.has_job());
  auto results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_FAILED);
  EXPECT_NE(results[0].error().find("broker storage fault"), std::string::npos) << results[0].error();
  // The next job is served normally.
  Submit("cl", "next", proto::PRIORITY_NORMAL, 1);
  EXPECT_EQ(Dispatch().size(), 1u);
}

// ---------------------------------------------------------------- hostile peers (issue 27)

Peer KeyPeer(const std::string& name, Role role = Role::kSubmit) {
  Peer peer;
  peer.authenticated = true;
  peer.key_name = name;
  peer.role = role;
  return peer;
}

TEST_F(BrokerCoreTest, ALongRequestIdIsRefusedNamingItsBoundAndTheBrokerGoesOn) {
  // On 712f740 a 507-byte request id made the journal throw MDB_BAD_VALSIZE.
  Ready("wA", "A", {"c1"}, 4);
  for (const std::string& bad : {std::string(600, 'r'), std::string("r\0x", 3), std::string(129, 'r')}) {
    auto out = Submit("cl", bad, proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error());
    EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
    EXPECT_NE(out[0].envelope.error().message().find("request_id"), std::string::npos)
        << out[0].envelope.error().message();
  }
  EXPECT_NO_THROW(Commit());
  auto out = Submit("cl", std::string(128, 'r'), proto::PRIORITY_NORMAL, 1);
  ASSERT_TRUE(out[0].envelope.has_submit_reply());
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  EXPECT_NO_THROW(Commit());
  // A long circuit id and a long declared client id too.
  out = Submit("cl", "r2", proto::PRIORITY_NORMAL, 1, std::string(200, 'c'));
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(out[0].envelope.error().message().find("at most 128"), std::string::npos);
  out = Submit("cl", "r3", proto::PRIORITY_NORMAL, 1, "c1", 1, std::string(300, 'k'));
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
}

// Hostile inputs (issue 31): the largest input the broker takes, made of
// nothing but open brackets, or of deep objects, costs one bounded scan:
// refused at once, never a deep recursion, and the broker goes on.
TEST_F(BrokerCoreTest, HostileInputsAreRefusedQuicklyAndTheBrokerGoesOn) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("w");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->add_generates("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w", ready, now_);
  const size_t max = options_.max_input_bytes;
  ASSERT_EQ(max, 1u << 20);  // the default
  std::vector<std::string> hostile = {"{\"a\": " + std::string(max - 6, '['),
                                      "{\"a\": " + std::string(max - 6, '{'),
                                      std::string(max, '{'),
                                      "{\"a\": \"" + std::string(max - 8, '\\'),
                                      std::string(max / 2, ' ') + "{}" + std::string(max / 2 - 2, '\x01')};
  std::string nested_objects = "{";
  while (nested_objects.size() + 12 < max) nested_objects += "\"a\":{";
  hostile.push_back(nested_objects);
  const auto began = std::chrono::steady_clock::now();
  for (size_t i = 0; i < hostile.size(); ++i) {
    ASSERT_LE(hostile[i].size(), max);
    proto::Envelope e;
    e.set_correlation_id(1);
    e.mutable_submit()->set_request_id("h" + std::to_string(i));
    e.mutable_submit()->set_circuit_id("c1");
    e.mutable_submit()->add_inputs(R"({"a": "1"})");
    e.mutable_submit()->add_inputs(hostile[i]);
    core_->HandleClient("cl", e, now_);
    auto out = Take();
    ASSERT_EQ(out.size(), 1u) << i;
    ASSERT_TRUE(out[0].envelope.has_error()) << i;
    EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST) << i;
    EXPECT_NE(out[0].envelope.error().message().find("input of partition 1"), std::string::npos)
        << i << ": " << out[0].envelope.error().message();
  }
  // Generous for sanitizer builds on a shared machine: the scan is linear.
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(20));
  EXPECT_EQ(core_->jobs().size(), 0u);
  EXPECT_NO_THROW(Commit());
  // A hostile READY: generates lists circuits it does not hold.
  proto::Envelope liar = ready;
  liar.mutable_ready()->set_worker_id("liar");
  liar.mutable_ready()->add_generates("c-secret");
  core_->HandleWorker("w-liar", liar, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_EQ(core_->workers().all().count("w-liar"), 0u);
  EXPECT_EQ(core_->counters().fields_refused, 1u);
}

// The shape check alone (wire/input_json.hpp), what every receiver runs.
TEST(InputJson, AcceptsJsonObjectsOfBoundedDepthOnly) {
  EXPECT_EQ(wire::InputJsonProblem("{}"), std::nullopt);
  EXPECT_EQ(wire::InputJsonProblem(" \n{\"a\": [\"1\", [\"2\", 3]], \"b\": {\"c\": null, \"d\": true}}\n"),
            std::nullopt);
  EXPECT_EQ(wire::InputJsonProblem("{\"caf\xc3\xa9\": \"\\u00e9\"}"), std::nullopt);
  EXPECT_EQ(wire::InputJsonProblem("{\"a\": [[[1]]]}", 4), std::nullopt);
  auto says = [](std::string_view input, const std::string& words, size_t depth = wire::kMaxInputJsonDepth) {
    auto problem = wire::InputJsonProblem(input, depth);
    if (!problem) return ::testing::AssertionFailure() << "accepted";
    if (problem->find(words) == std::string::npos) return ::testing::AssertionFailure() << *problem;
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(says("{\"a\": [[[1]]]}", "deeper than 3", 3));
  EXPECT_TRUE(says("", "empty"));
  EXPECT_TRUE(says("[]", "array"));
  EXPECT_TRUE(says("1", "not an object"));
  EXPECT_TRUE(says("\"{}\"", "not an object"));
  EXPECT_TRUE(says("null", "not an object"));
  EXPECT_TRUE(says("{", "not valid JSON"));
  EXPECT_TRUE(says("{} {}", "not valid JSON"));
  EXPECT_TRUE(says("{}x", "not valid JSON"));
  EXPECT_TRUE(says(std::string_view("{}\0", 3), "NUL"));
  EXPECT_TRUE(says(std::string_view("{\"a\":\"\0\"}", 9), "NUL"));
  EXPECT_TRUE(says("{\"a\": 01}", "not valid JSON"));
  EXPECT_TRUE(says("{\"a\": NaN}", "not valid JSON"));
  EXPECT_TRUE(says("{'a': 1}", "not valid JSON"));
  EXPECT_TRUE(says("{\"a\": 1,}", "not valid JSON"));
  EXPECT_TRUE(says("{\"a\": \"\xc3\"}", "not valid JSON"));  // truncated UTF-8
  EXPECT_TRUE(says("{\"a\": \"\x01\"}", "not valid JSON"));  // a raw control character
  EXPECT_TRUE(says("{/* c */}", "not valid JSON"));          // no comments
  EXPECT_TRUE(says(std::string(10'000'000, '['), "array"));
  EXPECT_TRUE(says("{\"a\":" + std::string(10'000'000, '['), "deeper than 32"));
}

TEST_F(BrokerCoreTest, AWorkerIdBelongsToTheKeyThatRegisteredIt) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("victim");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w-victim", ready, now_, KeyPeer("w1"));
  Credit("w-victim", 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  // Another key claims the id: refused, the victim keeps its lease.
  core_->HandleWorker("w-thief", ready, now_, KeyPeer("w2"));
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].identity, "w-thief");
  ASSERT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_NE(out[0].envelope.disconnect().reason().find("belongs to another key"), std::string::npos);
  ASSERT_NE(core_->workers().all().count("w-victim"), 0u);
  EXPECT_EQ(core_->workers().all().at("w-victim").leased.size(), 1u);
  EXPECT_EQ(core_->workers().all().count("w-thief"), 0u);
  EXPECT_EQ(core_->counters().registrations_refused, 1u);
  // The thief's answer for the victim's lease is stale.
  Result("w-thief", 1, 0);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kLeased);
}

TEST_F(BrokerCoreTest, ASecondLiveProcessWithTheSameIdIsRefusedNotSwapped) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("A");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w-first", ready, now_, KeyPeer("w1"));
  Take();
  for (int round = 0; round < 5; ++round) {
    now_ += milliseconds(50);
    Heartbeat("w-first", proto::WORKER_STATE_READY);
    core_->HandleWorker("w-second", ready, now_, KeyPeer("w1"));
    auto out = Take();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].envelope.has_disconnect()) << "round " << round;
    EXPECT_NE(out[0].envelope.disconnect().reason().find("already connected"), std::string::npos);
    EXPECT_NE(core_->workers().all().count("w-first"), 0u);
  }
  // The first one goes silent (killed): a restarted process takes over.
  now_ += milliseconds(200);
  core_->HandleWorker("w-second", ready, now_, KeyPeer("w1"));
  EXPECT_NE(core_->workers().all().count("w-second"), 0u);
  EXPECT_EQ(core_->workers().all().count("w-first"), 0u);
}

// A READY from `identity` as worker `id`, authenticated with key `key`, and `credit`.
void KeyedReady(BrokerCore& core, const std::string& identity, const std::string& id, const std::string& key,
                uint32_t credit, Clock::time_point now, const std::vector<std::string>& circuits = {"c1"}) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id(id);
  for (const std::string& circuit : circuits) ready.mutable_ready()->add_circuits(circuit);
  ready.mutable_ready()->set_capacity(100);
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core.HandleWorker(identity, ready, now, KeyPeer(key));
  if (credit > 0) {
    proto::Envelope e;
    e.mutable_credit()->set_credits(credit);
    core.HandleWorker(identity, e, now);
  }
}

// Issue 47, item 1: a key that takes jobs, sends STARTED and disconnects,
// coming back under a new worker id each time, used up other clients'
// attempts (9 of 30 jobs dead-lettered) while an honest worker waited, and
// took no strike. Now the lost work is a strike against the key, whatever
// the id; the retry goes to another key; the strike that faults the key
// refunds the attempts it lost.
TEST_F(BrokerCoreTest, AKeyThatStartsJobsAndLeavesIsStruckUnderEveryIdAndDeadLettersNothing) {
  BrokerOptions options;
  options.max_attempts = 2;
  options.strikes_to_fault = 2;
  Make(options);
  KeyedReady(*core_, "w-honest", "honest", "honest-key", 1, now_);
  KeyedReady(*core_, "w-v0", "v0", "evil-key", 4, now_, {"c1", "c2"});
  for (int i = 1; i <= 6; ++i) Submit("cl", "r" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
  auto leased_to = [&](const std::string& identity) {
    std::vector<uint64_t> seqs;
    for (const auto& [who, seq, partition] : Dispatch()) {
      if (who == identity) seqs.push_back(seq);
    }
    return seqs;
  };
  auto start_and_leave = [&](const std::string& identity, const std::vector<uint64_t>& seqs) {
    for (uint64_t seq : seqs) Started(identity, seq, 0);
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("gone");
    core_->HandleWorker(identity, bye, now_);
    Take();
  };
  const std::vector<uint64_t> first = leased_to("w-v0");
  ASSERT_EQ(first.size(), 4u);
  start_and_leave("w-v0", first);
  for (uint64_t seq : first) EXPECT_EQ(core_->jobs().Find(seq)->items[0].failed_on, "key evil-key");
  // A new id of the same key: the four lost items are not its (another
  // key's READY worker serves the circuit); a job of a circuit only the
  // evil key serves is.
  KeyedReady(*core_, "w-v1", "v1", "evil-key", 4, now_, {"c1", "c2"});
  EXPECT_TRUE(leased_to("w-v1").empty());
  Submit("cl", "r7", proto::PRIORITY_NORMAL, 1, "c2");
  const std::vector<uint64_t> second = leased_to("w-v1");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0], 7u);
  start_and_leave("w-v1", second);
  // Two strikes: the key is FAULTED, under any id, and its last loss is refunded.
  KeyedReady(*core_, "w-v2", "v2", "evil-key", 4, now_);
  EXPECT_EQ(core_->workers().all().at("w-v2").state, proto::WORKER_STATE_FAULTED);
  EXPECT_TRUE(leased_to("w-v2").empty());
  EXPECT_EQ(core_->jobs().Find(second[0])->items[0].attempts, 0u);
  for (uint64_t seq : first) EXPECT_EQ(core_->jobs().Find(seq)->items[0].attempts, 1u) << seq;
  // The honest worker proves every job, one at a time: none dead-lettered.
  for (int done = 0; done < 6; ++done) {
    const auto& leased = core_->workers().all().at("w-honest").leased;
    if (leased.empty()) ASSERT_EQ(leased_to("w-honest").size(), 1u) << done;
    const uint64_t seq = core_->workers().all().at("w-honest").leased.begin()->first.job_seq;
    Started("w-honest", seq, 0);
    Result("w-honest", seq, 0);
    Credit("w-honest", 1);
    Take();
  }
  EXPECT_EQ(core_->counters().jobs_completed, 6u);
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 0u);
  EXPECT_EQ(core_->jobs().Find(7)->items[0].state, WorkItem::State::kQueued);  // waits for an honest c2 worker
}

// A worker leaving with two started partitions of one job whose last
// attempt each was: the first loss dead-letters the job, and the second
// partition's loss finds no job (no crash; nothing struck: the job is the
// likelier culprit).
TEST_F(BrokerCoreTest, LosingTwoPartitionsOfAJobOnTheirLastAttemptDeadLettersItOnce) {
  BrokerOptions options;
  options.max_attempts = 1;
  Make(options);
  KeyedReady(*core_, "w-1", "w-1", "fleet-key", 2, now_);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  ASSERT_EQ(Dispatch().size(), 2u);
  Started("w-1", 1, 0);
  Started("w-1", 1, 1);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("crashed");
  core_->HandleWorker("w-1", bye, now_);
  Take();
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 1u);
  EXPECT_EQ(core_->jobs().Find(1), nullptr);
  KeyedReady(*core_, "w-2", "w-2", "fleet-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-2").state, proto::WORKER_STATE_READY);
}

// Strikes are the key's: a new READY or a new worker id does not wipe them
// (on 80a94a0 every READY reset the count: 67 forged proofs, never FAULTED).
TEST_F(BrokerCoreTest, StrikesBelongToTheKeyNotToTheIdOrTheReady) {
  BrokerOptions options;
  options.lease_start_timeout = milliseconds(100);
  Make(options);  // three strikes to fault
  const char* rounds[][2] = {{"w-a", "a"}, {"w-a", "a"}, {"w-b", "b"}};  // READY again, then a new id
  for (auto [identity, id] : rounds) {
    KeyedReady(*core_, identity, id, "hoarder-key", 1, now_);
    if (core_->jobs().Find(1) == nullptr) Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(core_->workers().all().at(identity).state, proto::WORKER_STATE_READY) << id;
    ASSERT_EQ(Dispatch().size(), 1u) << id;
    now_ += milliseconds(200);  // never started: taken back, a strike
    Heartbeat(identity, proto::WORKER_STATE_READY);
    core_->Tick(now_);
    Take();
  }
  EXPECT_EQ(core_->counters().leases_reclaimed, 3u);
  EXPECT_EQ(core_->workers().all().at("w-b").state, proto::WORKER_STATE_FAULTED);
  KeyedReady(*core_, "w-c", "c", "hoarder-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-c").state, proto::WORKER_STATE_FAULTED);
  // An admin's undrain pardons the key: its strikes start again from zero.
  proto::Envelope undrain;
  undrain.mutable_undrain_worker()->set_worker_id("c");
  core_->HandleClient("admin", undrain, now_);
  Take();
  EXPECT_EQ(core_->workers().all().at("w-c").state, proto::WORKER_STATE_READY);
  ASSERT_EQ(Dispatch().size(), 1u);
  now_ += milliseconds(200);
  Heartbeat("w-c", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  EXPECT_EQ(core_->workers().all().at("w-c").state, proto::WORKER_STATE_READY) << "one strike after the pardon";
}

// Issue 49, item 2: a host whose workers share one key, one of them a bad
// GPU. Its strikes all come from its own worker id, so the verdict holds that
// id (also when it comes back) and the key's other workers keep working; a
// third strike from a second id would hold the key whole (the test above).
TEST_F(BrokerCoreTest, AFaultedWorkerOfASharedKeyIsHeldAloneAndItsNeighboursKeepWorking) {
  BrokerOptions options;
  options.lease_start_timeout = milliseconds(100);
  Make(options);  // three strikes to fault
  KeyedReady(*core_, "w-gpu1", "gpu1", "host-key", 0, now_);  // no credit: takes nothing yet
  for (int strike = 0; strike < 3; ++strike) {
    KeyedReady(*core_, "w-gpu0", "gpu0", "host-key", 1, now_);
    if (core_->jobs().Find(1) == nullptr) Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(core_->workers().all().at("w-gpu0").state, proto::WORKER_STATE_READY) << strike;
    ASSERT_EQ(Dispatch().size(), 1u) << strike;
    now_ += milliseconds(200);  // never started: taken back, a strike
    Heartbeat("w-gpu0", proto::WORKER_STATE_READY);
    Heartbeat("w-gpu1", proto::WORKER_STATE_READY);
    core_->Tick(now_);
    Take();
  }
  EXPECT_EQ(core_->workers().all().at("w-gpu0").state, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at("w-gpu1").state, proto::WORKER_STATE_READY);
  // gpu0 restarted (a new connection, the same id): still held.
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("restarting");
  core_->HandleWorker("w-gpu0", bye, now_);
  KeyedReady(*core_, "w-gpu0-again", "gpu0", "host-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-gpu0-again").state, proto::WORKER_STATE_FAULTED);
  // A new worker of the key, and the neighbour, take the job.
  KeyedReady(*core_, "w-gpu2", "gpu2", "host-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-gpu2").state, proto::WORKER_STATE_READY);
  KeyedReady(*core_, "w-gpu1", "gpu1", "host-key", 1, now_);
  const auto leased = Dispatch();
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_NE(std::get<0>(leased[0]), "w-gpu0-again");
  // A neighbour's single strike now is its own, not a third id's on top of
  // gpu0's three: the key is not held whole for it.
  now_ += milliseconds(200);  // the lease just made is never started: a strike
  Heartbeat("w-gpu1", proto::WORKER_STATE_READY);
  Heartbeat("w-gpu2", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->workers().all().at("w-gpu1").state, proto::WORKER_STATE_READY);
  EXPECT_EQ(core_->workers().all().at("w-gpu2").state, proto::WORKER_STATE_READY);
}

// A READY again on the registering connection, same id (zkworker's SIGHUP
// changed its circuits): an update. Its lease and credit stay; routing
// follows the new list.
TEST_F(BrokerCoreTest, AWorkerAnnouncingNewCircuitsKeepsItsLeasesAndCredit) {
  Ready("w", "w", {"c1"}, 3);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("w", 1, 0);
  const uint32_t credit = core_->workers().all().at("w").credit;
  Ready("w", "w", {"c1", "c2"}, 0);
  const WorkerRecord& w = core_->workers().all().at("w");
  EXPECT_EQ(w.leased.size(), 1u);
  EXPECT_EQ(w.credit, credit);
  EXPECT_TRUE(w.circuits.count("c2"));
  EXPECT_EQ(core_->counters().workers_lost, 0u);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1, "c2");
  EXPECT_EQ(Dispatch().size(), 1u) << "c2 is routed to it now";
  // c1 dropped: its running item still answers; no new c1 work comes.
  Ready("w", "w", {"c2"}, 0);
  Result("w", 1, 0);
  Take();
  EXPECT_EQ(core_->counters().jobs_completed, 1u);
  Submit("cl", "r3", proto::PRIORITY_NORMAL, 1, "c1");
  EXPECT_TRUE(Dispatch().empty());
}

// A job whose circuit has no key any more (the broker restarted without it)
// is never completed from an unchecked proof: it fails, saying why, and the
// worker is not struck.
TEST_F(BrokerCoreTest, AResultForACircuitThatLostItsKeyFailsTheJobUnchecked) {
  Ready("w", "w", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  Commit();
  options_.unverified_circuits.clear();  // no key for c1, and not unverified any more
  options_.verification_keys = std::make_shared<VerificationKeys>();
  Restart();
  Ready("w2", "w", {"c1"}, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("w2", 1, 0);
  Result("w2", 1, 0);
  Take();
  EXPECT_EQ(core_->counters().jobs_completed, 0u);
  EXPECT_EQ(core_->counters().jobs_failed, 1u);
  EXPECT_EQ(core_->strikes("w", now_), 0u);
}

// A witness that crashes every prover is the job's fault, not the key's: in
// a fleet of one key the job is dead-lettered and the key stays READY; a
// crash that loses work is forgiven by the key's next verified proof.
TEST_F(BrokerCoreTest, APoisonJobDoesNotFaultAFleetOfOneKey) {
  BrokerOptions options;
  options.max_attempts = 2;
  options.strikes_to_fault = 3;  // the poison's first crash, then two more without forgiveness would fault it
  Make(options);
  for (const char* identity : {"w-1", "w-2"}) {
    KeyedReady(*core_, identity, identity, "fleet-key", 1, now_);
    if (core_->jobs().Find(1) == nullptr) Submit("cl", "poison", proto::PRIORITY_NORMAL, 1);
    ASSERT_EQ(Dispatch().size(), 1u) << identity;
    Started(identity, 1, 0);
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("crashed");
    core_->HandleWorker(identity, bye, now_);
    Take();
  }
  EXPECT_EQ(core_->counters().jobs_dead_lettered, 1u);
  KeyedReady(*core_, "w-3", "w-3", "fleet-key", 1, now_);
  EXPECT_EQ(core_->workers().all().at("w-3").state, proto::WORKER_STATE_READY);
  // One crash with a good job (a strike), a verified proof (forgiven), another crash: still READY.
  for (int i = 0; i < 2; ++i) {
    Submit("cl", "good" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
    const std::string identity = "w-g" + std::to_string(i);
    KeyedReady(*core_, identity, identity, "fleet-key", 2, now_);
    const auto leased = Dispatch();
    ASSERT_FALSE(leased.empty());
    const auto [who, seq, partition] = leased[0];
    Started(who, seq, 0);
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("crashed");
    core_->HandleWorker(who, bye, now_);
    Take();
    const auto again = Dispatch();
    ASSERT_FALSE(again.empty());
    Started(std::get<0>(again[0]), std::get<1>(again[0]), 0);
    Result(std::get<0>(again[0]), std::get<1>(again[0]), 0);
    Credit(std::get<0>(again[0]), 1);
    Take();
  }
  for (const auto& [identity, worker] : core_->workers().all()) {
    EXPECT_NE(worker.state, proto::WORKER_STATE_FAULTED) << identity;
  }
}

// Issue 47, item 9: one key could fill the 4,096-entry table (then real
// circuits lost the restart grace). Each key may add at most 512 names, and
// only circuits the broker takes jobs for are remembered at all.
TEST_F(BrokerCoreTest, OneKeyCannotFillTheRememberedCircuits) {
  for (int w = 0; w < 20; ++w) {  // one key, 20 worker ids x 256 circuits
    proto::Envelope ready;
    ready.mutable_ready()->set_worker_id("greedy" + std::to_string(w));
    for (int c = 0; c < 256; ++c) ready.mutable_ready()->add_circuits("g" + std::to_string(w) + "-" + std::to_string(c));
    ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
    core_->HandleWorker("greedy-conn" + std::to_string(w), ready, now_, KeyPeer("greedy-key"));
  }
  KeyedReady(*core_, "honest-conn", "honest", "honest-key", 0, now_, {"real-circuit"});
  Commit();
  const auto known = journal_->KnownCircuitOwners();
  size_t greedy = 0, honest = 0;
  for (const auto& [circuit, owner] : known) {
    if (owner == "key greedy-key") ++greedy;
    if (owner == "key honest-key" && circuit == "real-circuit") ++honest;
  }
  EXPECT_EQ(greedy, 512u);
  EXPECT_EQ(honest, 1u);
  // After a restart the shares are counted again from the journal: still no room for more.
  Restart();
  KeyedReady(*core_, "greedy-again", "greedy-more", "greedy-key", 0, now_, {"one-more"});
  Commit();
  EXPECT_EQ(journal_->KnownCircuits().size(), 513u);
}

// Circuits without a verification key (and not listed unverified) take no
// jobs: they are not remembered.
TEST_F(BrokerCoreTest, OnlyCircuitsWithJobsAreRemembered) {
  BrokerOptions options;
  options.unverified_circuits = {"bench"};
  options.verification_keys = std::make_shared<VerificationKeys>(VerificationKeys::Load({}));
  Make(options);
  Ready("conn", "w", {"bench", "junk-1", "junk-2"}, 0);
  Commit();
  EXPECT_EQ(journal_->KnownCircuits(), (std::vector<std::string>{"bench"}));
}

// Issue 47, item 2: one worker could fail any job for good with a
// non-retryable RESULT carrying its own text. Its verdict is now a claim: the
// item goes to another key's worker; a proof there is a strike against the
// claimant; two keys agreeing (or no other key) make the failure final.
TEST_F(BrokerCoreTest, AClientFaultVerdictIsConfirmedByAnotherKeyBeforeItIsFinal) {
  BrokerOptions options;
  options.strikes_to_fault = 1;  // one false verdict shows as FAULTED
  Make(options);
  KeyedReady(*core_, "w-liar", "liar", "liar-key", 1, now_);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  KeyedReady(*core_, "w-honest", "honest", "honest-key", 1, now_);
  Started("w-liar", 1, 0);
  Result("w-liar", 1, 0, /*ok=*/false, /*retryable=*/false);
  Take();
  ASSERT_NE(core_->jobs().Find(1), nullptr) << "one key's verdict failed the job";
  EXPECT_EQ(core_->jobs().Find(1)->items[0].attempts, 0u);  // refunded
  const auto second = Dispatch();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(std::get<0>(second[0]), "w-honest");
  Started("w-honest", 1, 0);
  Result("w-honest", 1, 0);
  Take();
  EXPECT_EQ(core_->counters().jobs_completed, 1u);
  EXPECT_EQ(core_->workers().all().at("w-liar").state, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at("w-honest").state, proto::WORKER_STATE_READY);

  // Both keys say so: FAILED, with the first verdict's words.
  Credit("w-honest", 1);
  KeyedReady(*core_, "w-other", "other", "other-key", 1, now_);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1);
  auto leased = Dispatch();
  ASSERT_EQ(leased.size(), 1u);
  const std::string first = std::get<0>(leased[0]);
  Started(first, 2, 0);
  Result(first, 2, 0, false, false);
  Take();
  leased = Dispatch();
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_NE(std::get<0>(leased[0]), first);
  Started(std::get<0>(leased[0]), 2, 0);
  Result(std::get<0>(leased[0]), 2, 0, false, false);
  Take();
  EXPECT_EQ(core_->jobs().Find(2), nullptr);
  EXPECT_EQ(core_->counters().jobs_failed, 1u);
  EXPECT_EQ(core_->workers().all().at("w-other").state, proto::WORKER_STATE_READY);
}

// With no other key's worker at hand, the item waits (never leased to the
// claimant's key again) for --verdict-confirm-wait, then the verdict is final.
// (A fleet of one key, where no other key ever served the circuit, fails it
// at once: RetryableFailureRetriesFinalFailureFails.)
TEST_F(BrokerCoreTest, AClientFaultVerdictWaitsForAnotherKeyThenIsFinal) {
  BrokerOptions options;
  options.verdict_confirm_wait = milliseconds(1000);
  Make(options);
  KeyedReady(*core_, "w-only", "only", "only-key", 2, now_);
  // Another key served the circuit in this broker life, and is gone now.
  KeyedReady(*core_, "w-gone", "gone", "other-key", 0, now_);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("restarting");
  core_->HandleWorker("w-gone", bye, now_);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("w-only", 1, 0);
  Result("w-only", 1, 0, false, false);
  Take();
  ASSERT_NE(core_->jobs().Find(1), nullptr);
  // Another worker of the same key is no second opinion.
  KeyedReady(*core_, "w-same", "same", "only-key", 1, now_);
  EXPECT_TRUE(Dispatch().empty());
  now_ += milliseconds(500);
  core_->Tick(now_);
  ASSERT_NE(core_->jobs().Find(1), nullptr);
  now_ += milliseconds(600);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->jobs().Find(1), nullptr);
  EXPECT_EQ(core_->counters().jobs_failed, 1u);
  const auto stored = journal_->GetJob(1);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->state(), proto::JOB_STATE_FAILED);
  EXPECT_NE(stored->error().find("failed on worker only"), std::string::npos) << stored->error();
}

TEST_F(BrokerCoreTest, CreditIsCappedByTheBrokerAndDispatchIsFair) {
  BrokerOptions options;
  options.max_credit_per_worker = 3;
  Make(options);
  Ready("w-hoard", "hoarder", {"c1"}, 100000, 100000);
  Ready("w-honest", "honest", {"c1"}, 1, 1);
  EXPECT_EQ(core_->workers().all().at("w-hoard").credit, 3u);
  for (int i = 0; i < 5; ++i) Submit("cl", "r" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 4u);  // 3 for the hoarder (its cap), 1 for the honest worker
  size_t honest = 0;
  for (auto& [identity, seq, partition] : jobs) honest += identity == "w-honest";
  EXPECT_EQ(honest, 1u);
}

TEST_F(BrokerCoreTest, ALeaseNotStartedInTimeGoesBackAndCountsAgainstItsWorker) {
  BrokerOptions options;
  options.lease_start_timeout = milliseconds(2000);
  options.strikes_to_fault = 2;
  Make(options);
  Ready("w-hoard", "hoarder", {"c1"}, 5, 5);
  for (int i = 0; i < 2; ++i) Submit("cl", "r" + std::to_string(i), proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 2u);
  // The hoarder keeps its heartbeats but never starts them.
  for (int t = 0; t < 19; ++t) {
    now_ += milliseconds(100);
    Heartbeat("w-hoard", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  EXPECT_EQ(core_->workers().all().at("w-hoard").leased.size(), 2u);  // not yet
  now_ += milliseconds(200);
  Heartbeat("w-hoard", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  EXPECT_EQ(core_->counters().leases_reclaimed, 2u);
  EXPECT_EQ(core_->workers().all().at("w-hoard").state, proto::WORKER_STATE_FAULTED);
  // An honest worker gets both at once.
  Ready("w-honest", "honest", {"c1"}, 2, 2);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 2u);
  for (auto& job : jobs) EXPECT_EQ(std::get<0>(job), "w-honest");
  // The hoarder cannot clear FAULTED by registering again, not even under a new id.
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("hoarder");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  now_ += milliseconds(1000);
  core_->HandleWorker("w-hoard2", ready, now_);
  EXPECT_EQ(core_->workers().all().at("w-hoard2").state, proto::WORKER_STATE_FAULTED);
}

TEST_F(BrokerCoreTest, AStartedLeaseThatOverrunsIsTakenBack) {
  BrokerOptions options;
  options.lease_overrun_min = milliseconds(1000);
  Make(options);
  Ready("wA", "A", {"c1"}, 1);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  Started("wA", 1, 0);
  for (int t = 0; t < 9; ++t) {
    now_ += milliseconds(100);
    Heartbeat("wA", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  EXPECT_EQ(core_->counters().leases_reclaimed, 0u);
  now_ += milliseconds(200);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  EXPECT_EQ(core_->counters().leases_reclaimed, 1u);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kQueued);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].failed_on, "worker A");  // plaintext: the owner is the id
}

TEST_F(BrokerCoreTest, DrainingIsTheBrokersStateToLeaveNotTheWorkers) {
  Ready("wA", "A", {"c1"}, 2);
  proto::Envelope drain;
  drain.mutable_drain_worker()->set_worker_id("A");
  core_->HandleClient("admin", drain, now_);
  Take();
  // The worker answers READY (a new READY and a READY heartbeat): it stays DRAINING.
  Ready("wA", "A", {"c1"}, 2);
  Heartbeat("wA", proto::WORKER_STATE_READY);
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_DRAINING);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  EXPECT_EQ(Dispatch().size(), 0u);
  // An admin undrains it.
  EXPECT_EQ(UndrainAsAdmin("A"), proto::WORKER_STATE_READY);
  EXPECT_EQ(Dispatch().size(), 1u);
  // Only an admin may.
  proto::Envelope undrain;
  undrain.mutable_undrain_worker()->set_worker_id("A");
  core_->HandleClient("bob", undrain, now_, KeyPeer("bob", Role::kSubmit));
  auto out = Take();
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
}

// A worker that reported its own engine FAULTED takes no work whatever the
// broker says: an admin's undrain clears the broker's part and answers
// FAULTED (zkctl then says a restart of that worker is needed), and nothing
// is routed to it; restarted (a READY without FAULTED), it serves again.
TEST_F(BrokerCoreTest, UndrainOfAWorkerThatFaultedItselfLeavesItFaulted) {
  Ready("wA", "A", {"c1"}, 2);
  Heartbeat("wA", proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at("wA").state, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(UndrainAsAdmin("A"), proto::WORKER_STATE_FAULTED);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  EXPECT_EQ(Dispatch().size(), 0u);
  // The restarted process (a new connection, the old one silent) registers READY: work flows again.
  now_ += 2 * options_.heartbeat_interval;
  Ready("wA-restarted", "A", {"c1"}, 2);
  EXPECT_EQ(core_->workers().all().at("wA-restarted").state, proto::WORKER_STATE_READY);
  EXPECT_EQ(Dispatch().size(), 1u);
}

// A drained worker exits; an UNDRAIN of it afterwards says it left, when and
// why, and that it is started again, not only "unknown"; once it registers
// again it is an ordinary worker.
TEST_F(BrokerCoreTest, UndrainOfAWorkerThatLeftSaysSoAndHowToBringItBack) {
  Ready("wA", "A", {"c1"}, 2);
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("drained");
  core_->HandleWorker("wA", bye, now_);
  Take();
  proto::Envelope undrain;
  undrain.mutable_undrain_worker()->set_worker_id("A");
  core_->HandleClient("admin", undrain, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_WORKER);
  const std::string& message = out[0].envelope.error().message();
  EXPECT_NE(message.find("worker 'A' is not connected: it left (disconnected: drained, at 20"), std::string::npos)
      << message;
  EXPECT_NE(message.find("start it again"), std::string::npos) << message;
  // An id never seen is unknown, plainly.
  undrain.mutable_undrain_worker()->set_worker_id("never");
  core_->HandleClient("admin", undrain, now_);
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().message(), "no worker 'never' is registered or held (see zkctl workers)");
  // Back again: an ordinary worker.
  Ready("wA2", "A", {"c1"}, 2);
  EXPECT_EQ(UndrainAsAdmin("A"), proto::WORKER_STATE_READY);
}

TEST_F(BrokerCoreTest, ARemovedWorkerKeyIsCutOffAndItsLeasesRequeue) {
  proto::Envelope ready;
  ready.mutable_ready()->set_worker_id("A");
  ready.mutable_ready()->add_circuits("c1");
  ready.mutable_ready()->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("wA", ready, now_, KeyPeer("w1"));
  proto::Envelope credit;
  credit.mutable_credit()->set_credits(2);
  core_->HandleWorker("wA", credit, now_, KeyPeer("w1"));
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  core_->SetAllowedKeys({"w2"}, {"alice"}, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_EQ(core_->workers().all().count("wA"), 0u);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kQueued);
  // Its connection is still open: anything it sends is refused.
  core_->HandleWorker("wA", ready, now_, KeyPeer("w1"));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].envelope.has_disconnect());
  EXPECT_EQ(core_->workers().all().count("wA"), 0u);
  // A removed client key too.
  proto::Envelope status;
  status.mutable_status();
  core_->HandleClient("cl-bob", status, now_, KeyPeer("bob", Role::kAdmin));
  out = Take();
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
}

// ---------------------------------------------------------------- witnesses by reference

proto::WitnessRef MakeRef(const std::string& url, uint64_t size, char fill = 'a') {
  proto::WitnessRef ref;
  ref.set_url(url);
  ref.set_size(size);
  ref.set_sha256(std::string(32, fill));
  return ref;
}

// A SUBMIT of references (no frames) from connection `client`; returns what was sent to it.
std::vector<Outgoing> SubmitRefs(BrokerCore& core, Clock::time_point now, const std::string& request_id,
                                 const std::vector<proto::WitnessRef>& refs, const std::vector<std::string>& digests = {},
                                 fleet::Frames frames = {}) {
  proto::Envelope e;
  e.set_correlation_id(1);
  auto* submit = e.mutable_submit();
  submit->set_request_id(request_id);
  submit->set_circuit_id("c1");
  for (const auto& ref : refs) *submit->add_witness_refs() = ref;
  for (const auto& digest : digests) submit->add_public_signals_sha256(digest);
  for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
  core.HandleClient("cl", e, now, {}, std::move(frames));
  std::vector<Outgoing> out;
  out.swap(core.outbox());
  return out;
}

// The broker journals the reference, never bytes: the JOB carries it and no
// frame; a restarted broker still has it; a resubmission is the same job, and
// the same request id with another digest is refused.
// Issue 49, item 3: a worker without --fetch-allow was handed a reference,
// gave it back, was handed it again: three attempts in 7 ms, DEAD_LETTERED.
// Workers announce their fetch prefixes; a job by reference goes only to a
// worker whose prefixes cover its URL, and waits for one otherwise.
TEST_F(BrokerCoreTest, AReferenceGoesOnlyToAWorkerThatFetchesItsUrl) {
  proto::Envelope e;
  auto* ready = e.mutable_ready();
  ready->set_worker_id("blind");
  ready->add_circuits("c1");
  ready->set_capacity(100);
  ready->set_state(proto::WORKER_STATE_READY);
  core_->HandleWorker("w-blind", e, now_);  // no fetch prefixes
  Credit("w-blind", 4);
  // No worker of the circuit fetches there: refused at once, nothing accepted.
  auto refused = SubmitRefs(*core_, now_, "r0", {MakeRef("https://store.internal/w/0.wtns", 4096)});
  ASSERT_EQ(refused.size(), 1u);
  ASSERT_TRUE(refused[0].envelope.has_error()) << refused[0].envelope.DebugString();
  EXPECT_NE(refused[0].envelope.error().message().find("no worker of circuit 'c1' fetches https://store.internal/w/0.wtns"),
            std::string::npos)
      << refused[0].envelope.error().message();
  EXPECT_EQ(core_->jobs().size(), 0u);
  // One that does, without credit yet: accepted, and not given to the blind one meanwhile.
  Ready("w-sees", "sees", {"c1"}, 0);  // fetches https://store.internal/ (the fixture's Ready)
  auto accepted = SubmitRefs(*core_, now_, "r1", {MakeRef("https://store.internal/w/0.wtns", 4096)});
  ASSERT_TRUE(accepted[0].envelope.has_submit_reply()) << accepted[0].envelope.DebugString();
  EXPECT_TRUE(Dispatch().empty()) << "a reference went to a worker that fetches nothing";
  Credit("w-sees", 1);
  const auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "w-sees");
  // The hint's rule: scheme and host without case or userinfo, the path as a directory.
  EXPECT_TRUE(FetchPrefixCovers("https://Store.Internal/w", "https://u:p@store.internal/w/0.wtns"));
  EXPECT_FALSE(FetchPrefixCovers("https://store.internal/w", "https://store.internal/wx/0.wtns"));
  EXPECT_FALSE(FetchPrefixCovers("https://store.internal/", "http://store.internal/0.wtns"));
  EXPECT_FALSE(FetchPrefixCovers("file:///srv/a/", "file:///srv/b/0.wtns"));
  EXPECT_TRUE(FetchPrefixCovers("file:///srv/a", "file:///srv/a/0.wtns"));
}

TEST_F(BrokerCoreTest, AWitnessByReferenceIsJournaledAndSentInItsJobWithoutBytes) {
  Ready("w", "w", {"c1"}, 2);
  const std::vector<proto::WitnessRef> refs = {
      MakeRef("https://user:pw@store.internal/w/0.wtns?X-Amz-Signature=secret", 4096),
      MakeRef("file:///mnt/witnesses/1.wtns", 8192, 'b')};
  auto out = SubmitRefs(*core_, now_, "r1", refs);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  Commit();
  std::string fault;
  EXPECT_FALSE(journal_->ReadWitness(1, 0, &fault));  // no bytes journaled
  EXPECT_EQ(core_->Status(now_).queued_witness_bytes(), 0u);

  Restart();
  Ready("w", "w", {"c1"}, 2);
  core_->Dispatch(now_);
  std::vector<Outgoing> jobs;
  for (auto& o : Take()) {
    if (o.envelope.has_job()) jobs.push_back(std::move(o));
  }
  ASSERT_EQ(jobs.size(), 2u);
  for (const Outgoing& job : jobs) {
    const uint32_t p = job.envelope.job().item().partition();
    EXPECT_TRUE(job.frames.empty());
    EXPECT_EQ(job.envelope.job().witness_bytes(), 0u);
    EXPECT_EQ(job.envelope.job().witness_ref().SerializeAsString(), refs[p].SerializeAsString());
    EXPECT_TRUE(job.envelope.job().public_signals_sha256().empty());
  }
  // The same references: the same job. Another digest under the same id: refused.
  out = SubmitRefs(*core_, now_, "r1", refs);
  ASSERT_TRUE(out[0].envelope.has_submit_reply());
  EXPECT_TRUE(out[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  auto changed = refs;
  changed[1].set_sha256(std::string(32, 'c'));
  out = SubmitRefs(*core_, now_, "r1", changed);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_REQUEST_ID_REUSED);
}

// Every field of a reference is bounded and checked before anything is
// accepted; messages name the URL redacted (no userinfo, no query).
TEST_F(BrokerCoreTest, ABadReferenceIsRefusedNamingItsRedactedUrlAndNothingIsAccepted) {
  BrokerOptions options;
  options.limits.max_witness_bytes = 1 << 20;
  Make(options);
  Ready("w", "w", {"c1"}, 1);
  auto refused = [&](const std::vector<proto::WitnessRef>& refs, proto::ErrorKind kind, const std::string& says,
                     fleet::Frames frames = {}) {
    auto out = SubmitRefs(*core_, now_, "r", refs, {}, std::move(frames));
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error()) << out[0].envelope.DebugString();
    EXPECT_EQ(out[0].envelope.error().kind(), kind) << out[0].envelope.error().message();
    EXPECT_NE(out[0].envelope.error().message().find(says), std::string::npos) << out[0].envelope.error().message();
    EXPECT_EQ(out[0].envelope.error().message().find("secret"), std::string::npos) << out[0].envelope.error().message();
  };
  const std::string url = "https://u:secret@store.internal/w.wtns?sig=secret";
  refused({MakeRef("ftp://store.internal/w.wtns?sig=secret", 100)}, proto::ERROR_KIND_BAD_REQUEST,
          "not file://, http:// or https://");
  refused({MakeRef(url, 0)}, proto::ERROR_KIND_BAD_REQUEST, "size 0");
  auto short_digest = MakeRef(url, 100);
  short_digest.set_sha256(std::string(31, 'a'));
  refused({short_digest}, proto::ERROR_KIND_BAD_REQUEST, "32");
  refused({MakeRef("https://store.internal/" + std::string(5000, 'x'), 100)}, proto::ERROR_KIND_BAD_REQUEST,
          "at most 4096");
  refused({MakeRef("https://store.internal/a b", 100)}, proto::ERROR_KIND_BAD_REQUEST, "space");
  refused({MakeRef(url, (1 << 20) + 1)}, proto::ERROR_KIND_TOO_LARGE, "https://store.internal/w.wtns");
  fleet::Frames inline_too;
  inline_too.push_back(fleet::FrameFromString("w0"));
  refused({MakeRef(url, 100)}, proto::ERROR_KIND_BAD_REQUEST, "not both", std::move(inline_too));
  EXPECT_EQ(core_->jobs().size(), 0u);
  EXPECT_EQ(core_->counters().jobs_submitted, 0u);
}

// ---------------------------------------------------------------- jobs from inputs (issue 31)

// A worker that holds `circuits` and computes witnesses from inputs for `generates`.
void ReadyGenerating(BrokerCore& core, Clock::time_point now, const std::string& identity, const std::string& id,
                     const std::vector<std::string>& circuits, const std::vector<std::string>& generates,
                     uint32_t credit) {
  proto::Envelope e;
  auto* ready = e.mutable_ready();
  ready->set_worker_id(id);
  for (const auto& c : circuits) ready->add_circuits(c);
  for (const auto& c : generates) ready->add_generates(c);
  ready->set_capacity(100);
  ready->set_state(proto::WORKER_STATE_READY);
  core.HandleWorker(identity, e, now);
  if (credit > 0) {
    proto::Envelope more;
    more.mutable_credit()->set_credits(credit);
    core.HandleWorker(identity, more, now);
  }
}

// A SUBMIT of inputs (one input.json per partition, no frames) from
// connection "cl"; returns what was sent to it.
std::vector<Outgoing> SubmitInputs(BrokerCore& core, Clock::time_point now, const std::string& request_id,
                                   const std::vector<std::string>& inputs, const std::vector<std::string>& digests = {},
                                   fleet::Frames frames = {}, const std::vector<proto::WitnessRef>& refs = {},
                                   const std::string& circuit = "c1") {
  proto::Envelope e;
  e.set_correlation_id(1);
  auto* submit = e.mutable_submit();
  submit->set_request_id(request_id);
  submit->set_circuit_id(circuit);
  for (const auto& input : inputs) submit->add_inputs(input);
  for (const auto& digest : digests) submit->add_public_signals_sha256(digest);
  for (const auto& ref : refs) *submit->add_witness_refs() = ref;
  for (const auto& frame : frames) submit->add_witness_bytes(frame.size());
  core.HandleClient("cl", e, now, {}, std::move(frames));
  std::vector<Outgoing> out;
  out.swap(core.outbox());
  return out;
}

// The JOBs a Dispatch() sends, whole.
std::vector<Outgoing> DispatchedJobs(BrokerCore& core, Clock::time_point now) {
  core.Dispatch(now);
  std::vector<Outgoing> jobs;
  for (auto& o : core.outbox()) {
    if (o.envelope.has_job()) jobs.push_back(std::move(o));
  }
  core.outbox().clear();
  return jobs;
}

const std::vector<std::string> kInputs = {R"({"a": "3", "b": ["1", "2"]})", R"({"a": "5", "b": ["7", "11"]})"};

// Issue 47, item 5: a job from inputs is STARTED when it enters the
// worker's witness generation, and the broker's overrun limit (600 s) was
// shorter than the worker's own generation limit (900 s wall): slow honest
// generations were reclaimed and struck as hoarding. At the real ratio,
// with the limits the worker announces: four generations on two slots may
// take two rounds of 900 s on top of the 600 s overrun floor, and no more.
TEST_F(BrokerCoreTest, AJobFromInputsGetsTheWorkersGenerationTimeBeforeItsLeaseOverruns) {
  BrokerOptions options;  // lease_overrun_min 600 s: the default
  Make(options);
  proto::Envelope e;
  auto* ready = e.mutable_ready();
  ready->set_worker_id("w");
  ready->add_circuits("c1");
  ready->add_generates("c1");
  ready->set_capacity(100);
  ready->set_state(proto::WORKER_STATE_READY);
  ready->set_generation_wall_s(900);  // zkworker's default --witgen-wall-seconds
  ready->set_generation_slots(2);     // and --witgen-threads
  core_->HandleWorker("w", e, now_);
  Credit("w", 4);
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(SubmitInputs(*core_, now_, "r" + std::to_string(i), {kInputs[0]}).empty());
  const auto jobs = DispatchedJobs(*core_, now_);
  ASSERT_EQ(jobs.size(), 4u);
  for (const Outgoing& job : jobs) {
    proto::Envelope started;
    *started.mutable_started()->add_items() = job.envelope.job().item();  // with its lease
    core_->HandleWorker("w", started, now_);
  }
  const auto started = now_;
  auto advance_to = [&](std::chrono::seconds since_start) {
    while (now_ < started + since_start) {
      now_ = std::min(now_ + std::chrono::seconds(50), started + since_start);
      Heartbeat("w", proto::WORKER_STATE_READY);
      core_->Tick(now_);
    }
    Take();
  };
  advance_to(std::chrono::seconds(600 + 2 * 900 - 5));
  EXPECT_EQ(core_->counters().leases_reclaimed, 0u) << "an honest generation taken for a hoarder";
  EXPECT_EQ(core_->workers().all().at("w").state, proto::WORKER_STATE_READY);
  advance_to(std::chrono::seconds(600 + 2 * 900 + 5));
  // Past every limit it announced: taken back, each a strike; the third
  // faults the worker and returns the fourth with it.
  EXPECT_EQ(core_->counters().leases_reclaimed, 3u);
  EXPECT_EQ(core_->workers().all().at("w").state, proto::WORKER_STATE_FAULTED);
  EXPECT_TRUE(core_->workers().all().at("w").leased.empty());
}

// The inputs are journaled with the job (no witness bytes), counted by
// admission, recovered after a restart and sent in each JOB as input_json
// (no frame, witness_bytes 0, no reference); the same inputs under the same
// request id are the same job, other inputs are refused.
TEST_F(BrokerCoreTest, AJobFromInputsIsJournaledRecoveredAndSentAsInputJson) {
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 0);
  auto out = SubmitInputs(*core_, now_, "r1", kInputs);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  Commit();
  const uint64_t input_bytes = kInputs[0].size() + kInputs[1].size();
  EXPECT_EQ(core_->Status(now_).queued_witness_bytes(), input_bytes);
  EXPECT_EQ(core_->admission().witness_bytes(), input_bytes);
  std::string fault;
  EXPECT_FALSE(journal_->ReadWitness(1, 0, &fault));  // no witness journaled
  auto stored = journal_->GetJob(1);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->inputs_size(), 2);
  EXPECT_EQ(stored->inputs(1), kInputs[1]);

  Restart();
  EXPECT_EQ(core_->admission().witness_bytes(), input_bytes);
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 2);
  auto jobs = DispatchedJobs(*core_, now_);
  ASSERT_EQ(jobs.size(), 2u);
  for (const Outgoing& job : jobs) {
    const uint32_t p = job.envelope.job().item().partition();
    EXPECT_TRUE(job.frames.empty());
    EXPECT_EQ(job.envelope.job().witness_bytes(), 0u);
    EXPECT_FALSE(job.envelope.job().has_witness_ref());
    EXPECT_EQ(job.envelope.job().input_json(), kInputs[p]);
    EXPECT_TRUE(job.envelope.job().public_signals_sha256().empty());
    EXPECT_EQ(job.envelope.job().partitions(), 2u);
  }
  // The same inputs: the same job. Other inputs (or fewer) under the same id: refused.
  out = SubmitInputs(*core_, now_, "r1", kInputs);
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  EXPECT_TRUE(out[0].envelope.submit_reply().duplicate());
  EXPECT_EQ(out[0].envelope.submit_reply().job_seq(), 1u);
  for (const std::vector<std::string>& other :
       {std::vector<std::string>{kInputs[0], R"({"a": "5", "b": ["7", "12"]})"}, std::vector<std::string>{kInputs[0]},
        std::vector<std::string>{kInputs[1], kInputs[0]}}) {
    out = SubmitInputs(*core_, now_, "r1", other);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error()) << out[0].envelope.DebugString();
    EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_REQUEST_ID_REUSED);
  }
  // Inline witnesses with the same bytes are another payload too.
  EXPECT_EQ(core_->counters().jobs_submitted, 0u);  // this life accepted nothing new
  EXPECT_EQ(core_->jobs().size(), 1u);
}

// Everything is checked before anything is accepted, and each refusal names
// the partition: all-or-nothing (no mix with frames or references), the
// size (TOO_LARGE over --max-input-bytes), a JSON object of bounded depth
// (hostile bytes neither crash nor hang the broker), the digests' count.
TEST_F(BrokerCoreTest, InputsAreCheckedBeforeAnythingIsAcceptedNamingThePartition) {
  BrokerOptions options;
  options.max_input_bytes = 4096;
  options.max_partitions = 4;
  Make(options);
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 1);
  int round = 0;  // each refusal under its own request id
  auto refused = [&](const std::vector<std::string>& inputs, proto::ErrorKind kind,
                     const std::vector<std::string>& says, fleet::Frames frames = {},
                     const std::vector<proto::WitnessRef>& refs = {}, const std::vector<std::string>& digests = {}) {
    auto out = SubmitInputs(*core_, now_, "r" + std::to_string(++round), inputs, digests, std::move(frames), refs);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_error()) << "refusal " << round << ": " << out[0].envelope.DebugString();
    EXPECT_EQ(out[0].envelope.error().kind(), kind) << out[0].envelope.error().message();
    for (const std::string& word : says) {
      EXPECT_NE(out[0].envelope.error().message().find(word), std::string::npos) << out[0].envelope.error().message();
    }
  };
  const std::string good = kInputs[0];
  fleet::Frames frame;
  frame.push_back(fleet::FrameFromString("w0"));
  refused({good}, proto::ERROR_KIND_BAD_REQUEST, {"not a mix"}, std::move(frame));
  refused({good}, proto::ERROR_KIND_BAD_REQUEST, {"not a mix"}, {}, {MakeRef("file:///w/0.wtns", 100)});
  std::string big = R"({"a": ")" + std::string(4096, '1') + R"("})";
  refused({good, big}, proto::ERROR_KIND_TOO_LARGE, {"partition 1", "--max-input-bytes", "4096"});
  refused({good, "[1, 2]"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 1", "JSON object"});
  refused({"\"a\""}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "JSON object"});
  refused({""}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "empty"});
  refused({good, good, R"({"a": )"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 2", "not valid JSON"});
  refused({R"({"a": "1"} {"b": "2"})"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "not valid JSON"});
  refused({R"({"a": NaN})"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0"});
  refused({"{\"a\": \"\xff\xfe\"}"}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0"});  // not UTF-8
  refused({std::string("{\"a\": \"1\"}\0", 11)}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0"});
  // Nesting: 32 levels are fine, 33 are not; 4000 open brackets are refused at once.
  auto nested = [](int depth) {
    std::string json = "{\"a\": ";
    for (int d = 1; d < depth; ++d) json += "[";
    json += "\"1\"";
    for (int d = 1; d < depth; ++d) json += "]";
    return json + "}";
  };
  refused({nested(33)}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "deeper than 32"});
  refused({"{\"a\": " + std::string(4000, '[')}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "deeper than 32"});
  // Random bytes: never a crash, never accepted.
  uint64_t state = 0x9e3779b97f4a7c15;
  for (int round = 0; round < 200; ++round) {
    std::string noise(1 + round * 7 % 300, '\0');
    for (char& c : noise) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      c = static_cast<char>(state >> 56);
    }
    noise[0] = static_cast<char>(round % 2 ? '{' : noise[0]);
    auto out = SubmitInputs(*core_, now_, "noise" + std::to_string(round), {noise});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(out[0].envelope.has_error()) << round;
  }
  refused({good, good, good, good, good}, proto::ERROR_KIND_BAD_REQUEST, {"5 inputs", "at most 4"});
  refused({good, good}, proto::ERROR_KIND_BAD_REQUEST, {"one per partition"}, {}, {}, {std::string(32, 'd')});
  refused({good}, proto::ERROR_KIND_BAD_REQUEST, {"partition 0", "32"}, {}, {}, {std::string(31, 'd')});
  EXPECT_EQ(core_->jobs().size(), 0u);
  EXPECT_EQ(core_->counters().jobs_submitted, 0u);
  EXPECT_NO_THROW(Commit());
  // The bounds themselves pass.
  auto out = SubmitInputs(*core_, now_, "ok", {nested(32), R"({"a": ")" + std::string(4096 - 10, '1') + R"("})"});
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
}

// A job from inputs goes only to a worker that announced its circuit in
// Ready.generates: one that only holds the circuit never gets it (and is not
// blocked by it: witnesses of the same circuit go on), and a generating
// worker that dies has the same inputs sent again to another.
TEST_F(BrokerCoreTest, AJobFromInputsGoesOnlyToWorkersThatGenerateItsCircuit) {
  ReadyGenerating(*core_, now_, "w-prove", "prove-only", {"c1"}, {}, 4);
  ReadyGenerating(*core_, now_, "w-gen", "gen", {"c1", "c2"}, {"c1"}, 0);
  Take();
  auto out = SubmitInputs(*core_, now_, "in", {kInputs[0]});  // seq 1
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  Submit("cl", "wit", proto::PRIORITY_NORMAL, 1);  // seq 2, inline witness of c1
  auto jobs = Dispatch();
  using J = std::tuple<std::string, uint64_t, uint32_t>;
  EXPECT_EQ(jobs, (std::vector<J>{{"w-prove", 2, 0}}));  // the witness job; the inputs wait
  EXPECT_EQ(core_->queue().size(), 1u);
  Credit("w-gen", 1);
  ASSERT_EQ(Dispatch(), (std::vector<J>{{"w-gen", 1, 0}}));
  EXPECT_EQ((leases_[{1, 0}].input_json()), kInputs[0]);
  Started("w-gen", 1, 0);
  // w-gen dies; another generating worker gets the same inputs again.
  ReadyGenerating(*core_, now_, "w-gen2", "gen2", {"c1"}, {"c1"}, 1);
  for (int i = 0; i < 5; ++i) {
    now_ += options_.heartbeat_interval;
    Heartbeat("w-prove", proto::WORKER_STATE_READY);
    Heartbeat("w-gen2", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  Take();
  EXPECT_EQ(core_->workers().all().count("w-gen"), 0u);
  jobs = Dispatch();
  ASSERT_EQ(jobs, (std::vector<J>{{"w-gen2", 1, 0}}));
  EXPECT_EQ((leases_[{1, 0}].input_json()), kInputs[0]);
  EXPECT_EQ((leases_[{1, 0}].attempt()), 2u);
  Result("w-gen2", 1, 0);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].job_seq(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  // A finished job's inputs leave the journal (as a witness's bytes do).
  Commit();
  auto stored = journal_->GetJob(1);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(stored->inputs_size(), 0);
  // Status shows what each worker generates.
  auto status = core_->Status(now_);
  bool seen = false;
  for (const auto& info : status.workers()) {
    if (info.worker_id() == "gen2") {
      seen = true;
      ASSERT_EQ(info.generates_size(), 1);
      EXPECT_EQ(info.generates(0), "c1");
    } else {
      EXPECT_EQ(info.generates_size(), 0) << info.worker_id();
    }
  }
  EXPECT_TRUE(seen);
}

// No worker generates the circuit: refused as a circuit no worker holds is
// (UNKNOWN_CIRCUIT), queued with --accept-unrouted, and just after a restart
// queued for a circuit some worker generated in an earlier life.
TEST_F(BrokerCoreTest, AJobFromInputsForACircuitNobodyGeneratesIsHandledLikeAnUnroutedCircuit) {
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {}, 1);
  auto out = SubmitInputs(*core_, now_, "r1", {kInputs[0]});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);
  EXPECT_NE(out[0].envelope.error().message().find("generates witnesses for circuit 'c1'"), std::string::npos)
      << out[0].envelope.error().message();
  EXPECT_EQ(core_->jobs().size(), 0u);

  // An earlier life's generator is remembered: within the grace the job waits for it.
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 1);
  Commit();
  Restart();
  core_->Tick(now_);
  out = SubmitInputs(*core_, now_, "r2", {kInputs[0]});
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  // It reconnects without the generator: nothing is sent to it.
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {}, 1);
  EXPECT_TRUE(Dispatch().empty());
  now_ += 2 * options_.liveness * options_.heartbeat_interval + std::chrono::milliseconds(1);
  Heartbeat("w", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  Take();
  out = SubmitInputs(*core_, now_, "r3", {kInputs[0]});
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);

  BrokerOptions options;
  options.accept_unrouted = true;
  Make(options);
  out = SubmitInputs(*core_, now_, "r1", {kInputs[0]}, {}, {}, {}, "nobody-has-it");
  ASSERT_TRUE(out[0].envelope.has_submit_reply()) << out[0].envelope.DebugString();
  EXPECT_EQ(core_->queue().size(), 1u);
}

// Cancel and deadlines work on jobs from inputs as on any job: their items
// leave the queue of jobs from inputs, admission gives their bytes back.
TEST_F(BrokerCoreTest, AJobFromInputsIsCancelledAndExpiresLikeAnyJob) {
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 1);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "r1", kInputs)[0].envelope.has_submit_reply());
  ASSERT_EQ(DispatchedJobs(*core_, now_).size(), 1u);
  EXPECT_EQ(core_->queue().size(), 1u);
  proto::Envelope cancel;
  cancel.mutable_cancel()->set_job_seq(1);
  core_->HandleClient("cl", cancel, now_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_CANCELLED);
  EXPECT_EQ(core_->queue().size(), 0u);
  EXPECT_EQ(core_->admission().witness_bytes(), 0u);

  proto::Envelope e;
  e.set_correlation_id(2);
  e.mutable_submit()->set_request_id("stale-soon");
  e.mutable_submit()->set_circuit_id("c1");
  e.mutable_submit()->add_inputs(kInputs[0]);
  e.mutable_submit()->set_deadline_unix_s(wire::UnixNow() + 0.2);
  core_->HandleClient("cl", e, now_);
  ASSERT_TRUE(Take()[0].envelope.has_submit_reply());
  std::this_thread::sleep_for(milliseconds(300));  // deadlines are wall-clock times
  now_ += options_.heartbeat_interval;
  Heartbeat("w", proto::WORKER_STATE_READY);
  core_->Tick(now_);
  auto out = Take();
  for (auto& o : out) EXPECT_FALSE(o.envelope.has_job()) << "an expired job is never leased";
  results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_EXPIRED);
  EXPECT_EQ(core_->queue().size(), 0u);
  EXPECT_EQ(core_->admission().witness_bytes(), 0u);
  EXPECT_TRUE(DispatchedJobs(*core_, now_).empty());
}

// Ready.generates is bounded like Ready.circuits and must name circuits the
// worker holds; otherwise the READY is refused.
TEST_F(BrokerCoreTest, AReadyWhoseGeneratesIsNotASubsetOfItsCircuitsIsRefused) {
  auto refused = [&](const std::vector<std::string>& circuits, const std::vector<std::string>& generates,
                     const std::string& says) {
    ReadyGenerating(*core_, now_, "w", "w", circuits, generates, 0);
    auto out = Take();
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].envelope.has_disconnect());
    EXPECT_NE(out[0].envelope.disconnect().reason().find(says), std::string::npos)
        << out[0].envelope.disconnect().reason();
    EXPECT_EQ(core_->workers().all().count("w"), 0u);
  };
  refused({"c1"}, {"c2"}, "not among its circuits");
  refused({"c1"}, {std::string(200, 'c')}, "at most 128");
  refused({"c1"}, {std::string("c\0x", 3)}, "control byte");
  refused({"c1"}, std::vector<std::string>(257, "c1"), "generates lists 257 entries");
  EXPECT_EQ(core_->counters().registrations_refused, 4u);
  ReadyGenerating(*core_, now_, "w", "w", {"c1", "c2"}, {"c2"}, 0);
  EXPECT_TRUE(Take().empty());
  ASSERT_EQ(core_->workers().all().count("w"), 1u);
  EXPECT_EQ(core_->workers().all().at("w").generates, (std::set<std::string>{"c2"}));
}

class BrokerVerifyTest : public BrokerCoreTest {
 protected:
  static std::string Fixture(const std::string& file) {
    return std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12/" + file;
  }
  void MakeVerifying() {
    BrokerOptions options;
    options.verification_keys = std::make_shared<VerificationKeys>(
        VerificationKeys::Load({"c1=" + Fixture("verification_key.json")}));
    Make(options);
  }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void SendResult(const std::string& identity, uint64_t seq, const std::string& proof, const std::string& pub) {
    proto::Envelope e;
    auto* result = e.mutable_result();
    *result->mutable_item() = Ref(seq, 0);
    result->set_circuit_id(leases_[{seq, 0}].circuit_id());
    result->set_request_id(leases_[{seq, 0}].request_id());
    result->set_ok(true);
    result->set_proof_json(proof);
    result->set_public_json(pub);
    core_->HandleWorker(identity, e, now_);
  }
  // Runs the broker's pending verifications here (the server runs them on
  // its verifier threads); returns what the core sent then.
  std::vector<Outgoing> VerifyPending() {
    std::vector<VerifyTask> tasks;
    tasks.swap(core_->verify_outbox());
    for (const VerifyTask& task : tasks) core_->OnVerified(VerifyResultNow(task), now_);
    return Take();
  }
};

// A client that knows the public signals it expects sends their digest with
// the SUBMIT: a witness committing to others is refused before anything is
// proved (the broker reads w[1..nPublic] with the key's nPublic); a digest
// count or size that does not fit is refused too; the right one is accepted.
TEST_F(BrokerVerifyTest, PublicSignalsDigestFromTheClientIsCheckedAgainstTheWitness) {
  MakeVerifying();
  Ready("w", "w", {"c1"}, 1);
  const std::string witness = Slurp(Fixture("witness.wtns"));
  std::string why;
  const auto right = wire::PublicSignalsDigestOfJson(Slurp(Fixture("public.json")), &why);
  ASSERT_TRUE(right) << why;
  auto submit = [&](const std::string& id, std::vector<std::string> digests) {
    proto::Envelope e;
    e.set_correlation_id(1);
    auto* request = e.mutable_submit();
    request->set_request_id(id);
    request->set_circuit_id("c1");
    request->add_witness_bytes(witness.size());
    for (auto& digest : digests) request->add_public_signals_sha256(digest);
    fleet::Frames frames;
    frames.push_back(fleet::FrameFromString(witness));
    core_->HandleClient("cl", e, now_, {}, std::move(frames));
    auto out = Take();
    EXPECT_EQ(out.size(), 1u);
    return out.empty() ? proto::Envelope{} : out[0].envelope;
  };
  std::string other = *right;
  other[0] = static_cast<char>(other[0] ^ 1);
  proto::Envelope refused = submit("other", {other});
  ASSERT_TRUE(refused.has_error());
  EXPECT_EQ(refused.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(refused.error().message().find("other public signals"), std::string::npos) << refused.error().message();
  refused = submit("two", {*right, *right});
  EXPECT_EQ(refused.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(refused.error().message().find("one per partition"), std::string::npos) << refused.error().message();
  refused = submit("short", {right->substr(0, 31)});
  EXPECT_EQ(refused.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_EQ(core_->jobs().size(), 0u);
  proto::Envelope accepted = submit("right", {*right});
  EXPECT_TRUE(accepted.has_submit_reply()) << accepted.DebugString();
  EXPECT_EQ(core_->jobs().size(), 1u);
}

// The digest is SHA-256 of the decimal strings joined with ',', whatever the
// JSON's spacing; anything but an array of canonical decimal strings is refused.
TEST(PublicSignalsDigest, IsTheSha256OfTheDecimalsJoinedWithCommas) {
  // printf 33,1 | sha256sum
  EXPECT_EQ(wire::DigestHex(wire::PublicSignalsDigest({"33", "1"})),
            "926a5c8832ebac1909565c452722bdc510b9b9bd901bf8132e63818cc5aadff9");
  std::string why;
  EXPECT_EQ(wire::PublicSignalsDigestOfJson("[\n \"33\",\n \"1\"\n]", &why), wire::PublicSignalsDigest({"33", "1"}));
  for (const char* bad : {"{}", "[33]", "[\"033\"]", "[\"-1\"]", "[\"\"]", "not json"}) {
    EXPECT_FALSE(wire::PublicSignalsDigestOfJson(bad, &why)) << bad;
  }
}

TEST_F(BrokerVerifyTest, AForgedOrForeignProofNeverReachesTheClient) {
  MakeVerifying();
  const std::string witness = Slurp(Fixture("witness.wtns"));
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  Ready("w-evil", "evil", {"c1"}, 1);
  SubmitWitnesses("cl", "r1", {witness});
  ASSERT_EQ(Dispatch().size(), 1u);
  // 1. A forged proof: one digit of pi_a changed.
  std::string forged = proof;
  size_t digit = forged.find_first_of("123456789", forged.find("pi_a"));
  forged[digit] = forged[digit] == '1' ? '2' : '1';
  SendResult("w-evil", 1, forged, pub);
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());  // nothing before the verdict
  auto out = VerifyPending();
  EXPECT_TRUE(ResultsTo(out, "cl").empty());
  EXPECT_EQ(core_->counters().results_rejected, 1u);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].state, WorkItem::State::kQueued);
  EXPECT_EQ(core_->jobs().Find(1)->items[0].attempts, 0u);  // refunded: the worker's fault
  // 2. Text that is not JSON.
  Credit("w-evil", 1);
  ASSERT_EQ(Dispatch().size(), 1u);
  SendResult("w-evil", 1, "not json", "[]");
  VerifyPending();
  EXPECT_EQ(core_->counters().results_rejected, 2u);
  // An honest worker's valid proof is delivered.
  Ready("w-good", "good", {"c1"}, 1);
  auto jobs = Dispatch();
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(std::get<0>(jobs[0]), "w-good");
  SendResult("w-good", 1, proof, pub);
  out = VerifyPending();
  auto results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).worker_id(), "good");
}

TEST_F(BrokerVerifyTest, AValidProofOfAnotherWitnessIsRejected) {
  MakeVerifying();
  // The job's witness differs from the fixture's in its first public signal:
  // the fixture's proof is valid, but not for this job.
  std::string witness = Slurp(Fixture("witness.wtns"));
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  // w[1] sits after the header (magic, version, sections) and w[0]: find w[0] = 1 and bump the byte after it.
  const size_t n8 = 32;
  // Section 2's values end the file: w[1] is at size - n8 * (nWitness - 1).
  uint32_t n_witness = 0;
  std::memcpy(&n_witness, witness.data() + 12 + 12 + 4 + n8, 4);
  witness[witness.size() - n8 * (n_witness - 1)] ^= 1;
  Ready("w-evil", "evil", {"c1"}, 1);
  SubmitWitnesses("cl", "r1", {witness});
  ASSERT_EQ(Dispatch().size(), 1u);
  SendResult("w-evil", 1, proof, pub);
  auto out = VerifyPending();
  EXPECT_TRUE(ResultsTo(out, "cl").empty());
  EXPECT_EQ(core_->counters().results_rejected, 1u);
  EXPECT_EQ(Metric("zkfleet_broker_results_rejected_total", {{"reason", "wrong_public_signals"}}), 1);
}

TEST_F(BrokerVerifyTest, ACircuitWithoutAVerificationKeyIsRefusedAtSubmit) {
  MakeVerifying();
  Ready("wA", "A", {"c2"}, 1);
  auto out = Submit("cl", "r1", proto::PRIORITY_NORMAL, 1, "c2");
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT);
  EXPECT_NE(out[0].envelope.error().message().find("--verification-key"), std::string::npos);
}

// The broker cannot read a referenced witness: with the circuit's key it
// requires the client's public-signals digests, and a proof whose public
// signals hash to anything else never reaches the client.
TEST_F(BrokerVerifyTest, AReferenceIsBoundToItsProofByTheClientsPublicSignalsDigest) {
  MakeVerifying();
  Ready("w", "w", {"c1"}, 2);
  const std::string witness = Slurp(Fixture("witness.wtns"));
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  std::string why;
  const auto right = wire::PublicSignalsDigestOfJson(pub, &why);
  ASSERT_TRUE(right) << why;
  const proto::WitnessRef ref = MakeRef("http://127.0.0.1:1/w.wtns", witness.size());
  auto out = SubmitRefs(*core_, now_, "none", {ref});
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(out[0].envelope.error().message().find("public_signals_sha256"), std::string::npos);
  EXPECT_EQ(core_->jobs().size(), 0u);

  std::string other = *right;
  other[0] = static_cast<char>(other[0] ^ 1);
  ASSERT_TRUE(SubmitRefs(*core_, now_, "right", {ref}, {*right})[0].envelope.has_submit_reply());
  ASSERT_TRUE(SubmitRefs(*core_, now_, "other", {ref}, {other})[0].envelope.has_submit_reply());
  ASSERT_EQ(Dispatch().size(), 2u);
  // The worker gets the digest to check the witness against before proving.
  EXPECT_EQ((leases_[{1, 0}].public_signals_sha256()), *right);
  EXPECT_EQ((leases_[{2, 0}].public_signals_sha256()), other);
  SendResult("w", 1, proof, pub);
  SendResult("w", 2, proof, pub);
  out = VerifyPending();
  auto results = ResultsTo(out, "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].job_seq(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(core_->counters().results_rejected, 1u);
  EXPECT_EQ(Metric("zkfleet_broker_results_rejected_total", {{"reason", "wrong_public_signals"}}), 1);
  EXPECT_EQ(core_->jobs().Find(2)->items[0].state, WorkItem::State::kQueued);
}

// A job from inputs with the circuit's key: without digests every proof is
// still verified (for the public signals it carries); with them each
// proof's public signals must also hash to the client's digest, which the
// JOB carries to the worker.
TEST_F(BrokerVerifyTest, AJobFromInputsIsVerifiedAndBoundToTheDigestWhenGiven) {
  MakeVerifying();
  ReadyGenerating(*core_, now_, "w", "w", {"c1"}, {"c1"}, 4);
  const std::string proof = Slurp(Fixture("proof.json")), pub = Slurp(Fixture("public.json"));
  std::string why;
  const auto right = wire::PublicSignalsDigestOfJson(pub, &why);
  ASSERT_TRUE(right) << why;
  std::string other = *right;
  other[0] = static_cast<char>(other[0] ^ 1);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "none", {kInputs[0]})[0].envelope.has_submit_reply());         // 1
  ASSERT_TRUE(SubmitInputs(*core_, now_, "right", {kInputs[0]}, {*right})[0].envelope.has_submit_reply());  // 2
  ASSERT_TRUE(SubmitInputs(*core_, now_, "other", {kInputs[0]}, {other})[0].envelope.has_submit_reply());   // 3
  ASSERT_TRUE(SubmitInputs(*core_, now_, "forged", {kInputs[1]})[0].envelope.has_submit_reply());       // 4
  ASSERT_EQ(Dispatch().size(), 4u);
  EXPECT_TRUE((leases_[{1, 0}].public_signals_sha256().empty()));
  EXPECT_EQ((leases_[{2, 0}].public_signals_sha256()), *right);
  EXPECT_EQ((leases_[{3, 0}].public_signals_sha256()), other);
  SendResult("w", 1, proof, pub);
  SendResult("w", 2, proof, pub);
  SendResult("w", 3, proof, pub);
  std::string forged = proof;
  size_t digit = forged.find_first_of("123456789", forged.find("pi_a"));
  forged[digit] = forged[digit] == '1' ? '2' : '1';
  SendResult("w", 4, forged, pub);
  auto results = ResultsTo(VerifyPending(), "cl");
  ASSERT_EQ(results.size(), 2u);
  std::set<uint64_t> succeeded;
  for (const auto& result : results) {
    EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED);
    succeeded.insert(result.job_seq());
  }
  EXPECT_EQ(succeeded, (std::set<uint64_t>{1, 2}));
  EXPECT_EQ(core_->counters().results_rejected, 2u);
  EXPECT_EQ(Metric("zkfleet_broker_results_rejected_total", {{"reason", "wrong_public_signals"}}), 1);
  EXPECT_EQ(core_->jobs().Find(3)->items[0].state, WorkItem::State::kQueued);
  EXPECT_EQ(core_->jobs().Find(4)->items[0].state, WorkItem::State::kQueued);
}

// Issue 47, item 4: a job from inputs without the client's digest. A
// verified proof shows only that its prover knows *a* witness for the
// signals it carries (another job's proof verifies too), so the broker holds
// it and asks a worker of another key for the signals of the same inputs (a
// signals_only lease): agreeing keys deliver it (signals_keys = 2), two keys
// outvoting the prover get it struck and the item proved again bound to
// their signals, two keys that disagree with nobody to decide fail the job,
// and a fleet of one key delivers at once on its word (signals_keys = 1).
class SignalsCheckTest : public BrokerVerifyTest {
 protected:
  void SetUp() override {
    BrokerOptions options;
    options.verification_keys = std::make_shared<VerificationKeys>(
        VerificationKeys::Load({"c1=" + Fixture("verification_key.json")}));
    options.verdict_confirm_wait = std::chrono::milliseconds(1000);
    Make(options);
    proof_ = Slurp(Fixture("proof.json"));
    pub_ = Slurp(Fixture("public.json"));
    std::string why;
    auto digest = wire::PublicSignalsDigestOfJson(pub_, &why);
    ASSERT_TRUE(digest) << why;
    digest_ = *digest;
  }
  // The one JOB a Dispatch() sends: its worker, or "" when none went out.
  std::string LeaseHolder(uint64_t seq) {
    auto jobs = Dispatch();
    for (const auto& [identity, job_seq, partition] : jobs) {
      if (job_seq == seq) return identity;
    }
    return "";
  }
  void SendSignals(const std::string& identity, uint64_t seq, const std::string& pub) {
    proto::Envelope e;
    auto* result = e.mutable_result();
    *result->mutable_item() = Ref(seq, 0);
    result->set_circuit_id("c1");
    result->set_request_id(leases_[{seq, 0}].request_id());
    result->set_ok(true);
    result->set_public_json(pub);
    core_->HandleWorker(identity, e, now_);
  }
  // Two keys' workers "a" and "b" generating c1; job 1 from inputs, proved
  // by one of them, held; its signals check leased to the other. Returns
  // {prover, checker}.
  std::pair<std::string, std::string> ProvedAndHeld() {
    ReadyGenerating(*core_, now_, "a", "a", {"c1"}, {"c1"}, 4);
    ReadyGenerating(*core_, now_, "b", "b", {"c1"}, {"c1"}, 4);
    EXPECT_TRUE(SubmitInputs(*core_, now_, "j", {kInputs[0]})[0].envelope.has_submit_reply());
    const std::string prover = LeaseHolder(1);
    EXPECT_FALSE((leases_[{1, 0}].signals_only()));
    SendResult(prover, 1, proof_, pub_);
    EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());  // verified, but held
    const std::string checker = LeaseHolder(1);
    EXPECT_FALSE(checker.empty());
    return {prover, checker};
  }
  std::string proof_, pub_, digest_;
  const std::string other_pub_ = "[\"1\",\"2\"]";  // other signals, as many as the fixture's nPublic (2)
};

TEST_F(SignalsCheckTest, AnotherKeysAgreeingSignalsDeliverTheProof) {
  const auto [prover, checker] = ProvedAndHeld();
  ASSERT_FALSE(checker.empty());
  EXPECT_NE(checker, prover);  // never the prover's key
  EXPECT_TRUE((leases_[{1, 0}].signals_only()));
  EXPECT_TRUE((leases_[{1, 0}].public_signals_sha256().empty()));
  SendSignals(checker, 1, pub_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  ASSERT_EQ(results[0].partitions_size(), 1);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 2u);
  EXPECT_EQ(results[0].partitions(0).worker_id(), prover);
  EXPECT_EQ(core_->counters().signals_confirmed, 1u);
}

TEST_F(SignalsCheckTest, TwoKeysThatDisagreeWithNobodyToDecideFailTheJobWithoutAProof) {
  const auto [prover, checker] = ProvedAndHeld();
  ASSERT_FALSE(checker.empty());
  SendSignals(checker, 1, other_pub_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_FAILED);
  EXPECT_EQ(results[0].partitions_size(), 0);
  EXPECT_NE(results[0].error().find("different public signals"), std::string::npos) << results[0].error();
  EXPECT_EQ(core_->counters().signals_confirmed, 0u);
}

TEST_F(SignalsCheckTest, TwoKeysOutvotingTheProverGetItStruckAndTheItemProvedAgainBoundToTheirSignals) {
  for (const char* id : {"a", "b", "c"}) ReadyGenerating(*core_, now_, id, id, {"c1"}, {"c1"}, 4);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "j", {kInputs[0]})[0].envelope.has_submit_reply());
  // The prover answers with a valid proof of other signals (another job's).
  const std::string prover = LeaseHolder(1);
  SendResult(prover, 1, proof_, pub_);
  EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());
  std::set<std::string> checkers;
  for (int round = 0; round < 2; ++round) {
    const std::string checker = LeaseHolder(1);
    ASSERT_FALSE(checker.empty()) << round;
    EXPECT_NE(checker, prover);
    EXPECT_TRUE(checkers.insert(checker).second) << "asked twice: " << checker;
    EXPECT_TRUE((leases_[{1, 0}].signals_only()));
    SendSignals(checker, 1, other_pub_);
    EXPECT_TRUE(ResultsTo(Take(), "cl").empty()) << round;
  }
  // Proved again, bound to the two keys' signals, not by the struck prover.
  std::string why;
  const auto agreed = wire::PublicSignalsDigestOfJson(other_pub_, &why);
  ASSERT_TRUE(agreed) << why;
  const std::string again = LeaseHolder(1);
  ASSERT_FALSE(again.empty());
  EXPECT_NE(again, prover);
  EXPECT_FALSE((leases_[{1, 0}].signals_only()));
  EXPECT_EQ((leases_[{1, 0}].public_signals_sha256()), *agreed);
  EXPECT_EQ(core_->counters().signals_disputed, 2u);
  auto owner = [](const std::string& id) { return StrikeOwner("", id); };  // plaintext: the worker id
  EXPECT_EQ(core_->strikes(owner(prover), now_), 1u);
  for (const std::string& checker : checkers) EXPECT_EQ(core_->strikes(owner(checker), now_), 0u);
  // The old proof again is refused now: its signals are not the agreed ones.
  SendResult(again, 1, proof_, pub_);
  EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());
  EXPECT_EQ(core_->counters().results_rejected, 1u);
}

// A checker that takes the lease and never answers holds nothing up: once
// the wait is over and its lease comes back (here: it leaves), the proof is
// delivered on one key's word, never left waiting in the queue.
TEST_F(SignalsCheckTest, ACheckerThatNeverAnswersPastTheWaitDoesNotStrandTheProof) {
  const auto [prover, checker] = ProvedAndHeld();
  ASSERT_FALSE(checker.empty());
  // Past the wait in steps the workers' heartbeats keep them alive through,
  // the checker's lease still out.
  for (int step = 0; step < 11; ++step) {
    now_ += std::chrono::milliseconds(100);
    Heartbeat("a", proto::WORKER_STATE_READY);
    Heartbeat("b", proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  EXPECT_TRUE(ResultsTo(Take(), "cl").empty());
  proto::Envelope bye;
  bye.mutable_disconnect()->set_reason("leaving");
  core_->HandleWorker(checker, bye, now_);
  for (int step = 0; step < 11; ++step) {
    now_ += std::chrono::milliseconds(100);
    Heartbeat(prover, proto::WORKER_STATE_READY);
    core_->Tick(now_);
  }
  core_->Dispatch(now_);
  auto results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 1u);
}

TEST_F(SignalsCheckTest, OneKeyVouchesWhereNoOtherServesTheCircuitOrNoneComesInTime) {
  ReadyGenerating(*core_, now_, "a", "a", {"c1"}, {"c1"}, 4);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "alone", {kInputs[0]})[0].envelope.has_submit_reply());
  ASSERT_EQ(LeaseHolder(1), "a");
  SendResult("a", 1, proof_, pub_);
  auto results = ResultsTo(VerifyPending(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 1u);

  // A second key served the circuit, then went: the wait ends the check.
  ReadyGenerating(*core_, now_, "b", "b", {"c1"}, {"c1"}, 4);
  Heartbeat("b", proto::WORKER_STATE_DRAINING);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "waited", {kInputs[1]})[0].envelope.has_submit_reply());
  ASSERT_EQ(LeaseHolder(2), "a");
  SendResult("a", 2, proof_, pub_);
  EXPECT_TRUE(ResultsTo(VerifyPending(), "cl").empty());
  EXPECT_EQ(LeaseHolder(2), "");  // only the prover's key is READY: nobody to ask
  now_ += std::chrono::milliseconds(1001);
  core_->Tick(now_);
  results = ResultsTo(Take(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 1u);

  // With the client's digest nothing is asked: the digest binds the signals.
  ReadyGenerating(*core_, now_, "c", "c", {"c1"}, {"c1"}, 4);
  ASSERT_TRUE(SubmitInputs(*core_, now_, "bound", {kInputs[0]}, {digest_})[0].envelope.has_submit_reply());
  const std::string prover = LeaseHolder(3);
  SendResult(prover, 3, proof_, pub_);
  results = ResultsTo(VerifyPending(), "cl");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].partitions(0).signals_keys(), 0u);
}


}  // namespace
}  // namespace zkfleet::broker

namespace zkfleet::broker {
namespace {

// Issue 49, item 4: an admin's RELOAD is answered with what the server's
// reload did; other roles are refused, and a core given no reloader says so.
// LiveJobsByCircuit is what the reload keeps busy circuits' keys by.
TEST_F(BrokerCoreTest, AReloadIsAnAdminsAndCountsTheLiveJobsOfEachCircuit) {
  proto::Envelope reload;
  reload.set_correlation_id(7);
  reload.mutable_reload();
  core_->HandleClient("admin", reload, now_);
  auto out = Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_NE(out[0].envelope.error().message().find("nothing to reload"), std::string::npos);

  int reloads = 0;
  core_->set_reloader([&reloads] {
    ++reloads;
    proto::ReloadReply reply;
    reply.add_circuits_added("new-circuit");
    return reply;
  });
  core_->HandleClient("submitter", reload, now_, KeyPeer("submitter", Role::kSubmit));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_error());
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
  core_->HandleClient("observer", reload, now_, KeyPeer("observer", Role::kObserve));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_FORBIDDEN);
  EXPECT_EQ(reloads, 0);
  core_->HandleClient("ops", reload, now_, KeyPeer("ops", Role::kAdmin));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].envelope.has_reload_reply()) << out[0].envelope.DebugString();
  EXPECT_EQ(out[0].envelope.correlation_id(), 7u);
  EXPECT_EQ(out[0].envelope.reload_reply().circuits_added(0), "new-circuit");
  EXPECT_EQ(reloads, 1);

  // Workers named in the RELOAD are sent a ReloadCommand; unknown ids are said.
  Ready("w", "w", {"c1", "c2"}, 0);  // no credit: the jobs stay queued
  proto::Envelope with_workers;
  with_workers.mutable_reload()->add_workers("w");
  with_workers.mutable_reload()->add_workers("ghost");
  core_->HandleClient("ops", with_workers, now_, KeyPeer("ops", Role::kAdmin));
  out = Take();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].identity, "w");
  EXPECT_TRUE(out[0].envelope.has_reload_command());
  ASSERT_TRUE(out[1].envelope.has_reload_reply());
  EXPECT_EQ(out[1].envelope.reload_reply().workers_told(0), "w");
  EXPECT_EQ(out[1].envelope.reload_reply().workers_unknown(0), "ghost");
  proto::Envelope too_many;
  for (int i = 0; i < 4097; ++i) too_many.mutable_reload()->add_workers("w" + std::to_string(i));
  core_->HandleClient("ops", too_many, now_, KeyPeer("ops", Role::kAdmin));
  out = Take();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].envelope.error().kind(), proto::ERROR_KIND_BAD_REQUEST);
  Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
  Submit("cl", "r2", proto::PRIORITY_NORMAL, 1);
  Submit("cl", "r3", proto::PRIORITY_NORMAL, 1, "c2");
  Take();
  EXPECT_EQ(core_->LiveJobsByCircuit(), (std::map<std::string, size_t>{{"c1", 2}, {"c2", 1}}));
}

}  // namespace
}  // namespace zkfleet::broker
