// Issue 6 acceptance: 3 workers, 4 clients, 500 jobs; the processing order.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "fleet_harness.hpp"
#include "zkfleet/wire/names.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

const proto::Priority kPriorities[] = {proto::PRIORITY_LOW, proto::PRIORITY_NORMAL, proto::PRIORITY_HIGH,
                                       proto::PRIORITY_CRITICAL};

// 3 workers hold two real circuits and one benchmark circuit. Most of the 500
// jobs use the benchmark circuit (answered at once), 8 use a real one (16
// proofs); a sample of the real proofs is checked with snarkjs.
TEST(FleetEndToEnd, FiveHundredJobsFourClientsThreeWorkers) {
  Fleet fleet("e2e");
  fleet.StartBroker();
  const std::string bn_zkey = Fixture("bn128_k12/circuit_final.zkey");
  const std::string bls_zkey = Fixture("bls12381_k12/circuit_final.zkey");
  for (const char* id : {"w1", "w2", "w3"}) {
    fleet.StartWorker(id, {"--circuit", "bn128=" + bn_zkey, "--circuit", "bls=" + bls_zkey, "--instant-circuit",
                           "bench", "--threads", "1", "--capacity", "8"});
  }
  for (const char* id : {"w1", "w2", "w3"}) fleet.WaitWorkerReady(id);

  const std::string bn_witness = ReadFile(Fixture("bn128_k12/witness.wtns"));
  const std::string bls_witness = ReadFile(Fixture("bls12381_k12/witness.wtns"));
  constexpr int kClients = 4;
  constexpr int kJobsPerClient = 125;

  struct Sample {
    std::string circuit;
    proto::PartitionResult partition;
  };
  std::mutex mutex;
  std::vector<Sample> samples;
  std::vector<std::string> failures;
  size_t total_items = 0;

  auto client_main = [&](int c) {
    auto client = fleet.Client();
    std::map<uint64_t, int> expected_partitions;  // job_seq -> partitions
    std::map<uint64_t, std::string> circuit_of;
    std::map<uint64_t, int> received;
    size_t items = 0;
    // Submit everything first (the broker queues by priority), then collect.
    for (int j = 0; j < kJobsPerClient; ++j) {
      proto::SubmitRequest request;
      std::vector<std::string> witnesses;
      request.set_request_id("c" + std::to_string(c) + "-j" + std::to_string(j));
      request.set_priority(kPriorities[(j + c) % 4]);
      int partitions = 1 + (j % 3);  // real jobs (j = 7, 57) get 2
      std::string circuit = "bench";
      std::string witness = "tiny-benchmark-witness";
      if (j % 50 == 7 && j < 100) {  // 2 real jobs per client: 8 real proofs
        circuit = (j / 50 + c) % 2 == 0 ? "bn128" : "bls";
        witness = circuit == "bn128" ? bn_witness : bls_witness;
      }
      request.set_circuit_id(circuit);
      for (int p = 0; p < partitions; ++p) witnesses.push_back(witness);
      auto reply = client->Submit(request, witnesses, 10s);
      expected_partitions[reply.job_seq()] = partitions;
      circuit_of[reply.job_seq()] = circuit;
      items += partitions;
    }
    while (received.size() < expected_partitions.size()) {
      auto result = client->NextJobResult(60s);
      if (!result) break;
      ++received[result->job_seq()];
      std::lock_guard lock(mutex);
      if (!expected_partitions.count(result->job_seq())) {
        failures.push_back("client " + std::to_string(c) + " got a result for a job it did not submit");
      } else if (result->state() != proto::JOB_STATE_SUCCEEDED) {
        failures.push_back("job " + std::to_string(result->job_seq()) + " ended " +
                           zkfleet::wire::JobStateName(result->state()) + ": " + result->error());
      } else if (result->partitions_size() != expected_partitions[result->job_seq()]) {
        failures.push_back("job " + std::to_string(result->job_seq()) + " has the wrong partition count");
      } else if (circuit_of[result->job_seq()] != "bench" && samples.size() < 4) {
        samples.push_back({circuit_of[result->job_seq()], result->partitions(result->partitions_size() - 1)});
      }
    }
    // Nothing more may arrive: every result exactly once.
    if (auto extra = client->NextJobResult(300ms)) {
      std::lock_guard lock(mutex);
      failures.push_back("client " + std::to_string(c) + " got job " + std::to_string(extra->job_seq()) + " again");
    }
    // A copy of a result never reaches `received` (the client drops it), and
    // with the broker running throughout there is none to drop.
    if (const uint64_t copies = client->duplicate_results_dropped(); copies != 0) {
      std::lock_guard lock(mutex);
      failures.push_back("client " + std::to_string(c) + " was sent " + std::to_string(copies) +
                         " result copies (dropped by the client)");
    }
    std::lock_guard lock(mutex);
    total_items += items;
    for (const auto& [seq, count] : received) {
      if (count != 1) failures.push_back("job " + std::to_string(seq) + " answered " + std::to_string(count) + " times");
    }
    if (received.size() != expected_partitions.size()) {
      failures.push_back("client " + std::to_string(c) + " received " + std::to_string(received.size()) + " of " +
                         std::to_string(expected_partitions.size()) + " results");
    }
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) clients.emplace_back(client_main, c);
  for (auto& t : clients) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;

  auto status = fleet.Status();
  EXPECT_EQ(status.jobs_submitted(), 500u);
  EXPECT_EQ(status.jobs_completed(), 500u);
  EXPECT_EQ(status.items_redelivered(), 0u);
  // Every item was proved exactly once, fleet-wide.
  size_t processed = 0;
  std::set<std::pair<uint64_t, uint32_t>> seen;
  for (const char* id : {"w1", "w2", "w3"}) {
    for (const auto& p : ProcessingLines(ReadFile(fleet.dir() + "/" + id + ".log"))) {
      ++processed;
      EXPECT_TRUE(seen.insert({p.job_seq, p.partition}).second) << "proved twice: " << p.job_seq << "/" << p.partition;
    }
  }
  EXPECT_EQ(processed, total_items);

  ASSERT_EQ(samples.size(), 4u);
  for (const auto& sample : samples) {
    std::string vk = Fixture((sample.circuit == "bn128" ? "bn128_k12" : "bls12381_k12") +
                             std::string("/verification_key.json"));
    EXPECT_TRUE(SnarkjsVerifies(vk, sample.partition.proof_json(), sample.partition.public_json(), fleet.dir()))
        << sample.circuit;
  }
}

// One worker whose queue fills before its dispatcher starts: it must prove in
// (priority desc, job_seq, partition) order, although the jobs arrive in
// submission order (it has credit for all of them, so the broker forwards each
// at once).
TEST(FleetEndToEnd, WorkerProcessesItsQueueInKeyOrder) {
  Fleet fleet("order");
  fleet.StartBroker({"--max-credit-per-worker", "64"});  // the whole batch in the worker's queue at once
  Process& worker =
      fleet.StartWorker("solo", {"--instant", "--circuit", "c1", "--capacity", "64", "--dispatch-start-delay-ms", "2500"});
  fleet.WaitWorkerReady("solo");
  auto client = fleet.Client();
  const proto::Priority order[] = {proto::PRIORITY_LOW,      proto::PRIORITY_NORMAL, proto::PRIORITY_LOW,
                                   proto::PRIORITY_CRITICAL, proto::PRIORITY_HIGH,   proto::PRIORITY_NORMAL,
                                   proto::PRIORITY_CRITICAL, proto::PRIORITY_LOW,    proto::PRIORITY_HIGH,
                                   proto::PRIORITY_NORMAL,   proto::PRIORITY_HIGH,   proto::PRIORITY_CRITICAL};
  size_t items = 0;
  for (size_t j = 0; j < std::size(order); ++j) {
    proto::SubmitRequest request;
    std::vector<std::string> witnesses;
    request.set_request_id("order-" + std::to_string(j));
    request.set_circuit_id("c1");
    request.set_priority(order[j]);
    int partitions = 1 + j % 3;
    for (int p = 0; p < partitions; ++p) witnesses.push_back("w");
    client->Submit(request, witnesses, 5s);
    items += partitions;
  }
  for (size_t j = 0; j < std::size(order); ++j) {
    auto result = client->NextJobResult(20s);
    ASSERT_TRUE(result) << "missing results";
    EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED);
  }
  ExpectNoResultCopies(*client, 300ms);
  auto lines = ProcessingLines(worker.Log());
  ASSERT_EQ(lines.size(), items);
  auto rank = [](const std::string& name) { return *zkfleet::wire::ParsePriority(name); };
  for (size_t i = 1; i < lines.size(); ++i) {
    auto key = [&](const Processed& p) { return std::make_tuple(-rank(p.priority), p.job_seq, p.partition); };
    EXPECT_LT(key(lines[i - 1]), key(lines[i])) << "line " << i << ": " << lines[i - 1].priority << " "
                                                << lines[i - 1].job_seq << "/" << lines[i - 1].partition << " before "
                                                << lines[i].priority << " " << lines[i].job_seq << "/"
                                                << lines[i].partition;
  }
  // The first item proved is the oldest CRITICAL job, not the first submitted.
  EXPECT_EQ(lines.front().priority, "CRITICAL");
  EXPECT_EQ(lines.front().job_seq, 4u);
}

}  // namespace
}  // namespace fleet_test
