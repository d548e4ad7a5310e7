// Brokers on an etcd journal (issue 48), as processes: a standby takes over
// from a leader killed with -9 and every acknowledged job is delivered once;
// a leader paused past its lease is fenced when it resumes (it writes and
// answers nothing, and exits 75 to be restarted as a standby).
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>

#include "fleet_harness.hpp"
#include "testutil/etcd_cluster.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;
using zkfleet::testing::EtcdCluster;

zkfleet::client::internal::JobSubmission Job(const std::string& id) {
  zkfleet::client::internal::JobSubmission job;
  job.request.set_request_id(id);
  job.request.set_circuit_id("c1");
  job.witnesses.push_back("instant witness " + id);
  return job;
}

std::unique_ptr<EtcdCluster> StartCluster(const std::string& name) {
  auto cluster = std::make_unique<EtcdCluster>(std::filesystem::current_path().string() + "/etcd-" + name + "-" +
                                               std::to_string(getpid()));
  std::string why;
  EXPECT_TRUE(cluster->Start(30s, &why)) << why;
  return cluster;
}

// How many job records etcd holds under `prefix`.
int EtcdJobs(const EtcdCluster& cluster, const std::string& prefix) {
  return zkfleet::testing::CountKeys(cluster, prefix + "journal/jobs/");
}

// ZKFLEET_ETCD_KILLS (default 2) rounds of: 15 jobs acknowledged, kill -9 of
// the leader, the time until the next SUBMIT is acknowledged (by the
// standby, now leading), the killed broker started again as a standby.
// bench/fleet/etcd_failover.sh runs it with 20 kills and prints the times.
TEST(EtcdBrokers, AStandbyTakesOverFromAKilledLeaderAndEveryAcknowledgedJobIsDeliveredOnce) {
  if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
  const char* kills_env = std::getenv("ZKFLEET_ETCD_KILLS");
  const int kills = kills_env ? std::max(1, std::atoi(kills_env)) : 2;
  auto cluster = StartCluster("failover");
  Fleet fleet("etcd-failover");
  // Both brokers on the fleet's ports: only the leader binds them, so
  // workers and clients reconnect to whichever leads (as behind a
  // leader-aware Service or a floating address).
  const std::vector<std::string> args = {"--journal", cluster->Url("fleet/"), "--etcd-lease-ttl", "2"};
  Process* leader = &fleet.StartBroker(args);
  Process* standby = &fleet.LaunchBroker(args);
  ASSERT_TRUE(standby->WaitForLog("standing by", 15s)) << standby->Log();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1", "--capacity", "4", "--instant-delay-ms", "50"});
  fleet.WaitWorkerReady("w1");

  auto client = fleet.Client();
  std::map<uint64_t, int> delivered;
  auto submit = [&](const std::string& id, std::chrono::seconds patience) -> bool {
    const auto give_up = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < give_up) {
      try {
        const uint64_t seq = client->Submit(Job(id), 2s).job_seq();
        // A retried request id is answered with its first job_seq.
        delivered.try_emplace(seq, 0);
        return true;
      } catch (const std::exception&) {
        // No answer (the leader is gone) or UNAVAILABLE: the same request id again.
      }
    }
    return false;
  };
  std::vector<double> failover_s;
  for (int round = 0; round < kills; ++round) {
    for (int i = 0; i < 15; ++i) ASSERT_TRUE(submit("r" + std::to_string(round) + "-" + std::to_string(i), 20s));
    // Acknowledged, most not yet proved: the leader dies with them.
    leader->Kill9();
    const auto killed = std::chrono::steady_clock::now();
    ASSERT_TRUE(submit("r" + std::to_string(round) + "-after", 60s)) << standby->Log();
    failover_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
    EXPECT_TRUE(standby->WaitForLog("this broker leads", 1s));
    std::swap(leader, standby);
    standby = &fleet.LaunchBroker(args);  // the killed one, back as a standby
    ASSERT_TRUE(standby->WaitForLog("standing by", 15s)) << standby->Log();
  }
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  size_t complete = 0;
  while (complete < delivered.size() && std::chrono::steady_clock::now() < deadline) {
    auto result = client->NextJobResult(2s);
    if (!result) continue;
    ASSERT_TRUE(delivered.count(result->job_seq())) << "a result for a job never submitted: " << result->job_seq();
    EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
    if (++delivered[result->job_seq()] == 1) ++complete;
  }
  for (const auto& [seq, count] : delivered) EXPECT_EQ(count, 1) << "job " << seq;
  EXPECT_EQ(complete, delivered.size()) << "broker log:\n" << leader->Log();
  std::sort(failover_s.begin(), failover_s.end());
  std::printf("etcd failover: %d kills of the leader (kill -9), lease TTL 2 s; kill -> first acknowledged SUBMIT: "
              "median %.2f s, max %.2f s; %zu jobs, each delivered once\n",
              kills, failover_s[failover_s.size() / 2], failover_s.back(), delivered.size());
}

TEST(EtcdBrokers, ALeaderPausedPastItsLeaseWritesAndAnswersNothingWhenItResumes) {
  if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
  auto cluster = StartCluster("fence");
  // Two fleets (two port pairs), one journal: the paused leader keeps its ports.
  Fleet fleet_a("etcd-fence-a"), fleet_b("etcd-fence-b");
  const std::vector<std::string> args = {"--journal", cluster->Url("fleet/"), "--etcd-lease-ttl", "2",
                                         "--insecure-plaintext", "--accept-unrouted"};
  Process& leader = fleet_a.StartBroker(args);
  auto client = fleet_a.Client();
  client->Submit(Job("acknowledged"), 10s);
  EXPECT_EQ(EtcdJobs(*cluster, "fleet/"), 1);

  leader.Signal(SIGSTOP);
  Process& successor = fleet_b.StartBroker(args);  // once the paused leader's lease has ended
  EXPECT_TRUE(successor.WaitForLog("this broker leads", 1s)) << successor.Log();
  // A SUBMIT reaches the paused ex-leader's socket; it resumes and handles it.
  proto::Envelope submit;
  *submit.mutable_submit() = Job("while-paused").request;
  submit.mutable_submit()->add_witness_bytes(3);
  zkfleet::fleet::Frames witness;
  witness.emplace_back(std::string("abc"));
  const uint64_t correlation = client->Send(submit, std::move(witness));
  leader.Signal(SIGCONT);
  EXPECT_EQ(leader.WaitExit(15s), std::optional<int>(75)) << leader.Log();
  EXPECT_TRUE(leader.Log().find("another broker leads now") != std::string::npos ||
              leader.Log().find("no longer leads") != std::string::npos)
      << leader.Log();
  while (auto reply = client->Receive(1s)) {
    EXPECT_NE(reply->correlation_id(), correlation) << "the fenced ex-leader answered: " << reply->DebugString();
  }
  EXPECT_EQ(EtcdJobs(*cluster, "fleet/"), 1) << "the fenced ex-leader wrote a job";
  // The successor serves the journal as the ex-leader left it at the pause.
  auto successor_client = fleet_b.Client();
  proto::ListJobsRequest all;
  const proto::ListJobsReply listed = successor_client->ListJobs(all, 10s);
  ASSERT_EQ(listed.jobs_size(), 1);
  EXPECT_EQ(listed.jobs(0).request_id(), "acknowledged");
}

}  // namespace
}  // namespace fleet_test
