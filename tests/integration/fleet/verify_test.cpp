// Verify before sending, in the fleet (CPU backend, the bundled bn128_k12
// fixture): every proof a worker sends is checked against the key's own
// verification key. An engine fault -- injected with the test-only
// ZKFLEET_FAULT_INJECT=msm:<n>, which corrupts pi_a's MSM result in the next
// n proofs -- is caught, counted and re-proved on the CPU, so the client
// still receives a proof snarkjs accepts; --fault-threshold faults turn the
// worker FAULTED (zkctl and its metrics show it) and the broker routes to
// another worker. A witness that does not satisfy the circuit fails the job
// as a client error, once, without retries.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "fleet_harness.hpp"
#include "unit/metrics/http_client.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

constexpr const char* kCircuit = "c";
// 500 ms heartbeats (gone after 1.5 s of silence), as in real_proofs_test:
// proving keeps the 2 CI cores busy and a loaded machine was seen freezing
// processes for ~0.8 s, which the harness's 100 ms turns into lost workers.
constexpr int kHeartbeatMs = 500;

std::string Zkey() { return Fixture("bn128_k12/circuit_final.zkey"); }
std::string Vk() { return Fixture("bn128_k12/verification_key.json"); }
std::string WitnessBytes() { return ReadFile(Fixture("bn128_k12/witness.wtns")); }

std::vector<std::string> WorkerArgs(int metrics_port, std::vector<std::string> extra = {}, int capacity = 2) {
  std::vector<std::string> args = {"--circuit", std::string(kCircuit) + "=" + Zkey(), "--backend", "cpu",
                                   "--threads", "1", "--capacity", std::to_string(capacity), "--metrics-listen",
                                   "127.0.0.1:" + std::to_string(metrics_port)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

proto::JobResult Prove(zkfleet::client::internal::BrokerClient& client, const std::string& request_id,
                       const std::string& witness) {
  proto::SubmitRequest request;
  std::vector<std::string> witnesses;
  request.set_request_id(request_id);
  request.set_circuit_id(kCircuit);
  witnesses.push_back(witness);
  const auto reply = client.Submit(request, witnesses, std::chrono::seconds(10));
  auto result = client.NextJobResult(std::chrono::seconds(60));
  if (!result) {
    ADD_FAILURE() << request_id << ": no result";
    return {};
  }
  EXPECT_EQ(result->job_seq(), reply.job_seq());
  return *result;
}

void ExpectValidProof(const proto::JobResult& result, const Fleet& fleet, const std::string& expected_worker = "") {
  ASSERT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << result.error();
  ASSERT_EQ(result.partitions_size(), 1);
  const auto& part = result.partitions(0);
  if (!expected_worker.empty()) EXPECT_EQ(part.worker_id(), expected_worker);
  EXPECT_TRUE(SnarkjsVerifies(Vk(), part.proof_json(), part.public_json(), fleet.dir()))
      << "job " << result.job_seq() << " from " << part.worker_id();
}

std::string FaultSeries() {
  return std::string("zkfleet_worker_proof_verification_failures_total{backend=\"cpu\",circuit=\"") + kCircuit +
         "\",device=\"none\"}";
}

TEST(FleetVerify, EngineFaultIsCaughtCountedAndTheClientGetsAValidProof) {
  Fleet fleet("verify_engine_fault", kHeartbeatMs);
  fleet.StartBroker();
  const int port = FreePort();
  Process& worker = StartWorkerWithFaults(fleet, "w1", "msm:1", WorkerArgs(port));
  fleet.WaitWorkerReady("w1");
  auto client = fleet.Client();
  for (int i = 0; i < 3; ++i) ExpectValidProof(Prove(*client, "r" + std::to_string(i), WitnessBytes()), fleet, "w1");

  EXPECT_TRUE(worker.WaitForLog("engine fault: backend=cpu device=none circuit=c", 5s)) << worker.Log();
  EXPECT_EQ(SampleWhen(port, FaultSeries(), 1), 1) << "the fault was not counted";
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_proof_verify_seconds_count{circuit=\"c\"}", 3), 3);
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_state{state=\"READY\"}", 1), 1) << "one fault must not fault the worker";
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_jobs_total{circuit=\"c\",outcome=\"succeeded\"}", 3), 3);
}

TEST(FleetVerify, RepeatedEngineFaultsTurnTheWorkerFaultedAndTheBrokerRoutesElsewhere) {
  Fleet fleet("verify_faulted", kHeartbeatMs);
  Process& broker = fleet.StartBroker();
  const int bad_port = FreePort(), good_port = FreePort();
  Process& bad = StartWorkerWithFaults(fleet, "bad", "msm:100",
                                       WorkerArgs(bad_port, {"--fault-threshold", "3", "--fault-window", "600"}));
  fleet.WaitWorkerReady("bad");
  auto client = fleet.Client();
  // One at a time, so that "bad" proves each: every proof still verifies.
  for (int i = 0; i < 3; ++i) ExpectValidProof(Prove(*client, "r" + std::to_string(i), WitnessBytes()), fleet, "bad");
  EXPECT_TRUE(bad.WaitForLog("worker FAULTED: 3 engine faults", 5s)) << bad.Log();
  EXPECT_EQ(SampleWhen(bad_port, FaultSeries(), 3), 3);
  EXPECT_EQ(SampleWhen(bad_port, "zkfleet_worker_state{state=\"FAULTED\"}", 1), 1);
  EXPECT_EQ(zkfleet::testing::HttpGet(bad_port, "/ready", 1s).status, 503);
  EXPECT_TRUE(broker.WaitForLog("worker bad \\(cpu on .*\\) is FAULTED", 5s)) << broker.Log();

  std::string out;
  ASSERT_EQ(fleet.Zkctl({"workers"}, &out), 0) << out;
  EXPECT_NE(out.find("FAULTED"), std::string::npos) << out;
  // An admin's undrain cannot make its engine sound: zkctl says it is still
  // FAULTED and that a restart is needed, and exits 1.
  EXPECT_EQ(fleet.Zkctl({"undrain", "bad"}, &out), 1) << out;
  EXPECT_NE(out.find("worker bad is still FAULTED: it reported its own engine faulted"), std::string::npos) << out;
  EXPECT_EQ(out.find("READY again"), std::string::npos) << out;

  // Nothing is routed to the faulted worker: a job waits for a healthy one.
  proto::SubmitRequest request;
  std::vector<std::string> witnesses;
  request.set_request_id("after");
  request.set_circuit_id(kCircuit);
  witnesses.push_back(WitnessBytes());
  const auto reply = client->Submit(request, witnesses, 10s);
  EXPECT_FALSE(client->NextJobResult(1500ms).has_value()) << "a FAULTED worker was given work";
  fleet.StartWorker("good", WorkerArgs(good_port));
  fleet.WaitWorkerReady("good");
  auto result = client->NextJobResult(60s);
  ASSERT_TRUE(result.has_value());
  EXPECT_EQ(result->job_seq(), reply.job_seq());
  ExpectValidProof(*result, fleet, "good");
  EXPECT_EQ(result->partitions(0).attempts(), 1u);
  EXPECT_EQ(Sample(good_port, FaultSeries()), 0);
  EXPECT_EQ(SampleWhen(bad_port, "zkfleet_worker_state{state=\"FAULTED\"}", 1), 1) << "FAULTED is not left by itself";
}

TEST(FleetVerify, UnsatisfyingWitnessFailsTheJobAsAClientErrorWithoutRetries) {
  Fleet fleet("verify_unsatisfied", kHeartbeatMs);
  Process& broker = fleet.StartBroker({"--max-attempts", "3"});
  const int port = FreePort();
  fleet.StartWorker("w1", WorkerArgs(port));
  fleet.WaitWorkerReady("w1");
  auto client = fleet.Client();
  std::string witness = WitnessBytes();
  witness[witness.size() - 32] ^= 1;  // the last (private) signal
  const proto::JobResult result = Prove(*client, "bad-witness", witness);
  EXPECT_EQ(result.state(), proto::JOB_STATE_FAILED) << result.error();
  EXPECT_NE(result.error().find("witness does not satisfy circuit c"), std::string::npos) << result.error();
  EXPECT_EQ(broker.Log().find("requeued job_seq=1"), std::string::npos) << "retried:\n" << broker.Log();
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_jobs_total{circuit=\"c\",outcome=\"failed\"}", 1), 1);
  EXPECT_EQ(Sample(port, FaultSeries()), 0) << "a bad witness is not an engine fault";
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_state{state=\"READY\"}", 1), 1);
  // The worker goes on proving.
  ExpectValidProof(Prove(*client, "good-witness", WitnessBytes()), fleet, "w1");
}

}  // namespace
}  // namespace fleet_test

namespace fleet_test {
namespace {

// A fatal (sticky) device error -- injected with ZKFLEET_FAULT_INJECT=
// device_lost:1, which makes the next proof fail as a sticky CUDA error does
// -- turns the worker FAULTED: the broker stops routing to it and requeues
// what it held without charging an attempt, the worker exits with status 1
// (so systemd / Kubernetes restart it), and every job still succeeds on
// another worker. Only the item that hit the error counts an attempt.
TEST(FleetVerify, FatalDeviceErrorFaultsTheWorkerWhichExitsNonZeroAndNothingIsLost) {
  Fleet fleet("verify_device_lost", kHeartbeatMs);
  Process& broker = fleet.StartBroker({"--max-attempts", "2"});
  Process& lost = StartWorkerWithFaults(fleet, "lost", "device_lost:1",
                                        WorkerArgs(FreePort(), {"--dispatch-start-delay-ms", "1500"}, 4));
  fleet.WaitWorkerReady("lost");
  auto client = fleet.Client();
  std::vector<uint64_t> seqs;
  for (int i = 0; i < 3; ++i) {
    proto::SubmitRequest request;
    std::vector<std::string> witnesses;
    request.set_request_id("r" + std::to_string(i));
    request.set_circuit_id(kCircuit);
    witnesses.push_back(WitnessBytes());
    seqs.push_back(client->Submit(request, witnesses, 10s).job_seq());
  }
  const auto code = lost.WaitExit(30s);
  ASSERT_TRUE(code.has_value()) << lost.Log();
  EXPECT_EQ(*code, 1) << lost.Log();
  EXPECT_NE(lost.Log().find("worker FAULTED: fatal device error"), std::string::npos) << lost.Log();
  EXPECT_TRUE(broker.WaitForLog("worker lost state READY -> FAULTED", 5s)) << broker.Log();

  fleet.StartWorker("good", WorkerArgs(FreePort()));
  std::map<uint64_t, proto::JobResult> results;
  while (results.size() < seqs.size()) {
    auto result = client->NextJobResult(60s);
    ASSERT_TRUE(result.has_value()) << "only " << results.size() << " results\n" << broker.Log();
    results.emplace(result->job_seq(), *result);
  }
  int charged = 0;
  for (const auto& [seq, result] : results) {
    ExpectValidProof(result, fleet, "good");
    if (result.partitions_size() == 1 && result.partitions(0).attempts() == 2) ++charged;
  }
  EXPECT_EQ(charged, 1) << "only the item that hit the device error counts an attempt";
}

}  // namespace
}  // namespace fleet_test

namespace fleet_test {
namespace {

// Key validation at load, in the fleet: a worker given a .zkey with one B1
// point moved off the curve refuses to start (exit 1) and says which section
// and point; with --no-key-check it loads it (benchmarks only).
TEST(FleetVerify, WorkerRefusesAKeyWithAnOffCurvePoint) {
  Fleet fleet("verify_bad_key", kHeartbeatMs);
  fleet.StartBroker();
  std::string zkey = ReadFile(Zkey());
  // Walk the sections (magic, version, count, then {u32 id, u64 size, data}):
  // n8q is the first u32 of section 2, B1 is section 6.
  auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, zkey.data() + at, 4); return v; };
  size_t at = 12, b1 = 0, n8q = 0;
  for (uint32_t i = 0, count = u32(8); i < count; ++i) {
    uint64_t size;
    std::memcpy(&size, zkey.data() + at + 4, 8);
    if (u32(at) == 2) n8q = u32(at + 12);
    if (u32(at) == 6) b1 = at + 12;
    at += 12 + size;
  }
  ASSERT_TRUE(b1 != 0 && n8q == 32);
  zkey[b1 + 5 * 2 * n8q + n8q] ^= 1;  // lowest bit of y of B1[5]
  const std::string bad = fleet.dir() + "/bad.zkey";
  zkfleet::testing::WriteFile(bad, zkey);

  Process& worker = fleet.StartWorker(
      "w1", {"--circuit", std::string(kCircuit) + "=" + bad, "--backend", "cpu", "--threads", "1"});
  const auto code = worker.WaitExit(30s);
  ASSERT_TRUE(code.has_value()) << worker.Log();
  EXPECT_EQ(*code, 1) << worker.Log();
  EXPECT_NE(worker.Log().find("bad.zkey: section B1 point 5 "), std::string::npos) << worker.Log();
  EXPECT_NE(worker.Log().find("point is not on the curve"), std::string::npos) << worker.Log();

  fleet.StartWorker("w2", {"--circuit", std::string(kCircuit) + "=" + bad, "--backend", "cpu", "--threads", "1",
                           "--no-key-check"});
  fleet.WaitWorkerReady("w2");
}

// A key whose points passed the check is remembered by its content digest:
// the next worker on the host skips the check; a key changed in one bit is
// another key, checked again (and refused), whatever its file name.
TEST(FleetVerify, APassedKeyCheckIsRememberedAndAChangedKeyIsCheckedAgain) {
  Fleet fleet("verify_key_cache", kHeartbeatMs);
  fleet.StartBroker();
  const std::string cache = fleet.dir() + "/cache";
  const std::string zkey = fleet.dir() + "/circuit.zkey";
  std::string bytes = ReadFile(Zkey());
  zkfleet::testing::WriteFile(zkey, bytes);
  auto args = [&](const std::string& path) {
    return std::vector<std::string>{"--circuit", std::string(kCircuit) + "=" + path, "--backend", "cpu",
                                    "--threads", "1", "--key-check-cache", cache};
  };
  Process& first = fleet.StartWorker("w1", args(zkey));
  fleet.WaitWorkerReady("w1");
  EXPECT_NE(first.Log().find("points checked)"), std::string::npos) << first.Log();
  Process& second = fleet.StartWorker("w2", args(zkey));
  fleet.WaitWorkerReady("w2");
  EXPECT_NE(second.Log().find("points checked before on this host"), std::string::npos) << second.Log();

  // The same file, B1[5] moved off the curve (see the test above).
  auto u32 = [&](size_t at) { uint32_t v; std::memcpy(&v, bytes.data() + at, 4); return v; };
  size_t at = 12, b1 = 0;
  for (uint32_t i = 0, count = u32(8); i < count; ++i) {
    uint64_t size;
    std::memcpy(&size, bytes.data() + at + 4, 8);
    if (u32(at) == 6) b1 = at + 12;
    at += 12 + size;
  }
  ASSERT_NE(b1, 0u);
  bytes[b1 + 5 * 64 + 32] ^= 1;
  zkfleet::testing::WriteFile(zkey, bytes);
  Process& third = fleet.StartWorker("w3", args(zkey));
  const auto code = third.WaitExit(30s);
  ASSERT_TRUE(code.has_value()) << third.Log();
  EXPECT_EQ(*code, 1) << third.Log();
  EXPECT_NE(third.Log().find("section B1 point 5 "), std::string::npos) << third.Log();
}

// Issue 49, item 4: circuits come and go without a restart. A key dropped
// into --verification-key-dir is taken at `zkctl reload` (admin); removed and
// SIGHUP'd, its SUBMITs are refused again; a file that does not load is
// named and costs nothing else.
TEST(FleetVerify, AKeyAddedToTheDirectoryTakesJobsAfterAReloadAndLeavesOnSighup) {
  using zkfleet::testing::WriteFile;
  Fleet fleet("verify_reload");
  const std::string keys = fleet.dir() + "/vk";
  std::filesystem::create_directories(keys);
  Process& broker = fleet.StartBroker({"--verification-key-dir", keys});
  fleet.StartWorker("prover", WorkerArgs(FreePort()));
  fleet.WaitWorkerReady("prover");
  const std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;
  EXPECT_EQ(fleet.Zkctl({"--json", "submit", "--circuit", kCircuit, witness}, &out), 1) << out;
  EXPECT_NE(out.find("UNKNOWN_CIRCUIT"), std::string::npos) << out;
  ASSERT_EQ(fleet.Zkctl({"reload"}, &out), 0) << out;
  EXPECT_NE(out.find("no circuit changed"), std::string::npos) << out;

  std::filesystem::copy_file(Vk(), keys + "/" + kCircuit + ".json");
  ASSERT_EQ(fleet.Zkctl({"reload"}, &out), 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(std::string("\\n") + kCircuit + "\\s+added"))) << out;
  ASSERT_EQ(fleet.Zkctl({"--wait-timeout", "120", "submit", "--circuit", kCircuit, "--wait", witness}, &out), 0)
      << out << broker.Log();
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
  // Only an admin reloads.
  ASSERT_NE(fleet.Zkctl({"--curve-secret-key", fleet.SecretKeyFile("alice"), "--broker-public-key",
                         fleet.broker_public_key(), "--json", "reload"},
                        &out),
            0)
      << out;
  EXPECT_NE(out.find("FORBIDDEN"), std::string::npos) << out;

  // A damaged file is named; the key already there stays.
  WriteFile(keys + "/broken.json", "{ \"protocol\": ");
  ASSERT_EQ(fleet.Zkctl({"--json", "reload"}, &out), 1) << out;
  EXPECT_NE(out.find("broken"), std::string::npos) << out;
  EXPECT_EQ(out.find("circuitsRemoved"), std::string::npos) << out;
  std::filesystem::remove(keys + "/broken.json");

  // Removed, and the broker told by SIGHUP: its SUBMITs are refused again.
  std::filesystem::remove(keys + "/" + kCircuit + ".json");
  broker.Signal(SIGHUP);
  ASSERT_TRUE(broker.WaitForLog(std::string("verification key of circuit ") + kCircuit + " removed", 10s))
      << broker.Log();
  EXPECT_EQ(fleet.Zkctl({"--json", "submit", "--circuit", kCircuit, witness}, &out), 1) << out;
  EXPECT_NE(out.find("UNKNOWN_CIRCUIT"), std::string::npos) << out;
}

}  // namespace
}  // namespace fleet_test
