// The gRPC front door's streams: AwaitJob across a broker restart, 1,000 awaits at once, one caller's bounds.
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "grpc_test_support.hpp"

namespace fleet_test {
namespace {

TEST(Grpc, AnAwaitSurvivesABrokerRestartByCallingAgain) {
  GrpcFleet g("grpc_restart");
  Process* broker = &g.StartBroker();
  g.fleet.StartWorker("w1", {"--instant", "--circuit", "slow", "--instant-delay-ms", "1500"});
  WaitReady(g, "w1");
  auto alice = g.Stub("alice");
  v1::SubmitJobReply submitted;
  ASSERT_TRUE(Submit(*alice, WitnessJob("slow", "restart-1"), &submitted).ok());
  // The await is open when the broker dies: it ends UNAVAILABLE; called
  // again on the restarted broker it gets the result. Nothing is lost.
  ASSERT_TRUE(WaitForAttempts(g.fleet, submitted.job_seq(), 0, 1, 10s));
  // "Open" is the stream's first update, the job's state: the broker writes
  // it once the call has joined and its AWAIT has gone to the core before
  // it (AwaitCall::Start). A sleep instead would let a kill before the call
  // reached the broker pass as well, since that too ends UNAVAILABLE.
  auto context = Context(30s);
  v1::AwaitJobRequest request;
  request.set_job_seq(submitted.job_seq());
  auto reader = alice->AwaitJob(context.get(), request);
  std::promise<void> first_update;
  auto pending = std::async(std::launch::async, [&] {
    Awaited out;
    v1::JobUpdate update;
    while (reader->Read(&update)) {
      out.updates.push_back(update);
      if (out.updates.size() == 1) first_update.set_value();
    }
    out.status = reader->Finish();
    if (out.updates.empty()) first_update.set_value();  // ended before it was open: the checks below say so
    return out;
  });
  ASSERT_EQ(first_update.get_future().wait_for(zkfleet::testing::Scaled(10s)), std::future_status::ready)
      << "the await never streamed the job's state";
  broker->Kill9();
  Awaited broken = pending.get();
  EXPECT_EQ(broken.status.error_code(), grpc::StatusCode::UNAVAILABLE) << broken.status.error_message();
  ASSERT_EQ(broken.updates.size(), 1u) << "the state, and nothing after it, before the broker died";
  ASSERT_TRUE(broken.updates[0].has_state());
  EXPECT_EQ(broken.updates[0].state().state(), v1::JOB_STATE_RUNNING)
      << v1::JobState_Name(broken.updates[0].state().state());
  EXPECT_EQ(broken.result(), nullptr);
  g.StartBroker();
  Awaited awaited;
  for (int i = 0; i < 50; ++i) {  // the channel reconnects within its backoff
    awaited = Await(*alice, submitted.job_seq());
    if (awaited.status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(awaited.status.ok()) << awaited.status.error_message();
  ASSERT_NE(awaited.result(), nullptr);
  EXPECT_EQ(awaited.result()->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(awaited.result()->job_seq(), submitted.job_seq());
}

TEST(Grpc, AThousandConcurrentAwaitsEachGetTheirResult) {
  GrpcFleet g("grpc_many");
  g.StartBroker();
  g.fleet.StartWorker("w1", {"--instant", "--circuit", "c1", "--instant-delay-ms", "300"});
  WaitReady(g, "w1");
  auto alice = g.Stub("alice");
  constexpr int kJobs = 10, kAwaitsPerJob = 100;
  std::vector<uint64_t> jobs;
  for (int j = 0; j < kJobs; ++j) {
    v1::SubmitJobReply submitted;
    ASSERT_TRUE(Submit(*alice, WitnessJob("c1", "many-" + std::to_string(j)), &submitted).ok());
    jobs.push_back(submitted.job_seq());
  }
  // 1,000 streams open at once on one channel, with the async client API.
  grpc::CompletionQueue cq;
  struct Open {
    grpc::ClientContext context;
    v1::AwaitJobRequest request;
    std::unique_ptr<grpc::ClientAsyncReader<v1::JobUpdate>> reader;
    v1::JobUpdate update;
    grpc::Status status;
    uint64_t job_seq = 0;
    bool got_result = false, finishing = false;
  };
  std::vector<std::unique_ptr<Open>> open;
  for (int i = 0; i < kJobs * kAwaitsPerJob; ++i) {
    auto o = std::make_unique<Open>();
    o->job_seq = jobs[i % kJobs];
    o->request.set_job_seq(o->job_seq);
    o->context.set_deadline(std::chrono::system_clock::now() + zkfleet::testing::Scaled(120s));
    o->reader = alice->PrepareAsyncAwaitJob(&o->context, o->request, &cq);
    o->reader->StartCall(o.get());
    open.push_back(std::move(o));
  }
  // Each tag: a started call or a read; then read on, or Finish at the end.
  size_t finished = 0;
  std::map<Open*, int> state;  // 0: starting, 1: reading, 2: finishing
  void* tag;
  bool ok;
  while (finished < open.size() && cq.Next(&tag, &ok)) {
    Open* o = static_cast<Open*>(tag);
    int& st = state[o];
    if (st == 2) {
      ++finished;
      continue;
    }
    if (st == 1 && ok && o->update.has_result()) {
      o->got_result = o->update.result().state() == v1::JOB_STATE_SUCCEEDED &&
                      o->update.result().job_seq() == o->job_seq;
    }
    if (ok) {
      st = 1;
      o->reader->Read(&o->update, o);
    } else {
      st = 2;
      o->reader->Finish(&o->status, o);
    }
  }
  ASSERT_EQ(finished, open.size());
  size_t with_result = 0;
  for (const auto& o : open) {
    EXPECT_TRUE(o->status.ok()) << o->status.error_message();
    with_result += o->got_result;
  }
  EXPECT_EQ(with_result, open.size()) << "every await got its own job's result";
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

// Issue 47, item 6: one caller held 20,000 AwaitJob streams (395 MB) and
// 120 concurrent 16 MiB SubmitJobs reached 513 MB. Each caller now has its
// own bounds on open calls and on inline bytes in flight: beyond them its
// calls are refused RESOURCE_EXHAUSTED, naming the flag; other callers are
// not affected, and a closed call gives its place back.
TEST(Grpc, OneCallerCannotHoldTheBrokersMemory) {
  GrpcFleet g("grpc_caller_bounds");
  const std::string witness = ReadFile(Fixture("bn128_k12/witness.wtns"));
  g.StartBroker({"--accept-unrouted", "--grpc-max-calls-per-caller", "3", "--grpc-max-inflight-bytes-per-caller",
                 std::to_string(witness.size() + witness.size() / 2)});
  auto alice = g.Stub("alice");
  v1::SubmitJobReply submitted;
  grpc::Status s = Submit(*alice, WitnessJob("c1", "r1"), &submitted);  // no worker: it stays queued
  ASSERT_TRUE(s.ok()) << s.error_message();
  // Three open streams, each past its first update (the state): registered.
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::JobUpdate>>> readers;
  v1::AwaitJobRequest request;
  request.set_job_seq(submitted.job_seq());
  for (int i = 0; i < 3; ++i) {
    contexts.push_back(Context(60s));
    readers.push_back(alice->AwaitJob(contexts.back().get(), request));
    v1::JobUpdate update;
    ASSERT_TRUE(readers.back()->Read(&update)) << "stream " << i;
    EXPECT_TRUE(update.has_state());
  }
  Awaited fourth = Await(*alice, submitted.job_seq(), 10s);
  EXPECT_EQ(fourth.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << fourth.status.error_message();
  EXPECT_NE(fourth.status.error_message().find("caller 'key alice' has 3 calls open"), std::string::npos)
      << fourth.status.error_message();
  EXPECT_NE(fourth.status.error_message().find("--grpc-max-calls-per-caller"), std::string::npos);
  // Another caller is not affected (bob may not see alice's job: NOT_FOUND, not RESOURCE_EXHAUSTED).
  auto bob = g.Stub("bob");
  Awaited other = Await(*bob, submitted.job_seq(), 10s);
  EXPECT_EQ(other.status.error_code(), grpc::StatusCode::NOT_FOUND) << other.status.error_message();
  // One stream closed: its place is free again.
  contexts[0]->TryCancel();
  v1::JobUpdate ignored;
  while (readers[0]->Read(&ignored)) {
  }
  readers[0]->Finish();
  bool again = false;
  for (auto until = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(10s);
       !again && std::chrono::steady_clock::now() < until;) {
    auto context = Context(10s);
    auto reader = alice->AwaitJob(context.get(), request);
    v1::JobUpdate update;
    again = reader->Read(&update);
    context->TryCancel();
    while (reader->Read(&update)) {
    }
    reader->Finish();
    if (!again) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(again) << "a cancelled stream's place did not come back";
  // The other streams end first, and the byte bound is checked only for a
  // call that the call bound let in: a cancelled call's place comes back a
  // moment after the cancel (the server notices it on its own time), so the
  // SubmitJob below is retried while the call bound still refuses it.
  for (size_t i = 1; i < contexts.size(); ++i) contexts[i]->TryCancel();
  for (size_t i = 1; i < readers.size(); ++i) {
    while (readers[i]->Read(&ignored)) {
    }
    readers[i]->Finish();
  }
  // Inline bytes: two witnesses in one SubmitJob are more than this caller may have in flight.
  v1::SubmitJobRequest two = WitnessJob("c1", "r2");
  two.add_witnesses(witness);
  v1::SubmitJobReply refused;
  for (auto until = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(10s);;) {
    s = Submit(*alice, two, &refused);
    if (s.error_message().find("--grpc-max-calls-per-caller") == std::string::npos ||
        std::chrono::steady_clock::now() > until) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("--grpc-max-inflight-bytes-per-caller"), std::string::npos) << s.error_message();
}

}  // namespace
}  // namespace fleet_test
