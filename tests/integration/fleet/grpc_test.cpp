// The broker's gRPC front door (issue 32) against the real processes: mTLS
// with a test CA (tests/testutil/make_test_ca.sh), each certificate's CN one
// of the fleet's allow-listed client names with that key's role; every RPC,
// every role against every RPC; jobs shared between the transports (alice's
// job over ZeroMQ is alice's over gRPC, not bob's); a broker restart during
// AwaitJob; 1,000 concurrent awaits; malformed requests.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "fleet_harness.hpp"
#include "grpc/zkfleet_v1.grpc.pb.h"

namespace fleet_test {
namespace {

namespace v1 = zkfleet::v1;
namespace proto = zkfleet::proto;

std::string Pem(const std::string& path) { return ReadFile(path); }

// A fleet whose broker also serves gRPC with the test CA's server certificate.
class GrpcFleet {
 public:
  explicit GrpcFleet(const std::string& name) : fleet(name) {
    ca_dir = fleet.dir() + "/ca";
    std::string out;
    int rc = RunCommand({std::string(ZKFLEET_SOURCE_DIR) + "/tests/testutil/make_test_ca.sh", ca_dir, "alice", "bob",
                         "watcher", "fleet-test", "nobody"},
                        &out);
    EXPECT_EQ(rc, 0) << out;
    port = FreePort();
  }
  Process& StartBroker(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--grpc-listen", "127.0.0.1:" + std::to_string(port), "--grpc-cert",
                                     ca_dir + "/server.pem", "--grpc-key", ca_dir + "/server.key",
                                     "--grpc-client-ca", ca_dir + "/ca.pem"};
    args.insert(args.end(), extra.begin(), extra.end());
    return fleet.StartBroker(args);
  }
  // A stub speaking as the holder of `cert` (NAME.pem / NAME.key in the CA dir; "" = no certificate).
  std::unique_ptr<v1::Fleet::Stub> Stub(const std::string& cert, const std::string& ca = "ca.pem") {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = Pem(ca_dir + "/" + ca);
    if (!cert.empty()) {
      ssl.pem_cert_chain = Pem(ca_dir + "/" + cert + ".pem");
      ssl.pem_private_key = Pem(ca_dir + "/" + cert + ".key");
    }
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
    auto channel = grpc::CreateCustomChannel("localhost:" + std::to_string(port), grpc::SslCredentials(ssl), args);
    return v1::Fleet::NewStub(channel);
  }

  Fleet fleet;
  std::string ca_dir;
  int port = 0;
};

std::unique_ptr<grpc::ClientContext> Context(std::chrono::seconds timeout = 10s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + zkfleet::testing::Scaled(timeout));
  return context;
}

v1::SubmitJobRequest WitnessJob(const std::string& circuit, const std::string& request_id) {
  v1::SubmitJobRequest request;
  request.set_circuit_id(circuit);
  request.set_request_id(request_id);
  request.add_witnesses(ReadFile(Fixture("bn128_k12/witness.wtns")));
  return request;
}

grpc::Status Submit(v1::Fleet::Stub& stub, const v1::SubmitJobRequest& request, v1::SubmitJobReply* reply) {
  auto context = Context();
  return stub.SubmitJob(context.get(), request, reply);
}

// AwaitJob to its end: the updates it streamed and how it ended.
struct Awaited {
  std::vector<v1::JobUpdate> updates;
  grpc::Status status;
  const proto::JobResult* result() const {
    return !updates.empty() && updates.back().has_result() ? &updates.back().result() : nullptr;
  }
};
Awaited Await(v1::Fleet::Stub& stub, uint64_t job_seq, std::chrono::seconds timeout = 30s) {
  auto context = Context(timeout);
  v1::AwaitJobRequest request;
  request.set_job_seq(job_seq);
  auto reader = stub.AwaitJob(context.get(), request);
  Awaited out;
  v1::JobUpdate update;
  while (reader->Read(&update)) out.updates.push_back(update);
  out.status = reader->Finish();
  return out;
}

void WaitReady(GrpcFleet& g, const std::string& worker) { g.fleet.WaitWorkerReady(worker); }

TEST(Grpc, SubmitAwaitGetCancelOverMutualTls) {
  GrpcFleet g("grpc_basic");
  g.StartBroker();
  g.fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  WaitReady(g, "w1");
  auto alice = g.Stub("alice");

  v1::SubmitJobReply submitted;
  grpc::Status s = Submit(*alice, WitnessJob("c1", "r1"), &submitted);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_GT(submitted.job_seq(), 0u);
  EXPECT_FALSE(submitted.duplicate());

  Awaited awaited = Await(*alice, submitted.job_seq());
  ASSERT_TRUE(awaited.status.ok()) << awaited.status.error_message();
  ASSERT_GE(awaited.updates.size(), 2u) << "the state first, then the result";
  EXPECT_TRUE(awaited.updates.front().has_state());
  ASSERT_NE(awaited.result(), nullptr);
  EXPECT_EQ(awaited.result()->state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(awaited.result()->partitions_size(), 1);

  // The same request id again: the same job (idempotent), duplicate.
  v1::SubmitJobReply again;
  ASSERT_TRUE(Submit(*alice, WitnessJob("c1", "r1"), &again).ok());
  EXPECT_EQ(again.job_seq(), submitted.job_seq());
  EXPECT_TRUE(again.duplicate());
  // Another payload under that id: refused.
  v1::SubmitJobRequest other = WitnessJob("c1", "r1");
  other.set_circuit_id("c2");
  v1::SubmitJobReply refused;
  EXPECT_EQ(Submit(*alice, other, &refused).error_code(), grpc::StatusCode::ALREADY_EXISTS);

  auto context = Context();
  v1::GetJobRequest get;
  get.set_job_seq(submitted.job_seq());
  proto::JobInfo info;
  s = alice->GetJob(context.get(), get, &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(info.state(), proto::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(info.client_id(), "alice");
  EXPECT_EQ(info.request_id(), "r1");
  EXPECT_EQ(info.partitions_done(), 1u);
  EXPECT_EQ(info.payload(), proto::JobInfo::PAYLOAD_WITNESSES);

  // Cancelling an ended job cancels nothing and says how it ended.
  context = Context();
  v1::CancelJobRequest cancel;
  cancel.set_job_seq(submitted.job_seq());
  proto::CancelReply cancelled;
  ASSERT_TRUE(alice->CancelJob(context.get(), cancel, &cancelled).ok());
  EXPECT_FALSE(cancelled.cancelled());
  EXPECT_EQ(cancelled.state(), proto::JOB_STATE_SUCCEEDED);

  // An unknown job: NOT_FOUND, for every RPC that names one.
  get.set_job_seq(999999);
  context = Context();
  EXPECT_EQ(alice->GetJob(context.get(), get, &info).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Await(*alice, 999999).status.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(Grpc, RolesAndOwnershipAreTheAllowListsOnBothTransports) {
  GrpcFleet g("grpc_roles");
  g.StartBroker();
  g.fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  WaitReady(g, "w1");
  auto alice = g.Stub("alice"), bob = g.Stub("bob"), watcher = g.Stub("watcher"), admin = g.Stub("fleet-test");

  // alice submits over ZeroMQ (her CURVE key); over gRPC her job is hers.
  auto zmq_alice = g.fleet.Client({}, "alice");
  zkfleet::client::internal::JobSubmission job;
  job.request.set_circuit_id("c1");
  job.request.set_request_id("zmq-1");
  job.witnesses.push_back(ReadFile(Fixture("bn128_k12/witness.wtns")));
  const uint64_t zmq_job = zmq_alice->Submit(job, 10s).job_seq();
  Awaited mine = Await(*alice, zmq_job);
  ASSERT_TRUE(mine.status.ok()) << mine.status.error_message();
  ASSERT_NE(mine.result(), nullptr);

  // bob (submit) cannot see, await or cancel it: NOT_FOUND, as if it did not exist.
  v1::GetJobRequest get;
  get.set_job_seq(zmq_job);
  proto::JobInfo info;
  auto context = Context();
  EXPECT_EQ(bob->GetJob(context.get(), get, &info).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Await(*bob, zmq_job).status.error_code(), grpc::StatusCode::NOT_FOUND);
  v1::CancelJobRequest cancel;
  cancel.set_job_seq(zmq_job);
  proto::CancelReply cancelled;
  context = Context();
  EXPECT_EQ(bob->CancelJob(context.get(), cancel, &cancelled).error_code(), grpc::StatusCode::NOT_FOUND);

  // And the reverse: bob's gRPC job is not alice's over ZeroMQ.
  v1::SubmitJobReply bobs;
  ASSERT_TRUE(Submit(*bob, WitnessJob("c1", "grpc-1"), &bobs).ok());
  try {
    zmq_alice->Await(bobs.job_seq(), 10s);
    ADD_FAILURE() << "alice awaited bob's job";
  } catch (const zkfleet::client::internal::BrokerError& e) {
    EXPECT_EQ(e.kind(), proto::ERROR_KIND_UNKNOWN_JOB) << e.what();
  }

  // watcher (observe): status, workers and reading any job; no submit, cancel or drain.
  context = Context();
  EXPECT_TRUE(watcher->GetJob(context.get(), get, &info).ok());
  EXPECT_EQ(info.client_id(), "alice");
  proto::StatusReply status;
  context = Context();
  EXPECT_TRUE(watcher->GetStatus(context.get(), v1::GetStatusRequest(), &status).ok());
  v1::ListWorkersReply workers;
  context = Context();
  ASSERT_TRUE(watcher->ListWorkers(context.get(), v1::ListWorkersRequest(), &workers).ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).worker_id(), "w1");
  v1::SubmitJobReply no;
  EXPECT_EQ(Submit(*watcher, WitnessJob("c1", "w-1"), &no).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  context = Context();
  EXPECT_EQ(watcher->CancelJob(context.get(), cancel, &cancelled).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  proto::DrainWorkerRequest drain;
  drain.set_worker_id("w1");
  proto::DrainWorkerReply drained;
  context = Context();
  EXPECT_EQ(watcher->DrainWorker(context.get(), drain, &drained).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // alice (submit): no status, no workers, no drain.
  context = Context();
  EXPECT_EQ(alice->GetStatus(context.get(), v1::GetStatusRequest(), &status).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  context = Context();
  EXPECT_EQ(alice->ListWorkers(context.get(), v1::ListWorkersRequest(), &workers).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  context = Context();
  EXPECT_EQ(alice->DrainWorker(context.get(), drain, &drained).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // The admin reads and cancels anyone's jobs and drains workers.
  context = Context();
  EXPECT_TRUE(admin->GetJob(context.get(), get, &info).ok());
  context = Context();
  ASSERT_TRUE(admin->DrainWorker(context.get(), drain, &drained).ok());
  EXPECT_EQ(drained.worker_id(), "w1");
  // watcher: submit, cancel, drain; alice: status, workers, drain.
  EXPECT_EQ(g.fleet.Status().requests_forbidden(), 6u) << "role refusals over gRPC are counted with the others";
}

TEST(Grpc, CertificatesThatDoNotNameAnAllowedClientAreRefused) {
  GrpcFleet g("grpc_tls");
  const int metrics_port = FreePort();
  g.StartBroker({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  v1::GetJobRequest get;
  get.set_job_seq(1);
  proto::JobInfo info;
  auto call = [&](const std::string& cert, const std::string& ca = "ca.pem") {
    auto stub = g.Stub(cert, ca);
    auto context = Context(5s);
    return stub->GetJob(context.get(), get, &info);
  };
  // A valid certificate of a name that is no client: UNAUTHENTICATED.
  grpc::Status s = call("nobody");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_NE(s.error_message().find("nobody"), std::string::npos) << s.error_message();
  // No certificate, an expired one, one from another CA: the TLS handshake fails.
  EXPECT_EQ(call("").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(call("expired").error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(call("stranger").error_code(), grpc::StatusCode::UNAVAILABLE);
  // A client that does not trust the broker's CA refuses the broker.
  EXPECT_EQ(call("alice", "other-ca.pem").error_code(), grpc::StatusCode::UNAVAILABLE);
  // The real one works (NOT_FOUND: no job 1 yet).
  EXPECT_EQ(call("alice").error_code(), grpc::StatusCode::NOT_FOUND);
  // Answers are counted by method and code (handshake failures are gRPC's: logged, not seen here).
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_requests_total{code=\"UNAUTHENTICATED\",method=\"GetJob\"}"), 1);
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_requests_total{code=\"NOT_FOUND\",method=\"GetJob\"}"), 1);
}

TEST(Grpc, MalformedRequestsAreRefusedAndLoseNothing) {
  GrpcFleet g("grpc_malformed");
  g.StartBroker({"--grpc-max-inline-bytes", "1000"});
  auto alice = g.Stub("alice");
  v1::SubmitJobReply reply;
  // Inline witnesses above --grpc-max-inline-bytes: pointed to references.
  grpc::Status s = Submit(*alice, WitnessJob("c1", "big"), &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("by reference"), std::string::npos) << s.error_message();
  // Two kinds of payload, a request id with a control byte, an empty job, an input that is not JSON.
  v1::SubmitJobRequest mixed;
  mixed.set_circuit_id("c1");
  mixed.set_request_id("mixed");
  mixed.add_inputs("{}");
  mixed.add_witness_refs()->set_url("file:///x");
  EXPECT_EQ(Submit(*alice, mixed, &reply).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::SubmitJobRequest control;
  control.set_circuit_id("c1");
  control.set_request_id(std::string("a\x01", 2));
  control.add_inputs("{}");
  s = Submit(*alice, control, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  v1::SubmitJobRequest long_id;
  long_id.set_circuit_id("c1");
  long_id.set_request_id(std::string(100000, 'x'));
  long_id.add_inputs("{}");
  EXPECT_EQ(Submit(*alice, long_id, &reply).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::SubmitJobRequest not_json;
  not_json.set_circuit_id("c1");
  not_json.set_request_id("nj");
  not_json.add_inputs("{not json");
  s = Submit(*alice, not_json, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  // Planned RPCs say so.
  auto context = Context();
  v1::ListJobsReply listed;
  EXPECT_EQ(alice->ListJobs(context.get(), v1::ListJobsRequest(), &listed).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  // Nothing was accepted.
  EXPECT_EQ(g.fleet.Status().jobs_submitted(), 0u);
}

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
  auto pending = std::async(std::launch::async, [&] { return Await(*alice, submitted.job_seq()); });
  std::this_thread::sleep_for(200ms);
  broker->Kill9();
  Awaited broken = pending.get();
  EXPECT_EQ(broken.status.error_code(), grpc::StatusCode::UNAVAILABLE) << broken.status.error_message();
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
  EXPECT_EQ(awaited.result()->state(), proto::JOB_STATE_SUCCEEDED);
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
      o->got_result = o->update.result().state() == proto::JOB_STATE_SUCCEEDED &&
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

}  // namespace
}  // namespace fleet_test
