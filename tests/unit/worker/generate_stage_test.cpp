// The worker core with jobs from inputs: the test plays the broker (JOBs
// carrying an input.json, DRAIN) and the lanes; the generate stage runs for
// real, with generators compiled from tests/fixtures/witgen (a circom
// circuit, and a hand-written wasm that loops forever).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core_test_support.hpp"
#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker {
namespace {

using namespace std::chrono_literals;
using Clock = WorkerCore::Clock;
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(ZKFLEET_FIXTURES_DIR) / "witgen";

using testing::Only;
using testing::PlentyOfMemory;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class GenerateStageTest : public ::testing::Test {
 protected:
  void MakeReady() {
    WorkerOptions options;
    options.worker_id = "w1";
    options.witgen_threads = 2;
    options.witgen.cache_dir = fs::path(ZKFLEET_SOURCE_DIR) / "build" / ".witgen-test-cache";
    options.witgen.limits.cpu_seconds = 60;
    // "arrays" proves nothing here (instant): the test looks at its witness.
    std::vector<CircuitSpec> specs = {{"arrays", "", true, (kFixtures / "arrays/bn128/circuit.wasm").string()},
                                      {"loop", "", true, (kFixtures / "hostile/loop.wasm").string()},
                                      {"plain", "", true, ""}};
    auto circuits = std::make_unique<CircuitSet>(specs, engine::EngineOptions{}, 0ms, /*verify=*/false);
    circuits->set_generator_options(options.witgen);
    circuits->Load();  // what the pipeline does at start: compiles (or finds) the generators
    generator_ = circuits->Generator("arrays");
    ASSERT_TRUE(generator_);
    core_ = std::make_unique<WorkerCore>(options, std::move(circuits), std::make_unique<PlentyOfMemory>(), nullptr,
                                         now_);
    core_->OnConnected(false, now_);
    auto ready = Only(Sent(), proto::Envelope::kReady);
    ASSERT_EQ(ready.size(), 1u);
    ASSERT_EQ(ready[0].ready().generates_size(), 2);
    EXPECT_EQ(ready[0].ready().generates(0), "arrays");
    EXPECT_EQ(ready[0].ready().generates(1), "loop");
    for (PipelineEvent event : {PipelineEvent{events::MemoryGate{wire::WorkerEvent::kMemoryFits}},
                                PipelineEvent{events::KeysLoaded{}}}) {
      core_->OnPipelineEvent(event, now_);
    }
    ASSERT_EQ(core_->state(), proto::WORKER_STATE_READY);
    Sent();
  }

  void JobFromInputs(uint64_t job_seq, const std::string& circuit, const std::string& input_json) {
    proto::Envelope envelope;
    proto::Job* job = envelope.mutable_job();
    job->mutable_item()->set_job_seq(job_seq);
    job->mutable_item()->mutable_lease()->set_epoch(1);
    job->mutable_item()->mutable_lease()->set_number(100 + job_seq);
    job->set_circuit_id(circuit);
    job->set_attempt(1);
    job->set_input_json(input_json);
    core_->OnBrokerMessage(envelope, {}, now_);
  }

  // Hands the generate stage's events to the core until `count` kGenerated
  // came (or 60 s passed).
  void AwaitGenerated(size_t count) {
    ASSERT_EQ(testing::HandEventsUntil<events::WitnessPrepared>(*core_, count, now_, 60s), count)
        << "the generate stage did not answer in time";
  }

  std::vector<proto::Envelope> Sent() { return testing::TakeSent(*core_); }

  Clock::time_point now_ = Clock::time_point{} + 1h;
  std::shared_ptr<const witgen::WitnessGenerator> generator_;
  std::unique_ptr<WorkerCore> core_;
};

// Computed into the item's buffer, then queued for a lane; STARTED went out
// when the generation began, and the lane's own start adds none.
TEST_F(GenerateStageTest, AJobFromInputsIsComputedIntoItsBufferAndQueuedForALane) {
  MakeReady();
  const std::string input = ReadFile(kFixtures / "arrays/input.json");
  JobFromInputs(1, "arrays", input);
  core_->FlushStarted(now_);
  auto started = Only(Sent(), proto::Envelope::kStarted);
  ASSERT_EQ(started.size(), 1u);
  EXPECT_EQ(started[0].started().items(0).lease().number(), 101u);
  AwaitGenerated(1);
  ASSERT_EQ(core_->queue().queued(), 1u);
  std::optional<QueuedItem> item = core_->queue().PopForRun(0);
  ASSERT_TRUE(item);
  std::vector<uint8_t> expected(generator_->wtns_bytes());
  ASSERT_TRUE(generator_->Generate(input, expected).ok());
  const auto bytes = item->witness();
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), expected.begin(), expected.end()));
  EXPECT_GT(item->witness_generation_s, 0);
  PipelineEvent lane_started = events::ProofStarted{item->key.ref(), 0};
  core_->OnPipelineEvent(lane_started, now_);
  core_->FlushStarted(now_);
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kStarted).empty());
}

// The job's own faults fail it once, never as the worker's: a signal it
// does not have, a value that is not an integer, the circuit's assert.
TEST_F(GenerateStageTest, ABadInputOrAFailingAssertFailsTheJobNotTheWorker) {
  MakeReady();
  JobFromInputs(1, "arrays", "{\"nope\": 1}");
  JobFromInputs(2, "arrays", "{\"a\": 1.5}");
  JobFromInputs(3, "arrays", "not json");
  AwaitGenerated(3);
  auto results = Only(Sent(), proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 3u);
  for (const auto& envelope : results) {
    EXPECT_FALSE(envelope.result().ok());
    EXPECT_FALSE(envelope.result().retryable()) << envelope.result().error();
    EXPECT_NE(envelope.result().error().find("its witness could not be computed"), std::string::npos);
  }
  EXPECT_EQ(core_->queue().queued(), 0u);
  EXPECT_EQ(core_->ledger().held(), 0u);
}

// A circuit this worker has no generator for: retryable (another may).
TEST_F(GenerateStageTest, ACircuitWithoutAGeneratorIsAnsweredRetryable) {
  MakeReady();
  JobFromInputs(1, "plain", "{\"a\": 1}");
  auto results = Only(Sent(), proto::Envelope::kResult);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].result().retryable());
  EXPECT_NE(results[0].result().error().find("no witness generator"), std::string::npos);
}

// A drain does not wait for a generator that never ends: the item goes back
// at once, the child is killed, and its late event changes nothing. Another
// job's witness is computed meanwhile on the second generator thread.
TEST_F(GenerateStageTest, ALoopingGeneratorDoesNotHoldUpOtherJobsOrADrain) {
  MakeReady();
  JobFromInputs(1, "loop", "{\"a\": \"1\"}");
  JobFromInputs(2, "arrays", ReadFile(kFixtures / "arrays/input.json"));
  AwaitGenerated(1);  // the real circuit's, while the loop runs
  EXPECT_EQ(core_->queue().queued(), 1u);
  core_->BeginDrain("test", now_);
  auto handbacks = Only(Sent(), proto::Envelope::kHandback);
  ASSERT_EQ(handbacks.size(), 1u);
  EXPECT_EQ(handbacks[0].handback().items_size(), 2);  // the queued one and the looping one
  AwaitGenerated(1);  // the loop's, cancelled promptly
  EXPECT_TRUE(Only(Sent(), proto::Envelope::kResult).empty());
}

}  // namespace
}  // namespace zkfleet::worker
