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

// What one client saw.
struct ClientLog {
  std::vector<std::string> requests;                 // request ids sent, in order
  std::map<std::string, uint64_t> job_of_request;   // request id -> job_seq (from SUBMIT replies)
  std::map<uint64_t, std::string> request_of_job;   // the same, inverted
  std::map<uint64_t, proto::JobResult> results;      // job_seq -> the one result delivered
  std::vector<std::string> problems;                 // anything that must not happen
  uint64_t copies_dropped = 0;                       // JobResult copies the client library dropped
  uint64_t reconnections = 0;
};

// Jobs each client has submitted and not yet received the result of, at most.
constexpr size_t kWindow = 8;

// Submits `jobs` jobs with at most `window` outstanding and collects results,
// until all came back or `deadline`. Resubmission after a broker restart is
// the client library's job (BrokerClient resends unanswered SUBMITs and
// re-AWAITs what it waits for); this loop only sends each request once.
void RunClient(Fleet& fleet, int index, size_t jobs, size_t window, const std::string& witness,
               Clock::time_point deadline, std::atomic<size_t>& progress, ClientLog& log) {
  zkfleet::client::internal::BrokerClient client(fleet.context(), fleet.client_endpoint(), fleet.Security(), {},
                                      "chaos-client-" + std::to_string(index));
  std::map<uint64_t, std::string> request_of_correlation;
  size_t next = 0;
  while (log.results.size() < jobs && Clock::now() < deadline) {
    while (next < jobs && next - log.results.size() < window) {
      proto::Envelope envelope;
      auto* submit = envelope.mutable_submit();
      const std::string request_id = "c" + std::to_string(index) + "-" + std::to_string(next++);
      log.requests.push_back(request_id);
      submit->set_request_id(request_id);
      submit->set_circuit_id("bn128");
      submit->add_witness_bytes(witness.size());
      zkfleet::fleet::Frames frames;
      frames.push_back(zkfleet::fleet::FrameFromString(witness));
      request_of_correlation[client.Send(std::move(envelope), std::move(frames))] = request_id;
    }
    auto envelope = client.Receive(100ms);
    if (!envelope) continue;
    if (envelope->has_submit_reply()) {
      auto it = request_of_correlation.find(envelope->correlation_id());
      if (it == request_of_correlation.end()) continue;
      uint64_t seq = envelope->submit_reply().job_seq();
      auto [known, fresh] = log.job_of_request.emplace(it->second, seq);
      if (!fresh && known->second != seq) {
        log.problems.push_back("request " + it->second + " became two jobs: " + std::to_string(known->second) +
                               " and " + std::to_string(seq));
      }
      auto [owner, first] = log.request_of_job.emplace(seq, it->second);
      if (!first && owner->second != it->second) {
        log.problems.push_back("job " + std::to_string(seq) + " was given to two requests: " + owner->second +
                               " and " + it->second);
      }
    } else if (envelope->has_job_result()) {
      const proto::JobResult& result = envelope->job_result();
      // Results map one-to-one onto this client's requests: a job no SUBMIT
      // reply gave (a second job made of a resent request, or another
      // client's) counts for nothing. The broker sends a job's SUBMIT reply
      // before its result, on the same connection.
      if (!log.request_of_job.count(result.job_seq())) {
        log.problems.push_back("a result for job " + std::to_string(result.job_seq()) + " (request '" +
                               result.request_id() + "'), which no request of this client was given");
        continue;
      }
      if (!log.results.emplace(result.job_seq(), result).second) {
        log.problems.push_back("job " + std::to_string(result.job_seq()) + " was delivered twice");
        continue;
      }
      ++progress;
    } else if (envelope->has_error()) {
      log.problems.push_back("broker error: " + envelope->error().message());
    }
  }
  log.copies_dropped = client.duplicate_results_dropped();
  log.reconnections = client.reconnections();
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
    threads.emplace_back(RunClient, std::ref(fleet), static_cast<int>(c), share, kWindow, std::cref(witness), deadline,
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

  // Exactly once, all SUCCEEDED, nothing lost: each request sent has one
  // job, and that job's result came back.
  size_t delivered = 0, lost = 0, duplicates = 0, copies_dropped = 0, reconnections = 0;
  for (size_t c = 0; c < clients; ++c) {
    const ClientLog& log = logs[c];
    for (const auto& problem : log.problems) {
      ADD_FAILURE() << "client " << c << ": " << problem;
      if (problem.find("twice") != std::string::npos || problem.find("two ") != std::string::npos ||
          problem.find("no request") != std::string::npos) {
        ++duplicates;
      }
    }
    size_t share = jobs / clients + (c < jobs % clients ? 1 : 0);
    size_t answered = 0;
    for (const std::string& request : log.requests) {
      auto job = log.job_of_request.find(request);
      if (job != log.job_of_request.end() && log.results.count(job->second)) ++answered;
    }
    lost += share - std::min(share, answered);
    delivered += log.results.size();
    copies_dropped += log.copies_dropped;
    reconnections += log.reconnections;
    // Result copies the client dropped: tolerated only because the broker was
    // restarted. On each reconnection the client re-AWAITs every job it still
    // waits for (and resends each SUBMIT still unanswered); the new broker
    // answers that wait even when the old one's result was already on its way
    // (sent before the kill, read after the reconnection): one copy at most
    // per job waited for at a reconnection, and at most `kWindow` jobs are.
    // A broker that answers every job twice exceeds this at once.
    EXPECT_LE(log.copies_dropped, log.reconnections * kWindow)
        << "client " << c << ": " << log.copies_dropped << " result copies over " << log.reconnections
        << " reconnections";
    for (const auto& [seq, result] : log.results) {
      EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << "job " << seq << ": " << result.error();
      EXPECT_EQ(result.partitions_size(), 1) << "job " << seq;
    }
  }
  EXPECT_EQ(lost, 0u) << "jobs whose result never came back before the deadline";
  EXPECT_EQ(broker_killed, broker_kills);
  EXPECT_EQ(worker_killed, worker_kills);

  // Every proof verifies with snarkjs (one node process for the batch).
  json cases = json::array();
  const std::string proofs_dir = fleet.dir() + "/proofs";
  std::filesystem::create_directories(proofs_dir);
  for (size_t c = 0; c < clients; ++c) {
    for (const auto& [seq, result] : logs[c].results) {
      if (result.partitions_size() != 1) continue;
      const std::string base = proofs_dir + "/" + std::to_string(seq);
      zkfleet::testing::WriteFile(base + ".proof.json", result.partitions(0).proof_json());
      zkfleet::testing::WriteFile(base + ".public.json", result.partitions(0).public_json());
      cases.push_back({{"vk", Fixture("bn128_k12/verification_key.json")},
                       {"public", base + ".public.json"},
                       {"proof", base + ".proof.json"}});
    }
  }
  zkfleet::testing::WriteFile(fleet.dir() + "/cases.json", cases.dump());
  auto run = zkfleet::testing::RunCommand(
      "node " + zkfleet::testing::Quote(std::string(ZKFLEET_SOURCE_DIR) + "/tests/tools/snarkjs_verify_batch.mjs") +
      " " + zkfleet::testing::Quote(fleet.dir() + "/cases.json") + " " +
      zkfleet::testing::Quote(fleet.dir() + "/verdicts.json"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  json verdicts = json::parse(ReadFile(fleet.dir() + "/verdicts.json"));
  ASSERT_EQ(verdicts.size(), cases.size());
  size_t verified = 0;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i]["ok"].get<bool>()) {
      ++verified;
    } else {
      ADD_FAILURE() << cases[i]["proof"] << " does not verify: " << verdicts[i]["error"];
    }
  }

  // A SUBMIT resent after its reply was lost (here: sent again on purpose,
  // from each client's identity, for requests answered in earlier broker
  // lives and in this one) names the job it made the first time: never a
  // second job. Without this step the check below sees only the resends the
  // kills happened to cause, often none.
  for (size_t c = 0; c < clients; ++c) {
    const ClientLog& log = logs[c];
    if (log.requests.empty()) continue;
    zkfleet::client::internal::BrokerClient again(fleet.context(), fleet.client_endpoint(), fleet.Security(), {},
                                                  "chaos-client-" + std::to_string(c));
    const size_t n = log.requests.size();
    for (size_t i : {size_t{0}, n / 3, 2 * n / 3, n - 1}) {
      const std::string& request_id = log.requests[i];
      auto told = log.job_of_request.find(request_id);
      if (told == log.job_of_request.end()) continue;  // counted as lost above
      proto::Envelope envelope;
      auto* submit = envelope.mutable_submit();
      submit->set_request_id(request_id);
      submit->set_circuit_id("bn128");
      submit->add_witness_bytes(witness.size());
      zkfleet::fleet::Frames frames;
      frames.push_back(zkfleet::fleet::FrameFromString(witness));
      const uint64_t correlation = again.Send(std::move(envelope), std::move(frames));
      std::optional<uint64_t> named;
      for (const auto until = Clock::now() + zkfleet::testing::Scaled(10s); !named && Clock::now() < until;) {
        auto reply = again.Receive(100ms);
        if (reply && reply->correlation_id() == correlation && reply->has_submit_reply()) {
          named = reply->submit_reply().job_seq();
        }
      }
      ASSERT_TRUE(named.has_value()) << "client " << c << ": no reply to the resent SUBMIT of " << request_id;
      if (*named != told->second) ++duplicates;
      EXPECT_EQ(*named, told->second) << "client " << c << ": the resent SUBMIT of " << request_id
                                      << " made another job";
    }
  }

  // The broker's side of idempotency: one job per request id, the one its
  // client was told. A resent SUBMIT that became a second job shows here even
  // when that job's result never reached the client (a job made in a life
  // whose reply was lost has no waiter left after the restart).
  std::map<std::string, uint64_t> told;  // request id -> job_seq, every client
  for (const ClientLog& log : logs) told.insert(log.job_of_request.begin(), log.job_of_request.end());
  std::map<std::string, std::vector<uint64_t>> held;  // request id -> the broker's jobs
  {
    auto lister = fleet.Client();
    proto::ListJobsRequest list;
    list.set_page_size(1000);
    do {
      const auto page = lister->ListJobs(list, 10s);
      for (const auto& job : page.jobs()) held[job.request_id()].push_back(job.job_seq());
      list.set_page_token(page.next_page_token());
    } while (!list.page_token().empty());
  }
  for (const auto& [request, seqs] : held) {
    auto it = told.find(request);
    if (seqs.size() != 1 || it == told.end() || it->second != seqs.front()) {
      ++duplicates;
      std::string listed;
      for (uint64_t seq : seqs) listed += " " + std::to_string(seq);
      ADD_FAILURE() << "request " << request << ": the broker holds " << seqs.size() << " job(s):" << listed
                    << "; its client was told " << (it == told.end() ? std::string("nothing") : std::to_string(it->second));
    }
  }
  EXPECT_EQ(held.size(), told.size()) << "requests the broker holds a job for vs. requests answered";

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
