// Drain, redelivery and dead letters with real proofs (CPU backend, one
// thread): a generated bn128 circuit of domain 2^16 whose proof takes over a
// second, so a drain or a kill -9 lands while a proof is running. Every proof
// that comes back is checked by `snarkjs groth16 verify`; every job is
// answered exactly once, at the job_seq it was given.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

constexpr const char* kCircuit = "big";
// Heartbeats every 500 ms (a peer is gone after 1.5 s of silence) rather than
// the harness's 100 ms: these cases keep both cores busy proving, and on a
// loaded 2-core CI machine the processes were seen frozen for ~0.8 s at once
// (broker and worker alike), which 300 ms of tolerance turns into a lost
// worker.
constexpr int kHeartbeatMs = 500;

std::vector<std::string> ProverArgs(const SlowCircuit& circuit, int capacity, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--circuit", std::string(kCircuit) + "=" + circuit.zkey, "--threads", "1",
                                   "--capacity", std::to_string(capacity)};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

zkfleet::client::internal::JobSubmission Request(const std::string& id, const std::string& witness, int partitions = 1) {
  zkfleet::client::internal::JobSubmission job;
  job.request.set_request_id(id);
  job.request.set_circuit_id(kCircuit);
  for (int p = 0; p < partitions; ++p) job.witnesses.push_back(witness);
  return job;
}

// Waits until the broker counts `count` items leased to `worker_id`.
bool WaitInFlight(Fleet& fleet, const std::string& worker_id, uint32_t count, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto status = fleet.Status();  // named: workers() refers into it
    for (const auto& w : status.workers()) {
      if (w.worker_id() == worker_id && w.in_flight() == count) return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Collects `count` results (each job once: a second result for a job, or
// one more result after the last, or a copy the client dropped, is a
// failure), keyed by job_seq.
std::map<uint64_t, proto::JobResult> Collect(zkfleet::client::internal::BrokerClient& client, size_t count,
                                             std::chrono::milliseconds each = 60s) {
  std::map<uint64_t, proto::JobResult> results;
  while (results.size() < count) {
    auto result = client.NextJobResult(each);
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

// Every partition of a SUCCEEDED result verifies with snarkjs.
void ExpectAllProofsVerify(const std::map<uint64_t, proto::JobResult>& results, const SlowCircuit& circuit,
                           const Fleet& fleet) {
  for (const auto& [seq, result] : results) {
    EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << "job " << seq << ": " << result.error();
    EXPECT_GT(result.partitions_size(), 0) << "job " << seq;
    for (const auto& p : result.partitions()) {
      EXPECT_TRUE(SnarkjsVerifies(circuit.vk, p.proof_json(), p.public_json(), fleet.dir()))
          << "job " << seq << " partition " << p.partition() << " from " << p.worker_id();
    }
  }
}

// Job sequence numbers the broker requeued because `worker` handed them back.
std::set<uint64_t> HandedBackBy(const std::string& broker_log, const std::string& worker) {
  std::set<uint64_t> seqs;
  std::regex requeued("requeued job_seq=(\\d+) partition=0 .*handed back by worker " + worker);
  for (auto it = std::sregex_iterator(broker_log.begin(), broker_log.end(), requeued); it != std::sregex_iterator();
       ++it) {
    seqs.insert(std::stoull((*it)[1].str()));
  }
  return seqs;
}

// Seconds the worker log says it spent in DRAINING; -1 when absent.
double DrainingSeconds(const std::string& log) {
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(R"(state DRAINING -> RELEASING \(after ([0-9.]+) s\))"))) return -1;
  return std::stod(m[1].str());
}

// The common drain scenario: "leaving" holds 4 single-partition jobs (1
// proving, 3 queued) when `drain` is called; "staying" starts afterwards.
// The running proof must finish on "leaving" and verify; the 3 queued jobs
// must be handed back unstarted (attempt refunded) and proved by "staying" in
// job_seq order, each once.
template <class Drain>
void DrainWithAProofInFlight(const std::string& name, Drain drain) {
  const SlowCircuit circuit = GetSlowCircuit();
  ASSERT_TRUE(circuit.ok());
  Fleet fleet(name, kHeartbeatMs);
  Process& broker = fleet.StartBroker();
  // --drain-timeout 30: far above one proof, so the running proof is never
  // aborted; a drain that failed to hand back would show as a 30 s abort.
  Process& leaving = fleet.StartWorker("leaving", ProverArgs(circuit, 4, {"--drain-timeout", "30"}));
  fleet.WaitWorkerReady("leaving", 30s);
  ASSERT_FALSE(::testing::Test::HasFailure());

  auto client = fleet.Client();
  const std::string witness = ReadFile(circuit.witness);
  std::vector<uint64_t> seqs;
  for (int j = 0; j < 4; ++j) seqs.push_back(client->Submit(Request(name + "-" + std::to_string(j), witness), 10s).job_seq());
  ASSERT_TRUE(leaving.WaitForLog("processing priority=NORMAL job_seq=" + std::to_string(seqs[0]) + " partition=0", 20s))
      << leaving.Log();
  ASSERT_TRUE(WaitInFlight(fleet, "leaving", 4, 5s)) << "leaving does not hold all 4 jobs";
  // The first proof runs (it takes over a second): drain now.
  ASSERT_EQ(ProcessingLines(leaving.Log()).size(), 1u) << "the first proof ended before the drain";
  drain(fleet, leaving);
  if (::testing::Test::HasFatalFailure()) return;  // an ASSERT in `drain` only left the lambda
  Process& staying = fleet.StartWorker("staying", ProverArgs(circuit, 4));

  auto results = Collect(*client, seqs.size());
  ASSERT_EQ(results.size(), seqs.size());
  auto code = leaving.WaitExit(30s);
  ASSERT_TRUE(code.has_value()) << "leaving did not exit";
  EXPECT_EQ(*code, 0) << leaving.Log();

  // The proof in flight at the drain: finished by "leaving", first attempt.
  const std::string log = leaving.Log();
  const proto::JobResult& in_flight = results[seqs[0]];
  ASSERT_EQ(in_flight.partitions_size(), 1);
  EXPECT_EQ(in_flight.partitions(0).worker_id(), "leaving");
  EXPECT_EQ(in_flight.partitions(0).attempts(), 1u);
  auto lines = ProcessingLines(log);
  ASSERT_EQ(lines.size(), 1u) << "leaving proved more than the running item:\n" << log;
  EXPECT_EQ(lines[0].job_seq, seqs[0]);
  auto drained_at = log.find("-> DRAINING");
  ASSERT_NE(drained_at, std::string::npos) << log;
  EXPECT_LT(log.find("processing priority"), drained_at);
  // It stayed DRAINING while the proof ran (not aborted: no 'aborted' items).
  const double prove_s = in_flight.partitions(0).timings().prove_total_s();
  std::printf("in-flight proof: %.2f s; the worker stayed DRAINING %.2f s\n", prove_s, DrainingSeconds(log));
  EXPECT_GT(prove_s, 0.5) << "the circuit is too small for a proof to be caught in flight reliably";
  EXPECT_GT(DrainingSeconds(log), 0.2) << log;
  EXPECT_EQ(log.find("drain timeout"), std::string::npos) << log;

  // The unstarted jobs: handed back, unstarted, then proved by "staying" at
  // their original job_seq, oldest first, their attempt refunded.
  const std::set<uint64_t> expected(seqs.begin() + 1, seqs.end());
  EXPECT_EQ(HandedBackBy(ReadFile(fleet.dir() + "/broker.log"), "leaving"), expected) << broker.Log();
  int unstarted = 0;
  std::regex handback(R"(handing back (\d+) unstarted and (\d+) aborted)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), handback); it != std::sregex_iterator(); ++it) {
    unstarted += std::stoi((*it)[1].str());
    EXPECT_EQ((*it)[2].str(), "0") << "an item was aborted";
  }
  EXPECT_EQ(unstarted, 3) << log;
  for (uint64_t seq : expected) {
    ASSERT_EQ(results[seq].partitions_size(), 1);
    EXPECT_EQ(results[seq].partitions(0).worker_id(), "staying") << "job " << seq;
    EXPECT_EQ(results[seq].partitions(0).attempts(), 1u) << "job " << seq << ": the handback must refund the attempt";
  }
  std::vector<uint64_t> staying_order;
  for (const auto& p : ProcessingLines(staying.Log())) staying_order.push_back(p.job_seq);
  EXPECT_EQ(staying_order, std::vector<uint64_t>(seqs.begin() + 1, seqs.end()));

  ExpectAllProofsVerify(results, circuit, fleet);
  auto status = fleet.Status();
  EXPECT_EQ(status.jobs_completed(), seqs.size());
  EXPECT_EQ(status.items_handed_back(), 3u);
  EXPECT_EQ(status.items_redelivered(), 3u);  // the three handed back, nothing else
  EXPECT_EQ(broker.Log().find("lease lost"), std::string::npos) << broker.Log();
}

TEST(FleetRealProofs, SigtermDrainFinishesTheRunningProofAndHandsBackTheRest) {
  DrainWithAProofInFlight("real-drain-sigterm", [](Fleet&, Process& leaving) {
    leaving.Signal(SIGTERM);
    ASSERT_TRUE(leaving.WaitForLog("-> DRAINING", 5s)) << leaving.Log();
  });
}

TEST(FleetRealProofs, ZkctlDrainFinishesTheRunningProofAndHandsBackTheRest) {
  DrainWithAProofInFlight("real-drain-zkctl", [](Fleet& fleet, Process& leaving) {
    // --wait returns once the worker has left: after the running proof.
    std::string output;
    auto started = std::chrono::steady_clock::now();
    ASSERT_EQ(fleet.Zkctl({"drain", "leaving", "--wait"}, &output), 0) << output << leaving.Log();
    EXPECT_NE(output.find("DRAINING"), std::string::npos) << output;
    EXPECT_NE(output.find("RELEASING"), std::string::npos) << output;
    EXPECT_GT(std::chrono::steady_clock::now() - started, 200ms) << "the drain did not wait for the proof";
  });
}

// A pipeline of two lanes (--pipeline-depth 2): two items prove at once
// (they start in job_seq order), and a drain lets both finish, hands the
// other two back unstarted, and frees the pool. Every proof verifies.
TEST(FleetRealProofs, TwoLanesProveAtOnceAndADrainLetsBothFinish) {
  const SlowCircuit circuit = GetSlowCircuit();
  ASSERT_TRUE(circuit.ok());
  Fleet fleet("real-two-lanes", kHeartbeatMs);
  fleet.StartBroker();
  Process& leaving =
      fleet.StartWorker("leaving", ProverArgs(circuit, 4, {"--pipeline-depth", "2", "--drain-timeout", "60"}));
  fleet.WaitWorkerReady("leaving", 30s);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ASSERT_TRUE(leaving.WaitForLog("proving pipeline: 2 lanes", 5s)) << leaving.Log();

  auto client = fleet.Client();
  const std::string witness = ReadFile(circuit.witness);
  std::vector<uint64_t> seqs;
  for (int j = 0; j < 4; ++j) seqs.push_back(client->Submit(Request("lanes-" + std::to_string(j), witness), 10s).job_seq());
  ASSERT_TRUE(leaving.WaitForLog("job_seq=" + std::to_string(seqs[1]) + " partition=0", 20s)) << leaving.Log();
  ASSERT_TRUE(WaitInFlight(fleet, "leaving", 4, 5s)) << "leaving does not hold all 4 jobs";
  auto lines = ProcessingLines(leaving.Log());
  ASSERT_EQ(lines.size(), 2u) << "expected two proofs running at once:\n" << leaving.Log();
  EXPECT_EQ(lines[0].job_seq, seqs[0]);
  EXPECT_EQ(lines[1].job_seq, seqs[1]);
  EXPECT_NE(leaving.Log().find("lane=0"), std::string::npos);
  EXPECT_NE(leaving.Log().find("lane=1"), std::string::npos);

  leaving.Signal(SIGTERM);
  ASSERT_TRUE(leaving.WaitForLog("-> DRAINING", 5s)) << leaving.Log();
  fleet.StartWorker("staying", ProverArgs(circuit, 4));
  auto results = Collect(*client, seqs.size());
  ASSERT_EQ(results.size(), seqs.size());
  auto code = leaving.WaitExit(60s);
  ASSERT_TRUE(code.has_value()) << "leaving did not exit";
  EXPECT_EQ(*code, 0) << leaving.Log();
  for (int j = 0; j < 4; ++j) {
    const proto::JobResult& result = results[seqs[j]];
    ASSERT_EQ(result.partitions_size(), 1);
    EXPECT_EQ(result.partitions(0).worker_id(), j < 2 ? "leaving" : "staying") << "job " << j;
    EXPECT_EQ(result.partitions(0).attempts(), 1u) << "job " << j;
  }
  const std::string log = leaving.Log();
  EXPECT_EQ(ProcessingLines(log).size(), 2u) << log;
  EXPECT_EQ(log.find("drain timeout"), std::string::npos) << log;
  EXPECT_NE(log.find("pinned pool released: 0 bytes held"), std::string::npos) << log;
  ExpectAllProofsVerify(results, circuit, fleet);
}

// kill -9 of a worker in the middle of a real proof: the item it was proving
// and the one it held queued are redelivered to another worker (each lease
// counted: attempt 2), at their original job_seq, and the proofs verify.
TEST(FleetRealProofs, WorkerKilledMidProofItsJobsAreRedeliveredAndVerify) {
  const SlowCircuit circuit = GetSlowCircuit();
  ASSERT_TRUE(circuit.ok());
  Fleet fleet("real-kill9", kHeartbeatMs);
  Process& broker = fleet.StartBroker();
  Process& victim = fleet.StartWorker("victim", ProverArgs(circuit, 2));
  fleet.WaitWorkerReady("victim", 30s);
  ASSERT_FALSE(::testing::Test::HasFailure());

  auto client = fleet.Client();
  const std::string witness = ReadFile(circuit.witness);
  std::vector<uint64_t> seqs;
  for (int j = 0; j < 2; ++j) seqs.push_back(client->Submit(Request("kill-" + std::to_string(j), witness), 10s).job_seq());
  ASSERT_TRUE(victim.WaitForLog("processing priority=NORMAL job_seq=" + std::to_string(seqs[0]) + " partition=0", 20s))
      << victim.Log();
  ASSERT_TRUE(WaitInFlight(fleet, "victim", 2, 5s));
  std::this_thread::sleep_for(200ms);  // well into the proof
  victim.Kill9();
  ASSERT_EQ(ProcessingLines(victim.Log()).size(), 1u) << "the victim finished its proof before the kill";
  // The broker notices the silence and requeues both leases.
  ASSERT_TRUE(broker.WaitForLog("worker victim removed", 10s)) << broker.Log();

  Process& rescuer = fleet.StartWorker("rescuer", ProverArgs(circuit, 2));
  auto results = Collect(*client, seqs.size());
  ASSERT_EQ(results.size(), seqs.size()) << rescuer.Log();
  for (uint64_t seq : seqs) {
    const proto::JobResult& result = results[seq];
    ASSERT_EQ(result.partitions_size(), 1) << "job " << seq;
    EXPECT_EQ(result.partitions(0).worker_id(), "rescuer") << "job " << seq;
  }
  // Only a lease the worker had started counts as an attempt.
  EXPECT_EQ(results[seqs[0]].partitions(0).attempts(), 2u) << "job " << seqs[0] << ": the lost started lease counts";
  EXPECT_EQ(results[seqs[1]].partitions(0).attempts(), 1u) << "job " << seqs[1] << ": it never started on the victim";
  std::vector<uint64_t> order;
  for (const auto& p : ProcessingLines(rescuer.Log())) order.push_back(p.job_seq);
  EXPECT_EQ(order, seqs);
  EXPECT_NE(rescuer.Log().find("job_seq=" + std::to_string(seqs[0]) + " partition=0 attempt=2"), std::string::npos)
      << rescuer.Log();
  ExpectAllProofsVerify(results, circuit, fleet);
  auto status = fleet.Status();
  EXPECT_EQ(status.items_redelivered(), 2u);
  EXPECT_EQ(status.items_handed_back(), 0u);
  EXPECT_EQ(status.jobs_completed(), 2u);
  for (size_t j = 0; j < seqs.size(); ++j) {
    EXPECT_NE(broker.Log().find("requeued job_seq=" + std::to_string(seqs[j]) + " partition=0 (started attempts so far " +
                                std::to_string(j == 0 ? 1 : 0) + "): lease lost: worker victim"),
              std::string::npos)
        << broker.Log();
  }
}

// A job whose every lease ends with the worker dying mid-proof is
// dead-lettered after --max-attempts, with the reason, while a job queued
// behind it is still proved (by a healthy worker, proofs verified) and the
// dead job is never handed out again.
TEST(FleetRealProofs, JobThatKillsEveryWorkerIsDeadLetteredAndOthersStillProve) {
  const SlowCircuit circuit = GetSlowCircuit();
  ASSERT_TRUE(circuit.ok());
  Fleet fleet("real-deadletter", kHeartbeatMs);
  Process& broker = fleet.StartBroker({"--max-attempts", "2"});
  auto client = fleet.Client();
  const std::string witness = ReadFile(circuit.witness);

  Process& first = fleet.StartWorker("doomed-1", ProverArgs(circuit, 1));
  fleet.WaitWorkerReady("doomed-1", 30s);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const uint64_t poison = client->Submit(Request("poison", witness), 10s).job_seq();
  const uint64_t good = client->Submit(Request("good", witness, 2), 10s).job_seq();
  const std::string poison_item = "job_seq=" + std::to_string(poison) + " partition=0";

  // Attempt 1 and attempt 2 of the poison item: each worker dies mid-proof.
  ASSERT_TRUE(first.WaitForLog("processing priority=NORMAL " + poison_item + " attempt=1", 20s)) << first.Log();
  std::this_thread::sleep_for(200ms);
  first.Kill9();
  ASSERT_EQ(ProcessingLines(first.Log()).size(), 1u);
  ASSERT_TRUE(broker.WaitForLog("requeued " + poison_item + " \\(started attempts so far 1\\)", 10s)) << broker.Log();
  Process& second = fleet.StartWorker("doomed-2", ProverArgs(circuit, 1));
  ASSERT_TRUE(second.WaitForLog("processing priority=NORMAL " + poison_item + " attempt=2", 30s)) << second.Log();
  std::this_thread::sleep_for(200ms);
  second.Kill9();
  ASSERT_EQ(ProcessingLines(second.Log()).size(), 1u);

  auto dead = client->NextJobResult(10s);
  ASSERT_TRUE(dead.has_value()) << broker.Log();
  EXPECT_EQ(dead->job_seq(), poison);
  EXPECT_EQ(dead->state(), proto::JOB_STATE_DEAD_LETTERED);
  EXPECT_NE(dead->error().find("partition 0 started 2 times (--max-attempts 2)"), std::string::npos)
      << dead->error();
  EXPECT_NE(dead->error().find("lease lost: worker doomed-2"), std::string::npos) << dead->error();

  Process& healthy = fleet.StartWorker("healthy", ProverArgs(circuit, 2));
  auto results = Collect(*client, 1);
  ASSERT_EQ(results.count(good), 1u);
  const proto::JobResult& done = results[good];
  ASSERT_EQ(done.partitions_size(), 2);
  for (const auto& p : done.partitions()) {
    EXPECT_EQ(p.worker_id(), "healthy");
    EXPECT_EQ(p.attempts(), 1u);
  }
  ExpectAllProofsVerify(results, circuit, fleet);
  for (const auto& p : ProcessingLines(healthy.Log())) EXPECT_EQ(p.job_seq, good) << "the dead job was handed out again";
  EXPECT_EQ(ProcessingLines(healthy.Log()).size(), 2u);
  auto status = fleet.Status();
  EXPECT_EQ(status.jobs_dead_lettered(), 1u);
  EXPECT_EQ(status.jobs_completed(), 1u);
  EXPECT_EQ(status.jobs_submitted(), 2u);
}

}  // namespace
}  // namespace fleet_test
