// The public C++ client (zkfleet/client.h) against real zkbroker/zkworker
// processes: submit, results, await, cancel, status, and every error the
// issue names as a Status value.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "fleet_harness.hpp"
#include "zkfleet/client.h"

namespace fleet_test {
namespace {

namespace client = zkfleet::client;
using zkfleet::testing::Scaled;

std::unique_ptr<client::Client> Open(Fleet& fleet, const std::string& key = Fleet::kClientId,
                                     std::chrono::milliseconds reply_timeout = 10s) {
  client::Options options;
  options.endpoint = fleet.client_endpoint();
  options.curve_secret_key_file = fleet.SecretKeyFile(key);
  options.broker_public_key_file = fleet.broker_public_key();
  options.reply_timeout = Scaled(reply_timeout);
  std::unique_ptr<client::Client> c;
  client::Status s = client::Client::Open(options, &c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return c;
}

std::vector<client::Witness> BundledWitness() {
  return {client::Witness::FromFile(Fixture("bn128_k12/witness.wtns"))};
}

// Starts a broker and two workers: "prover" holds the bundled BN254 circuit
// (real CPU proofs), "sleeper" the instant circuit "slow" (3 s a proof).
void StartFleet(Fleet& fleet) {
  fleet.StartBroker();
  fleet.StartWorker("prover", {"--circuit", "bn128=" + Fixture("bn128_k12/circuit_final.zkey"), "--threads", "1"});
  fleet.StartWorker("sleeper", {"--instant", "--circuit", "slow", "--instant-delay-ms", "3000"});
  fleet.WaitWorkerReady("prover");
  fleet.WaitWorkerReady("sleeper");
}

TEST(PublicClient, SubmitWaitAwaitStatusWorkersCancel) {
  Fleet fleet("client-ops");
  StartFleet(fleet);
  auto c = Open(fleet);
  auto other = Open(fleet);

  client::Job job;
  client::Status s = c->Submit({.circuit = "bn128", .priority = zkfleet::proto::PRIORITY_HIGH}, BundledWitness(), &job);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(job.job_seq, 0u);
  EXPECT_EQ(job.request_id.rfind("zkfleet-", 0), 0u) << job.request_id;
  zkfleet::proto::JobResult result;
  s = c->WaitResult(job.job_seq, Scaled(120s), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(result.partitions_size(), 1);
  EXPECT_EQ(result.partitions(0).worker_id(), "prover");
  EXPECT_TRUE(SnarkjsVerifies(Fixture("bn128_k12/verification_key.json"), result.partitions(0).proof_json(),
                              result.partitions(0).public_json(), fleet.dir()));

  // Another connection (same key) asks for the same job's result.
  zkfleet::proto::JobResult again;
  s = other->Await(job.job_seq, Scaled(30s), &again);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(again.partitions(0).proof_json(), result.partitions(0).proof_json());

  zkfleet::proto::StatusReply status;
  ASSERT_TRUE(c->GetStatus(&status).ok());
  EXPECT_EQ(status.jobs_completed(), 1u);
  std::vector<zkfleet::proto::WorkerInfo> workers;
  ASSERT_TRUE(c->Workers(&workers).ok());
  EXPECT_EQ(workers.size(), 2u);

  // Cancel a running job: its result comes back as kJobFailed, CANCELLED.
  client::Job slow;
  ASSERT_TRUE(c->Submit({.circuit = "slow"}, BundledWitness(), &slow).ok());
  zkfleet::proto::CancelReply cancel;
  s = c->Cancel(slow.job_seq, &cancel);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(cancel.cancelled());
  s = c->WaitResult(slow.job_seq, Scaled(30s), &result);
  EXPECT_EQ(s.code(), client::Code::kJobFailed) << s.ToString();
  EXPECT_EQ(result.state(), zkfleet::proto::JOB_STATE_CANCELLED);
  EXPECT_NE(s.message().find("CANCELLED"), std::string::npos) << s.message();

  s = c->Await(1u << 30, Scaled(10s), &result);
  EXPECT_EQ(s.code(), client::Code::kUnknownJob) << s.ToString();
}

TEST(PublicClient, ErrorsAreValues) {
  Fleet fleet("client-errors");
  StartFleet(fleet);
  auto c = Open(fleet);
  client::Job job;

  client::Status s = c->Submit({.circuit = "no-such-circuit"}, BundledWitness(), &job);
  EXPECT_EQ(s.code(), client::Code::kUnknownCircuit) << s.ToString();
  EXPECT_NE(s.message().find("no-such-circuit"), std::string::npos) << s.message();

  // A malformed witness is accepted (the broker does not parse witnesses) and
  // fails on the worker, with its reason.
  s = c->Submit({.circuit = "bn128"}, {client::Witness::FromBytes("not a .wtns file")}, &job);
  ASSERT_TRUE(s.ok()) << s.ToString();
  zkfleet::proto::JobResult result;
  s = c->WaitResult(job.job_seq, Scaled(60s), &result);
  EXPECT_EQ(s.code(), client::Code::kJobFailed) << s.ToString();
  EXPECT_EQ(result.state(), zkfleet::proto::JOB_STATE_FAILED);
  EXPECT_FALSE(result.error().empty());
  EXPECT_NE(s.message().find(result.error()), std::string::npos) << s.message();

  s = c->Submit({.circuit = "bn128"}, {client::Witness::FromFile(fleet.dir() + "/missing.wtns")}, &job);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();

  // Same request id, another payload.
  ASSERT_TRUE(c->Submit({.circuit = "slow", .request_id = "r1"}, BundledWitness(), &job).ok());
  s = c->Submit({.circuit = "slow", .request_id = "r1"}, {client::Witness::FromBytes("other")}, &job);
  EXPECT_EQ(s.code(), client::Code::kRequestIdReused) << s.ToString();

  // A key in no allow-list is refused at the handshake; an observer may not submit.
  auto stranger = Open(fleet, "stranger", 4s);  // waits the whole reply timeout, then says why
  zkfleet::proto::StatusReply status;
  s = stranger->GetStatus(&status);
  EXPECT_EQ(s.code(), client::Code::kAuth) << s.ToString();
  EXPECT_NE(s.message().find("allow-list"), std::string::npos) << s.message();
  auto watcher = Open(fleet, "watcher");
  s = watcher->Submit({.circuit = "slow"}, BundledWitness(), &job);
  EXPECT_EQ(s.code(), client::Code::kAuth) << s.ToString();
  EXPECT_NE(s.message().find("FORBIDDEN"), std::string::npos) << s.message();

  // Bad key files fail Open, naming the file.
  client::Options options;
  options.endpoint = fleet.client_endpoint();
  options.curve_secret_key_file = fleet.dir() + "/nope.secret";
  options.broker_public_key_file = fleet.broker_public_key();
  std::unique_ptr<client::Client> none;
  s = client::Client::Open(options, &none);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("nope.secret"), std::string::npos) << s.message();
  EXPECT_EQ(none, nullptr);
}

TEST(PublicClient, BrokerDownAtSubmitThenResubmitMakesOneJob) {
  Fleet fleet("client-down");
  auto c = Open(fleet, Fleet::kClientId, 1500ms);
  client::Job job;
  client::Status s = c->Submit({.circuit = "slow", .request_id = "down-1"}, BundledWitness(), &job);
  EXPECT_EQ(s.code(), client::Code::kTimeout) << s.ToString();
  EXPECT_NE(s.message().find("is zkbroker running there"), std::string::npos) << s.message();

  fleet.StartBroker();
  fleet.StartWorker("quick", {"--instant", "--circuit", "slow"});
  fleet.WaitWorkerReady("quick");
  // The SUBMIT queued while the broker was down may have reached it: the same
  // request id never makes a second job.
  s = c->Submit({.circuit = "slow", .request_id = "down-1"}, BundledWitness(), &job);
  ASSERT_TRUE(s.ok()) << s.ToString();
  zkfleet::proto::JobResult result;
  s = c->WaitResult(job.job_seq, Scaled(30s), &result);
  EXPECT_TRUE(s.ok()) << s.ToString();
  zkfleet::proto::StatusReply status;
  ASSERT_TRUE(c->GetStatus(&status).ok());
  EXPECT_EQ(status.jobs_submitted(), 1u);
}

TEST(PublicClient, BrokerRestartedMidWait) {
  Fleet fleet("client-restart");
  Process& broker = fleet.StartBroker();
  fleet.StartWorker("sleeper", {"--instant", "--circuit", "slow", "--instant-delay-ms", "3000"});
  fleet.WaitWorkerReady("sleeper");
  auto c = Open(fleet);
  client::Job job;
  ASSERT_TRUE(c->Submit({.circuit = "slow"}, BundledWitness(), &job).ok());
  // Kill the broker mid-proof, once the attempt is STARTED in its journal.
  ASSERT_TRUE(WaitForAttempts(fleet, job.job_seq, 0, 1, 10s));
  broker.Kill9();
  fleet.StartBroker();
  zkfleet::proto::JobResult result;
  client::Status s = c->WaitResult(job.job_seq, Scaled(60s), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.job_seq(), job.job_seq);
  EXPECT_GE(c->reconnections(), 1u);
}

}  // namespace
}  // namespace fleet_test
