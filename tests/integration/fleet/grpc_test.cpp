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
#include <map>
#include <set>
#include <thread>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "fleet_harness.hpp"
#include "grpc/zkfleet_v1.grpc.pb.h"
#include "grpc_reflection_v1alpha.grpc.pb.h"

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
  // To 127.0.0.1 (the certificate's IP SAN), not "localhost": a name goes
  // through gRPC's c-ares resolver, whose allocations LeakSanitizer reports
  // at exit (inside libcares, not ours).
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
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::SslCredentials(ssl), args);
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
  const v1::JobResult* result() const {
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
  EXPECT_EQ(awaited.result()->state(), v1::JOB_STATE_SUCCEEDED);
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
  v1::JobInfo info;
  s = alice->GetJob(context.get(), get, &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(info.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(info.client_id(), "alice");
  EXPECT_EQ(info.request_id(), "r1");
  EXPECT_EQ(info.partitions_done(), 1u);
  EXPECT_EQ(info.payload(), v1::JobInfo::PAYLOAD_WITNESSES);

  // Cancelling an ended job cancels nothing and says how it ended.
  context = Context();
  v1::CancelJobRequest cancel;
  cancel.set_job_seq(submitted.job_seq());
  v1::CancelReply cancelled;
  ASSERT_TRUE(alice->CancelJob(context.get(), cancel, &cancelled).ok());
  EXPECT_FALSE(cancelled.cancelled());
  EXPECT_EQ(cancelled.state(), v1::JOB_STATE_SUCCEEDED);

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
  v1::JobInfo info;
  auto context = Context();
  EXPECT_EQ(bob->GetJob(context.get(), get, &info).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Await(*bob, zmq_job).status.error_code(), grpc::StatusCode::NOT_FOUND);
  v1::CancelJobRequest cancel;
  cancel.set_job_seq(zmq_job);
  v1::CancelReply cancelled;
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

  // zkctl over ZeroMQ lists through the same index: each submit key its own jobs, whichever transport.
  auto zkctl = [&](const std::string& key, std::vector<std::string> args, std::string* out) {
    std::vector<std::string> argv = {BinaryPath("zkctl")};
    for (const auto& a : g.fleet.ZkctlConnection(key)) argv.push_back(a);
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, out);
  };
  std::string out;
  ASSERT_EQ(zkctl("bob", {"--json", "jobs"}, &out), 0) << out;
  // (Protobuf's JSON mapping, as a gRPC client gets it: 64-bit integers as strings.)
  EXPECT_NE(out.find("\"job_seq\": \"" + std::to_string(bobs.job_seq()) + "\""), std::string::npos) << out;
  EXPECT_EQ(out.find("\"job_seq\": \"" + std::to_string(zmq_job) + "\""), std::string::npos) << out;
  ASSERT_EQ(zkctl("alice", {"--json", "jobs", "--state", "succeeded"}, &out), 0) << out;
  EXPECT_NE(out.find("\"job_seq\": \"" + std::to_string(zmq_job) + "\""), std::string::npos) << out;
  EXPECT_NE(zkctl("alice", {"job", std::to_string(bobs.job_seq())}, &out), 0) << out;
  ASSERT_EQ(zkctl("watcher", {"job", std::to_string(bobs.job_seq())}, &out), 0) << out;
  EXPECT_NE(out.find("bob"), std::string::npos) << out;
  EXPECT_NE(zkctl("bob", {"jobs", "--client", "alice"}, &out), 0) << "a submit key lists its own jobs only";

  // watcher (observe): status, workers and reading any job; no submit, cancel or drain.
  context = Context();
  EXPECT_TRUE(watcher->GetJob(context.get(), get, &info).ok());
  EXPECT_EQ(info.client_id(), "alice");
  v1::StatusReply status;
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
  v1::DrainWorkerRequest drain;
  drain.set_worker_id("w1");
  v1::DrainWorkerReply drained;
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
  // watcher: submit, cancel, drain; alice: status, workers, drain; bob: listing alice's jobs.
  EXPECT_EQ(g.fleet.Status().requests_forbidden(), 7u) << "role refusals over gRPC are counted with the others";
}

// A job that only names its witness (the broker never reads it; no worker runs).
v1::SubmitJobRequest ReferenceJob(const std::string& circuit, const std::string& request_id) {
  v1::SubmitJobRequest request;
  request.set_circuit_id(circuit);
  request.set_request_id(request_id);
  v1::WitnessRef& ref = *request.add_witness_refs();
  ref.set_url("file:///nowhere/" + request_id + ".wtns");
  ref.set_size(1000);
  ref.set_sha256(std::string(32, 'h'));
  return request;
}

// Every role against every RPC: PERMISSION_DENIED exactly where the role
// table (docs/grpc.md, "RPCs") says, and never UNAUTHENTICATED for an
// allowed client. Calls on a job that does not exist or on a worker that
// is not there: the role is checked first, so "allowed" shows as NOT_FOUND
// (or OK), "refused" as PERMISSION_DENIED.
TEST(Grpc, EveryRoleAgainstEveryRpc) {
  GrpcFleet g("grpc_role_matrix");
  g.StartBroker();
  using Code = grpc::StatusCode;
  struct Rpc {
    const char* name;
    Code allowed;  // the answer when the role may call it (no such job, circuit or worker here)
    std::function<grpc::Status(v1::Fleet::Stub&)> call;
  };
  const std::vector<Rpc> rpcs = {
      {"SubmitJob", Code::FAILED_PRECONDITION, [](v1::Fleet::Stub& stub) {
         v1::SubmitJobReply reply;
         v1::SubmitJobRequest request = ReferenceJob("no-such-circuit", "matrix");
         return Submit(stub, request, &reply);
       }},
      {"GetJob", Code::NOT_FOUND, [](v1::Fleet::Stub& stub) {
         v1::GetJobRequest r;
         r.set_job_seq(424242);
         v1::JobInfo out;
         auto c = Context();
         return stub.GetJob(c.get(), r, &out);
       }},
      {"AwaitJob", Code::NOT_FOUND, [](v1::Fleet::Stub& stub) { return Await(stub, 424242).status; }},
      {"CancelJob", Code::NOT_FOUND, [](v1::Fleet::Stub& stub) {
         v1::CancelJobRequest r;
         r.set_job_seq(424242);
         v1::CancelReply out;
         auto c = Context();
         return stub.CancelJob(c.get(), r, &out);
       }},
      {"ListJobs", Code::OK, [](v1::Fleet::Stub& stub) {
         v1::ListJobsReply out;
         auto c = Context();
         return stub.ListJobs(c.get(), v1::ListJobsRequest(), &out);
       }},
      {"RetryJob", Code::NOT_FOUND, [](v1::Fleet::Stub& stub) {
         v1::RetryJobRequest r;
         r.set_job_seq(424242);
         r.set_attempt(1);
         v1::JobInfo out;
         auto c = Context();
         return stub.RetryJob(c.get(), r, &out);
       }},
      {"GetStatus", Code::OK, [](v1::Fleet::Stub& stub) {
         v1::StatusReply out;
         auto c = Context();
         return stub.GetStatus(c.get(), v1::GetStatusRequest(), &out);
       }},
      {"ListWorkers", Code::OK, [](v1::Fleet::Stub& stub) {
         v1::ListWorkersReply out;
         auto c = Context();
         return stub.ListWorkers(c.get(), v1::ListWorkersRequest(), &out);
       }},
      {"DrainWorker", Code::NOT_FOUND, [](v1::Fleet::Stub& stub) {
         v1::DrainWorkerRequest r;
         r.set_worker_id("nobody-here");
         v1::DrainWorkerReply out;
         auto c = Context();
         return stub.DrainWorker(c.get(), r, &out);
       }},
  };
  // Refused per role (docs/grpc.md): submit may not read the fleet or drain;
  // observe may not change anything; admin may do everything.
  const std::map<std::string, std::set<std::string>> refused = {
      {"alice", {"GetStatus", "ListWorkers", "DrainWorker"}},
      {"watcher", {"SubmitJob", "AwaitJob", "CancelJob", "RetryJob", "DrainWorker"}},
      {"fleet-test", {}},
  };
  for (const auto& [who, denied] : refused) {
    auto stub = g.Stub(who);
    for (const Rpc& rpc : rpcs) {
      grpc::Status s = rpc.call(*stub);
      SCOPED_TRACE(who + " " + rpc.name + ": " + s.error_message());
      if (denied.count(rpc.name)) {
        EXPECT_EQ(s.error_code(), Code::PERMISSION_DENIED);
      } else {
        EXPECT_EQ(s.error_code(), rpc.allowed);
      }
    }
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

TEST(Grpc, CertificatesThatDoNotNameAnAllowedClientAreRefused) {
  GrpcFleet g("grpc_tls");
  const int metrics_port = FreePort();
  Process& broker = g.StartBroker({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  v1::GetJobRequest get;
  get.set_job_seq(1);
  v1::JobInfo info;
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
  // Two common names in one subject (CN=alice, CN=nobody), signed by the CA:
  // which one is the caller is ambiguous, so neither (issue 47, item 12).
  s = call("twonames");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
  EXPECT_NE(s.error_message().find("holds 2 common names"), std::string::npos) << s.error_message();
  // The real one works (NOT_FOUND: no job 1 yet).
  EXPECT_EQ(call("alice").error_code(), grpc::StatusCode::NOT_FOUND);
  // Answers are counted by method and code; handshakes refused before any
  // call by reason (gRPC may try a refused connection more than once).
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_requests_total{code=\"UNAUTHENTICATED\",method=\"GetJob\"}"), 2);
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_requests_total{code=\"NOT_FOUND\",method=\"GetJob\"}"), 1);
  EXPECT_GE(Sample(metrics_port, "zkfleet_broker_grpc_tls_refused_total{reason=\"no_certificate\"}"), 1);
  EXPECT_GE(Sample(metrics_port, "zkfleet_broker_grpc_tls_refused_total{reason=\"certificate_not_trusted\"}"), 2);
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_tls_refused_total{reason=\"other\"}"), 0);
  EXPECT_TRUE(broker.WaitForLog("gRPC front door refused a TLS handshake \\(no_certificate\\)", 5s)) << broker.Log();
}

// Plaintext gRPC only beside a plaintext broker: callers then name
// themselves (metadata zkfleet-client-id), as ZeroMQ clients do there, and
// still own only their declared identity's jobs. A CURVE broker refuses to
// start with plaintext gRPC (and the reverse), saying why.
TEST(Grpc, PlaintextOnlyWithAPlaintextBrokerAndCallersStillOwnTheirJobs) {
  {
    GrpcFleet g("grpc_plaintext_refused");
    std::string out;
    int rc = RunCommand({BinaryPath("zkbroker"), "--clients", g.fleet.client_endpoint(), "--workers",
                         g.fleet.worker_endpoint(), "--data-dir", g.fleet.dir() + "/refused", "--curve-secret-key",
                         g.fleet.SecretKeyFile("broker"), "--allow-dir", g.fleet.allow_dir(), "--grpc-listen",
                         "127.0.0.1:" + std::to_string(g.port), "--grpc-insecure-plaintext"},
                        &out);
    EXPECT_NE(rc, 0);
    EXPECT_NE(out.find("--grpc-insecure-plaintext needs --insecure-plaintext"), std::string::npos) << out;
  }
  GrpcFleet g("grpc_plaintext");
  g.fleet.StartBroker({"--insecure-plaintext", "--grpc-insecure-plaintext", "--grpc-listen",
                       "127.0.0.1:" + std::to_string(g.port)});
  g.fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  WaitReady(g, "w1");
  auto stub = v1::Fleet::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(g.port), grpc::InsecureChannelCredentials()));
  auto as = [](const std::string& client) {
    auto context = Context();
    context->AddMetadata("zkfleet-client-id", client);
    return context;
  };
  v1::SubmitJobReply submitted;
  auto context = as("carol");
  ASSERT_TRUE(stub->SubmitJob(context.get(), WitnessJob("c1", "p-1"), &submitted).ok());
  v1::GetJobRequest get;
  get.set_job_seq(submitted.job_seq());
  v1::JobInfo info;
  context = as("carol");
  ASSERT_TRUE(stub->GetJob(context.get(), get, &info).ok());
  EXPECT_EQ(info.client_id(), "carol");
  context = as("dave");
  EXPECT_EQ(stub->GetJob(context.get(), get, &info).error_code(), grpc::StatusCode::NOT_FOUND);
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
  // A page token this broker did not give.
  v1::ListJobsRequest list;
  list.set_page_token("x12");
  v1::ListJobsReply listed;
  auto context = Context();
  EXPECT_EQ(alice->ListJobs(context.get(), list, &listed).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // Nothing was accepted.
  EXPECT_EQ(g.fleet.Status().jobs_submitted(), 0u);
}

// Every page of a listing; fails on a repeated job or a page out of order.
std::vector<v1::JobInfo> ListAll(v1::Fleet::Stub& stub, v1::ListJobsRequest request, size_t* pages) {
  std::vector<v1::JobInfo> all;
  *pages = 0;
  for (;;) {
    v1::ListJobsReply reply;
    auto context = Context();
    grpc::Status s = stub.ListJobs(context.get(), request, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (!s.ok()) break;
    ++*pages;
    for (const v1::JobInfo& job : reply.jobs()) {
      if (!all.empty()) EXPECT_LT(job.job_seq(), all.back().job_seq()) << "newest first, each job once";
      all.push_back(job);
    }
    if (reply.next_page_token().empty()) break;
    request.set_page_token(reply.next_page_token());
  }
  return all;
}

TEST(Grpc, ListJobsPagesThroughTenThousandJobsByIndex) {
  GrpcFleet g("grpc_list");
  g.StartBroker({"--accept-unrouted", "--sync", "none"});
  auto alice = g.Stub("alice"), bob = g.Stub("bob"), watcher = g.Stub("watcher");
  // 9,900 "common" and 100 "rare" jobs of alice's, 100 of bob's, from 4 threads.
  constexpr int kJobs = 10000;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto stub = g.Stub("alice");
      for (int i = t; i < kJobs; i += 4) {
        v1::SubmitJobReply reply;
        if (!Submit(*stub, ReferenceJob(i % 100 == 7 ? "rare" : "common", "a-" + std::to_string(i)), &reply).ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 100; ++i) {
    v1::SubmitJobReply reply;
    if (!Submit(*bob, ReferenceJob("common", "b-" + std::to_string(i)), &reply).ok()) ++failures;
  }
  ASSERT_EQ(failures.load(), 0);

  // alice's own jobs, 1,000 a page: all 10,000 of them, in 10 pages, none of bob's.
  v1::ListJobsRequest mine;
  mine.set_page_size(1000);
  size_t pages = 0;
  auto all = ListAll(*alice, mine, &pages);
  EXPECT_EQ(all.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(pages, 10u);
  for (const auto& job : all) ASSERT_EQ(job.client_id(), "alice");
  // The 1 % of one circuit, 30 a page: 100 jobs in 4 pages (through the circuit index).
  v1::ListJobsRequest rare;
  rare.set_circuit_id("rare");
  rare.set_page_size(30);
  auto rares = ListAll(*alice, rare, &pages);
  EXPECT_EQ(rares.size(), 100u);
  EXPECT_EQ(pages, 4u);
  for (const auto& job : rares) ASSERT_EQ(job.circuit_id(), "rare");
  // States: all are queued (no worker), none succeeded.
  v1::ListJobsRequest queued;
  queued.add_states(v1::JOB_STATE_QUEUED);
  queued.set_circuit_id("rare");
  EXPECT_EQ(ListAll(*alice, queued, &pages).size(), 100u);
  v1::ListJobsRequest succeeded;
  succeeded.add_states(v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(ListAll(*alice, succeeded, &pages).size(), 0u);
  // Time: alice's jobs submitted from her 5,000th newest on, and bob's, all after hers.
  v1::ListJobsRequest later;
  later.set_submitted_after_unix_s(all[4999].submitted_unix_s());
  later.set_page_size(1000);
  size_t expected = 0;
  for (const auto& job : all) expected += job.submitted_unix_s() >= all[4999].submitted_unix_s();
  EXPECT_GE(expected, 5000u);
  EXPECT_LT(expected, static_cast<size_t>(kJobs));
  EXPECT_EQ(ListAll(*alice, later, &pages).size(), expected);
  v1::ListJobsRequest bobs_later;
  bobs_later.set_client_id("bob");
  bobs_later.set_submitted_after_unix_s(all.front().submitted_unix_s());
  EXPECT_EQ(ListAll(*watcher, bobs_later, &pages).size(), 100u) << "bob's came after alice's last";
  v1::ListJobsRequest earlier;
  earlier.set_client_id("bob");
  earlier.set_submitted_before_unix_s(all.front().submitted_unix_s());
  EXPECT_EQ(ListAll(*watcher, earlier, &pages).size(), 0u);
  // Roles: bob lists his own; asking for alice's is refused; an observer sees everyone's.
  v1::ListJobsRequest bobs_view;
  EXPECT_EQ(ListAll(*bob, bobs_view, &pages).size(), 100u);
  v1::ListJobsRequest others;
  others.set_client_id("alice");
  v1::ListJobsReply refused;
  auto context = Context();
  EXPECT_EQ(bob->ListJobs(context.get(), others, &refused).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  v1::ListJobsRequest everyone;
  everyone.set_page_size(1000);
  EXPECT_EQ(ListAll(*watcher, everyone, &pages).size(), static_cast<size_t>(kJobs + 100));
}

// A client that knows no service: it lists them through server reflection,
// fetches their descriptors, and calls GetStatus and the health check with
// messages built from those descriptors alone (what grpcurl does).
TEST(Grpc, ReflectionListsTheServicesAndDrivesThemWithoutStubs) {
  namespace pb = google::protobuf;
  namespace reflection = grpc::reflection::v1alpha;
  GrpcFleet g("grpc_reflection");
  g.StartBroker();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Pem(g.ca_dir + "/ca.pem");
  ssl.pem_cert_chain = Pem(g.ca_dir + "/watcher.pem");
  ssl.pem_private_key = Pem(g.ca_dir + "/watcher.key");
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(g.port), grpc::SslCredentials(ssl));
  auto stub = reflection::ServerReflection::NewStub(channel);
  auto context = Context();
  auto stream = stub->ServerReflectionInfo(context.get());
  auto ask = [&](const reflection::ServerReflectionRequest& request) {
    reflection::ServerReflectionResponse response;
    EXPECT_TRUE(stream->Write(request));
    EXPECT_TRUE(stream->Read(&response));
    return response;
  };
  reflection::ServerReflectionRequest list;
  list.set_list_services("");
  std::set<std::string> services;
  const reflection::ServerReflectionResponse listed = ask(list);
  for (const auto& service : listed.list_services_response().service()) services.insert(service.name());
  EXPECT_TRUE(services.count("zkfleet.v1.Fleet")) << ::testing::PrintToString(services);
  EXPECT_TRUE(services.count("grpc.health.v1.Health")) << ::testing::PrintToString(services);

  // The descriptors of both services' files and their imports.
  pb::SimpleDescriptorDatabase database;
  std::set<std::string> have;
  std::function<void(const reflection::ServerReflectionRequest&)> fetch = [&](const auto& request) {
    const reflection::ServerReflectionResponse files = ask(request);
    for (const std::string& bytes : files.file_descriptor_response().file_descriptor_proto()) {
      pb::FileDescriptorProto file;
      ASSERT_TRUE(file.ParseFromString(bytes));
      if (!have.insert(file.name()).second) continue;
      database.Add(file);
      for (const std::string& dependency : file.dependency()) {
        if (have.count(dependency)) continue;
        reflection::ServerReflectionRequest more;
        more.set_file_by_filename(dependency);
        fetch(more);
      }
    }
  };
  for (const char* symbol : {"zkfleet.v1.Fleet"}) {
    reflection::ServerReflectionRequest request;
    request.set_file_containing_symbol(symbol);
    fetch(request);
  }
  stream->WritesDone();
  pb::DescriptorPool pool(&database);
  pb::DynamicMessageFactory factory(&pool);

  // A unary call with nothing but the descriptors: request and reply as dynamic messages.
  grpc::GenericStub generic(channel);
  auto raw_call = [&](const std::string& path, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer in(&slice, 1), out;
    std::promise<grpc::Status> done;
    auto ctx = Context();
    generic.UnaryCall(ctx.get(), path, grpc::StubOptions(), &in, &out,
                      [&](grpc::Status status) { done.set_value(status); });
    grpc::Status status = done.get_future().get();
    EXPECT_TRUE(status.ok()) << path << ": " << status.error_message();
    std::vector<grpc::Slice> slices;
    (void)out.Dump(&slices);
    std::string reply;
    for (const auto& s : slices) reply.append(reinterpret_cast<const char*>(s.begin()), s.size());
    return reply;
  };
  const pb::ServiceDescriptor* fleet = pool.FindServiceByName("zkfleet.v1.Fleet");
  ASSERT_NE(fleet, nullptr);
  const pb::MethodDescriptor* get_status = fleet->FindMethodByName("GetStatus");
  ASSERT_NE(get_status, nullptr);
  EXPECT_NE(fleet->FindMethodByName("AwaitJob"), nullptr);
  std::unique_ptr<pb::Message> request(factory.GetPrototype(get_status->input_type())->New());
  std::unique_ptr<pb::Message> status(factory.GetPrototype(get_status->output_type())->New());
  ASSERT_TRUE(status->ParseFromString(raw_call("/zkfleet.v1.Fleet/GetStatus", request->SerializeAsString())));
  const pb::FieldDescriptor* epoch = status->GetDescriptor()->FindFieldByName("broker_epoch");
  ASSERT_NE(epoch, nullptr);
  EXPECT_GE(status->GetReflection()->GetUInt64(*status, epoch), 1u) << status->DebugString();
  // The health check (gRPC's own service, whose descriptor its reflection
  // does not serve): HealthCheckResponse{status: SERVING} is field 1 = 1.
  EXPECT_EQ(raw_call("/grpc.health.v1.Health/Check", ""), std::string("\x08\x01", 2));
  // Per service: HealthCheckRequest{service: "zkfleet.v1.Fleet"} (field 1, 16 bytes).
  EXPECT_EQ(raw_call("/grpc.health.v1.Health/Check", std::string("\x0a\x10zkfleet.v1.Fleet", 18)),
            std::string("\x08\x01", 2));
}

// RetryJob: a job dead-lettered when its only worker died mid-proof gets a
// new round under the same job_seq once a worker is back, and succeeds;
// retries are idempotent per attempt number, only the next one is made,
// only failed jobs and only their owner's (or an admin's).
TEST(Grpc, RetryJobGivesADeadLetteredJobANewRound) {
  GrpcFleet g("grpc_retry");
  g.StartBroker({"--max-attempts", "1"});
  Process& first = g.fleet.StartWorker("w1", {"--instant", "--circuit", "slow", "--instant-delay-ms", "3000"});
  WaitReady(g, "w1");
  auto alice = g.Stub("alice"), bob = g.Stub("bob"), watcher = g.Stub("watcher");
  v1::SubmitJobReply submitted;
  ASSERT_TRUE(Submit(*alice, WitnessJob("slow", "retry-1"), &submitted).ok());
  const uint64_t seq = submitted.job_seq();
  ASSERT_TRUE(WaitForAttempts(g.fleet, seq, 0, 1, 10s));
  first.Kill9();  // its one attempt is lost: dead-lettered
  Awaited dead = Await(*alice, seq);
  ASSERT_TRUE(dead.status.ok()) << dead.status.error_message();
  ASSERT_NE(dead.result(), nullptr);
  ASSERT_EQ(dead.result()->state(), v1::JOB_STATE_DEAD_LETTERED);

  auto retry = [&](v1::Fleet::Stub& stub, uint32_t attempt, v1::JobInfo* info) {
    v1::RetryJobRequest request;
    request.set_job_seq(seq);
    request.set_attempt(attempt);
    auto context = Context();
    return stub.RetryJob(context.get(), request, info);
  };
  v1::JobInfo info;
  EXPECT_EQ(retry(*bob, 1, &info).error_code(), grpc::StatusCode::NOT_FOUND) << "another client's job";
  EXPECT_EQ(retry(*watcher, 1, &info).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(retry(*alice, 2, &info).error_code(), grpc::StatusCode::FAILED_PRECONDITION) << "not the next retry";
  EXPECT_EQ(retry(*alice, 0, &info).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  g.fleet.StartWorker("w2", {"--instant", "--circuit", "slow"});
  WaitReady(g, "w2");
  grpc::Status s = retry(*alice, 1, &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(info.job_seq(), seq);
  EXPECT_EQ(info.retries(), 1u);
  EXPECT_TRUE(info.state() == v1::JOB_STATE_QUEUED || info.state() == v1::JOB_STATE_RUNNING)
      << v1::JobState_Name(info.state());
  // The same retry again changes nothing.
  v1::JobInfo again;
  ASSERT_TRUE(retry(*alice, 1, &again).ok());
  EXPECT_EQ(again.retries(), 1u);

  Awaited done = Await(*alice, seq);
  ASSERT_TRUE(done.status.ok()) << done.status.error_message();
  ASSERT_NE(done.result(), nullptr);
  EXPECT_EQ(done.result()->state(), v1::JOB_STATE_SUCCEEDED) << done.result()->error();
  ASSERT_EQ(done.result()->partitions_size(), 1);

  auto context = Context();
  v1::GetJobRequest get;
  get.set_job_seq(seq);
  ASSERT_TRUE(alice->GetJob(context.get(), get, &info).ok());
  EXPECT_EQ(info.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(info.retries(), 1u);
  ASSERT_EQ(info.history_size(), 1);
  EXPECT_EQ(info.history(0).round(), 0u);
  EXPECT_EQ(info.history(0).state(), v1::JOB_STATE_DEAD_LETTERED);
  EXPECT_FALSE(info.history(0).error().empty());
  // A job that succeeded is not retried; its retry 1 is still answered as made.
  EXPECT_EQ(retry(*alice, 2, &info).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(retry(*alice, 1, &info).ok());
  EXPECT_EQ(g.fleet.Status().jobs_retried(), 1u);
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

}  // namespace
}  // namespace fleet_test
