// The hostile worker tests (hostile_*_test.cpp): workers holding a valid
// CURVE key that lie (issue 27), against the real broker:
// tests/tools/hostile_worker forges, replays or garbles results, hoards
// credit, undrains itself, takes another worker's id or runs twice;
// a key is revoked under it. Each case fails if the broker takes a worker's
// word: the broker verifies each RESULT against the circuit's verification
// key (--verification-key) and the job's public signals, caps credit,
// reclaims leases never started, binds a worker id to its key, holds
// DRAINING/FAULTED itself and cuts a revoked key off. Honest workers are
// real zkworkers proving the bundled bn128_k12 circuit on the CPU; every
// proof a client gets is checked with snarkjs (not with the engine's
// verifier, which is the broker's).
//
// Timing: the fleets heartbeat every 100 ms (500 ms where a test needs a
// slow broker heartbeat); every wait is generous and stretched by
// ZKFLEET_TEST_TIME_SCALE (sanitizer builds); nothing asserts speed.
//
// Here: the bundled circuit's fixtures, the verifying broker, honest and
// hostile workers, and the waits and checks the tests share.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iterator>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fleet_harness.hpp"

namespace fleet_test {

using zkfleet::proto::JobResult;
using zkfleet::proto::StatusReply;
using zkfleet::testing::Scaled;

inline constexpr const char* kCircuit = "k12";

inline std::string FixtureZkey() { return Fixture("bn128_k12/circuit_final.zkey"); }
inline std::string FixtureVk() { return Fixture("bn128_k12/verification_key.json"); }
inline std::string FixtureWitness() { return Fixture("bn128_k12/witness.wtns"); }
inline std::string FixtureProof() { return Fixture("bn128_k12/proof.json"); }
inline std::string FixturePublic() { return Fixture("bn128_k12/public.json"); }

// The broker verifies every k12 RESULT.
inline std::vector<std::string> VerifyingBroker(std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--verification-key", std::string(kCircuit) + "=" + FixtureVk()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// An honest zkworker proving k12 on the CPU (key "fleet-worker").
inline Process& StartHonest(Fleet& fleet, const std::string& id) {
  return fleet.StartWorker(id, {"--circuit", std::string(kCircuit) + "=" + FixtureZkey(), "--backend", "cpu",
                                "--threads", "1"});
}

// Hostile workers use their own keys (AddWorkerKey): a key whose worker is
// FAULTED is FAULTED too, and the honest workers share "fleet-worker".

// hostile_worker processes of one test, killed before the Fleet goes
// (declare after it). Logs in the fleet's directory: hostile-<name>.log.
class Hostiles {
 public:
  explicit Hostiles(Fleet& fleet) : fleet_(fleet) {}

  Process& Start(const std::string& log_name, const std::string& id, const std::string& key,
                 const std::string& mode, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {ZKFLEET_HOSTILE_WORKER,
                                     "--broker", fleet_.worker_endpoint(),
                                     "--curve-secret-key", fleet_.SecretKeyFile(key),
                                     "--broker-public-key", fleet_.broker_public_key(),
                                     "--id", id,
                                     "--mode", mode};
    auto named = [&](const char* flag) { return std::find(extra.begin(), extra.end(), flag) != extra.end(); };
    if (!named("--circuit")) argv.insert(argv.end(), {"--circuit", kCircuit});
    if (!named("--heartbeat-ms")) argv.insert(argv.end(), {"--heartbeat-ms", std::to_string(fleet_.heartbeat_ms())});
    argv.insert(argv.end(), extra.begin(), extra.end());
    processes_.push_back(std::make_unique<Process>(argv, fleet_.dir() + "/hostile-" + log_name + ".log"));
    return *processes_.back();
  }

 private:
  Fleet& fleet_;
  std::vector<std::unique_ptr<Process>> processes_;
};

inline const zkfleet::proto::WorkerInfo* FindWorker(const StatusReply& status, const std::string& worker_id) {
  for (const auto& w : status.workers()) {
    if (w.worker_id() == worker_id) return &w;
  }
  return nullptr;
}

inline bool HasState(const StatusReply& status, const std::string& worker_id, zkfleet::proto::WorkerState state) {
  const auto* w = FindWorker(status, worker_id);
  return w != nullptr && w->state() == state;
}

// Polls the broker until `done` holds; the last status either way.
inline StatusReply WaitStatus(Fleet& fleet, const std::function<bool(const StatusReply&)>& done,
                       std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  StatusReply status = fleet.Status();
  while (!done(status) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    status = fleet.Status();
  }
  return status;
}

inline size_t CountMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

inline uint64_t SubmitJob(zkfleet::client::internal::BrokerClient& client, const std::string& request_id,
                   const std::string& witness_path = FixtureWitness(), const std::string& circuit = kCircuit) {
  zkfleet::proto::SubmitRequest request;
  request.set_circuit_id(circuit);
  request.set_request_id(request_id);
  const auto reply = client.Submit(request, std::vector<std::string>{ReadFile(witness_path)}, Scaled(20s));
  return reply.job_seq();
}

// The result the broker pushes for a job `client` submitted; a test failure
// (not an exception: the fleet's logs are kept for a failed test) when none
// comes within `timeout`. (Not Await(): its reply is dropped as a copy when
// the pushed result has already arrived.)
inline JobResult AwaitResult(zkfleet::client::internal::BrokerClient& client, uint64_t job,
                             std::chrono::milliseconds timeout) {
  try {
    if (auto result = client.NextJobResult(job, timeout)) return *result;
    ADD_FAILURE() << "job " << job << ": no result within " << timeout.count() << " ms";
  } catch (const zkfleet::Error& e) {
    ADD_FAILURE() << "job " << job << ": " << e.what();
  }
  return {};
}

// A SUCCEEDED one-partition result proved by one of `honest`, whose proof
// verifies against `vk` with snarkjs: the broker let it through with its own
// verifier (the engine's, as zkverify's), so only an independent one can
// catch a bug that lets a bad proof through there.
inline void ExpectHonestProof(Fleet& fleet, const JobResult& result, const std::set<std::string>& honest,
                       const std::string& vk = FixtureVk()) {
  ASSERT_EQ(result.state(), zkfleet::proto::JOB_STATE_SUCCEEDED) << result.DebugString();
  ASSERT_EQ(result.partitions_size(), 1) << result.DebugString();
  const auto& partition = result.partitions(0);
  EXPECT_TRUE(honest.count(partition.worker_id())) << "job " << result.job_seq() << " proved by '"
                                                   << partition.worker_id() << "'";
  EXPECT_TRUE(SnarkjsVerifies(vk, partition.proof_json(), partition.public_json(), fleet.dir()))
      << "job " << result.job_seq();
}

}  // namespace fleet_test
