// One worker, several devices (--gpus), in the fleet: the CPU backend with
// --test-fake-devices 2 (two CPU copies of every key, devices fake0 and
// fake1) stands in for a two-GPU host. Both devices prove a batch (the
// per-device counters show it) and every proof verifies with snarkjs; a
// device that hits a fatal error (ZKFLEET_FAULT_INJECT=device_lost:<n>, the
// next n proofs fail as a sticky CUDA error does) leaves the set and the
// worker finishes the batch on the other, every job answered exactly once;
// the worker goes FAULTED (and exits 1) only when no device is left.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>


#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

constexpr const char* kCircuit = "c";
// As in verify_test: proving keeps both CI cores busy; 500 ms heartbeats
// leave room for a frozen process.
constexpr int kHeartbeatMs = 500;

std::string Zkey() { return Fixture("bn128_k12/circuit_final.zkey"); }
std::string Vk() { return Fixture("bn128_k12/verification_key.json"); }
std::string WitnessBytes() { return ReadFile(Fixture("bn128_k12/witness.wtns")); }

// Two fake devices, one lane each (the CPU default), 4 items per device; the
// dispatcher waits 1.5 s after READY so the batch is queued before the lanes
// start (both devices then begin at once).
std::vector<std::string> TwoDeviceArgs(int metrics_port, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--circuit", std::string(kCircuit) + "=" + Zkey(), "--backend", "cpu",
                                   "--threads", "1", "--capacity", "4", "--test-fake-devices", "2",
                                   "--dispatch-start-delay-ms", "1500", "--metrics-listen",
                                   "127.0.0.1:" + std::to_string(metrics_port)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string DeviceProofs(const std::string& device) {
  return "zkfleet_worker_device_proofs_total{device=\"" + device + "\"}";
}

std::vector<uint64_t> SubmitBatch(zkfleet::client::internal::BrokerClient& client, int jobs) {
  std::vector<uint64_t> seqs;
  for (int i = 0; i < jobs; ++i) {
    proto::SubmitRequest request;
    std::vector<std::string> witnesses;
    request.set_request_id("r" + std::to_string(i));
    request.set_circuit_id(kCircuit);
    witnesses.push_back(WitnessBytes());
    seqs.push_back(client.Submit(request, witnesses, 10s).job_seq());
  }
  return seqs;
}

// `count` results, each job once (a second result for a job, one more after
// the last, or a copy the client dropped, is a failure), keyed by job_seq.
std::map<uint64_t, proto::JobResult> Collect(zkfleet::client::internal::BrokerClient& client, size_t count) {
  std::map<uint64_t, proto::JobResult> results;
  while (results.size() < count) {
    auto result = client.NextJobResult(60s);
    if (!result) {
      ADD_FAILURE() << "only " << results.size() << " of " << count << " results arrived";
      break;
    }
    EXPECT_TRUE(results.emplace(result->job_seq(), *result).second) << "job " << result->job_seq() << " answered twice";
  }
  EXPECT_FALSE(client.NextJobResult(500ms).has_value()) << "a result arrived after the last one";
  ExpectNoResultCopies(client);  // a copy the client dropped (no broker restart here)
  return results;
}

// Every result SUCCEEDED (by `worker_id`) and its proof verifies with snarkjs
// (one node process for the batch).
void ExpectAllVerify(const std::map<uint64_t, proto::JobResult>& results, const Fleet& fleet,
                     const std::string& worker_id) {
  std::vector<ProofToVerify> proofs;
  for (const auto& [seq, result] : results) {
    EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << "job " << seq << ": " << result.error();
    if (result.partitions_size() != 1) {
      ADD_FAILURE() << "job " << seq << " has " << result.partitions_size() << " partitions";
      continue;
    }
    EXPECT_EQ(result.partitions(0).worker_id(), worker_id) << "job " << seq;
    proofs.push_back(
        {std::to_string(seq), Vk(), result.partitions(0).proof_json(), result.partitions(0).public_json()});
  }
  EXPECT_EQ(SnarkjsVerifyBatch(proofs, fleet.dir() + "/proofs"), proofs.size());
}

TEST(FleetMultiDevice, TwoDevicesShareABatchAndEveryProofVerifies) {
  Fleet fleet("multi_device_batch", kHeartbeatMs);
  fleet.StartBroker();
  const int port = FreePort();
  Process& worker = fleet.StartWorker("w", TwoDeviceArgs(port));
  fleet.WaitWorkerReady("w");
  EXPECT_NE(worker.Log().find("with capacity 8 (4 per device, 2 devices)"), std::string::npos) << worker.Log();
  EXPECT_NE(worker.Log().find("points checked at the load on device fake0) in"), std::string::npos)
      << "device fake1's copy is loaded without checking the points again\n" << worker.Log();
  EXPECT_EQ(Sample(port, "zkfleet_worker_devices{state=\"ok\"}"), 2);
  EXPECT_GT(Sample(port, "zkfleet_worker_device_key_bytes{device=\"fake1\"}"), 0);

  auto client = fleet.Client();
  constexpr int kJobs = 8;
  SubmitBatch(*client, kJobs);
  const auto results = Collect(*client, kJobs);
  ExpectAllVerify(results, fleet, "w");
  EXPECT_TRUE(worker.WaitForLog("proving pipeline: 2 devices \\(fake0,fake1\\), 1 lane each", 1s)) << worker.Log();

  // Both devices proved; together, the whole batch, once each.
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_jobs_total{circuit=\"c\",outcome=\"succeeded\"}", kJobs), kJobs);
  const double on0 = Sample(port, DeviceProofs("fake0")), on1 = Sample(port, DeviceProofs("fake1"));
  EXPECT_GT(on0, 0) << worker.Log();
  EXPECT_GT(on1, 0) << worker.Log();
  EXPECT_EQ(on0 + on1, kJobs);
  for (const auto& [seq, result] : results) EXPECT_EQ(result.partitions(0).attempts(), 1u) << "job " << seq;
  EXPECT_EQ(Sample(port, "zkfleet_worker_devices{state=\"faulted\"}"), 0);
}

TEST(FleetMultiDevice, ADeviceThatFaultsLeavesAndTheOtherFinishesTheBatch) {
  Fleet fleet("multi_device_fault", kHeartbeatMs);
  fleet.StartBroker({"--max-attempts", "3"});
  const int port = FreePort();
  Process& worker = StartWorkerWithFaults(fleet, "w", "device_lost:1", TwoDeviceArgs(port));
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();
  constexpr int kJobs = 6;
  SubmitBatch(*client, kJobs);
  const auto results = Collect(*client, kJobs);
  ExpectAllVerify(results, fleet, "w");

  // One device left; the worker kept proving on the other and is READY.
  ASSERT_TRUE(worker.WaitForLog("device fake[01] left the set: fatal device error", 5s)) << worker.Log();
  EXPECT_TRUE(worker.WaitForLog("proving on the 1 remaining of 2 devices \\(capacity now 4\\)", 1s)) << worker.Log();
  EXPECT_TRUE(worker.WaitForLog("device fake[01]: its lanes stopped, released [1-9][0-9]* bytes", 5s)) << worker.Log();
  EXPECT_TRUE(worker.running()) << worker.Log();
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_devices{state=\"faulted\"}", 1), 1);
  EXPECT_EQ(Sample(port, "zkfleet_worker_devices{state=\"ok\"}"), 1);
  EXPECT_EQ(Sample(port, "zkfleet_worker_state{state=\"READY\"}"), 1);
  const bool fake0_left = Sample(port, "zkfleet_worker_device_up{device=\"fake0\"}") == 0;
  const std::string left = fake0_left ? "fake0" : "fake1", stayed = fake0_left ? "fake1" : "fake0";
  EXPECT_EQ(Sample(port, "zkfleet_worker_device_up{device=\"" + stayed + "\"}"), 1);
  EXPECT_EQ(Sample(port, "zkfleet_worker_device_key_bytes{device=\"" + left + "\"}"), 0) << "its keys are freed";
  EXPECT_GT(Sample(port, "zkfleet_worker_device_key_bytes{device=\"" + stayed + "\"}"), 0);
  EXPECT_EQ(SampleWhen(port, "zkfleet_worker_jobs_total{circuit=\"c\",outcome=\"succeeded\"}", kJobs), kJobs);
  EXPECT_EQ(Sample(port, DeviceProofs(stayed)) + Sample(port, DeviceProofs(left)), kJobs);
  // Only the item that hit the error was charged a second attempt.
  int charged = 0;
  for (const auto& [seq, result] : results) charged += result.partitions(0).attempts() == 2 ? 1 : 0;
  EXPECT_EQ(charged, 1);

  // A drain with one device gone: only the other's keys are left to free.
  worker.Signal(SIGTERM);
  const auto code = worker.WaitExit(30s);
  ASSERT_TRUE(code.has_value()) << worker.Log();
  EXPECT_EQ(*code, 0) << worker.Log();
  EXPECT_NE(worker.Log().find("pinned pool released: 0 bytes held"), std::string::npos) << worker.Log();
}

// --fault-threshold counts engine faults per device: with threshold 1, the
// device whose proof was wrong (ZKFLEET_FAULT_INJECT=msm:1; the CPU re-proof
// was sent) leaves, the other goes on, the worker stays READY.
TEST(FleetMultiDevice, ADeviceWithTooManyEngineFaultsLeavesAndTheWorkerStaysReady) {
  Fleet fleet("multi_device_engine_fault", kHeartbeatMs);
  fleet.StartBroker();
  const int port = FreePort();
  Process& worker = StartWorkerWithFaults(fleet, "w", "msm:1", TwoDeviceArgs(port, {"--fault-threshold", "1"}));
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();
  constexpr int kJobs = 4;
  SubmitBatch(*client, kJobs);
  const auto results = Collect(*client, kJobs);
  ExpectAllVerify(results, fleet, "w");
  ASSERT_TRUE(worker.WaitForLog("device fake[01] left the set: 1 engine faults within 600 s", 5s)) << worker.Log();
  const bool fake0_left = Sample(port, "zkfleet_worker_device_up{device=\"fake0\"}") == 0;
  const std::string left = fake0_left ? "fake0" : "fake1", stayed = fake0_left ? "fake1" : "fake0";
  EXPECT_EQ(Sample(port, "zkfleet_worker_device_up{device=\"" + stayed + "\"}"), 1);
  EXPECT_EQ(Sample(port, "zkfleet_worker_devices{state=\"faulted\"}"), 1);
  EXPECT_EQ(Sample(port, "zkfleet_worker_state{state=\"READY\"}"), 1);
  const std::string failures = "zkfleet_worker_proof_verification_failures_total{backend=\"cpu\",circuit=\"c\",device=\"";
  EXPECT_EQ(Sample(port, failures + left + "\"}"), 1);
  EXPECT_EQ(Sample(port, failures + stayed + "\"}"), 0);
  EXPECT_TRUE(worker.running());
  for (const auto& [seq, result] : results) EXPECT_EQ(result.partitions(0).attempts(), 1u) << "job " << seq;
}

TEST(FleetMultiDevice, TheWorkerFaultsOnlyWhenNoDeviceIsLeft) {
  Fleet fleet("multi_device_all_gone", kHeartbeatMs);
  Process& broker = fleet.StartBroker({"--max-attempts", "3"});
  Process& worker = StartWorkerWithFaults(fleet, "w", "device_lost:2", TwoDeviceArgs(FreePort()));
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();
  constexpr int kJobs = 3;
  SubmitBatch(*client, kJobs);
  // A device that failed takes nothing more, so the second injected failure
  // is the other device's: then none is left.
  const auto code = worker.WaitExit(30s);
  ASSERT_TRUE(code.has_value()) << worker.Log();
  EXPECT_EQ(*code, 1) << worker.Log();
  const std::string log = worker.Log();
  const auto first_left = log.find("left the set: fatal device error");
  const auto faulted = log.find("worker FAULTED: no device left (the last, fake");
  EXPECT_NE(first_left, std::string::npos) << log;
  EXPECT_NE(faulted, std::string::npos) << log;
  EXPECT_LT(first_left, faulted) << "one device left first while the worker stayed READY";
  EXPECT_TRUE(broker.WaitForLog("worker w state READY -> FAULTED", 5s)) << broker.Log();

  fleet.StartWorker("good", {"--circuit", std::string(kCircuit) + "=" + Zkey(), "--backend", "cpu", "--threads", "1"});
  const auto results = Collect(*client, kJobs);
  ExpectAllVerify(results, fleet, "good");
}

// --gpus needs the CUDA backend (or the test-only fake devices); a device
// that does not exist is refused before anything starts. Exit 2, naming the
// flag.
TEST(FleetMultiDevice, BadGpusFlagsExitTwoNamingTheFlag) {
  const std::vector<std::string> base = {BinaryPath("zkworker"), "--insecure-plaintext", "--circuit",
                                         std::string(kCircuit) + "=" + Zkey(), "--backend", "cpu"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::string output;
    const int code = RunCommand(argv, &output);
    return std::make_pair(code, output);
  };
  auto [code, output] = run({"--gpus", "all"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("--gpus all: needs the cuda backend"), std::string::npos) << output;
  std::tie(code, output) = run({"--test-fake-devices", "2", "--gpus", "2"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("--gpus 2: device 2 does not exist"), std::string::npos) << output;
  std::tie(code, output) = run({"--test-fake-devices", "2", "--gpus", "0,0"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("--gpus 0,0: device 0 is listed twice"), std::string::npos) << output;
  std::tie(code, output) = run({"--gpus", "0", "--instant"});
  EXPECT_EQ(code, 2) << output;
  EXPECT_NE(output.find("--gpus 0: needs the cuda backend"), std::string::npos) << output;
}

// --msm-tables outside 1..16 is refused before anything starts, naming the
// flag (`timeout`: a worker that took the value would run until killed).
TEST(FleetMultiDevice, MsmTablesOutOfRangeIsRefusedNamingTheFlag) {
  for (const char* copies : {"0", "17", "many"}) {
    std::string output;
    const int code = RunCommand({"timeout", "20", BinaryPath("zkworker"), "--insecure-plaintext", "--circuit",
                                 std::string(kCircuit) + "=" + Zkey(), "--backend", "cpu", "--msm-tables", copies},
                                &output);
    EXPECT_NE(code, 0) << copies << ": " << output;
    EXPECT_NE(code, 124) << "the worker started with --msm-tables " << copies;
    EXPECT_NE(output.find("--msm-tables"), std::string::npos) << output;
  }
}

}  // namespace
}  // namespace fleet_test
