#include "chaos_support.hpp"

#include <optional>

#include <gtest/gtest.h>

namespace fleet_test {
namespace {
namespace proto = zkfleet::proto;
using Clock = std::chrono::steady_clock;
}  // namespace

void RunChaosClient(Fleet& fleet, int index, size_t jobs, size_t window, const std::string& witness,
                    Clock::time_point deadline, std::atomic<size_t>& progress, ClientLog& log) {
  zkfleet::client::internal::BrokerClient client(fleet.context(), fleet.client_endpoint(), fleet.Security(), {},
                                      "chaos-client-" + std::to_string(index));
  std::map<uint64_t, std::string> request_of_correlation;
  std::map<uint64_t, proto::JobResult> early_results;  // job_seq -> a result whose SUBMIT reply is not in yet
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
      // Its result came first (from the broker that leads now, while this
      // reply waited in a paused ex-leader's queue): it counts now.
      if (auto early = early_results.find(seq); early != early_results.end()) {
        if (log.results.emplace(seq, early->second).second) ++progress;
        early_results.erase(early);
      }
    } else if (envelope->has_job_result()) {
      const proto::JobResult& result = envelope->job_result();
      // Results map one-to-one onto this client's requests: a job no SUBMIT
      // reply gave (a second job made of a resent request, or another
      // client's) counts for nothing. One broker sends a job's SUBMIT reply
      // before its result, on the same connection; a client that follows a
      // list of brokers may get the reply later, from another connection:
      // such a result waits for its reply, and one still waiting at the end
      // is the problem.
      if (!log.request_of_job.count(result.job_seq())) {
        if (!early_results.emplace(result.job_seq(), result).second) {
          log.problems.push_back("job " + std::to_string(result.job_seq()) + " was delivered twice");
        }
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
  for (const auto& [seq, result] : early_results) {
    log.problems.push_back("a result for job " + std::to_string(seq) + " (request '" + result.request_id() +
                           "'), which no request of this client was given");
  }
  log.copies_dropped = client.duplicate_results_dropped();
  log.reconnections = client.reconnections();
}

void CheckChaos(Fleet& fleet, const std::vector<ClientLog>& logs, size_t jobs, const std::string& witness,
                ChaosTally* tally, const std::map<std::string, uint64_t>& also_told) {
  const size_t clients = logs.size();
  size_t& delivered = tally->delivered;
  size_t& lost = tally->lost;
  size_t& duplicates = tally->duplicates;
  size_t& copies_dropped = tally->copies_dropped;
  size_t& reconnections = tally->reconnections;
  // Exactly once, all SUCCEEDED, nothing lost: each request sent has one
  // job, and that job's result came back.
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
    // per job waited for at a reconnection, and at most `kChaosWindow` jobs are.
    // A broker that answers every job twice exceeds this at once.
    EXPECT_LE(log.copies_dropped, log.reconnections * kChaosWindow)
        << "client " << c << ": " << log.copies_dropped << " result copies over " << log.reconnections
        << " reconnections";
    for (const auto& [seq, result] : log.results) {
      EXPECT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << "job " << seq << ": " << result.error();
      EXPECT_EQ(result.partitions_size(), 1) << "job " << seq;
    }
  }
  EXPECT_EQ(lost, 0u) << "jobs whose result never came back before the deadline";

  // Every proof verifies with snarkjs (one node process for the batch).
  std::vector<ProofToVerify> proofs;
  for (size_t c = 0; c < clients; ++c) {
    for (const auto& [seq, result] : logs[c].results) {
      if (result.partitions_size() != 1) continue;
      proofs.push_back({std::to_string(seq), Fixture("bn128_k12/verification_key.json"),
                        result.partitions(0).proof_json(), result.partitions(0).public_json()});
    }
  }
  tally->verified = SnarkjsVerifyBatch(proofs, fleet.dir() + "/proofs");

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
  told.insert(also_told.begin(), also_told.end());
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

}

}  // namespace fleet_test
