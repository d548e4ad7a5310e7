// Hostile workers' results: forged, replayed, decorated and garbled proofs, and a mix of liars with honest workers.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "zkfleet/engine/snarkjs.hpp"
#include "hostile_test_support.hpp"

namespace fleet_test {
namespace {

// The public signals of a public.json, whitespace aside.
std::string Compact(const std::string& json) {
  std::string out;
  for (char c : json) {
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  }
  return out;
}

// ------------------------------------------------------------------ results

// 1. A forged proof (pi_a altered, right public signals) is rejected by the
// broker; the job waits for an honest worker, whose proof the client gets.
TEST(FleetHostile, ForgedProofNeverReachesTheClient) {
  Fleet fleet("hostile_forge");
  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker(VerifyingBroker());
  Hostiles hostiles(fleet);
  Process& forger = hostiles.Start("forger", "forger", "mallory", "forge",
                                   {"--credit", "4", "--proof", FixtureProof(), "--public", FixturePublic()});
  fleet.WaitWorkerReady("forger");

  auto client = fleet.Client();
  const uint64_t job = SubmitJob(*client, "forged-1");
  // The forger alone: it answers, and the broker rejects the answer.
  ASSERT_TRUE(forger.WaitForLog("sent STARTED and RESULT ok for job_seq=" + std::to_string(job), Scaled(10s)))
      << forger.Log();
  StatusReply status = WaitStatus(fleet, [](const StatusReply& s) { return s.results_rejected() >= 1; });
  ASSERT_GE(status.results_rejected(), 1u) << status.DebugString() << "\n" << broker.Log();
  EXPECT_EQ(status.jobs_completed(), 0u) << status.DebugString();

  StartHonest(fleet, "honest");
  const JobResult result = AwaitResult(*client, job, Scaled(60s));
  ExpectHonestProof(fleet, result, {"honest"});
  EXPECT_NE(result.partitions(0).proof_json(), "") << result.DebugString();
  status = fleet.Status();
  EXPECT_GE(status.results_rejected(), 1u);
  EXPECT_EQ(status.jobs_completed(), 1u);
  // The forger keeps nothing: FAULTED after its strikes, or at least never credited with a result.
  if (const auto* w = FindWorker(status, "forger")) EXPECT_EQ(w->items_completed(), 0u) << status.DebugString();
}

// Sources of a tiny circuit with a public input: two jobs of it have different
// public signals, so the proof of one is a valid proof of the wrong statement
// for the other.
constexpr const char* kTinyCircuit = R"(pragma circom 2.0.0;
template Tiny(n) {
    signal input a;
    signal input b;
    signal output c;
    signal x[n + 1];
    x[0] <== a * b;
    for (var i = 0; i < n; i++) {
        x[i + 1] <== x[i] * x[i] + a;
    }
    c <== x[n];
}
component main {public [a]} = Tiny(8);
)";

// 2. The valid proof of another job (same circuit, other public input) is
// rejected: the broker checks the public signals against the job's witness.
//
// The fixture circuit cannot give a second witness here (its circomlib
// sources and .wasm are not bundled), so this case compiles a tiny circuit
// with circom2, sets it up with zkfleet-dev (insecure, test-only), computes
// two witnesses with snarkjs and proves the first with zkprove.
TEST(FleetHostile, ReplayedProofOfAnotherJobIsRejected) {
  ASSERT_TRUE(zkfleet::testing::RequireCircom2());
  ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
  Fleet fleet("hostile_replay");
  const std::string tiny = fleet.dir() + "/tiny";
  std::filesystem::create_directories(tiny);
  zkfleet::testing::WriteFile(tiny + "/tiny.circom", kTinyCircuit);
  zkfleet::testing::WriteFile(tiny + "/input1.json", R"({"a": "3", "b": "5"})");
  zkfleet::testing::WriteFile(tiny + "/input2.json", R"({"a": "4", "b": "5"})");
  const std::string snarkjs = zkfleet::testing::SnarkjsPath();
  const std::vector<std::vector<std::string>> steps = {
      {zkfleet::testing::Circom2Path(), tiny + "/tiny.circom", "--r1cs", "--wasm", "-o", tiny},
      {BinaryPath("zkfleet-dev"), "setup", tiny + "/tiny.r1cs", tiny + "/tiny.zkey", "--insecure", "--seed", "27"},
      {BinaryPath("zkprove"), "export-vk", tiny + "/tiny.zkey", tiny + "/vk.json"},
      {snarkjs, "wtns", "calculate", tiny + "/tiny_js/tiny.wasm", tiny + "/input1.json", tiny + "/w1.wtns"},
      {snarkjs, "wtns", "calculate", tiny + "/tiny_js/tiny.wasm", tiny + "/input2.json", tiny + "/w2.wtns"},
      {BinaryPath("zkprove"), "--backend", "cpu", tiny + "/tiny.zkey", tiny + "/w1.wtns", tiny + "/proof1.json",
       tiny + "/public1.json"},
  };
  for (const auto& argv : steps) {
    std::string output;
    ASSERT_EQ(RunCommand(argv, &output), 0) << argv[0] << " " << argv[1] << ":\n" << output;
  }
  const std::string vk = tiny + "/vk.json";
  // The replayed proof is a valid proof (of job 1's statement), not of job 2's.
  ASSERT_TRUE(SnarkjsVerifies(vk, ReadFile(tiny + "/proof1.json"), ReadFile(tiny + "/public1.json"), fleet.dir()));

  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker({"--verification-key", "tiny=" + vk});
  Hostiles hostiles(fleet);
  Process& replayer = hostiles.Start("replayer", "replayer", "mallory", "replay",
                                     {"--circuit", "tiny", "--credit", "4", "--proof", tiny + "/proof1.json",
                                      "--public", tiny + "/public1.json"});
  fleet.WaitWorkerReady("replayer");

  auto client = fleet.Client();
  const uint64_t job = SubmitJob(*client, "replayed-2", tiny + "/w2.wtns", "tiny");
  ASSERT_TRUE(replayer.WaitForLog("sent STARTED and RESULT ok for job_seq=" + std::to_string(job), Scaled(10s)))
      << replayer.Log();
  StatusReply status = WaitStatus(fleet, [](const StatusReply& s) { return s.results_rejected() >= 1; });
  ASSERT_GE(status.results_rejected(), 1u) << status.DebugString() << "\n" << broker.Log();
  EXPECT_EQ(status.jobs_completed(), 0u) << status.DebugString();

  fleet.StartWorker("honest", {"--circuit", "tiny=" + tiny + "/tiny.zkey", "--backend", "cpu", "--threads", "1"});
  const JobResult result = AwaitResult(*client, job, Scaled(60s));
  ExpectHonestProof(fleet, result, {"honest"}, vk);
  ASSERT_EQ(result.partitions_size(), 1);
  // Job 2's statement (a = 4), not the replayed one's (a = 3).
  const std::string signals = Compact(result.partitions(0).public_json());
  EXPECT_NE(signals, Compact(ReadFile(tiny + "/public1.json")));
  EXPECT_NE(signals.find("\"4\"]"), std::string::npos) << signals;
}

// 2b. Issue 47, item 3: a worker's valid proof in text a lenient parser
// accepts (a byte-order mark before each file, zero-padded signals) reached
// the client as the worker wrote it: zkctl said SUCCEEDED, snarkjs threw.
// The broker now delivers what it verified, written by itself.
TEST(FleetHostile, AVerifiedProofIsDeliveredAsTheBrokerWritesIt) {
  Fleet fleet("hostile_decorate");
  AddWorkerKey(fleet, "mallory");
  fleet.StartBroker(VerifyingBroker());
  Hostiles hostiles(fleet);
  Process& decorator = hostiles.Start("decorator", "decorator", "mallory", "replay",
                                      {"--credit", "1", "--decorate", "--proof", FixtureProof(), "--public",
                                       FixturePublic()});
  fleet.WaitWorkerReady("decorator");
  auto client = fleet.Client();
  const uint64_t job = SubmitJob(*client, "decorated-1");  // the fixture's witness: the replayed proof is its proof
  const JobResult result = AwaitResult(*client, job, Scaled(30s));
  ASSERT_EQ(result.state(), zkfleet::proto::JOB_STATE_SUCCEEDED) << result.DebugString() << "\n" << decorator.Log();
  ASSERT_EQ(result.partitions_size(), 1);
  const auto& partition = result.partitions(0);
  ASSERT_GE(CountMatches(decorator.Log(), "sent STARTED and RESULT ok"), 1u) << decorator.Log();
  EXPECT_EQ(partition.proof_json().rfind("\xEF\xBB\xBF", 0), std::string::npos);
  EXPECT_EQ(partition.public_json().find("\"000"), std::string::npos) << partition.public_json();
  const zkfleet::engine::ProofPoints points = zkfleet::engine::ReadProofJson(FixtureProof());
  EXPECT_EQ(partition.proof_json(), zkfleet::engine::ProofJson(points, *points.curve));
  EXPECT_EQ(partition.public_json(),
            zkfleet::engine::PublicJson(zkfleet::engine::ReadPublicSignalsJson(FixturePublic())));
  EXPECT_TRUE(SnarkjsVerifies(FixtureVk(), partition.proof_json(), partition.public_json(), fleet.dir()));
}

// 3. A RESULT ok whose proof is not JSON is rejected; an honest worker proves the job.
TEST(FleetHostile, NotJsonResultIsRejected) {
  Fleet fleet("hostile_notjson");
  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker(VerifyingBroker());
  Hostiles hostiles(fleet);
  Process& garbler = hostiles.Start("garbler", "garbler", "mallory", "notjson",
                                    {"--credit", "4", "--public", FixturePublic()});
  fleet.WaitWorkerReady("garbler");

  auto client = fleet.Client();
  const uint64_t job = SubmitJob(*client, "notjson-1");
  ASSERT_TRUE(garbler.WaitForLog("sent STARTED and RESULT ok for job_seq=" + std::to_string(job), Scaled(10s)))
      << garbler.Log();
  StatusReply status = WaitStatus(fleet, [](const StatusReply& s) { return s.results_rejected() >= 1; });
  ASSERT_GE(status.results_rejected(), 1u) << status.DebugString() << "\n" << broker.Log();
  EXPECT_EQ(status.jobs_completed(), 0u) << status.DebugString();

  StartHonest(fleet, "honest");
  const JobResult result = AwaitResult(*client, job, Scaled(60s));
  ExpectHonestProof(fleet, result, {"honest"});
  EXPECT_EQ(fleet.Status().jobs_completed(), 1u);
}

// ------------------------------------------------------------------ mix

// 11. Two honest workers, a forger and a hoarder, 20 jobs: every job
// SUCCEEDED, proved by an honest worker, every proof verifies. The liars
// start alone and the jobs wait for the honest workers until the broker has
// rejected a forged result and leased the hoarder something: the attacks
// happen in every run, not when the broker happens to pick a liar.
TEST(FleetHostile, ChaosMixEveryJobProvedByAnHonestWorker) {
  constexpr int kJobs = 20;
  Fleet fleet("hostile_mix");
  AddWorkerKey(fleet, "mallory");
  AddWorkerKey(fleet, "eve");
  Process& broker = fleet.StartBroker(VerifyingBroker({"--lease-start-timeout", "2"}));
  Hostiles hostiles(fleet);
  Process& forger = hostiles.Start("forger", "forger", "mallory", "forge",
                                   {"--credit", "8", "--proof", FixtureProof(), "--public", FixturePublic()});
  Process& hoarder = hostiles.Start("hoarder", "hoarder", "eve", "hoard", {"--credit", "100000"});
  for (const char* id : {"forger", "hoarder"}) fleet.WaitWorkerReady(id);

  auto client = fleet.Client();
  std::vector<uint64_t> jobs;
  for (int i = 0; i < kJobs; ++i) jobs.push_back(SubmitJob(*client, "mix-" + std::to_string(i)));
  // 20 jobs, more than the forger's 8 credits: the hoarder is leased some at
  // once, or, should the forger's quick answers win them all, each rejected
  // item is leased elsewhere than on the forger: to the hoarder. A forged
  // result is rejected at once, or the forger is leased something once the
  // hoarder's leases come back (2 s).
  bool hoarder_leased = false;
  StatusReply status = WaitStatus(fleet, [&](const StatusReply& s) {
    const auto* w = FindWorker(s, "hoarder");
    hoarder_leased = hoarder_leased || (w != nullptr && w->in_flight() > 0);
    return hoarder_leased && s.results_rejected() >= 1;
  }, 20s);
  ASSERT_TRUE(hoarder_leased) << "the hoarder was never leased a job\n" << status.DebugString() << "\n" << hoarder.Log();
  ASSERT_GE(status.results_rejected(), 1u) << "no forged result was rejected\n"
                                           << status.DebugString() << "\n" << forger.Log() << "\n" << broker.Log();
  EXPECT_EQ(status.jobs_completed(), 0u) << status.DebugString();

  StartHonest(fleet, "honest-1");
  StartHonest(fleet, "honest-2");
  const std::string expected_public = Compact(ReadFile(FixturePublic()));
  std::map<std::string, int> proved_by;
  // 20 k12 proofs on two honest workers, after at most a few rejected
  // results and reclaimed leases (2 s each): 120 s (scaled) for all of them.
  const auto deadline = std::chrono::steady_clock::now() + Scaled(120s);
  for (uint64_t job : jobs) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const JobResult result = AwaitResult(*client, job, std::max(left, 1ms));
    ExpectHonestProof(fleet, result, {"honest-1", "honest-2"});
    if (result.partitions_size() == 1) {
      ++proved_by[result.partitions(0).worker_id()];
      EXPECT_EQ(Compact(result.partitions(0).public_json()), expected_public) << "job " << job;
    }
  }
  status = fleet.Status();
  EXPECT_EQ(status.jobs_completed(), static_cast<uint64_t>(kJobs)) << status.DebugString();
  EXPECT_EQ(status.jobs_failed() + status.jobs_dead_lettered(), 0u) << status.DebugString();
  // Both attacks happened (above), and the broker undid both.
  EXPECT_GE(status.results_rejected(), 1u) << status.DebugString() << "\n" << broker.Log();
  EXPECT_GE(status.leases_reclaimed(), 1u) << status.DebugString() << "\n" << broker.Log();
  if (const auto* w = FindWorker(status, "forger")) EXPECT_EQ(w->items_completed(), 0u) << status.DebugString();
  if (const auto* w = FindWorker(status, "hoarder")) EXPECT_EQ(w->items_completed(), 0u) << status.DebugString();
  std::string summary;
  for (const auto& [id, n] : proved_by) summary += id + "=" + std::to_string(n) + " ";
  std::printf("proved by: %s; results rejected %llu, leases reclaimed %llu\n", summary.c_str(),
              static_cast<unsigned long long>(status.results_rejected()),
              static_cast<unsigned long long>(status.leases_reclaimed()));
}

}  // namespace
}  // namespace fleet_test
