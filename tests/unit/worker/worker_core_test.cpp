// The worker core, driven directly: the test plays the broker (JOBs, DRAIN,
// reconnects), the lanes (pops items from the LocalQueue, posts STARTED and
// result events) and the clock (every call takes `now`). The pipeline is
// never started, so no thread but the test's touches the core.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core_test_support.hpp"
#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker {
namespace {

using namespace std::chrono_literals;
using Clock = WorkerCore::Clock;

constexpr uint64_t kMiB = 1ull << 20;

// Plenty of memory: the gate never waits.
using testing::Only;
using testing::PlentyOfMemory;

wire::ItemRef Ref(uint64_t job_seq, uint32_t partition = 0) { return {job_seq, partition}; }

std::vector<uint64_t> Numbers(const google::protobuf::RepeatedPtrField<proto::WorkItemRef>& items) {
  std::vector<uint64_t> numbers;
  for (const auto& item : items) numbers.push_back(item.job_seq());
  return numbers;
}

std::vector<uint64_t> LeaseNumbers(const google::protobuf::RepeatedPtrField<proto::WorkItemRef>& items) {
  std::vector<uint64_t> numbers;
  for (const auto& item : items) numbers.push_back(item.lease().number());
  return numbers;
}

class WorkerCoreTest : public ::testing::Test {
 protected:
  void Make(WorkerOptions options = {}) {
    options.worker_id = "w1";
    auto circuits = std::make_unique<CircuitSet>(std::vector<CircuitSpec>{{"c", "", true, ""}}, engine::EngineOptions{},
                                                 0ms, /*verify=*/false);
    core_ = std::make_unique<WorkerCore>(options, std::move(circuits), std::make_unique<PlentyOfMemory>(), nullptr,
                                         now_);
    core_->OnConnected(/*reconnect=*/false, now_);
  }

  // STARTING -> LOADING -> READY, as the start thread reports it.
  void MakeReady(WorkerOptions options = {}) {
    Make(options);
    Post(events::MemoryGate{wire::WorkerEvent::kMemoryFits});
    Post(events::KeysLoaded{});
    ASSERT_EQ(core_->state(), proto::WORKER_STATE_READY);
  }

  void Post(PipelineEvent event) { core_->OnPipelineEvent(event, now_); }

  // What the core sent since the last call.
  std::vector<proto::Envelope> Sent() { return testing::TakeSent(*core_); }


  // The broker sends a JOB of item (job_seq, 0) under lease (1, lease), with
  // a 4-byte witness in two chunks.
  void Job(uint64_t job_seq, uint64_t lease, proto::Priority priority = proto::PRIORITY_NORMAL) {
    proto::Envelope envelope;
    proto::Job* job = envelope.mutable_job();
    job->mutable_item()->set_job_seq(job_seq);
    job->mutable_item()->mutable_lease()->set_epoch(1);
    job->mutable_item()->mutable_lease()->set_number(lease);
    job->set_circuit_id("c");
    job->set_priority(priority);
    job->set_attempt(1);
    job->set_witness_bytes(4);
    const uint8_t first[] = {1, 2}, second[] = {3, 4};
    core_->OnBrokerMessage(envelope, {first, second}, now_);
  }

  // A lane takes the next queued item.
  QueuedItem Pop() {
    EXPECT_GT(core_->queue().queued(), 0u);
    std::optional<QueuedItem> item = core_->queue().PopForRun(0);
    EXPECT_TRUE(item.has_value());
    return std::move(*item);
  }

  void Started(const QueuedItem& item) {
    Post(events::ProofStarted{item.key.ref(), 0});
  }

  // The lane's run ends (FinishRun); the result event it posts next.
  events::ProofFinished Finish(const QueuedItem& item, std::string engine_fault = {}, bool device_lost = false) {
    core_->queue().FinishRun(item.key);
    events::ProofFinished event;
    event.ref = item.key.ref();
    event.device = 0;
    wire::ToProto(item.key.ref(), event.result.mutable_item());
    event.result.set_circuit_id("c");
    event.result.set_attempt(1);
    event.result.set_ok(!device_lost);
    event.engine_fault = std::move(engine_fault);
    event.device_lost = device_lost;
    return event;
  }

  Clock::time_point now_ = Clock::time_point{} + 1h;
  std::unique_ptr<WorkerCore> core_;
};

// ---------------------------------------------------------------- leases

TEST_F(WorkerCoreTest, TheQueuedJobCarriesNoLeaseTheCoreHoldsIt) {
  MakeReady();
  Job(1, 5);
  QueuedItem item = Pop();
  EXPECT_FALSE(item.job.item().has_lease());
  ASSERT_NE(core_->lease(Ref(1)), nullptr);
  EXPECT_EQ(core_->lease(Ref(1))->number(), 5u);
  // The witness was received whole, from both chunks.
  ASSERT_EQ(item.witness().size(), 4u);
  EXPECT_EQ(item.witness()[0], 1);
  EXPECT_EQ(item.witness()[3], 4);
}

TEST_F(WorkerCoreTest, ALeaseRenewedWhileTheItemRunsIsTheOneItsResultCarries) {
  MakeReady();
  Job(1, 5);
  QueuedItem item = Pop();
  Started(item);
  // A restarted broker that never saw it start leases it again: the run
  // already here answers the new lease, nothing is queued twice.
  Job(1, 9);
  EXPECT_EQ(core_->queue().queued(), 0u);
  EXPECT_EQ(core_->lease(Ref(1))->number(), 9u);
  Sent();
  Post(Finish(item));
  auto results = Only(Sent(), proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].result().item().job_seq(), 1u);
  EXPECT_EQ(results[0].result().item().lease().number(), 9u);
  EXPECT_EQ(core_->lease(Ref(1)), nullptr);  // answered: forgotten
}

TEST_F(WorkerCoreTest, AResultForAnItemNoLongerHeldIsDiscarded) {
  MakeReady();
  Job(1, 5);
  QueuedItem item = Pop();
  Sent();
  // A stale event for an item this core never held (or already answered).
  QueuedItem stranger;
  stranger.key = {proto::PRIORITY_NORMAL, 42, 0};
  Post(Finish(stranger));
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kResult).empty());
  // The held one is answered once; a second result for it is stale.
  Post(Finish(item));
  EXPECT_EQ(Only(Sent(), proto::Envelope::kResult).size(), 1u);
  Post(Finish(item));
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kResult).empty());
}

// ---------------------------------------------------------------- reconnect

TEST_F(WorkerCoreTest, AReconnectKeepsRunningItemsAndDropsQueuedOnes) {
  MakeReady();  // capacity 4: CREDIT 4
  for (uint64_t seq = 1; seq <= 4; ++seq) Job(seq, 10 + seq);
  QueuedItem one = Pop(), two = Pop();
  Sent();
  core_->OnConnected(/*reconnect=*/true, now_);
  EXPECT_EQ(core_->queue().queued(), 0u);  // the broker redelivers 3 and 4
  auto sent = Sent();
  auto ready = Only(sent, proto::Envelope::kReady);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(Numbers(ready[0].ready().in_progress()), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(LeaseNumbers(ready[0].ready().in_progress()), (std::vector<uint64_t>{11, 12}));
  // Credit starts again: capacity minus what still runs.
  auto credit = Only(sent, proto::Envelope::kCredit);
  ASSERT_EQ(credit.size(), 1u);
  EXPECT_EQ(credit[0].credit().credits(), 2u);
  // A kept item's result still goes out, under its lease.
  Post(Finish(one));
  auto results = Only(Sent(), proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].result().item().lease().number(), 11u);
}

TEST_F(WorkerCoreTest, AResultArrivingAfterAReconnectDroppedItsItemIsDiscarded) {
  MakeReady();
  Job(1, 5);
  QueuedItem item = Pop();
  // The run has ended but its result is not in yet when the connection is
  // replaced: READY does not claim it, so the broker proves it again.
  PipelineEvent result = Finish(item);
  Sent();
  core_->OnConnected(/*reconnect=*/true, now_);
  auto ready = Only(Sent(), proto::Envelope::kReady);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].ready().in_progress_size(), 0);
  Post(result);
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kResult).empty());
  EXPECT_EQ(core_->ledger().held(), 0u);
}

// ---------------------------------------------------------------- credit

TEST_F(WorkerCoreTest, CreditIsGrantedInBatchesAndNeverAboveCapacity) {
  WorkerOptions options;
  options.capacity = 8;  // batch: 8 / 4 = 2
  MakeReady(options);
  auto credits = [&] {
    uint32_t total = 0;
    for (const auto& envelope : Only(Sent(), proto::Envelope::kCredit)) total += envelope.credit().credits();
    return total;
  };
  EXPECT_EQ(credits(), 8u);
  std::vector<QueuedItem> running;
  for (uint64_t seq = 1; seq <= 8; ++seq) Job(seq, seq);
  for (int i = 0; i < 8; ++i) running.push_back(Pop());
  EXPECT_EQ(credits(), 0u);
  // With nothing outstanding, every free slot is granted at once.
  Post(Finish(running[0]));
  EXPECT_EQ(credits(), 1u);
  // One credit out and one free slot: below the batch, nothing is sent.
  Post(Finish(running[1]));
  EXPECT_EQ(credits(), 0u);
  Post(Finish(running[2]));
  EXPECT_EQ(credits(), 2u);
  EXPECT_LE(core_->ledger().held() + core_->ledger().outstanding(), core_->ledger().capacity());
}

// ---------------------------------------------------------------- STARTED

TEST_F(WorkerCoreTest, StartedIsBatchedAndCarriesTheLeases) {
  MakeReady();
  Job(1, 5);
  Job(2, 6);
  Job(3, 7);
  QueuedItem one = Pop(), two = Pop(), three = Pop();
  Started(one);
  Started(two);
  Started(three);
  Post(Finish(three));  // its RESULT says it started
  Sent();
  core_->Tick(now_);
  auto started = Only(Sent(), proto::Envelope::kStarted);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(Numbers(started[0].started().items()), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(LeaseNumbers(started[0].started().items()), (std::vector<uint64_t>{5, 6}));
  core_->Tick(now_);
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kStarted).empty());
}

TEST_F(WorkerCoreTest, HeldStartedGoesOutAHoldAfterTheFirstItemStarted) {
  WorkerOptions options;
  options.test_hold_started = 500ms;
  MakeReady(options);
  Job(1, 5);
  QueuedItem one = Pop();
  Started(one);
  EXPECT_EQ(core_->Tick(now_), now_ + 500ms);
  now_ += 400ms;
  core_->Tick(now_);
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kStarted).empty());
  now_ += 100ms;
  core_->Tick(now_);
  EXPECT_EQ(Only(Sent(), proto::Envelope::kStarted).size(), 1u);
}

// ---------------------------------------------------------------- drain

TEST_F(WorkerCoreTest, DrainHandsBackQueuedItemsAndWaitsForTheRunningOne) {
  MakeReady();
  Job(1, 11);
  Job(2, 12);
  Job(3, 13);
  QueuedItem running = Pop();
  Sent();
  core_->BeginDrain("test", now_);
  EXPECT_EQ(core_->state(), proto::WORKER_STATE_DRAINING);
  auto sent = Sent();
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(sent[0].heartbeat().state(), proto::WORKER_STATE_DRAINING);  // first: the broker stops routing
  auto handback = Only(sent, proto::Envelope::kHandback);
  ASSERT_EQ(handback.size(), 1u);
  EXPECT_EQ(Numbers(handback[0].handback().items()), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(LeaseNumbers(handback[0].handback().items()), (std::vector<uint64_t>{12, 13}));
  EXPECT_EQ(handback[0].handback().aborted_size(), 0);
  // The running item finishes: the drain waits for it (and polls often).
  now_ += 30s;
  EXPECT_EQ(core_->Tick(now_), now_ + 50ms);
  EXPECT_EQ(core_->state(), proto::WORKER_STATE_DRAINING);
  Post(Finish(running));
  sent = Sent();
  auto results = Only(sent, proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].result().item().lease().number(), 11u);
  EXPECT_TRUE(Only(sent, proto::Envelope::kCredit).empty());  // no credit while draining
  core_->Tick(now_);
  EXPECT_EQ(core_->state(), proto::WORKER_STATE_RELEASING);
  EXPECT_FALSE(core_->pipeline_abandoned());
  // The keys are released (the last lane says so), then the pool (none
  // here): DISCONNECT, GONE, exit 0.
  Post(events::KeysReleased{});
  Sent();
  core_->Tick(now_);
  EXPECT_TRUE(core_->finished());
  EXPECT_EQ(core_->exit_code(), 0);
  EXPECT_EQ(Only(Sent(), proto::Envelope::kDisconnect).size(), 1u);
}

TEST_F(WorkerCoreTest, AnItemRunningPastTheDrainTimeoutIsAbortedAndHandedBack) {
  WorkerOptions options;
  options.drain_timeout = 10s;
  MakeReady(options);
  Job(1, 11);
  QueuedItem running = Pop();
  core_->BeginDrain("test", now_);
  Sent();
  now_ += 9s;
  core_->Tick(now_);
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kHandback).empty());
  now_ += 1s;
  core_->Tick(now_);
  auto sent = Sent();
  auto handback = Only(sent, proto::Envelope::kHandback);
  ASSERT_EQ(handback.size(), 1u);
  EXPECT_EQ(handback[0].handback().items_size(), 0);
  EXPECT_EQ(Numbers(handback[0].handback().aborted()), (std::vector<uint64_t>{1}));
  EXPECT_EQ(LeaseNumbers(handback[0].handback().aborted()), (std::vector<uint64_t>{11}));
  // The lane is still inside the proof: the keys are left for the exit, the
  // pool (none here) is released at once, and the worker leaves.
  EXPECT_TRUE(core_->pipeline_abandoned());
  EXPECT_TRUE(core_->finished());
  EXPECT_EQ(core_->exit_code(), 0);
  EXPECT_EQ(Only(sent, proto::Envelope::kDisconnect).size(), 1u);
  // Its result, should it come, was already answered by the handback.
  Post(Finish(running));
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kResult).empty());
}

TEST_F(WorkerCoreTest, AJobArrivingWhileDrainingIsHandedBack) {
  MakeReady();
  core_->BeginDrain("test", now_);
  // Nothing held: straight to RELEASING. A JOB the broker sent before it saw
  // the drain comes back unstarted, under its lease.
  EXPECT_EQ(core_->state(), proto::WORKER_STATE_RELEASING);
  Sent();
  Job(7, 70);
  EXPECT_EQ(core_->queue().queued(), 0u);
  auto handback = Only(Sent(), proto::Envelope::kHandback);
  ASSERT_EQ(handback.size(), 1u);
  EXPECT_EQ(Numbers(handback[0].handback().items()), (std::vector<uint64_t>{7}));
  EXPECT_EQ(LeaseNumbers(handback[0].handback().items()), (std::vector<uint64_t>{70}));
  EXPECT_EQ(core_->ledger().held(), 0u);
}

TEST_F(WorkerCoreTest, AJobArrivingWhileItemsStillRunInTheDrainIsHandedBack) {
  MakeReady();
  Job(1, 11);
  QueuedItem running = Pop();
  core_->BeginDrain("test", now_);
  Sent();
  Job(2, 12);
  auto handback = Only(Sent(), proto::Envelope::kHandback);
  ASSERT_EQ(handback.size(), 1u);
  EXPECT_EQ(Numbers(handback[0].handback().items()), (std::vector<uint64_t>{2}));
  EXPECT_EQ(core_->state(), proto::WORKER_STATE_DRAINING);
  Post(Finish(running));
  EXPECT_EQ(Only(Sent(), proto::Envelope::kResult).size(), 1u);
}

TEST_F(WorkerCoreTest, ThePoolIsReleasedChunkByChunkEachReportedInAHeartbeat) {
  MakeReady();
  ASSERT_EQ(core_->pool().Allocate(3 * kMiB, PinnedPool::Kind::kLockedMmap, kMiB), 3 * kMiB);
  core_->BeginDrain("test", now_);
  ASSERT_EQ(core_->state(), proto::WORKER_STATE_RELEASING);
  Sent();
  // The keys first: nothing is freed until the last lane says they are.
  core_->Tick(now_);
  EXPECT_EQ(core_->pool().stats().pool_bytes, 3 * kMiB);
  Post(events::KeysReleased{});
  std::vector<uint64_t> reported;
  for (int turn = 0; turn < 5 && !core_->finished(); ++turn) {
    const Clock::time_point next = core_->Tick(now_);
    EXPECT_EQ(next, core_->finished() ? Clock::time_point::max() : now_);  // no pause between chunks
    for (const auto& beat : Only(core_->outbox(), proto::Envelope::kHeartbeat)) {
      EXPECT_EQ(beat.heartbeat().state(), proto::WORKER_STATE_RELEASING);
      reported.push_back(beat.heartbeat().memory().bytes_to_release());
    }
    Sent();
  }
  EXPECT_EQ(reported, (std::vector<uint64_t>{2 * kMiB, 1 * kMiB, 0}));
  EXPECT_TRUE(core_->finished());
  EXPECT_EQ(core_->exit_code(), 0);
}

// ---------------------------------------------------------------- faults

TEST_F(WorkerCoreTest, EngineFaultsMakeTheWorkerFaultedAndHandBackWhatIsQueued) {
  WorkerOptions options;
  options.fault_threshold = 2;
  MakeReady(options);
  Job(1, 11);
  Job(2, 12);
  Job(3, 13);
  QueuedItem one = Pop(), two = Pop();
  Sent();
  // The first fault: its (re-proved, valid) result goes out; still READY.
  Post(Finish(one, "msm mismatch"));
  EXPECT_EQ(Only(Sent(), proto::Envelope::kResult).size(), 1u);
  EXPECT_EQ(core_->state(), proto::WORKER_STATE_READY);
  // The second within the window: the result first, then FAULTED.
  Post(Finish(two, "msm mismatch"));
  auto sent = Sent();
  ASSERT_GE(sent.size(), 3u);
  EXPECT_EQ(sent[0].body_case(), proto::Envelope::kResult);
  EXPECT_EQ(core_->state(), proto::WORKER_STATE_FAULTED);
  auto beats = Only(sent, proto::Envelope::kHeartbeat);
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].heartbeat().state(), proto::WORKER_STATE_FAULTED);
  auto handback = Only(sent, proto::Envelope::kHandback);
  ASSERT_EQ(handback.size(), 1u);
  EXPECT_EQ(Numbers(handback[0].handback().items()), (std::vector<uint64_t>{3}));
  EXPECT_FALSE(core_->finished());  // stays connected, takes no work
  EXPECT_FALSE(core_->devices().ok(0));
}

TEST_F(WorkerCoreTest, ALostDeviceMakesTheWorkerLeaveWithExitCodeOne) {
  MakeReady();
  Job(1, 11);
  Job(2, 12);
  QueuedItem one = Pop();
  Sent();
  Post(Finish(one, {}, /*device_lost=*/true));
  auto sent = Sent();
  EXPECT_EQ(Only(sent, proto::Envelope::kResult).size(), 1u);  // failed, retryable elsewhere
  EXPECT_EQ(Numbers(Only(sent, proto::Envelope::kHandback).at(0).handback().items()), (std::vector<uint64_t>{2}));
  EXPECT_EQ(Only(sent, proto::Envelope::kDisconnect).size(), 1u);
  EXPECT_TRUE(core_->finished());
  EXPECT_EQ(core_->exit_code(), 1);
}

// ---------------------------------------------------------------- malformed

TEST_F(WorkerCoreTest, AJobWhoseWitnessDidNotArriveWholeIsAnsweredFailedAtOnce) {
  MakeReady();
  Sent();
  proto::Job job;
  job.mutable_item()->set_job_seq(4);
  job.mutable_item()->mutable_lease()->set_number(40);
  job.set_circuit_id("c");
  core_->OnUnreadableJob(job, "short");
  auto sent = Sent();
  auto results = Only(sent, proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].result().ok());
  EXPECT_FALSE(results[0].result().retryable());
  EXPECT_EQ(results[0].result().item().lease().number(), 40u);
  EXPECT_EQ(Only(sent, proto::Envelope::kCredit).size(), 1u);  // its credit comes back
  EXPECT_EQ(core_->ledger().held(), 0u);
}

}  // namespace
}  // namespace zkfleet::worker

namespace zkfleet::worker {
namespace {

// Issue 49, item 4: circuits changed at run time. What goes hands its queued
// items back at once and leaves READY; a JOB of it that crosses the change
// goes back too; what comes is announced once the set has adopted it.
TEST_F(WorkerCoreTest, AReloadHandsBackWhatGoesAndAnnouncesWhatComesOnceLoaded) {
  MakeReady();
  Sent();
  Job(1, 5);
  Job(2, 6);
  ASSERT_EQ(core_->queue().queued(), 2u);
  core_->ReloadCircuits({{"d", "", true, ""}}, now_);
  std::vector<proto::Envelope> sent = Sent();
  ASSERT_GE(sent.size(), 2u);
  ASSERT_TRUE(sent[0].has_handback()) << sent[0].DebugString();
  EXPECT_EQ(sent[0].handback().items_size(), 2);
  ASSERT_TRUE(sent[1].has_ready()) << sent[1].DebugString();
  EXPECT_EQ(sent[1].ready().circuits_size(), 0) << "c goes, d is not loaded yet";
  EXPECT_EQ(core_->queue().queued(), 0u);
  // A JOB of the circuit that goes, sent before the broker saw that READY.
  Job(3, 7);
  sent = Sent();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].has_handback()) << sent[0].DebugString();
  // A second change while the first loads is refused.
  core_->ReloadCircuits({{"e", "", true, ""}}, now_);
  // The loader thread posts its event; the core announces d.
  std::deque<PipelineEvent> posted;
  for (int i = 0; i < 500 && posted.empty(); ++i) {
    posted = core_->mailbox().TakeAll();
    if (posted.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(posted.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<events::CircuitsChanged>(posted.front()));
  const std::string load_error = std::get<events::CircuitsChanged>(posted.front()).load_error;
  EXPECT_TRUE(load_error.empty()) << load_error;
  Post(std::move(posted.front()));
  sent = Sent();
  const auto ready = std::find_if(sent.begin(), sent.end(), [](const proto::Envelope& e) { return e.has_ready(); });
  ASSERT_NE(ready, sent.end());
  EXPECT_EQ(std::vector<std::string>(ready->ready().circuits().begin(), ready->ready().circuits().end()),
            std::vector<std::string>{"d"});
  EXPECT_EQ(core_->circuits().circuit_ids(), std::vector<std::string>{"d"});
  // Nothing changes: nothing sent.
  core_->ReloadCircuits({{"d", "", true, ""}}, now_);
  EXPECT_TRUE(Sent().empty());
}

}  // namespace
}  // namespace zkfleet::worker
