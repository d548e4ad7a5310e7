// The gRPC front door's job RPCs: submit, await, get, cancel, list, retry; malformed requests; reflection.
#include <atomic>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <grpcpp/generic/generic_stub.h>

#include "grpc_reflection_v1alpha.grpc.pb.h"
#include "grpc_test_support.hpp"

namespace fleet_test {
namespace {

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

}  // namespace
}  // namespace fleet_test
