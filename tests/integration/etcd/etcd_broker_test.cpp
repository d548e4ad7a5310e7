// Brokers on an etcd journal (issue 48), as processes: a standby takes over
// from a leader killed with -9 and every acknowledged job is delivered once;
// a leader paused past its lease is fenced when it resumes (it writes and
// answers nothing, and exits 75 to be restarted as a standby).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <atomic>
#include <map>
#include <thread>
#include <memory>

#include "chaos_support.hpp"
#include "fleet_harness.hpp"
#include "testutil/etcd_cluster.hpp"
#include "unit/metrics/http_client.hpp"

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

// Reads `client`'s results until every job in `delivered` (job_seq -> times
// delivered, 0 at first) came, or `patience` ends: true when each came
// exactly once, SUCCEEDED (a result for another job fails the test).
bool EveryResultOnce(zkfleet::client::internal::BrokerClient& client, std::map<uint64_t, int>& delivered,
                     std::chrono::seconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  size_t complete = 0;
  while (complete < delivered.size() && std::chrono::steady_clock::now() < deadline) {
    auto result = client.NextJobResult(2s);
    if (!result) continue;
    if (!delivered.count(result->job_seq())) {
      ADD_FAILURE() << "a result for a job never submitted: " << result->job_seq();
      return false;
    }
    EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
    if (++delivered[result->job_seq()] == 1) ++complete;
  }
  bool once = complete == delivered.size();
  for (const auto& [seq, count] : delivered) {
    EXPECT_EQ(count, 1) << "job " << seq;
    once = once && count == 1;
  }
  return once;
}

// Flags that cannot work are refused before anything starts, exit 2, with
// what to change: both journals, a URL that is not etcd://, a SUBMIT bound
// that does not fit one etcd transaction.
TEST(EtcdBrokers, JournalFlagsThatCannotWorkAreRefusedInWords) {
  const std::string broker = BinaryPath("zkbroker");
  const std::vector<std::string> base = {broker, "--insecure-plaintext", "--clients", "tcp://127.0.0.1:*",
                                         "--workers", "tcp://127.0.0.1:*"};
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--data-dir", "/nonexistent/x", "--journal", "etcd://127.0.0.1:2379"}, "exactly one"},
      {{}, "exactly one"},
      {{"--journal", "http://127.0.0.1:2379"}, "expected etcd://HOST:PORT"},
      {{"--journal", "etcd://127.0.0.1:2379", "--max-partitions", "100"}, "does not fit one etcd transaction"},
      {{"--journal", "etcd://127.0.0.1:2379", "--max-inline-job-bytes", "2000000"}, "does not fit one etcd transaction"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    std::string output;
    EXPECT_EQ(RunCommand(argv, &output), 2) << output;
    EXPECT_NE(output.find(c.says), std::string::npos) << output;
  }
}

// `zkctl journal --journal etcd://...` lists what a broker on etcd holds,
// read-only, beside it; check and salvage stay LMDB's (refused in words).
TEST(EtcdBrokers, ZkctlListsAJournalInEtcd) {
  if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
  auto cluster = StartCluster("zkctl");
  Fleet fleet("etcd-zkctl");
  fleet.StartBroker({"--journal", cluster->Url("fleet/"), "--insecure-plaintext", "--accept-unrouted"});
  auto client = fleet.Client();
  client->Submit(Job("listed-1"), 10s);
  client->Submit(Job("listed-2"), 10s);
  std::string output;
  ASSERT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "--journal", cluster->Url("fleet/"), "--json"}, &output), 0)
      << output;
  const auto listing = nlohmann::json::parse(output.substr(output.find('{')));
  EXPECT_EQ(listing["live_jobs"], 2) << output;
  EXPECT_EQ(listing["epoch"], 1) << output;
  ASSERT_EQ(listing["jobs"].size(), 2u) << output;
  EXPECT_EQ(listing["jobs"][1]["request_id"], "listed-2") << output;
  EXPECT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "check", "--journal", cluster->Url("fleet/")}, &output), 2)
      << output;
  EXPECT_NE(output.find("need --data-dir"), std::string::npos) << output;
  EXPECT_EQ(RunCommand({BinaryPath("zkctl"), "journal"}, &output), 2) << output;
  EXPECT_NE(output.find("exactly one"), std::string::npos) << output;
}

// A cluster that serves clients over TLS with client certificates: a broker
// given the CA and a client certificate (--etcd-ca/--etcd-cert/--etcd-key)
// journals there and serves a job; zkctl journal reads it with the same
// files; without the CA, or with a file that is not PEM, it is refused in words.
TEST(EtcdBrokers, ABrokerTalksTlsToAnEtcdClusterWithClientCertificates) {
  if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
  auto cluster = std::make_unique<EtcdCluster>(std::filesystem::current_path().string() + "/etcd-tls-" +
                                                   std::to_string(getpid()),
                                               3, /*tls=*/true);
  std::string why;
  ASSERT_TRUE(cluster->Start(30s, &why)) << why;
  const std::vector<std::string> tls = {"--etcd-ca", cluster->tls_ca(), "--etcd-cert", cluster->tls_client_cert(),
                                        "--etcd-key", cluster->tls_client_key()};
  Fleet fleet("etcd-tls");
  std::vector<std::string> args = {"--journal", cluster->Url("fleet/"), "--insecure-plaintext", "--accept-unrouted"};
  args.insert(args.end(), tls.begin(), tls.end());
  fleet.StartBroker(args);
  auto client = fleet.Client();
  const auto submitted = client->Submit(Job("over-tls"), 20s);
  EXPECT_EQ(EtcdJobs(*cluster, "fleet/"), 1);  // etcdctl, with the client certificate
  std::string output;
  std::vector<std::string> zkctl = {BinaryPath("zkctl"), "journal", "--journal", cluster->Url("fleet/"), "--json"};
  zkctl.insert(zkctl.end(), tls.begin(), tls.end());
  ASSERT_EQ(RunCommand(zkctl, &output), 0) << output;
  EXPECT_NE(output.find("\"over-tls\""), std::string::npos) << output;
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1", "--insecure-plaintext"});
  std::map<uint64_t, int> delivered = {{submitted.job_seq(), 0}};
  EXPECT_TRUE(EveryResultOnce(*client, delivered, 60s));
  // Without the files, the members (which want a client certificate) are
  // not reached: zkctl gives up with an error, not a listing.
  EXPECT_NE(RunCommand({BinaryPath("zkctl"), "journal", "--journal", cluster->Url("fleet/"), "--json"}, &output), 0)
      << output;
  // A file that is not a PEM certificate is refused before anything is sent.
  zkctl = {BinaryPath("zkctl"), "journal", "--journal", cluster->Url("fleet/"), "--etcd-ca", cluster->tls_client_key() + ".missing"};
  EXPECT_NE(RunCommand(zkctl, &output), 0) << output;
  EXPECT_NE(output.find("etcd TLS: cannot read the CA file"), std::string::npos) << output;
}

// ZKFLEET_ETCD_KILLS (default 2) rounds, lease TTL ZKFLEET_ETCD_LEASE_TTL (2 s), of: 15 jobs acknowledged, kill -9 of
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
  const char* ttl_env = std::getenv("ZKFLEET_ETCD_LEASE_TTL");
  const std::string ttl = ttl_env && *ttl_env ? ttl_env : "2";
  // Attempts are generous: a result sent to a leader as it is killed is lost
  // with it, and the item is started again (an attempt the kill cost, as with
  // LMDB broker restarts in the chaos test).
  const std::vector<std::string> args = {"--journal", cluster->Url("fleet/"), "--etcd-lease-ttl", ttl,
                                         "--max-attempts", "50"};
  // Each broker's own metrics port, to see what it reports.
  auto with_metrics = [&](int port) {
    std::vector<std::string> a = args;
    a.insert(a.end(), {"--metrics-listen", "127.0.0.1:" + std::to_string(port)});
    return a;
  };
  int leader_port = FreePort(), standby_port = FreePort();
  Process* leader = &fleet.StartBroker(with_metrics(leader_port));
  Process* standby = &fleet.LaunchBroker(with_metrics(standby_port));
  ASSERT_TRUE(standby->WaitForLog("standing by", 15s)) << standby->Log();
  // The standby is not ready (a Service sends nothing to it) and says who leads.
  const auto standby_ready = zkfleet::testing::HttpGet(standby_port, "/ready", 2s);
  EXPECT_EQ(standby_ready.status, 503) << standby_ready.body << standby_ready.error;
  EXPECT_NE(standby_ready.body.find("standing by"), std::string::npos) << standby_ready.body;
  EXPECT_NE(zkfleet::testing::HttpGet(standby_port, "/metrics", 2s).body.find("zkfleet_broker_is_leader 0"),
            std::string::npos);
  EXPECT_EQ(zkfleet::testing::HttpGet(leader_port, "/ready", 2s).status, 200);
  EXPECT_NE(zkfleet::testing::HttpGet(leader_port, "/metrics", 2s).body.find("zkfleet_broker_is_leader 1"),
            std::string::npos);
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
    std::swap(leader_port, standby_port);
    standby = &fleet.LaunchBroker(with_metrics(standby_port));  // the killed one, back as a standby
    ASSERT_TRUE(standby->WaitForLog("standing by", 15s)) << standby->Log();
  }
  EXPECT_TRUE(EveryResultOnce(*client, delivered, 120s)) << "broker log:\n" << leader->Log();
  EXPECT_EQ(zkfleet::testing::HttpGet(leader_port, "/ready", 2s).status, 200);
  // A leader stopped cleanly hands over: it revokes its lease rather than
  // letting it run out, and the standby leads.
  leader->Signal(SIGTERM);
  EXPECT_EQ(leader->WaitExit(20s), std::optional<int>(0)) << leader->Log();
  EXPECT_NE(leader->Log().find("lease revoked"), std::string::npos) << leader->Log();
  EXPECT_TRUE(standby->WaitForLog("broker serving", 30s)) << standby->Log();
  std::sort(failover_s.begin(), failover_s.end());
  std::printf("etcd failover: %d kills of the leader (kill -9), lease TTL %s s; kill -> first acknowledged SUBMIT: "
              "median %.2f s, max %.2f s; %zu jobs, each delivered once\n",
              kills, ttl.c_str(), failover_s[failover_s.size() / 2], failover_s.back(), delivered.size());
}

// Brokers at addresses of their own (issue 48, item 3): the client, zkctl
// and the worker are given both brokers' endpoints and follow whichever
// leads. Kill -9 of the leader: the client's unanswered SUBMITs and its waits
// go to the new leader, the worker registers with it and finishes its proofs
// there, zkctl answers from it; every acknowledged job's result reaches the
// one client exactly once. CURVE on, one key pair shared by the brokers.
TEST(EtcdBrokers, ClientsZkctlAndWorkersGivenEveryBrokersAddressFollowTheLeader) {
  if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
  auto cluster = StartCluster("follow");
  Fleet fleet("etcd-follow");
  fleet.SetBrokerSlots(2);
  ASSERT_NE(fleet.client_endpoint().find(','), std::string::npos) << fleet.client_endpoint();
  const std::vector<std::string> args = {"--journal", cluster->Url("fleet/"), "--etcd-lease-ttl", "2",
                                         "--max-attempts", "50"};
  Process* leader = &fleet.StartBroker(args, /*slot=*/0);
  Process* standby = &fleet.LaunchBroker(args, /*slot=*/1);
  ASSERT_TRUE(standby->WaitForLog("standing by", 15s)) << standby->Log();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1", "--capacity", "2", "--instant-delay-ms", "100"});
  fleet.WaitWorkerReady("w1");

  auto client = fleet.Client();  // given both endpoints
  std::map<uint64_t, int> delivered;
  for (int i = 0; i < 10; ++i) delivered.try_emplace(client->Submit(Job("before-" + std::to_string(i)), 10s).job_seq(), 0);
  // Acknowledged, most still queued or proving: the leader dies with them.
  leader->Kill9();
  // The same client, with no new address: its next SUBMIT is answered by the
  // standby once it leads (the first tries may find no broker: retried).
  bool answered = false;
  for (const auto give_up = std::chrono::steady_clock::now() + 60s; !answered && std::chrono::steady_clock::now() < give_up;) {
    try {
      delivered.try_emplace(client->Submit(Job("after"), 3s).job_seq(), 0);
      answered = true;
    } catch (const std::exception&) {
    }
  }
  ASSERT_TRUE(answered) << standby->Log();
  EXPECT_TRUE(standby->WaitForLog("this broker leads", 1s)) << standby->Log();
  // The killed one comes back as a standby at its own address.
  Process& restarted = fleet.LaunchBroker(args, /*slot=*/0);
  ASSERT_TRUE(restarted.WaitForLog("standing by", 15s)) << restarted.Log();

  EXPECT_TRUE(EveryResultOnce(*client, delivered, 60s)) << "new leader:\n" << standby->Log();
  EXPECT_GE(client->reconnections(), 1u);
  // The worker went over to the new leader by itself.
  const proto::StatusReply status = fleet.Status();
  ASSERT_EQ(status.workers_size(), 1) << status.DebugString();
  EXPECT_EQ(status.workers(0).worker_id(), "w1");
  // zkctl given both endpoints answers from the leader, wherever it is.
  std::string output;
  EXPECT_EQ(fleet.Zkctl({"status", "--json"}, &output), 0) << output;
  EXPECT_NE(output.find("\"w1\""), std::string::npos) << output;
}

// A standby at an address of its own answers "not the leader, try X"
// (issue 48, item 2): zkctl given only the standby's address is told, at
// once, which endpoint leads; a worker given only the standby's address logs
// where the leader is; a client and a worker given both addresses, the
// standby's first, are sent on by its answer and are served by the leader.
// CURVE on: the standby answers only keys in its allow-lists.
TEST(EtcdBrokers, AStandbyAnswersNotTheLeaderNamingWhereItIs) {
  if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
  auto cluster = StartCluster("notleader");
  Fleet fleet("etcd-notleader");
  fleet.SetBrokerSlots(2);
  auto split = [](const std::string& list) {
    const size_t comma = list.find(',');
    return std::pair{list.substr(0, comma), list.substr(comma + 1)};
  };
  const auto [leader_clients, standby_clients] = split(fleet.client_endpoint());
  const auto [leader_workers, standby_workers] = split(fleet.worker_endpoint());
  const std::vector<std::string> args = {"--journal", cluster->Url("fleet/"), "--etcd-lease-ttl", "2"};
  Process& leader = fleet.StartBroker(args, /*slot=*/0);
  Process& standby = fleet.LaunchBroker(args, /*slot=*/1);
  ASSERT_TRUE(standby.WaitForLog("are told that", 15s)) << standby.Log();

  // zkctl at the standby alone: NOT_LEADER, naming the leader's client endpoint.
  std::string output;
  const int status = RunCommand({BinaryPath("zkctl"), "--broker", standby_clients, "--curve-secret-key",
                                 fleet.SecretKeyFile(Fleet::kClientId), "--broker-public-key",
                                 fleet.broker_public_key(), "--timeout", "20", "status"},
                                &output);
  EXPECT_NE(status, 0) << output;
  EXPECT_NE(output.find("NOT_LEADER"), std::string::npos) << output;
  EXPECT_NE(output.find(leader_clients), std::string::npos) << output;
  // A key in no allow-list hears nothing from the standby either.
  output.clear();
  EXPECT_NE(RunCommand({BinaryPath("zkctl"), "--broker", standby_clients, "--curve-secret-key",
                        fleet.SecretKeyFile("stranger"), "--broker-public-key", fleet.broker_public_key(),
                        "--timeout", "5", "status"},
                       &output),
            0);
  EXPECT_EQ(output.find("NOT_LEADER"), std::string::npos) << output;

  // A worker at the standby alone says where the leader is, and stays.
  Process& lost = fleet.StartWorker("lost", {"--instant", "--circuit", "c1", "--broker", standby_workers});
  EXPECT_TRUE(lost.WaitForLog("stands by", 20s)) << lost.Log();
  EXPECT_NE(lost.Log().find(leader_workers), std::string::npos) << lost.Log();
  EXPECT_TRUE(lost.running()) << lost.Log();

  // Given both, the standby's first: sent on to the leader, and served.
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1", "--broker", standby_workers + "," + leader_workers});
  fleet.WaitWorkerReady("w1");
  zkfleet::client::internal::BrokerClient client(fleet.context(), standby_clients + "," + leader_clients,
                                                 fleet.Security(), {}, Fleet::kClientId);
  std::map<uint64_t, int> delivered;
  for (int i = 0; i < 5; ++i) delivered.try_emplace(client.Submit(Job("sent-on-" + std::to_string(i)), 20s).job_seq(), 0);
  EXPECT_EQ(client.Status(10s).workers_size(), 1);  // the leader's view: w1 only
  EXPECT_TRUE(EveryResultOnce(client, delivered, 60s)) << leader.Log();
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


size_t EnvSize(const char* name, size_t fallback) {
  const char* value = std::getenv(name);
  return value && *value ? static_cast<size_t>(std::strtoull(value, nullptr, 10)) : fallback;
}

// Chaos on the etcd journal: real proofs of the bundled circuit through two
// workers while faults hit, in turn, the leading broker (kill -9), etcd's
// Raft leader (kill -9, then SIGSTOP for 3 s), the leading broker again
// (SIGSTOP for 4 s, past its 2 s lease: it must exit 75 when resumed, having
// written nothing) and a worker (kill -9). Every request comes back once, as
// the job its SUBMIT reply named, every proof verifies (snarkjs), the journal
// holds one job per request id (CheckChaos), and nothing is left unfinished.
// Brokers that exit come back as standbys, as under systemd's Restart=always.
//   ZKFLEET_ETCD_CHAOS_JOBS (200)  ZKFLEET_ETCD_CHAOS_FAULTS (6)
TEST(EtcdBrokers, ChaosOnBrokersEtcdAndWorkersLosesNothingAndProvesEachJobOnce) {
  if (!EtcdCluster::available()) GTEST_SKIP() << "SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)";
  ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
  using Clock = std::chrono::steady_clock;
  const size_t jobs = EnvSize("ZKFLEET_ETCD_CHAOS_JOBS", 200);
  const size_t faults = EnvSize("ZKFLEET_ETCD_CHAOS_FAULTS", 6);
  auto cluster = StartCluster("chaos");
  Fleet fleet("etcd-chaos", 200);
  // --etcd-fence-only: an ex-leader does not stop when its keep-alive finds
  // the lease gone, so that only the journal's fence keeps it from writing
  // (with the fence removed from the transactions this test fails).
  const std::vector<std::string> args = {"--journal", cluster->Url("fleet/"), "--etcd-lease-ttl", "2",
                                         "--accept-unrouted", "--max-attempts", "50", "--result-ttl", "86400",
                                         "--etcd-fence-only"};
  // Each broker at an address of its own (its slot); clients and workers are
  // given both and follow the leader, so a paused ex-leader still holds
  // connections while its successor serves: only fencing keeps it from
  // writing what it was sent meanwhile.
  fleet.SetBrokerSlots(2);
  std::vector<Process*> brokers = {&fleet.StartBroker(args, 0), &fleet.LaunchBroker(args, 1)};
  Process* leader = brokers[0];
  Process* paused = nullptr;
  std::vector<int> exits;  // exit statuses of brokers, in order
  // A broker that exited stands by again.
  auto supervise = [&] {
    for (size_t slot = 0; slot < brokers.size(); ++slot) {
      Process*& broker = brokers[slot];
      if (broker == paused || broker->running()) continue;
      exits.push_back(broker->WaitExit(0ms).value_or(-1));
      if (broker == leader) leader = nullptr;
      broker = &fleet.LaunchBroker(args, static_cast<int>(slot));
    }
  };
  auto wait = [&](std::chrono::milliseconds how_long) {
    for (const auto until = Clock::now() + how_long; Clock::now() < until;) {
      supervise();
      std::this_thread::sleep_for(50ms);
    }
  };
  // The broker that serves now (it logged "broker serving" in this life).
  auto find_leader = [&](std::chrono::seconds patience) -> Process* {
    for (const auto until = Clock::now() + patience; Clock::now() < until;) {
      supervise();
      for (Process* broker : brokers) {
        if (broker != paused && broker->running() && broker->Log().find("broker serving") != std::string::npos) {
          return broker;
        }
      }
      std::this_thread::sleep_for(50ms);
    }
    return nullptr;
  };
  const std::string zkey = Fixture("bn128_k12/circuit_final.zkey");
  const auto worker_args = std::vector<std::string>{"--circuit", "bn128=" + zkey, "--threads", "1", "--capacity", "2"};
  std::vector<Process*> workers = {&fleet.StartWorker("w0", worker_args), &fleet.StartWorker("w1", worker_args)};
  fleet.WaitWorkerReady("w0", 30s);
  fleet.WaitWorkerReady("w1", 30s);
  ASSERT_FALSE(::testing::Test::HasFailure());

  const std::string witness = ReadFile(Fixture("bn128_k12/witness.wtns"));
  const auto started = Clock::now();
  const auto deadline = started + zkfleet::testing::Scaled(std::chrono::seconds(120 + jobs / 2));
  std::atomic<size_t> progress{0};
  std::vector<ClientLog> logs(2);
  std::vector<std::thread> threads;
  for (size_t c = 0; c < logs.size(); ++c) {
    threads.emplace_back(RunChaosClient, std::ref(fleet), static_cast<int>(c), jobs / 2 + (c < jobs % 2 ? 1 : 0),
                         kChaosWindow, std::cref(witness), deadline, std::ref(progress), std::ref(logs[c]));
  }
  std::vector<std::string> done;  // the faults, as they happened
  size_t fenced_expected = 0;
  std::map<std::string, uint64_t> probes;  // SUBMITs sent to a paused leader -> the job_seq answered
  bool stuck = false;  // a fault could not be made (reported): no more faults
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) {
      ADD_FAILURE() << what;
      stuck = true;
    }
    return ok;
  };
  while (progress.load() < jobs && Clock::now() < deadline) {
    wait(50ms);
    const double at = 0.1 + 0.7 * static_cast<double>(done.size()) / static_cast<double>(std::max<size_t>(faults, 1));
    if (stuck || done.size() >= faults || static_cast<double>(progress.load()) < at * static_cast<double>(jobs)) {
      continue;
    }
    switch (done.size() % 5) {
      case 0: {  // the leading broker dies
        if (!leader) leader = find_leader(30s);
        if (!require(leader != nullptr, "no broker leads")) break;
        leader->Kill9();
        done.push_back("kill -9 of the leading broker");
        leader = find_leader(30s);
        break;
      }
      case 1: {  // etcd's Raft leader dies and comes back
        const int member = cluster->Leader();
        if (!require(member >= 0, "no etcd member leads:\n" + cluster->Logs())) break;
        cluster->Kill(member);
        wait(1000ms);
        cluster->Restart(member);
        done.push_back("kill -9 of etcd's leader (member " + std::to_string(member) + ")");
        break;
      }
      case 2: {  // etcd's Raft leader pauses
        const int member = cluster->Leader();
        if (!require(member >= 0, "no etcd member leads:\n" + cluster->Logs())) break;
        cluster->Stop(member);
        wait(3000ms);
        cluster->Resume(member);
        done.push_back("SIGSTOP of etcd's leader for 3 s (member " + std::to_string(member) + ")");
        break;
      }
      case 3: {  // the leading broker pauses past its lease, then resumes: fenced
        if (!leader) leader = find_leader(30s);
        if (!require(leader != nullptr, "no broker leads")) break;
        // A client connected to the leader sends SUBMITs while it is paused:
        // they wait in its socket and it handles them when it resumes. Fenced,
        // it writes and answers none of them (the client resends them to the
        // successor, which takes them); unfenced, it would acknowledge them
        // under job_seqs its successor also hands out, and the journal would
        // not hold them as their client was told (CheckChaos).
        auto probe = fleet.Client();
        probe->Status(10s);
        paused = leader;
        paused->Signal(SIGSTOP);
        std::map<uint64_t, std::string> probe_of_correlation;
        for (int i = 0; i < 5; ++i) {
          proto::Envelope envelope;
          auto* submit = envelope.mutable_submit();
          const std::string request_id = "fence-probe-" + std::to_string(i);
          submit->set_request_id(request_id);
          submit->set_circuit_id("bn128");
          submit->add_witness_bytes(witness.size());
          zkfleet::fleet::Frames frames;
          frames.push_back(zkfleet::fleet::FrameFromString(witness));
          probe_of_correlation[probe->Send(std::move(envelope), std::move(frames))] = request_id;
        }
        wait(4000ms);
        paused->Signal(SIGCONT);
        const std::optional<int> status = paused->WaitExit(15s);
        EXPECT_EQ(status, std::optional<int>(75)) << "the resumed ex-leader did not stop as fenced:\n" << paused->Log();
        ++fenced_expected;
        paused = nullptr;
        leader = find_leader(30s);
        for (const auto until = Clock::now() + 20s; probes.size() < probe_of_correlation.size() && Clock::now() < until;) {
          supervise();
          auto reply = probe->Receive(100ms);
          if (!reply || !reply->has_submit_reply()) continue;
          auto it = probe_of_correlation.find(reply->correlation_id());
          if (it != probe_of_correlation.end()) probes[it->second] = reply->submit_reply().job_seq();
        }
        EXPECT_EQ(probes.size(), probe_of_correlation.size()) << "SUBMITs sent to the paused leader were not taken";
        done.push_back("SIGSTOP of the leading broker for 4 s (lease 2 s)");
        break;
      }
      case 4: {  // a worker dies mid-proof
        const size_t w = done.size() % workers.size();
        workers[w]->Kill9();
        wait(300ms);
        workers[w] = &fleet.StartWorker("w" + std::to_string(w), worker_args);
        done.push_back("kill -9 of worker w" + std::to_string(w));
        break;
      }
    }
  }
  for (auto& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  ASSERT_NE(find_leader(30s), nullptr) << "no broker leads at the end";
  ChaosTally tally;
  CheckChaos(fleet, logs, jobs, witness, &tally, probes);
  EXPECT_EQ(tally.lost, 0u);
  EXPECT_EQ(tally.verified, jobs);
  EXPECT_EQ(tally.duplicates, 0u);
  EXPECT_EQ(done.size(), faults);
  // Every fenced ex-leader said so in its log; none wrote a job (CheckChaos:
  // one job per request id, the one its client was told).
  EXPECT_GE(static_cast<size_t>(std::count(exits.begin(), exits.end(), 75)), fenced_expected);
  std::string list;
  for (const std::string& fault : done) list += (list.empty() ? "" : "; ") + fault;
  std::map<int, int> by_status;
  for (int status : exits) ++by_status[status];
  std::string statuses;
  for (const auto& [status, count] : by_status) {
    statuses += (statuses.empty() ? "" : ", ") + std::to_string(count) + " x " + std::to_string(status);
  }
  std::printf("etcd chaos: %zu jobs, %zu faults (%s), %zu delivered, %zu lost, %zu duplicates, %zu verified, broker "
              "exits %zu (status: %s), %.1f s\n",
              jobs, done.size(), list.c_str(), tally.delivered, tally.lost, tally.duplicates, tally.verified,
              exits.size(), statuses.c_str(), seconds);
}

}  // namespace
}  // namespace fleet_test
