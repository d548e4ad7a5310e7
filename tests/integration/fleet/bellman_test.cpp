// Bellperson-style jobs (issue 33, part 3b) with real processes: the broker
// holds a synthetic circuit's bellperson .vk (--verification-key), a CPU
// zkworker holds its .params (--bellman-circuit), clients submit one assignment
// file per partition by file:// reference (zkfleet-dev bellman-assignment
// --variant: three assignments of one circuit). The job's proof zkctl writes
// (--out-proof: the partitions' 192-byte proofs, concatenated) verifies with
// the noble oracle (tests/js/bellman_verify.mjs) and with the engine's
// verifier. A reference whose SHA-256 is wrong and an assignment that does not
// fit the parameters fail their own jobs only; a worker sending 192 bytes that
// are not the proof it claims (tests/tools/hostile_worker) is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet_harness.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/engine/bellman_format.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/verify.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/public_digest.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;
using zkfleet::testing::Scaled;

constexpr const char* kCircuit = "porep";
constexpr int kHeartbeatMs = 500;
constexpr int kPartitions = 3;

class FleetBellmanTest : public ::testing::Test {
 protected:
  // The fleet, the circuit's files in dir()/c, the broker with its .vk.
  // `hostile_key`: also a worker key "mallory" in the allow-list (a FAULTED
  // worker's key is FAULTED too, and the honest workers share "fleet-worker").
  void Start(const std::string& name, bool hostile_key = false) {
    fleet_ = std::make_unique<Fleet>(name, kHeartbeatMs);
    if (hostile_key) {
      const auto keys = zkfleet::fleet::GenerateCurveKeyPair();
      zkfleet::fleet::WriteKeyPair(fleet_->key_dir(), "mallory", keys);
      std::ofstream entry(fleet_->allow_dir() + "/workers/mallory.pub");
      entry << "public-key = " << keys.public_z85 << "\n";
    }
    dir_ = fleet_->dir() + "/c";
    std::filesystem::create_directories(dir_);
    Dev({"bellman-params", "--synthetic", "10", "--public", "2", "--seed", "7", "--out", Params(), "--vk", Vk()});
    for (int p = 0; p < kPartitions; ++p) {
      Dev({"bellman-assignment", "--synthetic", "10", "--public", "2", "--seed", "7", "--variant", std::to_string(p),
           "--out", Asgn(p), "--inputs-json", Inputs(p)});
    }
    fleet_->StartBroker({"--verification-key", std::string(kCircuit) + "=" + Vk()});
    client_ = fleet_->Client();
  }

  void Dev(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {BinaryPath("zkfleet-dev")};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string output;
    ASSERT_EQ(RunCommand(argv, &output), 0) << output;
  }

  Process& StartWorker(const std::string& id) {
    Process& worker = fleet_->StartWorker(
        id, {"--bellman-circuit", std::string(kCircuit) + "=" + Params(), "--backend", "cpu", "--threads", "1",
             "--capacity", "2", "--fetch-allow", "file://" + dir_ + "/"});
    fleet_->WaitWorkerReady(id, Scaled(60s));
    return worker;
  }

  std::string Params() const { return dir_ + "/c.params"; }
  std::string Vk() const { return dir_ + "/c.vk"; }
  std::string Asgn(int p) const { return dir_ + "/p" + std::to_string(p) + ".asgn"; }
  std::string Inputs(int p) const { return dir_ + "/p" + std::to_string(p) + ".inputs.json"; }
  std::string Url(const std::string& path) const { return "file://" + path; }

  // A one-partition job of `path`, expecting public inputs `inputs_json`.
  uint64_t Submit(const std::string& request_id, const std::string& path, const std::string& inputs_json,
                  const std::string* wrong_sha256 = nullptr) {
    const std::string bytes = ReadFile(path);
    proto::SubmitRequest request;
    request.set_request_id(request_id);
    request.set_circuit_id(kCircuit);
    proto::WitnessRef* ref = request.add_witness_refs();
    ref->set_url(Url(path));
    ref->set_size(bytes.size());
    ref->set_sha256(wrong_sha256 ? *wrong_sha256 : zkfleet::fetch::Sha256::Of(bytes));
    std::string why;
    const auto digest = zkfleet::wire::PublicSignalsDigestOfJson(ReadFile(inputs_json), &why);
    EXPECT_TRUE(digest) << why;
    request.add_public_signals_sha256(digest.value_or(""));
    return client_->Submit(request, zkfleet::fleet::Frames{}, Scaled(20s)).job_seq();
  }

  proto::JobResult Await(uint64_t job, std::chrono::seconds timeout = 120s) {
    auto results = CollectResults(*client_, 1, timeout);
    EXPECT_EQ(results.count(job), 1u);
    return results.count(job) ? results[job] : proto::JobResult{};
  }

  std::unique_ptr<Fleet> fleet_;
  std::string dir_;
  std::unique_ptr<zkfleet::client::internal::BrokerClient> client_;
};

// The engine's check of a job's proof file: each 192-byte slice is the
// encoding of the partition's points, which verify with the engine's pairing
// against the .vk and the partition's public inputs.
void ExpectEngineVerifies(const std::string& vk_path, const std::string& proof_file,
                          const proto::JobResult& result) {
  const std::string vk_bytes = ReadFile(vk_path);
  const auto vk = zkfleet::engine::ParseBellmanVerifyingKey(
      {reinterpret_cast<const uint8_t*>(vk_bytes.data()), vk_bytes.size()}, vk_path);
  const std::string proof = ReadFile(proof_file);
  ASSERT_EQ(proof.size(), 192u * result.partitions_size());
  for (const auto& p : result.partitions()) {
    const auto points = zkfleet::engine::ParseProofJson(p.proof_json(), "proof.json");
    const auto inputs = zkfleet::engine::ParsePublicSignalsJson(p.public_json(), "public.json");
    const auto verdict = zkfleet::engine::Verify(vk, inputs, points);
    EXPECT_TRUE(verdict.ok()) << "partition " << p.partition() << ": " << verdict.reason;
    const auto encoded = zkfleet::engine::EncodeBellmanProof(points);
    EXPECT_EQ(proof.substr(192 * p.partition(), 192), std::string(encoded.begin(), encoded.end()))
        << "partition " << p.partition();
    EXPECT_EQ(p.proof_bytes(), std::string(encoded.begin(), encoded.end()));
  }
}

// The noble oracle: 0 = every partition valid.
int NobleVerify(const std::string& vk, const std::string& proof, const std::string& inputs, std::string* output) {
  return RunCommand({"node", Fixture("../js/bellman_verify.mjs"), "--vk", vk, "--proof", proof, "--inputs", inputs},
                    output);
}

TEST_F(FleetBellmanTest, ThreePartitionsByFileReferenceProveAndTheConcatenatedProofVerifies) {
  Start("bellman_job");
  StartWorker("w1");
  std::vector<std::string> args = {"--json", "submit", "--circuit", kCircuit, "--request-id", "porep-1",
                                   "--out-proof", dir_ + "/job.proof", "--out", dir_ + "/out"};
  nlohmann::json inputs = nlohmann::json::array();
  for (int p = 0; p < kPartitions; ++p) {
    args.insert(args.end(), {"--witness-url", Url(Asgn(p)), "--public-signals", Inputs(p)});
    inputs.push_back(nlohmann::json::parse(ReadFile(Inputs(p))));
  }
  std::string output;
  ASSERT_EQ(fleet_->Zkctl(args, &output), 0) << output;
  const auto printed = nlohmann::json::parse(output.substr(output.find('{')));
  ASSERT_EQ(printed["state"], "SUCCEEDED") << output;
  ASSERT_EQ(printed["partitions"].size(), 3u);
  for (const auto& p : printed["partitions"]) EXPECT_EQ(p["proof_bytes"].get<std::string>().size(), 384u);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/out/proof_2.bin"));
  {
    std::FILE* f = std::fopen((dir_ + "/inputs.json").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(inputs.dump().c_str(), f);
    std::fclose(f);
  }
  ASSERT_EQ(NobleVerify(Vk(), dir_ + "/job.proof", dir_ + "/inputs.json", &output), 0) << output;
  EXPECT_NE(output.find("valid (3 partitions)"), std::string::npos) << output;
  // The oracle is not a rubber stamp: partitions 0 and 1's inputs swapped fail.
  std::swap(inputs[0], inputs[1]);
  {
    std::FILE* f = std::fopen((dir_ + "/swapped.json").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(inputs.dump().c_str(), f);
    std::fclose(f);
  }
  EXPECT_EQ(NobleVerify(Vk(), dir_ + "/job.proof", dir_ + "/swapped.json", &output), 1) << output;

  // The engine's verifier, on the result as the client library receives it.
  const auto job = printed["job_seq"].get<uint64_t>();
  const proto::JobResult awaited = client_->Await(job, Scaled(20s));
  ASSERT_EQ(awaited.state(), proto::JOB_STATE_SUCCEEDED) << awaited.DebugString();
  ExpectEngineVerifies(Vk(), dir_ + "/job.proof", awaited);
  EXPECT_EQ(fleet_->Status().results_rejected(), 0u);
}

TEST_F(FleetBellmanTest, AWrongSha256AndAnAssignmentOfOtherParametersFailTheirJobsOnly) {
  Start("bellman_bad_refs");
  Process& worker = StartWorker("w1");
  // A reference whose SHA-256 is not its file's.
  std::string wrong = zkfleet::fetch::Sha256::Of(ReadFile(Asgn(0)));
  wrong[0] = static_cast<char>(wrong[0] ^ 1);
  const uint64_t bad_sha = Submit("bad-sha", Asgn(0), Inputs(0), &wrong);
  proto::JobResult result = Await(bad_sha);
  EXPECT_EQ(result.state(), proto::JOB_STATE_FAILED) << result.DebugString();
  EXPECT_NE(result.error().find("with sha256 " + zkfleet::wire::DigestHex(wrong) + " is there (missing, unreadable"),
            std::string::npos)
      << result.error();

  // An assignment of another circuit (3 public inputs, the parameters have 2).
  Dev({"bellman-assignment", "--synthetic", "10", "--public", "3", "--seed", "7", "--out", dir_ + "/other.asgn",
       "--inputs-json", dir_ + "/other.inputs.json"});
  const uint64_t other = Submit("other", dir_ + "/other.asgn", dir_ + "/other.inputs.json");
  result = Await(other);
  EXPECT_EQ(result.state(), proto::JOB_STATE_FAILED) << result.DebugString();
  EXPECT_NE(result.error().find("does not fit the parameters"), std::string::npos) << result.error();
  EXPECT_EQ(result.partitions_size(), 0);

  // Nothing else: the worker goes on, and proves the next job.
  EXPECT_TRUE(worker.running());
  const uint64_t good = Submit("good", Asgn(1), Inputs(1));
  result = Await(good);
  EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << result.DebugString();
  ASSERT_EQ(result.partitions_size(), 1);
  EXPECT_EQ(result.partitions(0).proof_bytes().size(), 192u);
  EXPECT_EQ(nlohmann::json::parse(result.partitions(0).public_json()), nlohmann::json::parse(ReadFile(Inputs(1))));
  EXPECT_EQ(fleet_->Status().results_rejected(), 0u);
}

// A worker that answers with a valid proof's points but 192 bytes that are
// not their encoding (one bit flipped): the broker refuses the result, the
// job waits for an honest worker.
TEST_F(FleetBellmanTest, GarbledProofBytesAreRefusedByTheBroker) {
  Start("bellman_hostile", /*hostile_key=*/true);
  Process& honest = StartWorker("honest");
  const uint64_t first = Submit("first", Asgn(0), Inputs(0));
  proto::JobResult proved = Await(first);
  ASSERT_EQ(proved.state(), proto::JOB_STATE_SUCCEEDED) << proved.DebugString();
  const auto& p = proved.partitions(0);
  std::string garbled = p.proof_bytes();
  ASSERT_EQ(garbled.size(), 192u);
  garbled[100] = static_cast<char>(garbled[100] ^ 0x01);
  for (const auto& [name, text] : {std::pair<std::string, std::string>{"proof.json", p.proof_json()},
                                   {"public.json", p.public_json()}, {"garbled.bin", garbled}}) {
    std::FILE* f = std::fopen((dir_ + "/" + name).c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  honest.Kill9();

  Process hostile({ZKFLEET_HOSTILE_WORKER, "--broker", fleet_->worker_endpoint(), "--curve-secret-key",
                   fleet_->SecretKeyFile("mallory"), "--broker-public-key", fleet_->broker_public_key(), "--id",
                   "liar", "--mode", "replay", "--circuit", kCircuit, "--bellman", "--credit", "2", "--heartbeat-ms",
                   std::to_string(kHeartbeatMs), "--proof", dir_ + "/proof.json", "--public", dir_ + "/public.json",
                   "--proof-bytes", dir_ + "/garbled.bin", "--fetch-prefix", "file://" + dir_ + "/"},
                  fleet_->dir() + "/hostile.log");
  fleet_->WaitWorkerReady("liar", Scaled(20s));
  // The same statement again (the hostile's points are a valid proof of it):
  // only the bytes lie.
  const uint64_t job = Submit("second", Asgn(0), Inputs(0));
  auto deadline = std::chrono::steady_clock::now() + Scaled(30s);
  proto::StatusReply status;
  while (std::chrono::steady_clock::now() < deadline) {
    status = fleet_->Status();
    if (status.results_rejected() >= 1) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_GE(status.results_rejected(), 1u) << status.DebugString() << hostile.Log();
  EXPECT_EQ(status.jobs_completed(), 1u) << status.DebugString();  // the first job only
  hostile.Kill9();
  StartWorker("honest2");
  proved = Await(job);
  ASSERT_EQ(proved.state(), proto::JOB_STATE_SUCCEEDED) << proved.DebugString();
  EXPECT_EQ(proved.partitions(0).worker_id(), "honest2");
  EXPECT_NE(proved.partitions(0).proof_bytes(), garbled);
}

}  // namespace
}  // namespace fleet_test
