// The fleet of the gRPC front door tests (grpc_*_test.cpp): a broker that
// also serves gRPC with mTLS from a test CA (tests/testutil/make_test_ca.sh),
// each certificate's CN one of the fleet's allow-listed client names with that
// key's role; stubs speaking as each of them, and the calls the tests share.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "fleet_harness.hpp"
#include "grpc/zkfleet_v1.grpc.pb.h"

namespace fleet_test {

namespace v1 = zkfleet::v1;
namespace proto = zkfleet::proto;

inline std::string Pem(const std::string& path) { return ReadFile(path); }

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

inline std::unique_ptr<grpc::ClientContext> Context(std::chrono::seconds timeout = 10s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + zkfleet::testing::Scaled(timeout));
  return context;
}

inline v1::SubmitJobRequest WitnessJob(const std::string& circuit, const std::string& request_id) {
  v1::SubmitJobRequest request;
  request.set_circuit_id(circuit);
  request.set_request_id(request_id);
  request.add_witnesses(ReadFile(Fixture("bn128_k12/witness.wtns")));
  return request;
}

inline grpc::Status Submit(v1::Fleet::Stub& stub, const v1::SubmitJobRequest& request, v1::SubmitJobReply* reply) {
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
inline Awaited Await(v1::Fleet::Stub& stub, uint64_t job_seq, std::chrono::seconds timeout = 30s) {
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

inline void WaitReady(GrpcFleet& g, const std::string& worker) { g.fleet.WaitWorkerReady(worker); }

// A job that only names its witness (the broker never reads it; no worker runs).
inline v1::SubmitJobRequest ReferenceJob(const std::string& circuit, const std::string& request_id) {
  v1::SubmitJobRequest request;
  request.set_circuit_id(circuit);
  request.set_request_id(request_id);
  v1::WitnessRef& ref = *request.add_witness_refs();
  ref.set_url("file:///nowhere/" + request_id + ".wtns");
  ref.set_size(1000);
  ref.set_sha256(std::string(32, 'h'));
  return request;
}

}  // namespace fleet_test
