// BrokerCore and its journal: what a restart keeps, what an uncommitted
// SUBMIT leaves (nothing), admission and size bounds, witness files, keys as
// identities and roles, and a damaged or shared data directory.
#include "unit/broker/broker_core_test_support.hpp"

namespace zkfleet::broker {
namespace {

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
  auto mine = Await("clientA2", 1);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].partitions(0).proof_json(), "proof-1-0");
  EXPECT_EQ(mine[0].partitions(0).attempts(), 2u);  // the lost started lease counted
}

// A job of max_attempts 1 (job 1, two partitions) whose partitions two
// workers, wA and wB, have each started: every lost lease ends it.
class OneAttemptJobTest : public BrokerCoreTest {
 protected:
  // Partition -> the identity of the worker that started it; empty (the
  // failure recorded) where the set-up did not go as it must.
  std::map<uint32_t, std::string> StartOnTwoWorkers() {
    BrokerOptions options;
    options.max_attempts = 1;
    Make(options);
    Ready("wA", "A", {"c1"}, 1);
    Ready("wB", "B", {"c1"}, 1);
    Submit("cl", "r1", proto::PRIORITY_NORMAL, 2);
    auto jobs = Dispatch();
    if (jobs.size() != 2u) {
      ADD_FAILURE() << jobs.size() << " partitions dispatched, not 2";
      return {};
    }
    std::map<uint32_t, std::string> holder;
    for (auto& [identity, seq, partition] : jobs) {
      holder[partition] = identity;
      Started(identity, seq, partition);
    }
    return holder;
  }
};

// RetryJob (issue 32): a dead-lettered job lives again under its job_seq.
// These cases start from one: p0's worker is lost after its one attempt, the
// job is dead-lettered while the other worker still holds p1 (the failed
// round's lease), and the client retries it.
class RetriedJobTest : public OneAttemptJobTest {
 protected:
  // Returns the worker still holding the failed round's lease of p1, or ""
  // (the failure recorded) where the set-up did not go as it must.
  std::string DeadLetterAndRetry() {
    std::map<uint32_t, std::string> holder = StartOnTwoWorkers();
    if (holder.empty()) return "";
    core_->WorkerUnreachable(holder[0], now_);
    auto dead = ResultsTo(Take(), "cl");
    if (dead.size() != 1u || dead[0].state() != proto::JOB_STATE_DEAD_LETTERED) {
      ADD_FAILURE() << "the job was not dead-lettered once";
      return "";
    }
    EXPECT_EQ(core_->workers().all().at(holder[1]).leased.size(), 1u);

    proto::Envelope retry;
    retry.mutable_retry_job()->set_job_seq(1);
    retry.mutable_retry_job()->set_attempt(1);
    core_->HandleClient("cl", retry, now_);
    auto answered = Take();
    if (answered.size() != 1u || !answered[0].envelope.has_job_info()) {
      ADD_FAILURE() << "RetryJob was not answered with the job's info";
      return "";
    }
    EXPECT_EQ(answered[0].envelope.job_info().retries(), 1u);
    return holder[1];
  }

  // The new round: a new worker takes both partitions and starts them.
  void NewRoundOnWorkerC() {
    Ready("wC", "C", {"c1"}, 2);
    auto jobs = Dispatch();
    EXPECT_EQ(jobs.size(), 2u);
    for (auto& [identity, seq, partition] : jobs) {
      EXPECT_EQ(identity, "wC");
      Started("wC", seq, partition);
    }
  }

  // wC proves the new round; the job succeeds with its proofs.
  void NewRoundSucceeds() {
    Result("wC", 1, 0);
    Result("wC", 1, 1);
    auto done = Await("cl2", 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].state(), proto::JOB_STATE_SUCCEEDED);
    EXPECT_EQ(done[0].partitions(1).proof_json(), "proof-1-1") << "the new round's proof, not the old one";
  }
};

// A lease from the failed round neither keeps its worker's slot nor, when
// the worker goes, takes the new round's lease of that partition away.
TEST_F(RetriedJobTest, IsNotDisturbedByLeasesOfItsFailedRound) {
  const std::string old_holder = DeadLetterAndRetry();
  ASSERT_FALSE(old_holder.empty());
  NewRoundOnWorkerC();
  // The old round's answer from the worker that kept p1: stale, and its slot is freed.
  proto::Envelope late;
  *late.mutable_result()->mutable_item() = Ref(1, 1);
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
  NewRoundSucceeds();
}

// The lease is the item's (WorkItem::lease): a worker's record holds only
// refs. A worker still holding a ref from the failed round goes FAULTED:
// what goes back is what is leased to it, never the new round's lease of
// that partition, which another worker holds.
TEST_F(RetriedJobTest, AFaultedWorkerReturnsOnlyItsLiveLeasesNotTheNewRoundsLease) {
  const std::string old_holder = DeadLetterAndRetry();
  ASSERT_FALSE(old_holder.empty());
  NewRoundOnWorkerC();
  ASSERT_EQ(core_->jobs().Find(1)->items[1].lease_worker_id, "C");
  ASSERT_EQ(core_->workers().all().at(old_holder).leased.size(), 1u) << "the old round's ref keeps its slot";

  Heartbeat(old_holder, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->workers().all().at(old_holder).state, proto::WORKER_STATE_FAULTED);
  EXPECT_EQ(core_->jobs().Find(1)->items[1].state, WorkItem::State::kLeased) << "the new round's lease was taken back";
  EXPECT_EQ(core_->jobs().Find(1)->items[1].lease_worker_id, "C");
  EXPECT_EQ(core_->counters().items_redelivered, 0u);
  NewRoundSucceeds();
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
  auto results = Await("cl-new", 1);
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
  results = Await("cl-new", 2);
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

// Two workers' recovered leases of one job fall due in the same tick, each
// its last attempt: returning the first dead-letters the job, which takes the
// other worker's orphaned lease out of the broker's orphan table while the
// tick walked it (the walk then stepped onto the erased entry: a
// use-after-free: the sanitizers, or MALLOC_PERTURB_ in the release phase,
// make it crash; now the due workers are found first and returned after the
// walk).
TEST_F(OneAttemptJobTest, OrphanedLeasesThatEndTheirJobInOneTickAreReturnedOnce) {
  ASSERT_EQ(StartOnTwoWorkers().size(), 2u);
  Commit();
  Restart();
  ASSERT_EQ(core_->counters().leases_recovered, 2u);
  core_->Tick(now_);  // the window starts
  now_ += options_.heartbeat_interval * (options_.liveness + 1);
  core_->Tick(now_);  // neither came back: both due at once
  const JobRecord* job = core_->jobs().Find(1);
  EXPECT_TRUE(job == nullptr) << "the job ended (dead-lettered) and left memory";
  auto results = Await("cl2", 1);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].state(), proto::JOB_STATE_DEAD_LETTERED);
  EXPECT_EQ(core_->queue().size(), 0u);
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

}  // namespace
}  // namespace zkfleet::broker
