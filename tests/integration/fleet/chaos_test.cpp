// Chaos: real CPU proofs of the bundled circuit through several workers while
// workers and the broker itself are killed with SIGKILL and started again.
// Every request must come back to its client exactly once, as the result of
// the job its SUBMIT reply named, every proof must verify (snarkjs), a request
// id must never become two jobs (at the client, and in the broker's job
// list), and no client may wait forever (the test has a deadline).
//
// Size (defaults are the CI run; bench/fleet/chaos.sh runs the long one):
//   ZKFLEET_CHAOS_JOBS (500)  ZKFLEET_CHAOS_CLIENTS (4)  ZKFLEET_CHAOS_WORKERS (3)
//   ZKFLEET_CHAOS_BROKER_KILLS (3)  ZKFLEET_CHAOS_WORKER_KILLS (4)
//   ZKFLEET_CHAOS_REPORT: a file to write the summary line to (JSON).
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chaos_support.hpp"
#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

size_t EnvSize(const char* name, size_t fallback) {
  const char* value = std::getenv(name);
  return value && *value ? static_cast<size_t>(std::strtoull(value, nullptr, 10)) : fallback;
}

TEST(FleetChaos, KilledWorkersAndBrokerLoseNothingAndProveNothingTwice) {
  ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
  const size_t jobs = EnvSize("ZKFLEET_CHAOS_JOBS", 500);
  const size_t clients = EnvSize("ZKFLEET_CHAOS_CLIENTS", 4);
  const size_t workers = EnvSize("ZKFLEET_CHAOS_WORKERS", 3);
  const size_t broker_kills = EnvSize("ZKFLEET_CHAOS_BROKER_KILLS", 3);
  const size_t worker_kills = EnvSize("ZKFLEET_CHAOS_WORKER_KILLS", 4);
  const int heartbeat_ms = 200;
  Fleet fleet("chaos", heartbeat_ms);
  // Jobs sent while no worker has registered yet (right after a restart)
  // wait in the queue; attempts are generous: kills are not the jobs' fault.
  // Finished jobs stay listed (--result-ttl, 10 minutes by default) until the
  // idempotency check at the end, however long the run.
  const std::vector<std::string> broker_args = {"--accept-unrouted", "--max-attempts", "50", "--result-ttl", "86400"};
  Process* broker = &fleet.StartBroker(broker_args);
  const std::string zkey = Fixture("bn128_k12/circuit_final.zkey");
  auto worker_args = std::vector<std::string>{"--circuit", "bn128=" + zkey, "--threads", "1", "--capacity", "2"};
  std::vector<Process*> running;
  for (size_t w = 0; w < workers; ++w) running.push_back(&fleet.StartWorker("w" + std::to_string(w), worker_args));
  for (size_t w = 0; w < workers; ++w) fleet.WaitWorkerReady("w" + std::to_string(w), 30s);
  ASSERT_FALSE(::testing::Test::HasFailure());

  const std::string witness = ReadFile(Fixture("bn128_k12/witness.wtns"));
  const auto started = Clock::now();
  // ~0.15 s per proof per worker thread here; the bound is generous and scaled.
  const auto deadline = started + zkfleet::testing::Scaled(std::chrono::seconds(60 + jobs / 4));
  std::atomic<size_t> progress{0};
  std::vector<ClientLog> logs(clients);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < clients; ++c) {
    size_t share = jobs / clients + (c < jobs % clients ? 1 : 0);
    threads.emplace_back(RunChaosClient, std::ref(fleet), static_cast<int>(c), share, kChaosWindow, std::cref(witness), deadline,
                         std::ref(progress), std::ref(logs[c]));
  }

  // Kills at fixed points of progress, so each run has them all whatever the
  // machine's speed: the broker at 15/40/65 %, workers in between.
  size_t broker_killed = 0, worker_killed = 0;
  auto due = [&](size_t done_kills, size_t kills, double first, double last) {
    if (done_kills >= kills) return false;
    double at = kills == 1 ? first : first + (last - first) * static_cast<double>(done_kills) / (kills - 1);
    return static_cast<double>(progress.load()) >= at * static_cast<double>(jobs);
  };
  while (progress.load() < jobs && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    if (due(broker_killed, broker_kills, 0.15, 0.65)) {
      broker->Kill9();
      std::this_thread::sleep_for(200ms);
      broker = &fleet.StartBroker(broker_args);
      ++broker_killed;
    } else if (due(worker_killed, worker_kills, 0.08, 0.80)) {
      size_t w = worker_killed % workers;
      running[w]->Kill9();  // usually mid-proof
      std::this_thread::sleep_for(300ms);
      running[w] = &fleet.StartWorker("w" + std::to_string(w), worker_args);
      ++worker_killed;
    }
  }
  for (auto& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();

  ChaosTally tally;
  CheckChaos(fleet, logs, jobs, witness, &tally);
  const size_t delivered = tally.delivered, lost = tally.lost, duplicates = tally.duplicates, verified = tally.verified;
  const size_t copies_dropped = tally.copies_dropped, reconnections = tally.reconnections;
  EXPECT_EQ(broker_killed, broker_kills);
  EXPECT_EQ(worker_killed, worker_kills);

  auto status = fleet.Status();
  json report = {{"jobs", jobs},
                 {"clients", clients},
                 {"workers", workers},
                 {"broker_kills", broker_killed},
                 {"worker_kills", worker_killed},
                 {"delivered", delivered},
                 {"lost", lost},
                 {"duplicates", duplicates},
                 {"verified", verified},
                 {"client_copies_dropped", copies_dropped},
                 {"client_reconnections", reconnections},
                 {"last_broker_epoch", status.broker_epoch()},
                 {"last_life_jobs_recovered", status.jobs_recovered()},
                 {"seconds", seconds}};
  std::fprintf(stderr, "chaos: %s\n", report.dump().c_str());
  if (const char* path = std::getenv("ZKFLEET_CHAOS_REPORT"); path && *path) {
    std::ofstream(path) << report.dump(2) << '\n';
  }
  EXPECT_EQ(verified, jobs);
  EXPECT_EQ(duplicates, 0u);
}

}  // namespace
}  // namespace fleet_test
