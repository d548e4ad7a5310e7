// The clients and the end checks of the chaos tests (chaos_test.cpp, and
// the etcd journal's in tests/integration/etcd): clients that submit real
// proofs of the bundled bn128 circuit and record what they were told, and
// the checks that every request came back once, as the job its SUBMIT reply
// named, that every proof verifies (snarkjs), and that the broker holds one
// job per request id.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fleet_harness.hpp"

namespace fleet_test {

// What one client saw.
struct ClientLog {
  std::vector<std::string> requests;                 // request ids sent, in order
  std::map<std::string, uint64_t> job_of_request;   // request id -> job_seq (from SUBMIT replies)
  std::map<uint64_t, std::string> request_of_job;   // the same, inverted
  std::map<uint64_t, zkfleet::proto::JobResult> results;  // job_seq -> the one result delivered
  std::vector<std::string> problems;                 // anything that must not happen
  uint64_t copies_dropped = 0;                       // JobResult copies the client library dropped
  uint64_t reconnections = 0;
};

// Jobs each client has submitted and not yet received the result of, at most.
constexpr size_t kChaosWindow = 8;

// Submits `jobs` jobs of circuit "bn128" with at most `window` outstanding and
// collects results, until all came back or `deadline`. Resubmission after a
// broker restart is the client library's job (BrokerClient resends
// unanswered SUBMITs and re-AWAITs what it waits for); this loop only sends
// each request once.
void RunChaosClient(Fleet& fleet, int index, size_t jobs, size_t window, const std::string& witness,
                    std::chrono::steady_clock::time_point deadline, std::atomic<size_t>& progress, ClientLog& log);

// The end of a chaos run: what the clients saw, checked (gtest failures for
// every violation), and counted into `tally` (as far as the checks got: a
// fatal one returns early). `also_told`: requests sent outside the clients'
// logs and the job_seq each was answered with; the broker must hold exactly
// those jobs for them too.
struct ChaosTally {
  size_t delivered = 0, lost = 0, duplicates = 0, verified = 0, copies_dropped = 0, reconnections = 0;
};
void CheckChaos(Fleet& fleet, const std::vector<ClientLog>& logs, size_t jobs, const std::string& witness,
                ChaosTally* tally, const std::map<std::string, uint64_t>& also_told = {});

}  // namespace fleet_test
