// The worker core with witnesses by reference: the test plays the broker
// (JOBs naming a WitnessRef, DRAIN) and the lanes; the fetch stage runs for
// real on its threads (file:// objects in a temporary directory, and a
// loopback socket that accepts and never answers for a fetch that hangs).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "core_test_support.hpp"
#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker {
namespace {

using namespace std::chrono_literals;
using Clock = WorkerCore::Clock;

using testing::Only;
using testing::PlentyOfMemory;

std::string Sha256(const std::string& bytes) { return fetch::Sha256::Of(bytes); }

class FetchStageTest : public ::testing::Test {
 protected:
  FetchStageTest() {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "w.wtns", std::ios::binary) << witness_;
  }
  ~FetchStageTest() override {
    core_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Allowed() const { return "file://" + dir_.string() + "/"; }

  void MakeReady(std::vector<std::string> allow) {
    WorkerOptions options;
    options.worker_id = "w1";
    options.fetch.allow = std::move(allow);
    options.fetch.max_attempts = 1;
    options.fetch.low_speed_time = 30s;  // the hanging fetch ends by cancellation, not by this
    auto circuits = std::make_unique<CircuitSet>(std::vector<CircuitSpec>{{"c", "", true, ""}}, engine::EngineOptions{},
                                                 0ms, /*verify=*/false);
    core_ = std::make_unique<WorkerCore>(options, std::move(circuits), std::make_unique<PlentyOfMemory>(), nullptr,
                                         now_);
    core_->OnConnected(false, now_);
    for (PipelineEvent event : {PipelineEvent{events::MemoryGate{wire::WorkerEvent::kMemoryFits}},
                                PipelineEvent{events::KeysLoaded{}}}) {
      core_->OnPipelineEvent(event, now_);
    }
    ASSERT_EQ(core_->state(), proto::WORKER_STATE_READY);
    Sent();
  }

  void JobByReference(uint64_t job_seq, const std::string& url, uint64_t size, const std::string& sha256) {
    proto::Envelope envelope;
    proto::Job* job = envelope.mutable_job();
    job->mutable_item()->set_job_seq(job_seq);
    job->mutable_item()->mutable_lease()->set_epoch(1);
    job->mutable_item()->mutable_lease()->set_number(100 + job_seq);
    job->set_circuit_id("c");
    job->set_attempt(1);
    job->mutable_witness_ref()->set_url(url);
    job->mutable_witness_ref()->set_size(size);
    job->mutable_witness_ref()->set_sha256(sha256);
    core_->OnBrokerMessage(envelope, {}, now_);
  }

  // Hands the fetch stage's events to the core until `count` kFetched came
  // (or 20 s passed).
  void AwaitFetched(size_t count) {
    ASSERT_EQ(testing::HandEventsUntil<events::WitnessPrepared>(*core_, count, now_, 20s), count)
        << "the fetch stage did not answer in time";
  }

  std::vector<proto::Envelope> Sent() { return testing::TakeSent(*core_); }

  std::filesystem::path dir_ = std::filesystem::path(::testing::TempDir()) /
                               ("zkfleet-fetch-stage-" + std::to_string(getpid()) + "-" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::string witness_ = std::string(3 * 1000 * 1000 + 7, 'x') + "end";
  Clock::time_point now_ = Clock::time_point{} + 1h;
  std::unique_ptr<WorkerCore> core_;
};

// Fetched into a buffer of the item, digest checked, then queued for a lane;
// STARTED went out when the fetch began, and the lane's own start adds none.
TEST_F(FetchStageTest, AWitnessByReferenceIsFetchedCheckedAndQueuedForALane) {
  MakeReady({Allowed()});
  JobByReference(1, Allowed() + "w.wtns", witness_.size(), Sha256(witness_));
  core_->FlushStarted(now_);
  auto sent = Sent();
  ASSERT_EQ(Only(sent, proto::Envelope::kStarted).size(), 1u);
  EXPECT_EQ(Only(sent, proto::Envelope::kStarted)[0].started().items(0).lease().number(), 101u);
  AwaitFetched(1);
  ASSERT_EQ(core_->queue().queued(), 1u);
  std::optional<QueuedItem> item = core_->queue().PopForRun(0);
  ASSERT_TRUE(item);
  const auto bytes = item->witness();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), witness_);
  PipelineEvent started = events::ProofStarted{item->key.ref(), 0};
  core_->OnPipelineEvent(started, now_);
  core_->FlushStarted(now_);
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kStarted).empty());
}

// The job's own faults fail it at once, never as the worker's: another
// object's digest, a wrong size, a missing object, a URL outside --fetch-allow.
// Messages name the URL without its query.
TEST_F(FetchStageTest, AWrongDigestSizeMissingObjectOrForbiddenUrlFailsTheJobNotTheWorker) {
  MakeReady({Allowed()});
  JobByReference(1, Allowed() + "w.wtns", witness_.size(), Sha256("another object"));
  JobByReference(2, Allowed() + "w.wtns", witness_.size() + 1, Sha256(witness_));
  JobByReference(3, Allowed() + "missing.wtns", witness_.size(), Sha256(witness_));
  JobByReference(4, "file:///etc/passwd", 10, Sha256(witness_));
  JobByReference(5, Allowed() + "w.wtns?token=secret", witness_.size(), Sha256(witness_));
  AwaitFetched(5);
  auto results = Only(Sent(), proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 5u);
  // Another object's digest, another size, a missing object: one text, naming
  // only the job's own URL, size and digest (issue 47, item 10: a client
  // cannot probe the store for objects or their sizes).
  auto unusable = [&](const std::string& name, uint64_t size, const std::string& digest) {
    return "its witness could not be used: " + Allowed() + name + ": no object of " + std::to_string(size) +
           " bytes with sha256 " + wire::DigestHex(digest) + " is there (missing, unreadable, another size or other bytes)";
  };
  const std::map<uint64_t, std::string> says = {
      {1, unusable("w.wtns", witness_.size(), Sha256("another object"))},
      {2, unusable("w.wtns", witness_.size() + 1, Sha256(witness_))},
      {3, unusable("missing.wtns", witness_.size(), Sha256(witness_))},
      {4, "--fetch-allow"},
      {5, "query"}};
  for (const auto& envelope : results) {
    const proto::Result& result = envelope.result();
    EXPECT_FALSE(result.ok());
    EXPECT_FALSE(result.retryable()) << result.error();
    const uint64_t job = result.item().job_seq();
    if (job <= 3) {
      EXPECT_EQ(result.error(), says.at(job));
    } else {
      EXPECT_NE(result.error().find(says.at(job)), std::string::npos) << result.error();
    }
    EXPECT_EQ(result.error().find("secret"), std::string::npos) << result.error();
    // Nothing about the object that the client did not already say: not its real digest (job 1).
    if (job == 1) EXPECT_EQ(result.error().find(wire::DigestHex(Sha256(witness_))), std::string::npos) << result.error();
    EXPECT_EQ(result.item().lease().number(), 100 + result.item().job_seq());
  }
  EXPECT_EQ(core_->queue().queued(), 0u);
  EXPECT_EQ(core_->ledger().held(), 0u);
}

// Without --fetch-allow a reference is not this worker's to fetch: failed as
// retryable, so that another worker takes it.
TEST_F(FetchStageTest, AWorkerWithoutFetchAllowAnswersAReferenceRetryable) {
  MakeReady({});
  JobByReference(1, Allowed() + "w.wtns", witness_.size(), Sha256(witness_));
  auto results = Only(Sent(), proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].result().retryable());
  EXPECT_NE(results[0].result().error().find("--fetch-allow"), std::string::npos);
}

// A server that accepts and never answers; closed with the test.
class SilentServer {
 public:
  SilentServer() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(listen(fd_, 8), 0);
    socklen_t length = sizeof address;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    prefix_ = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/";
  }
  ~SilentServer() {
    for (int fd : accepted_) close(fd);
    close(fd_);
  }
  const std::string& prefix() const { return prefix_; }

  // Waits (up to 20 s) for the next fetch to connect and send its whole
  // request: from then on it is under way, waiting for an answer that never
  // comes, and only its cancellation (or a 30 s timeout) ends it. The
  // connection stays open until the server is destroyed.
  bool AwaitRequest() {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    auto readable = [&](int fd) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      return left.count() > 0 && poll(&p, 1, static_cast<int>(left.count())) == 1;
    };
    if (!readable(fd_)) return false;
    const int connection = accept(fd_, nullptr, nullptr);
    if (connection < 0) return false;
    accepted_.push_back(connection);
    std::string request;
    while (request.find("\r\n\r\n") == std::string::npos) {
      char buffer[4096];
      if (!readable(connection)) return false;
      const ssize_t n = read(connection, buffer, sizeof buffer);
      if (n <= 0) return false;
      request.append(buffer, static_cast<size_t>(n));
    }
    return request.starts_with("GET /w.wtns ");
  }

 private:
  int fd_ = -1;
  std::string prefix_;
  std::vector<int> accepted_;
};

// After a reconnect the broker leases the item again; the first fetch's late
// (cancelled) event must not answer the new lease: only the newest fetch of
// an item counts.
TEST_F(FetchStageTest, ACancelledFetchsLateEventDoesNotAnswerTheItemsNewLease) {
  SilentServer server;
  MakeReady({server.prefix()});
  JobByReference(1, server.prefix() + "w.wtns", witness_.size(), Sha256(witness_));
  ASSERT_TRUE(server.AwaitRequest()) << "the fetch did not reach the server";
  core_->OnConnected(/*reconnect=*/true, now_);  // the fetch is cancelled; the broker redelivers
  proto::Envelope again;
  proto::Job* job = again.mutable_job();
  job->mutable_item()->set_job_seq(1);
  job->mutable_item()->mutable_lease()->set_epoch(1);
  job->mutable_item()->mutable_lease()->set_number(201);
  job->set_circuit_id("c");
  job->set_attempt(2);
  *job->mutable_witness_ref() = proto::WitnessRef();
  job->mutable_witness_ref()->set_url(server.prefix() + "w.wtns");
  job->mutable_witness_ref()->set_size(witness_.size());
  job->mutable_witness_ref()->set_sha256(Sha256(witness_));
  core_->OnBrokerMessage(again, {}, now_);
  AwaitFetched(1);  // the first fetch's cancelled event
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kResult).empty()) << "the stale event answered the new lease";
  EXPECT_EQ(core_->ledger().held(), 1u);
  core_->BeginDrain("test", now_);
  auto handbacks = Only(Sent(), proto::Envelope::kHandback);
  ASSERT_EQ(handbacks.size(), 1u);
  ASSERT_EQ(handbacks[0].handback().items_size(), 1);
  EXPECT_EQ(handbacks[0].handback().items(0).lease().number(), 201u);
  AwaitFetched(1);
}

// A drain does not wait for a fetch that hangs: the item goes back to the
// broker at once, the fetch is cancelled, and its late event changes nothing.
TEST_F(FetchStageTest, ADrainHandsBackAnItemWhoseFetchHangs) {
  SilentServer server;
  const std::string prefix = server.prefix();
  MakeReady({prefix});
  JobByReference(1, prefix + "w.wtns", witness_.size(), Sha256(witness_));
  ASSERT_TRUE(server.AwaitRequest()) << "the fetch did not reach the server";  // under way, and hanging
  core_->BeginDrain("test", now_);
  auto sent = Sent();
  auto handbacks = Only(sent, proto::Envelope::kHandback);
  ASSERT_EQ(handbacks.size(), 1u);
  ASSERT_EQ(handbacks[0].handback().items_size(), 1);
  EXPECT_EQ(handbacks[0].handback().items(0).job_seq(), 1u);
  EXPECT_EQ(core_->ledger().held(), 0u);
  AwaitFetched(1);  // cancelled promptly, not after a timeout
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kResult).empty());
}

}  // namespace
}  // namespace zkfleet::worker
