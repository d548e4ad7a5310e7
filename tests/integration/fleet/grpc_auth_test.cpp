// The gRPC front door's callers: roles on both transports, every role against every RPC, certificates, plaintext.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "grpc_test_support.hpp"

namespace fleet_test {
namespace {

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
  // A TLS caller without a certificate from a source port of its own choice:
  // the broker's log names that port (the first refusal: later ones within
  // kRefusalLogInterval are only counted).
  std::string out;
  ASSERT_EQ(RunCommand({"python3", "-c",
                        "import socket, ssl, sys\n"
                        "s = socket.socket()\n"
                        "s.bind(('127.0.0.1', 0))\n"
                        "print(s.getsockname()[1], flush=True)\n"
                        "s.connect(('127.0.0.1', int(sys.argv[1])))\n"
                        "c = ssl.create_default_context(cafile=sys.argv[2])\n"
                        "c.check_hostname = False\n"
                        "t = c.wrap_socket(s)\n"
                        "try:\n"
                        "    t.recv(1)\n"
                        "except (ssl.SSLError, OSError):\n"
                        "    pass\n",
                        std::to_string(g.port), g.ca_dir + "/ca.pem"},
                       &out),
            0)
      << out;
  const std::string source_port = out.substr(0, out.find('\n'));
  EXPECT_TRUE(broker.WaitForLog("gRPC front door refused a TLS handshake \\(no_certificate\\) from "
                                "ipv4:127\\.0\\.0\\.1:" + source_port + ": Handshake failed",
                                5s))
      << "source port " << source_port << "\n" << broker.Log();
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
  // Twice: the second answer comes from the front door's memory of that
  // certificate (grpc_front_door.cpp, common_names), and must be the same.
  for (int again = 0; again < 2; ++again) {
    s = call("twonames");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
    EXPECT_NE(s.error_message().find("holds 2 common names"), std::string::npos) << s.error_message();
  }
  // The real one works (NOT_FOUND: no job 1 yet).
  EXPECT_EQ(call("alice").error_code(), grpc::StatusCode::NOT_FOUND);
  // Answers are counted by method and code; handshakes refused before any
  // call by reason (gRPC may try a refused connection more than once).
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_requests_total{code=\"UNAUTHENTICATED\",method=\"GetJob\"}"), 3);
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_requests_total{code=\"NOT_FOUND\",method=\"GetJob\"}"), 1);
  EXPECT_GE(Sample(metrics_port, "zkfleet_broker_grpc_tls_refused_total{reason=\"no_certificate\"}"), 1);
  EXPECT_GE(Sample(metrics_port, "zkfleet_broker_grpc_tls_refused_total{reason=\"certificate_not_trusted\"}"), 2);
  EXPECT_EQ(Sample(metrics_port, "zkfleet_broker_grpc_tls_refused_total{reason=\"other\"}"), 0);
  // None of the "tcp" tracer's own lines (grpc_core_log.hpp) reaches the log.
  EXPECT_EQ(broker.Log().find("(peer=ipv4:"), std::string::npos);
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

}  // namespace
}  // namespace fleet_test
