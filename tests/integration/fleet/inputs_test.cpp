// Jobs from inputs with real processes: the client sends input.json only; the
// broker (with the circuits' verification keys) journals it; a CPU worker
// started with --generator compiles the circuit's wasm, computes each witness
// in a child process into its pool and proves it. Circuits: the
// tests/fixtures/witgen "arrays" circuit on both curves (keys made with
// zkfleet-dev setup --insecure). Every proof verifies with snarkjs and
// carries the public signals of the witness snarkjs computes from the same
// input; bad inputs, failing asserts and a generator that loops fail their
// own jobs once, as the client's errors, while the worker goes on.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "fleet_harness.hpp"
#include "testutil/test_support.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;
namespace fs = std::filesystem;
constexpr int kHeartbeatMs = 500;

const std::string kWitgen = std::string(ZKFLEET_FIXTURES_DIR) + "/witgen";

std::string Wasm(const std::string& curve) { return kWitgen + "/arrays/" + curve + "/circuit.wasm"; }

// Keys for fixture circuit `name` on `curve`, made once per build.
struct Keys {
  std::string zkey, vk;
};
Keys FixtureKeys(const std::string& name, const std::string& curve) {
  const std::string root = std::string(ZKFLEET_BINARY_DIR) + "/test-cache";
  std::string dir = zkfleet::testing::CachedDirectory(root, "witgen-" + name + "-" + curve, [&](const std::string& d) {
    std::string out;
    int rc = RunCommand({BinaryPath("zkfleet-dev"), "setup", kWitgen + "/" + name + "/" + curve + "/circuit.r1cs",
                         d + "/circuit.zkey", "--insecure"},
                        &out);
    EXPECT_EQ(rc, 0) << out;
    rc = rc == 0 ? RunCommand({BinaryPath("zkprove"), "export-vk", d + "/circuit.zkey", d + "/vk.json"}, &out) : rc;
    EXPECT_EQ(rc, 0) << out;
    return rc == 0;
  });
  return dir.empty() ? Keys{} : Keys{dir + "/circuit.zkey", dir + "/vk.json"};
}

// The fixture's input with `a` (a public input) set to `value`: distinct jobs.
std::string Input(int value) {
  nlohmann::json input = nlohmann::json::parse(ReadFile(kWitgen + "/arrays/input.json"));
  input["a"] = std::to_string(value);
  return input.dump();
}

// public.json of the witness snarkjs computes from `input` (proved by zkprove).
std::string ExpectedPublic(const std::string& dir, const std::string& curve, const Keys& keys,
                           const std::string& input) {
  zkfleet::testing::WriteFile(dir + "/expected_input.json", input);
  std::string out;
  int rc = RunCommand({std::string(ZKFLEET_NODE_BIN) + "/snarkjs", "wtns", "calculate", Wasm(curve),
                       dir + "/expected_input.json", dir + "/expected.wtns"},
                      &out);
  EXPECT_EQ(rc, 0) << out;
  rc = RunCommand({BinaryPath("zkprove"), keys.zkey, dir + "/expected.wtns", dir + "/expected_proof.json",
                   dir + "/expected_public.json", "--backend", "cpu"},
                  &out);
  EXPECT_EQ(rc, 0) << out;
  return ReadFile(dir + "/expected_public.json");
}

class FleetInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
    ASSERT_TRUE(zkfleet::testing::RequireOnPath("wasm2c"));
    bn_ = FixtureKeys("arrays", "bn128");
    bls_ = FixtureKeys("arrays", "bls12381");
    ASSERT_FALSE(bn_.zkey.empty());
    ASSERT_FALSE(bls_.zkey.empty());
  }

  // A fleet whose broker verifies both circuits; `worker_keys`: more worker
  // keys in its allow-list (AddWorkerKey) besides the fleet's own.
  void Start(const std::string& name, std::vector<std::string> broker_args = {},
             const std::vector<std::string>& worker_keys = {}) {
    fleet_ = std::make_unique<Fleet>(name, kHeartbeatMs);
    for (const std::string& key : worker_keys) AddWorkerKey(*fleet_, key);
    broker_args.insert(broker_args.end(), {"--verification-key", "bn=" + bn_.vk, "--verification-key", "bls=" + bls_.vk});
    broker_ = &fleet_->StartBroker(broker_args);
    client_ = fleet_->Client();
  }

  Process& StartWorker(const std::string& id, int metrics_port, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--circuit", "bn=" + bn_.zkey, "--generator", "bn=" + Wasm("bn128"),
                                     "--circuit", "bls=" + bls_.zkey, "--generator", "bls=" + Wasm("bls12381"),
                                     "--backend", "cpu", "--threads", "1", "--capacity", "2",
                                     "--witgen-threads", "2", "--witgen-cache",
                                     std::string(ZKFLEET_SOURCE_DIR) + "/build/.witgen-test-cache",
                                     "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)};
    args.insert(args.end(), extra.begin(), extra.end());
    return fleet_->StartWorker(id, args);
  }

  uint64_t Submit(const std::string& request_id, const std::string& circuit, const std::string& input) {
    proto::SubmitRequest request;
    request.set_request_id(request_id);
    request.set_circuit_id(circuit);
    request.add_inputs(input);
    return client_->Submit(request, zkfleet::fleet::Frames{}, std::chrono::seconds(20)).job_seq();
  }

  std::map<uint64_t, proto::JobResult> Results(size_t count, std::chrono::seconds timeout = std::chrono::seconds(120)) {
    return CollectResults(*client_, count, timeout);
  }

  Keys bn_, bls_;
  std::unique_ptr<Fleet> fleet_;
  Process* broker_ = nullptr;
  std::unique_ptr<zkfleet::client::internal::BrokerClient> client_;
};

// Each job carries only its input.json; each proof verifies, with the public
// signals snarkjs's own witness gives; the worker computed one witness per
// job (its metrics), each in the pool, and reported the generation time.
TEST_F(FleetInputsTest, JobsFromInputsAreComputedProvedAndVerifyOnBothCurves) {
  const int broker_port = FreePort();
  Start("inputs_prove", {"--metrics-listen", "127.0.0.1:" + std::to_string(broker_port)});
  const int port = FreePort();
  StartWorker("w1", port);
  fleet_->WaitWorkerReady("w1", std::chrono::seconds(120));  // compiles (or finds) both generators first
  auto status = fleet_->Status();
  ASSERT_EQ(status.workers_size(), 1);
  EXPECT_EQ(status.workers(0).generates_size(), 2);

  struct Sent {
    std::string circuit, curve, input;
  };
  std::map<uint64_t, Sent> sent;
  const double in_before = Sample(broker_port, "zkfleet_broker_received_bytes_total{socket=\"clients\"}");
  const double out_before = Sample(broker_port, "zkfleet_broker_sent_bytes_total{socket=\"workers\"}");
  size_t input_bytes = 0;
  for (int i = 0; i < 3; ++i) {
    for (const auto& [circuit, curve] : {std::pair<std::string, std::string>{"bn", "bn128"}, {"bls", "bls12381"}}) {
      const std::string input = Input(100 + i);
      sent[Submit(circuit + "-" + std::to_string(i), circuit, input)] = {circuit, curve, input};
      input_bytes += input.size();
    }
  }
  auto results = Results(sent.size());
  // The broker's network per job: the input.json and at most 2 kB more, from
  // the client and to the worker (issue 31's target), whatever the witness.
  const double in_per_job =
      (Sample(broker_port, "zkfleet_broker_received_bytes_total{socket=\"clients\"}") - in_before) / sent.size();
  const double out_per_job =
      (Sample(broker_port, "zkfleet_broker_sent_bytes_total{socket=\"workers\"}") - out_before) / sent.size();
  const double input_per_job = static_cast<double>(input_bytes) / sent.size();
  std::printf("broker bytes per job: %.0f in from clients, %.0f out to workers, input.json %.0f\n", in_per_job,
              out_per_job, input_per_job);
  EXPECT_GT(in_per_job, input_per_job);
  EXPECT_LE(in_per_job, input_per_job + 2048);
  EXPECT_GT(out_per_job, input_per_job);
  EXPECT_LE(out_per_job, input_per_job + 2048);
  size_t witness_bytes = 0;
  for (const auto& [seq, result] : results) {
    const Sent& s = sent[seq];
    ASSERT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << s.circuit << ": " << result.error();
    ASSERT_EQ(result.partitions_size(), 1);
    const auto& p = result.partitions(0);
    EXPECT_EQ(p.attempts(), 1u);
    EXPECT_TRUE(SnarkjsVerifies(s.circuit == "bn" ? bn_.vk : bls_.vk, p.proof_json(), p.public_json(), fleet_->dir()));
    EXPECT_EQ(nlohmann::json::parse(p.public_json()),
              nlohmann::json::parse(ExpectedPublic(fleet_->dir(), s.curve, s.circuit == "bn" ? bn_ : bls_, s.input)));
    EXPECT_GT(p.timings().witness_generation_s(), 0);
    witness_bytes += 12 + 12 + 4 + 32 + 4 + 12 + 32 * 39;  // arrays: 39 wires, 32-byte elements
  }
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_generations_total{outcome=\"ok\"}", 6.0), 6.0);
  EXPECT_EQ(Sample(port, "zkfleet_worker_generated_bytes_total"), static_cast<double>(witness_bytes));
}

// The client's mistakes fail its job once, never blamed on the worker: an
// unknown signal, a value that is not an integer, a failing assert (circom's
// message), a circuit whose generator never ends (its CPU limit). The
// worker proves the next good job as if nothing happened.
TEST_F(FleetInputsTest, BadInputsFailingAssertsAndLoopingGeneratorsFailTheirJobsAndTheWorkerGoesOn) {
  const Keys assert_keys = FixtureKeys("assert_fail", "bn128");
  ASSERT_FALSE(assert_keys.zkey.empty());
  Start("inputs_errors", {"--unverified-circuits", "loop", "--verification-key", "af=" + assert_keys.vk});
  const int port = FreePort();
  StartWorker("w1", port,
              {"--instant-circuit", "loop", "--generator", "loop=" + kWitgen + "/hostile/loop.wasm",
               "--circuit", "af=" + assert_keys.zkey, "--generator",
               "af=" + kWitgen + "/assert_fail/bn128/circuit.wasm", "--witgen-cpu-seconds", "2"});
  fleet_->WaitWorkerReady("w1", std::chrono::seconds(120));
  std::map<uint64_t, std::string> expect;  // job -> what its error must say
  nlohmann::json unknown = nlohmann::json::parse(Input(1));
  unknown["nope"] = 1;
  expect[Submit("loop", "loop", "{\"a\": \"1\"}")] = "CPU-time limit";
  expect[Submit("unknown", "bn", unknown.dump())] = "input signal nope";
  nlohmann::json fraction = nlohmann::json::parse(Input(1));
  fraction["v"][2] = 1.5;
  expect[Submit("fraction", "bn", fraction.dump())] = "not an integer";
  expect[Submit("assert", "af", ReadFile(kWitgen + "/assert_fail/input_fail.json"))] = "Assert Failed";
  const uint64_t good = Submit("good", "bn", Input(7));
  auto results = Results(expect.size() + 1);
  for (const auto& [seq, result] : results) {
    if (seq == good) {
      EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << result.error();
      continue;
    }
    EXPECT_EQ(result.state(), proto::JOB_STATE_FAILED) << seq;
    // The job's own fault is not retried: one worker, one failure line.
    const std::string log = ReadFile(fleet_->dir() + "/w1.log");
    const std::string line = "job_seq=" + std::to_string(seq) + " partition=0 failed here";
    size_t count = 0;
    for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++count;
    EXPECT_EQ(count, 1u) << line;
    EXPECT_NE(result.error().find(expect[seq]), std::string::npos) << result.error();
  }
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_generations_total{outcome=\"bad_input\"}", 2.0), 2.0);
  EXPECT_EQ(Sample(port, "zkfleet_worker_generations_total{outcome=\"limit\"}"), 1.0);
  EXPECT_EQ(Sample(port, "zkfleet_worker_generations_total{outcome=\"circuit_error\"}"), 1.0);
}

// Issue 47, item 4: a job from inputs without the client's digest took its
// public signals from the proving worker, so a hostile key answering with
// another job's valid proof made that job SUCCEEDED. Now a worker of another
// key computes the signals of the same inputs before the proof is delivered:
// the hostile key's proofs are outvoted by two honest keys (struck, the job
// proved again), its lies as a checker are outvoted too, and every job ends
// with its own statement, vouched for by two keys.
TEST_F(FleetInputsTest, AnotherJobsProofFromAHostileKeyIsNeverDeliveredForAJobFromInputs) {
  constexpr int kJobs = 6;
  Start("inputs_signals", {}, {"mallory", "second"});
  // The lie: a valid proof of input 100's statement, for every job.
  ExpectedPublic(fleet_->dir(), "bn128", bn_, Input(100));
  Process liar({ZKFLEET_HOSTILE_WORKER, "--broker", fleet_->worker_endpoint(), "--curve-secret-key",
                fleet_->SecretKeyFile("mallory"), "--broker-public-key", fleet_->broker_public_key(), "--id", "liar",
                "--mode", "replay", "--circuit", "bn", "--generates", "bn", "--credit", "2", "--heartbeat-ms",
                std::to_string(kHeartbeatMs), "--proof", fleet_->dir() + "/expected_proof.json", "--public",
                fleet_->dir() + "/expected_public.json"},
               fleet_->dir() + "/hostile-liar.log");
  StartWorker("honest", FreePort());
  StartWorker("second", FreePort(),
              {"--curve-secret-key", fleet_->SecretKeyFile("second"), "--broker-public-key",
               fleet_->broker_public_key()});
  for (const char* id : {"liar", "honest", "second"}) fleet_->WaitWorkerReady(id, std::chrono::seconds(120));
  std::map<uint64_t, int> sent;  // job -> its public input a
  for (int i = 0; i < kJobs; ++i) sent[Submit("signals-" + std::to_string(i), "bn", Input(200 + i))] = 200 + i;
  auto results = Results(sent.size());
  ASSERT_EQ(results.size(), sent.size());
  for (const auto& [seq, result] : results) {
    ASSERT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << seq << ": " << result.error();
    ASSERT_EQ(result.partitions_size(), 1);
    const auto& p = result.partitions(0);
    EXPECT_NE(p.worker_id(), "liar") << seq;
    EXPECT_EQ(p.signals_keys(), 2u) << seq;
    // Its own statement (a = 200 + i), never the replayed one (a = 100).
    const nlohmann::json signals = nlohmann::json::parse(p.public_json());
    EXPECT_NE(std::find(signals.begin(), signals.end(), std::to_string(sent[seq])), signals.end()) << p.public_json();
    EXPECT_TRUE(SnarkjsVerifies(bn_.vk, p.proof_json(), p.public_json(), fleet_->dir())) << seq;
  }
  // The liar was given work (as prover or checker) and was struck for it.
  EXPECT_NE(liar.Log().find("sent STARTED and RESULT ok"), std::string::npos) << liar.Log();
  EXPECT_NE(broker_->Log().find("(public signals other keys refuted)"), std::string::npos) << broker_->Log();
}

// An operator who gives a circuit another circuit's generator (here the
// BLS12-381 build for a BN254 key) is told at start; no client's job is
// failed for it.
TEST_F(FleetInputsTest, AGeneratorThatDoesNotFitItsKeyStopsTheWorkerAtStart) {
  Start("inputs_mismatch");
  Process& worker = fleet_->StartWorker(
      "w1", {"--circuit", "bn=" + bn_.zkey, "--generator", "bn=" + Wasm("bls12381"), "--backend", "cpu", "--witgen-cache",
             std::string(ZKFLEET_SOURCE_DIR) + "/build/.witgen-test-cache"});
  auto code = worker.WaitExit(zkfleet::testing::Scaled(std::chrono::seconds(120)));
  ASSERT_TRUE(code.has_value()) << "the worker did not stop";
  EXPECT_NE(*code, 0);
  EXPECT_TRUE(worker.WaitForLog("check --generator against --circuit", std::chrono::seconds(5)));
}

}  // namespace
}  // namespace fleet_test
