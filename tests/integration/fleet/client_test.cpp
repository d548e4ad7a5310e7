// The public C++ client (zkfleet/client.h) against real zkbroker/zkworker
// processes: submit, results, await, cancel, status, and every error the
// issue names as a Status value.
#include <gtest/gtest.h>
#include <google/protobuf/descriptor.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

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
  EXPECT_EQ(c->duplicate_results_dropped(), 0u);  // the broker answered c once

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
  auto stranger = Open(fleet, "stranger", 4s);  // refused at the handshake: says so at once
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


// ---------------------------------------------------------------- against a fake broker
//
// A ZeroMQ ROUTER in a thread of the test, plaintext, posing as the broker:
// for what a real broker cannot be made to do on cue (refuse a SUBMIT it could
// not read, answer UNAVAILABLE, send a result that is not a proof, restart at
// a chosen moment).

namespace proto = zkfleet::proto;

class FakeBroker {
 public:
  // The answers to one request (none: it stays unanswered). `nth` counts
  // the requests of its kind so far, from 1.
  using Answer = std::function<std::vector<proto::Envelope>(const proto::Envelope& request, int nth)>;

  explicit FakeBroker(Answer answer)
      : answer_(std::move(answer)), endpoint_("tcp://127.0.0.1:" + std::to_string(FreePort())) {
    thread_ = std::thread([this] { Run(); });
    WaitGeneration(0);
  }
  ~FakeBroker() {
    stop_ = true;
    thread_.join();
  }

  const std::string& endpoint() const { return endpoint_; }

  // Closes the ROUTER and binds a new one at the same endpoint, as a broker
  // restart looks to a client (its connection drops, then comes back).
  void Restart() {
    const int next = generation_ + 1;
    restart_ = true;
    WaitGeneration(next);
  }

  struct Request {
    int generation;  // 0 before the first Restart()
    proto::Envelope envelope;
    std::string witness_bytes;  // the frames after the envelope, joined
  };
  std::vector<Request> Requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  // The kinds ("submit", "status", ...) of the requests received since
  // generation `generation` began.
  std::vector<std::string> BodiesSince(int generation) {
    std::vector<std::string> bodies;
    for (const auto& r : Requests()) {
      if (r.generation >= generation) bodies.push_back(BodyName(r.envelope));
    }
    return bodies;
  }

  static std::string BodyName(const proto::Envelope& e) {
    const auto* field = proto::Envelope::descriptor()->FindFieldByNumber(e.body_case());
    return field ? field->name() : "none";
  }

  static proto::Envelope Error(uint64_t correlation_id, proto::ErrorKind kind, const std::string& message,
                               uint32_t retry_after_ms = 0) {
    proto::Envelope e;
    e.set_correlation_id(correlation_id);
    e.mutable_error()->set_kind(kind);
    e.mutable_error()->set_message(message);
    e.mutable_error()->set_retry_after_ms(retry_after_ms);
    return e;
  }
  static proto::Envelope Accepted(uint64_t correlation_id, uint64_t job_seq) {
    proto::Envelope e;
    e.set_correlation_id(correlation_id);
    e.mutable_submit_reply()->set_job_seq(job_seq);
    e.mutable_submit_reply()->set_state(proto::JOB_STATE_QUEUED);
    return e;
  }
  static proto::Envelope Result(uint64_t correlation_id, uint64_t job_seq, const std::string& proof_json,
                                const std::string& public_json) {
    proto::Envelope e;
    e.set_correlation_id(correlation_id);
    auto* result = e.mutable_job_result();
    result->set_job_seq(job_seq);
    result->set_request_id("r" + std::to_string(job_seq));
    result->set_circuit_id("c1");
    result->set_state(proto::JOB_STATE_SUCCEEDED);
    auto* partition = result->add_partitions();
    partition->set_proof_json(proof_json);
    partition->set_public_json(public_json);
    partition->set_worker_id("w1");
    return e;
  }

 private:
  void WaitGeneration(int generation) {
    const auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(10s);
    while (bound_generation_ < generation) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the fake broker could not bind " << endpoint_;
      std::this_thread::sleep_for(5ms);
    }
  }

  std::unique_ptr<zmq::socket_t> Bind() {
    for (int attempt = 0; attempt < 500; ++attempt) {  // the old socket's port is released asynchronously
      auto socket = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::router);
      socket->set(zmq::sockopt::linger, 0);
      try {
        socket->bind(endpoint_);
        return socket;
      } catch (const zmq::error_t&) {
        std::this_thread::sleep_for(10ms);
      }
    }
    return nullptr;
  }

  void Run() {
    std::unique_ptr<zmq::socket_t> socket = Bind();
    bound_generation_ = socket ? 0 : -1;
    std::map<int, int> seen;  // body case -> requests so far
    while (!stop_ && socket) {
      if (restart_) {
        socket->close();
        std::this_thread::sleep_for(50ms);
        socket = Bind();
        restart_ = false;
        if (!socket) break;
        bound_generation_ = ++generation_;
      }
      zmq::pollitem_t item{socket->handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> parts;
      do {
        parts.emplace_back();
        (void)socket->recv(parts.back(), zmq::recv_flags::none);
      } while (parts.back().more());
      if (parts.size() < 2) continue;
      Request request{generation_, {}, {}};
      if (!request.envelope.ParseFromArray(parts[1].data(), static_cast<int>(parts[1].size()))) continue;
      for (size_t i = 2; i < parts.size(); ++i) request.witness_bytes += parts[i].to_string();
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
      }
      for (proto::Envelope& reply : answer_(request.envelope, ++seen[request.envelope.body_case()])) {
        reply.set_version(proto::PROTOCOL_VERSION_CURRENT);
        socket->send(zmq::buffer(parts[0].to_string()), zmq::send_flags::sndmore);
        socket->send(zmq::buffer(reply.SerializeAsString()), zmq::send_flags::none);
      }
    }
  }

  Answer answer_;
  std::string endpoint_;
  zmq::context_t context_{1};
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> restart_{false};
  std::atomic<int> generation_{0};
  std::atomic<int> bound_generation_{-1};
  std::mutex mutex_;
  std::vector<Request> requests_;
};

std::unique_ptr<client::Client> OpenPlaintext(const FakeBroker& broker, client::Options options = {}) {
  options.endpoint = broker.endpoint();
  options.insecure_plaintext = true;
  if (options.reply_timeout == client::Options{}.reply_timeout) options.reply_timeout = Scaled(10s);
  std::unique_ptr<client::Client> c;
  client::Status s = client::Client::Open(options, &c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return c;
}

std::vector<client::Witness> Bytes(const std::string& bytes = "witness") { return {client::Witness::FromBytes(bytes)}; }

// zkctl against the fake broker; exit code, output captured.
int ZkctlAt(const FakeBroker& broker, std::vector<std::string> args, std::string* out) {
  std::vector<std::string> argv = {BinaryPath("zkctl"), "--broker", broker.endpoint(), "--insecure-plaintext",
                                   "--client-id", "tester", "--timeout", "10"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, out);
}

TEST(PublicClientWire, ARefusedSubmitIsReportedOnceAndNeverResentAfterAReconnect) {
  FakeBroker broker([](const proto::Envelope& request, int) -> std::vector<proto::Envelope> {
    const uint64_t id = request.correlation_id();
    if (request.has_status()) {
      proto::Envelope reply;
      reply.set_correlation_id(id);
      reply.mutable_status_reply()->set_broker_epoch(1);
      return {reply};
    }
    if (!request.has_submit()) return {};
    const std::string& rid = request.submit().request_id();
    if (rid == "r-bad") return {FakeBroker::Error(id, proto::ERROR_KIND_BAD_REQUEST, "refused")};
    if (rid == "r-forbidden") return {FakeBroker::Error(id, proto::ERROR_KIND_FORBIDDEN, "refused")};
    if (rid == "r-reused") return {FakeBroker::Error(id, proto::ERROR_KIND_REQUEST_ID_REUSED, "refused")};
    // A SUBMIT the broker could not read: the refusal carries correlation id 0.
    if (rid == "r-unreadable") return {FakeBroker::Error(0, proto::ERROR_KIND_TOO_LARGE, "frame above the limit")};
    return {};
  });
  client::Options options;
  options.reply_timeout = Scaled(2s);  // a STATUS sent while the connection is down may be lost
  auto c = OpenPlaintext(broker, options);
  client::Job job;
  for (const auto& [rid, code] : std::vector<std::pair<std::string, client::Code>>{
           {"r-bad", client::Code::kBadRequest},
           {"r-forbidden", client::Code::kAuth},
           {"r-reused", client::Code::kRequestIdReused},
           {"r-unreadable", client::Code::kTooLarge}}) {
    client::Status s = c->Submit({.circuit = "c1", .request_id = rid}, Bytes(), &job);
    EXPECT_EQ(s.code(), code) << rid << ": " << s.ToString();
  }
  EXPECT_EQ(broker.BodiesSince(0), std::vector<std::string>(4, "submit"));

  // The broker restarts; the client's next requests see the new connection.
  broker.Restart();
  zkfleet::proto::StatusReply status;
  const auto deadline = std::chrono::steady_clock::now() + Scaled(15s);
  while (c->reconnections() < 1 && std::chrono::steady_clock::now() < deadline) {
    (void)c->GetStatus(&status);
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(c->reconnections(), 1u) << "the client never saw the connection come back";
  std::this_thread::sleep_for(Scaled(300ms));
  const client::Status last = c->GetStatus(&status);
  // Nothing but STATUS reached the restarted broker: no refused SUBMIT again
  // (a resent one would be refused again, with correlation id 0, and that
  // refusal taken as the STATUS's answer).
  for (const std::string& body : broker.BodiesSince(1)) EXPECT_EQ(body, "status");
  EXPECT_TRUE(last.ok()) << last.ToString();
}

TEST(PublicClientWire, UnavailableIsRetriedWithTheSameRequestIdThenSucceeds) {
  FakeBroker broker([](const proto::Envelope& request, int nth) -> std::vector<proto::Envelope> {
    if (!request.has_submit()) return {};
    if (request.submit().request_id() == "r-down") {  // never comes back
      return {FakeBroker::Error(request.correlation_id(), proto::ERROR_KIND_UNAVAILABLE, "the journal cannot be written",
                                100)};
    }
    if (nth <= 2) {
      return {FakeBroker::Error(request.correlation_id(), proto::ERROR_KIND_UNAVAILABLE, "the journal cannot be written",
                                50)};
    }
    return {FakeBroker::Accepted(request.correlation_id(), 7)};
  });
  std::vector<std::string> waits;
  client::Options options;
  options.busy_timeout = Scaled(30s);
  options.on_busy = [&](const std::string& what, double) { waits.push_back(what); };
  auto c = OpenPlaintext(broker, options);
  client::Job job;
  client::Status s = c->Submit({.circuit = "c1", .request_id = "r-u"}, Bytes("the witness"), &job);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(job.job_seq, 7u);
  const auto requests = broker.Requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) {
    EXPECT_EQ(r.envelope.submit().request_id(), "r-u");
    EXPECT_EQ(r.witness_bytes, "the witness");
  }
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_NE(waits[0].find("UNAVAILABLE: the journal cannot be written"), std::string::npos) << waits[0];

  // Bounded by the busy timeout, then kUnavailable.
  options.busy_timeout = 700ms;
  options.on_busy = nullptr;
  auto impatient = OpenPlaintext(broker, options);
  s = impatient->Submit({.circuit = "c1", .request_id = "r-down"}, Bytes(), &job);
  EXPECT_EQ(s.code(), client::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("the journal cannot be written"), std::string::npos) << s.message();
  EXPECT_GE(broker.Requests().size(), 5u);  // retried before giving up
}

// The broker could not write its journal in the turn that held a job's
// pushed result (or an AWAIT's answer): it sends UNAVAILABLE under that
// correlation id instead. The wait goes on: the job is AWAITed again.
TEST(PublicClientWire, AWaitAnsweredUnavailableGoesOn) {
  const std::string proof = R"({"pi_a": ["1", "2", "1"], "protocol": "groth16"})";
  FakeBroker broker([&](const proto::Envelope& request, int nth) -> std::vector<proto::Envelope> {
    const uint64_t id = request.correlation_id();
    if (request.has_submit()) {
      return {FakeBroker::Accepted(id, 5),
              FakeBroker::Error(id, proto::ERROR_KIND_UNAVAILABLE, "the journal cannot be written", 50)};
    }
    if (!request.has_await()) return {};
    if (nth == 2) return {FakeBroker::Error(id, proto::ERROR_KIND_UNAVAILABLE, "still", 50)};  // Await(6)'s first
    return {FakeBroker::Result(id, request.await().job_seq(), proof, "[]")};
  });
  auto c = OpenPlaintext(broker);
  client::Job job;
  ASSERT_TRUE(c->Submit({.circuit = "c1"}, Bytes(), &job).ok());
  zkfleet::proto::JobResult result;
  client::Status s = c->WaitResult(job.job_seq, Scaled(10s), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.job_seq(), 5u);
  s = c->Await(6, Scaled(10s), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.job_seq(), 6u);
  const auto requests = broker.Requests();
  ASSERT_EQ(requests.size(), 4u);  // SUBMIT, its job AWAITed again, AWAIT 6 twice
  EXPECT_EQ(requests[1].envelope.await().job_seq(), 5u);
  EXPECT_EQ(requests[1].envelope.correlation_id(), requests[0].envelope.correlation_id());
  EXPECT_EQ(requests[3].envelope.correlation_id(), requests[2].envelope.correlation_id());
}

TEST(PublicClientWire, AResultWhoseProofIsNotJsonIsInvalidResult) {
  const std::string good_proof = R"({"pi_a": ["1", "2", "1"], "protocol": "groth16"})";
  FakeBroker broker([&](const proto::Envelope& request, int) -> std::vector<proto::Envelope> {
    const uint64_t id = request.correlation_id();
    if (request.has_submit()) {  // accepted, and its result pushed at once: proof_json is not JSON
      return {FakeBroker::Accepted(id, 5), FakeBroker::Result(id, 5, "proof: not json {", R"(["1"])")};
    }
    if (!request.has_await()) return {};
    switch (request.await().job_seq()) {
      case 5: return {FakeBroker::Result(id, 5, "proof: not json {", R"(["1"])")};
      case 6: return {FakeBroker::Result(id, 6, good_proof, "1, 2")};
      default: return {FakeBroker::Result(id, request.await().job_seq(), good_proof, R"(["3"])")};
    }
  });
  auto c = OpenPlaintext(broker);
  client::Job job;
  ASSERT_TRUE(c->Submit({.circuit = "c1"}, Bytes(), &job).ok());
  zkfleet::proto::JobResult result;
  client::Status s = c->WaitResult(job.job_seq, Scaled(10s), &result);
  EXPECT_EQ(s.code(), client::Code::kInvalidResult) << s.ToString();
  EXPECT_NE(s.message().find("job 5: the broker's result is not a proof: partition 0's proof_json is not JSON"),
            std::string::npos)
      << s.message();
  s = c->Await(6, Scaled(10s), &result);
  EXPECT_EQ(s.code(), client::Code::kInvalidResult) << s.ToString();
  EXPECT_NE(s.message().find("public_json is not JSON"), std::string::npos) << s.message();
  s = c->Await(9, Scaled(10s), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.partitions(0).public_json(), R"(["3"])");

  // zkctl: exit 1, the reason on stderr, no files written.
  const std::string out_dir = ::testing::TempDir() + "/invalid-result-" + std::to_string(getpid());
  std::filesystem::remove_all(out_dir);
  std::string out;
  EXPECT_EQ(ZkctlAt(broker, {"await", "5", "--out", out_dir}, &out), 1) << out;
  EXPECT_NE(out.find("proof_json is not JSON"), std::string::npos) << out;
  EXPECT_EQ(ZkctlAt(broker, {"--json", "submit", "--circuit", "c1", "--out", out_dir,
                             Fixture("bn128_k12/witness.wtns")},
                    &out),
            1)
      << out;
  EXPECT_NE(out.find("proof_json is not JSON"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(out_dir + "/proof_0.json"));
  EXPECT_FALSE(std::filesystem::exists(out_dir + "/public_0.json"));
  EXPECT_EQ(ZkctlAt(broker, {"await", "9", "--out", out_dir}, &out), 0) << out;
  EXPECT_EQ(ReadFile(out_dir + "/public_0.json"), R"(["3"])");
  std::filesystem::remove_all(out_dir);
}

TEST(PublicClientWire, NamesAboveTheBrokersBoundsAreRefusedBeforeSending) {
  static_assert(client::kMaxRequestIdBytes == 128 && client::kMaxCircuitIdBytes == 128);
  FakeBroker broker([](const proto::Envelope& request, int) -> std::vector<proto::Envelope> {
    if (request.has_submit()) return {FakeBroker::Accepted(request.correlation_id(), 3)};
    return {};
  });
  auto c = OpenPlaintext(broker);
  client::Job job;
  client::Status s = c->Submit({.circuit = "c1", .request_id = std::string(129, 'r')}, Bytes(), &job);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("request id of 129 bytes is longer than the broker's limit of 128 bytes "
                             "(kMaxRequestIdBytes)"),
            std::string::npos)
      << s.message();
  s = c->Submit({.circuit = std::string(129, 'c')}, Bytes(), &job);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("kMaxCircuitIdBytes"), std::string::npos) << s.message();
  s = c->Submit({.circuit = "c1", .request_id = "line\nbreak"}, Bytes(), &job);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("control byte (0x0a) at offset 4"), std::string::npos) << s.message();
  zkfleet::proto::DrainWorkerReply drained;
  s = c->Drain(std::string(129, 'w'), false, Scaled(10s), &drained);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();
  zkfleet::proto::UndrainWorkerReply undrained;
  s = c->Undrain(std::string(129, 'w'), &undrained);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();
  client::Options options;
  options.client_id = std::string(129, 'i');
  options.endpoint = broker.endpoint();
  options.insecure_plaintext = true;
  std::unique_ptr<client::Client> none;
  s = client::Client::Open(options, &none);
  EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("kMaxClientIdBytes"), std::string::npos) << s.message();
  std::string out;
  EXPECT_EQ(ZkctlAt(broker, {"submit", "--circuit", "c1", "--request-id", std::string(200, 'r'),
                             Fixture("bn128_k12/witness.wtns")},
                    &out),
            2)  // refused before sending: a usage error
      << out;
  EXPECT_NE(out.find("request id of 200 bytes"), std::string::npos) << out;
  EXPECT_TRUE(broker.Requests().empty());  // nothing was sent

  // At the bound exactly, it goes.
  s = c->Submit({.circuit = std::string(128, 'c'), .request_id = std::string(128, 'r')}, Bytes(), &job);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(job.job_seq, 3u);
}

TEST(PublicClientWire, ZkctlUndrain) {
  FakeBroker broker([](const proto::Envelope& request, int) -> std::vector<proto::Envelope> {
    if (!request.has_undrain_worker()) return {};
    const std::string& worker = request.undrain_worker().worker_id();
    if (worker != "w1") {
      return {FakeBroker::Error(request.correlation_id(), proto::ERROR_KIND_UNKNOWN_WORKER, "no worker " + worker)};
    }
    proto::Envelope reply;
    reply.set_correlation_id(request.correlation_id());
    reply.mutable_undrain_worker_reply()->set_worker_id("w1");
    reply.mutable_undrain_worker_reply()->set_state(proto::WORKER_STATE_READY);
    return {reply};
  });
  std::string out;
  ASSERT_EQ(ZkctlAt(broker, {"undrain", "w1"}, &out), 0) << out;
  EXPECT_NE(out.find("worker w1 is READY again"), std::string::npos) << out;
  ASSERT_EQ(ZkctlAt(broker, {"--json", "undrain", "w1"}, &out), 0) << out;
  EXPECT_NE(out.find("\"state\": \"READY\""), std::string::npos) << out;
  EXPECT_EQ(ZkctlAt(broker, {"undrain", "ghost"}, &out), 1) << out;
  EXPECT_NE(out.find("UNKNOWN_WORKER: no worker ghost"), std::string::npos) << out;
  const auto requests = broker.Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].envelope.undrain_worker().worker_id(), "w1");
}


// ---------------------------------------------------------------------------
// Witnesses by reference, end to end: the broker journals the reference, the
// worker fetches the file:// witness under its --fetch-allow prefix.

// Size and SHA-256 of a local file (sha256sum), as a reference needs them.
client::WitnessRef RefOfFile(const std::string& path) {
  client::WitnessRef ref;
  ref.url = "file://" + path;
  ref.size = std::filesystem::file_size(path);
  std::string out;
  EXPECT_EQ(RunCommand({"sha256sum", path}, &out), 0) << out;
  for (size_t i = 0; i + 1 < 64 && i + 1 < out.size(); i += 2) {
    ref.sha256.push_back(static_cast<char>(std::stoi(out.substr(i, 2), nullptr, 16)));
  }
  return ref;
}

TEST(PublicClient, AWitnessByReferenceIsFetchedByTheWorkerAndProved) {
  Fleet fleet("client-by-ref");
  const std::string vk = Fixture("bn128_k12/verification_key.json");
  fleet.StartBroker({"--verification-key", "bn128=" + vk});
  // Real paths: the worker checks the opened file's real path against its prefix's.
  const std::string witness = std::filesystem::canonical(Fixture("bn128_k12/witness.wtns")).string();
  fleet.StartWorker("prover", {"--circuit", "bn128=" + Fixture("bn128_k12/circuit_final.zkey"), "--threads", "1",
                               "--fetch-allow", "file://" + std::filesystem::path(witness).parent_path().string() + "/",
                               // The presigned-style URL below must be accepted (a worker announces it).
                               "--fetch-allow", "https://store.invalid/"});
  fleet.WaitWorkerReady("prover");
  auto c = Open(fleet);
  const std::string expected_public = ReadFile(Fixture("bn128_k12/public.json"));

  // The broker holds the circuit's verification key: a reference SUBMIT
  // without the expected public signals is refused (it cannot read the witness).
  client::SubmitOptions options{.circuit = "bn128"};
  options.witness_refs = {RefOfFile(witness)};
  client::Job job;
  client::Status s = c->Submit(options, {}, &job);
  EXPECT_EQ(s.code(), client::Code::kBadRequest) << s.ToString();

  options.expected_public_json = {expected_public};
  s = c->Submit(options, {}, &job);
  ASSERT_TRUE(s.ok()) << s.ToString();
  zkfleet::proto::JobResult result;
  s = c->WaitResult(job.job_seq, Scaled(120s), &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(result.partitions_size(), 1);
  EXPECT_TRUE(SnarkjsVerifies(vk, result.partitions(0).proof_json(), result.partitions(0).public_json(), fleet.dir()));

  // zkctl: the same witness hashed by zkctl itself, its public signals read
  // from it (--n-public), proved.
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"--json", "--wait-timeout", "120", "submit", "--circuit", "bn128", "--witness-url",
                         "file://" + witness, "--n-public", "2", "--wait"},
                        &out),
            0)
      << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;

  // A presigned-style URL: journaled whole, shown redacted by zkctl journal.
  const std::string secret_url = "https://key:pw@store.invalid/w.wtns?X-Amz-Signature=SIGNATURE0";
  ASSERT_EQ(fleet.Zkctl({"--json", "submit", "--circuit", "bn128", "--request-id", "by-ref-secret", "--witness-url",
                         secret_url, "--sha256", std::string(64, 'a'), "--size", "1000", "--public-signals",
                         Fixture("bn128_k12/public.json")},
                        &out),
            0)
      << out;
  EXPECT_EQ(out.find("SIGNATURE0"), std::string::npos) << out;
  const auto reply = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(reply.is_discarded()) << out;
  const std::string job_seq = std::to_string(reply.value("job_seq", 0));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--json", "journal", "--data-dir", fleet.broker_data_dir(), "--job", job_seq},
        std::vector<std::string>{"journal", "--data-dir", fleet.broker_data_dir(), "--job", job_seq}}) {
    ASSERT_EQ(fleet.Zkctl(args, &out), 0) << out;
    EXPECT_NE(out.find("https://store.invalid/w.wtns"), std::string::npos) << out;
    for (const char* secret : {"SIGNATURE0", "X-Amz", "key:pw"}) {
      EXPECT_EQ(out.find(secret), std::string::npos) << secret << " shown:\n" << out;
    }
  }
}

}  // namespace
}  // namespace fleet_test
