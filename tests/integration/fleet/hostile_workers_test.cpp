// Hostile workers' identity, leases and states: impersonation, twins, hoarding, vanishing, undrain, revoked keys.
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hostile_test_support.hpp"

namespace fleet_test {
namespace {

// Waits until the broker log holds `count` "allow-lists reloaded" lines.
bool WaitReloads(const Process& broker, size_t count, std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  while (CountMatches(broker.Log(), "allow-lists reloaded") < count) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// `n` jobs of the fixture's witness, request ids `prefix`0, `prefix`1, ...
std::vector<uint64_t> SubmitJobs(zkfleet::client::internal::BrokerClient& client, const std::string& prefix, int n) {
  std::vector<uint64_t> jobs;
  for (int i = 0; i < n; ++i) jobs.push_back(SubmitJob(client, prefix + std::to_string(i)));
  return jobs;
}

// Every one of `jobs` proved by the worker "honest" (ExpectHonestProof), all within `timeout`.
void ExpectAllProvedByHonest(Fleet& fleet, zkfleet::client::internal::BrokerClient& client,
                             const std::vector<uint64_t>& jobs, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (uint64_t job : jobs) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    ExpectHonestProof(fleet, AwaitResult(client, job, std::max(left, 1ms)), {"honest"});
  }
}

// ------------------------------------------------------------------ identity

// 4. Another key's READY with an id already bound to "fleet-worker" is
// refused; the victim keeps its registration and keeps proving.
TEST(FleetHostile, ImpersonationIsRefused) {
  Fleet fleet("hostile_impersonate");
  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker(VerifyingBroker());
  StartHonest(fleet, "victim");
  fleet.WaitWorkerReady("victim");

  Hostiles hostiles(fleet);
  Process& impostor = hostiles.Start("impostor", "victim", "mallory", "impersonate", {"--credit", "4"});
  ASSERT_TRUE(impostor.WaitForLog("belongs to another key", Scaled(10s))) << impostor.Log();
  // A few more attempts (one a second): the victim stays registered throughout.
  const auto until = std::chrono::steady_clock::now() + 2500ms;
  StatusReply status;
  while (std::chrono::steady_clock::now() < until) {
    status = fleet.Status();
    const auto* victim = FindWorker(status, "victim");
    ASSERT_NE(victim, nullptr) << status.DebugString();
    EXPECT_EQ(victim->key_name(), "fleet-worker") << status.DebugString();
    EXPECT_EQ(victim->state(), zkfleet::proto::WORKER_STATE_READY) << status.DebugString();
    if (::testing::Test::HasFailure()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GE(status.registrations_refused(), 2u) << status.DebugString();
  EXPECT_EQ(status.workers_size(), 1) << status.DebugString();
  EXPECT_GE(CountMatches(impostor.Log(), "received DISCONNECT reason=registration refused: worker id 'victim' "
                                         "belongs to another key"),
            2u)
      << impostor.Log();

  auto client = fleet.Client();
  const uint64_t job = SubmitJob(*client, "victim-1");
  ExpectHonestProof(fleet, AwaitResult(*client, job, Scaled(60s)), {"victim"});
  EXPECT_EQ(impostor.Log().find("received JOB"), std::string::npos) << impostor.Log();
  const std::string log = broker.Log();
  EXPECT_EQ(CountMatches(log, "worker victim registered"), 1u) << log;
  EXPECT_EQ(log.find("worker victim removed"), std::string::npos) << log;
}

// 5. Two live processes with the same key and id: the first keeps the id,
// the second is refused each time it tries, no replacement back and forth.
TEST(FleetHostile, DuplicateProcessIsRefusedNotPingPong) {
  // The broker heartbeats every 500 ms and takes a silent id over after 1.5
  // intervals (750 ms); the twins heartbeat every 100 ms, so a slow turn of
  // the live one never looks like silence.
  Fleet fleet("hostile_twins", 500);
  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker(VerifyingBroker());
  Hostiles hostiles(fleet);
  Process& one = hostiles.Start("twin-1", "twin", "mallory", "hoard", {"--heartbeat-ms", "100"});
  Process& two = hostiles.Start("twin-2", "twin", "mallory", "hoard", {"--heartbeat-ms", "100"});

  StatusReply status = WaitStatus(fleet, [](const StatusReply& s) {
    return FindWorker(s, "twin") != nullptr && s.registrations_refused() >= 1;
  });
  ASSERT_NE(FindWorker(status, "twin"), nullptr) << status.DebugString();
  ASSERT_GE(status.registrations_refused(), 1u) << status.DebugString() << "\n" << broker.Log();
  const uint64_t refused_before = status.registrations_refused();

  const auto until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < until) {
    status = fleet.Status();
    int listed = 0;
    for (const auto& w : status.workers()) listed += w.worker_id() == "twin";
    EXPECT_EQ(listed, 1) << status.DebugString();
    if (::testing::Test::HasFailure()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GT(status.registrations_refused(), refused_before) << status.DebugString();

  const std::string log = broker.Log();
  EXPECT_EQ(CountMatches(log, "worker twin registered"), 1u) << log;
  EXPECT_EQ(CountMatches(log, "reconnected on a new connection"), 0u) << log;
  // One twin holds the id and was never told to go; the other is refused, again and again.
  const std::string log_one = one.Log(), log_two = two.Log();
  const bool one_refused = log_one.find("already connected") != std::string::npos;
  const bool two_refused = log_two.find("already connected") != std::string::npos;
  EXPECT_NE(one_refused, two_refused) << "twin-1:\n" << log_one << "\ntwin-2:\n" << log_two;
  const std::string& kept = one_refused ? log_two : log_one;
  EXPECT_EQ(kept.find("received DISCONNECT"), std::string::npos) << kept;
  EXPECT_GE(CountMatches(one_refused ? log_one : log_two, "already connected"), 2u);
}

// ------------------------------------------------------------------ leases and states

// 6. A worker that announces 100000 credit and never starts anything gets at
// most --max-credit-per-worker, and what it was leased goes back after
// --lease-start-timeout: all jobs are proved by the honest worker. The jobs
// are submitted while the hoarder is the only worker, so it is leased every
// one of them (5 < 16): the reclaim is not left to how the broker happens
// to pick between the two.
TEST(FleetHostile, HoarderDoesNotStarveTheFleet) {
  constexpr int kJobs = 5;
  Fleet fleet("hostile_hoard");
  AddWorkerKey(fleet, "mallory");
  constexpr int kStrikes = 3;  // the default, named here for the count below
  Process& broker = fleet.StartBroker(VerifyingBroker({"--lease-start-timeout", "2", "--max-credit-per-worker", "16",
                                                       "--strikes-to-fault", std::to_string(kStrikes)}));
  Hostiles hostiles(fleet);
  Process& hoarder = hostiles.Start("hoarder", "hoarder", "mallory", "hoard", {"--credit", "100000"});
  fleet.WaitWorkerReady("hoarder");
  StatusReply status = fleet.Status();
  ASSERT_NE(FindWorker(status, "hoarder"), nullptr);
  EXPECT_LE(FindWorker(status, "hoarder")->credit(), 16u) << status.DebugString();

  auto client = fleet.Client();
  std::vector<uint64_t> jobs;
  for (int i = 0; i < kJobs; ++i) jobs.push_back(SubmitJob(*client, "hoarded-" + std::to_string(i)));
  status = WaitStatus(fleet, [](const StatusReply& s) {
    const auto* w = FindWorker(s, "hoarder");
    return w != nullptr && w->in_flight() == static_cast<uint32_t>(kJobs);
  });
  ASSERT_NE(FindWorker(status, "hoarder"), nullptr) << status.DebugString();
  ASSERT_EQ(FindWorker(status, "hoarder")->in_flight(), static_cast<uint32_t>(kJobs))
      << "the hoarder was not leased every job\n"
      << status.DebugString() << "\n" << hoarder.Log();

  StartHonest(fleet, "honest");
  // Bound: a lease the hoarder never starts goes back after the 2 s start
  // timeout (checked at the broker's ticks), then the honest worker proves
  // it; 5 k12 proofs take well under a second each on one CPU thread. 2 s +
  // startup + 5 proofs, with a wide margin for a loaded 2-core machine: 60 s (scaled).
  ExpectAllProvedByHonest(fleet, *client, jobs, Scaled(60s));
  status = fleet.Status();
  EXPECT_EQ(status.jobs_completed(), static_cast<uint64_t>(kJobs));
  if (const auto* w = FindWorker(status, "hoarder")) EXPECT_LE(w->credit() + w->in_flight(), 16u);
  // Every job was leased to the hoarder, which never started one: its
  // leases were taken back, each a strike, until the third strike FAULTED it
  // and the broker returned the rest at once (those are not counted as
  // reclaimed).
  EXPECT_GE(status.leases_reclaimed(), static_cast<uint64_t>(kStrikes)) << status.DebugString() << "\n" << broker.Log();
  EXPECT_TRUE(HasState(status, "hoarder", zkfleet::proto::WORKER_STATE_FAULTED)) << status.DebugString();
}

// 6b. Issue 47, item 1: a key that takes jobs, sends STARTED and leaves,
// coming back at once under a new worker id, dead-lettered 9 of 30 jobs in
// ~8 s while an honest worker waited, and took no strike. Now each loss is a
// strike against the key (not the id), the lost items go to another key's
// worker, the key is FAULTED under every id, and no job is dead-lettered.
TEST(FleetHostile, AKeyThatStartsJobsAndLeavesIsFaultedAndKillsNoJob) {
  constexpr int kJobs = 12;
  Fleet fleet("hostile_vanish");
  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker(VerifyingBroker({"--max-attempts", "2"}));
  Hostiles hostiles(fleet);
  Process& vanisher = hostiles.Start("vanisher", "vanisher", "mallory", "vanish", {"--credit", "4"});
  fleet.WaitWorkerReady("vanisher");
  StartHonest(fleet, "honest");
  fleet.WaitWorkerReady("honest");

  auto client = fleet.Client();
  ExpectAllProvedByHonest(fleet, *client, SubmitJobs(*client, "vanished-", kJobs), Scaled(90s));
  const StatusReply status = fleet.Status();
  EXPECT_EQ(status.jobs_completed(), static_cast<uint64_t>(kJobs)) << status.DebugString();
  EXPECT_EQ(status.jobs_dead_lettered(), 0u) << status.DebugString() << "\n" << broker.Log();
  // It did get work and leave with it (not a run where it never could).
  const std::string log = vanisher.Log();
  ASSERT_GE(CountMatches(log, "leaving with it"), 1u) << log;
  EXPECT_GE(CountMatches(broker.Log(), "key mallory: strike [0-9]+ of 3 within [0-9]+ s \\(lost started work\\)"), 1u)
      << broker.Log();
  // Its key is FAULTED: whatever id it comes back under, nothing more is routed to it.
  const StatusReply later = WaitStatus(fleet, [](const StatusReply& s) {
    for (const auto& w : s.workers()) {
      if (w.worker_id().rfind("vanisher", 0) == 0 && w.state() == zkfleet::proto::WORKER_STATE_FAULTED) return true;
    }
    return false;
  }, 30s);
  bool faulted = false;
  for (const auto& w : later.workers()) {
    if (w.worker_id().rfind("vanisher", 0) == 0 && w.state() == zkfleet::proto::WORKER_STATE_FAULTED) faulted = true;
  }
  EXPECT_TRUE(faulted) << later.DebugString() << "\n" << log;
}

// 6c. Issue 47, item 2: a worker could fail any job at once, for good, by
// calling it the client's fault (a RESULT not ok, not retryable, its own
// text). Its verdict is now a claim: another key's worker is asked, proves
// the job, and the claimant takes a strike for each false verdict.
TEST(FleetHostile, AWorkersClientFaultVerdictIsCheckedByAnotherKey) {
  constexpr int kJobs = 6;
  Fleet fleet("hostile_refuse");
  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker(VerifyingBroker());
  Hostiles hostiles(fleet);
  Process& refuser = hostiles.Start("refuser", "refuser", "mallory", "refuse", {"--credit", "1"});
  fleet.WaitWorkerReady("refuser");
  StartHonest(fleet, "honest");
  fleet.WaitWorkerReady("honest");
  auto client = fleet.Client();
  ExpectAllProvedByHonest(fleet, *client, SubmitJobs(*client, "refused-", kJobs), Scaled(60s));
  // It did call some job the client's fault (fair dispatch gives it work).
  ASSERT_GE(CountMatches(refuser.Log(), "sent STARTED and RESULT refused"), 1u) << refuser.Log();
  const StatusReply status = fleet.Status();
  EXPECT_EQ(status.jobs_failed(), 0u) << status.DebugString();
  EXPECT_GE(CountMatches(broker.Log(), "key mallory: strike [0-9]+ of 3 within [0-9]+ s \\(false client-fault verdict\\)"),
            1u)
      << broker.Log();
}

// 7. A worker the broker drains cannot make itself READY again by sending
// READY; work goes elsewhere; only an admin's undrain lets it back.
TEST(FleetHostile, DrainingWorkerCannotUndrainItself) {
  Fleet fleet("hostile_undrain");
  AddWorkerKey(fleet, "mallory");
  fleet.StartBroker(VerifyingBroker());
  Hostiles hostiles(fleet);
  Process& undrainer = hostiles.Start("undrainer", "undrainer", "mallory", "undrain", {"--credit", "8"});
  fleet.WaitWorkerReady("undrainer");

  std::string out;
  ASSERT_EQ(fleet.Zkctl({"drain", "undrainer"}, &out), 0) << out;
  ASSERT_TRUE(undrainer.WaitForLog("answered DRAIN with READY", Scaled(10s))) << undrainer.Log();
  // Its READY message, READY heartbeats and CREDIT change nothing (20 heartbeat intervals).
  const auto until = std::chrono::steady_clock::now() + 2s;
  StatusReply status;
  while (std::chrono::steady_clock::now() < until) {
    status = fleet.Status();
    EXPECT_TRUE(HasState(status, "undrainer", zkfleet::proto::WORKER_STATE_DRAINING)) << status.DebugString();
    if (const auto* w = FindWorker(status, "undrainer")) EXPECT_EQ(w->credit(), 0u) << status.DebugString();
    if (::testing::Test::HasFailure()) break;
    std::this_thread::sleep_for(100ms);
  }

  StartHonest(fleet, "honest");
  fleet.WaitWorkerReady("honest");
  auto client = fleet.Client();
  std::vector<uint64_t> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(SubmitJob(*client, "drained-" + std::to_string(i)));
  for (uint64_t job : jobs) ExpectHonestProof(fleet, AwaitResult(*client, job, Scaled(60s)), {"honest"});
  EXPECT_EQ(undrainer.Log().find("received JOB"), std::string::npos) << undrainer.Log();
  EXPECT_TRUE(HasState(fleet.Status(), "undrainer", zkfleet::proto::WORKER_STATE_DRAINING));

  // The admin lets it back.
  ASSERT_EQ(fleet.Zkctl({"undrain", "undrainer"}, &out), 0) << out;
  status = WaitStatus(fleet, [](const StatusReply& s) {
    return HasState(s, "undrainer", zkfleet::proto::WORKER_STATE_READY);
  });
  EXPECT_TRUE(HasState(status, "undrainer", zkfleet::proto::WORKER_STATE_READY)) << status.DebugString();
}

// 8. Removing a worker's key from the allow-list (SIGHUP) cuts its live
// connection off: it is no longer listed and its leases go to an honest worker.
TEST(FleetHostile, RemovedKeyIsCutOff) {
  Fleet fleet("hostile_revoked");
  AddWorkerKey(fleet, "mallory");
  // Leases never started are not reclaimed within this test: only the
  // revocation can free the hoarder's.
  Process& broker = fleet.StartBroker(VerifyingBroker({"--lease-start-timeout", "600"}));
  Hostiles hostiles(fleet);
  Process& hoarder = hostiles.Start("hoarder", "hoarder", "mallory", "hoard", {"--credit", "8"});
  fleet.WaitWorkerReady("hoarder");

  auto client = fleet.Client();
  std::vector<uint64_t> jobs = {SubmitJob(*client, "revoked-1"), SubmitJob(*client, "revoked-2")};
  StatusReply status = WaitStatus(fleet, [](const StatusReply& s) {
    const auto* w = FindWorker(s, "hoarder");
    return w != nullptr && w->in_flight() == 2;
  });
  ASSERT_NE(FindWorker(status, "hoarder"), nullptr) << status.DebugString();
  ASSERT_EQ(FindWorker(status, "hoarder")->in_flight(), 2u) << status.DebugString();
  StartHonest(fleet, "honest");
  fleet.WaitWorkerReady("honest");
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(fleet.Status().jobs_completed(), 0u);  // held by the hoarder

  ASSERT_TRUE(std::filesystem::remove(fleet.allow_dir() + "/workers/mallory.pub"));
  broker.Signal(SIGHUP);
  ASSERT_TRUE(WaitReloads(broker, 1)) << broker.Log();
  // "Within a few heartbeats" (100 ms each), stretched generously.
  status = WaitStatus(fleet, [](const StatusReply& s) { return FindWorker(s, "hoarder") == nullptr; }, 5s);
  EXPECT_EQ(FindWorker(status, "hoarder"), nullptr) << status.DebugString();
  EXPECT_TRUE(hoarder.WaitForLog("received DISCONNECT reason=.*removed from the broker's allow-list", Scaled(5s)))
      << hoarder.Log();

  for (uint64_t job : jobs) ExpectHonestProof(fleet, AwaitResult(*client, job, Scaled(60s)), {"honest"});
  status = fleet.Status();
  EXPECT_GE(status.leases_reclaimed(), 2u) << status.DebugString();
  // It keeps trying to come back; its handshakes are refused and it is never listed again.
  const auto until = std::chrono::steady_clock::now() + 1500ms;
  while (std::chrono::steady_clock::now() < until) {
    status = fleet.Status();
    EXPECT_EQ(FindWorker(status, "hoarder"), nullptr) << status.DebugString();
    if (::testing::Test::HasFailure()) break;
    std::this_thread::sleep_for(100ms);
  }
}

// Issue 47, item 11: a removed key's open connection was kept, and every
// message on it answered (a DISCONNECT per heartbeat: ~23 % of a core under
// flood). The broker answers once, then closes the connection; the peer's
// reconnections are refused at the handshake.
TEST(FleetHostile, ARemovedKeysOpenConnectionIsClosedNotAnsweredForever) {
  Fleet fleet("hostile_revoked_flood");
  AddWorkerKey(fleet, "mallory");
  Process& broker = fleet.StartBroker(VerifyingBroker());
  Hostiles hostiles(fleet);
  // Heartbeats every 10 ms on the same connection, whatever the broker says.
  Process& flooder = hostiles.Start("flooder", "flooder", "mallory", "hoard", {"--stay", "--heartbeat-ms", "10", "--credit", "1"});
  fleet.WaitWorkerReady("flooder");
  ASSERT_TRUE(std::filesystem::remove(fleet.allow_dir() + "/workers/mallory.pub"));
  broker.Signal(SIGHUP);
  ASSERT_TRUE(WaitReloads(broker, 1)) << broker.Log();
  EXPECT_TRUE(broker.WaitForLog("closed a worker connection from .*its key 'mallory' was removed", Scaled(5s)))
      << broker.Log();
  EXPECT_TRUE(flooder.WaitForLog("received DISCONNECT reason=.*removed from the broker's allow-list", Scaled(5s)))
      << flooder.Log();
  // Closed: its heartbeats (100 a second) reach nobody, nothing answers them.
  std::this_thread::sleep_for(300ms);
  const size_t answered = CountMatches(flooder.Log(), "received DISCONNECT");
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(CountMatches(flooder.Log(), "received DISCONNECT"), answered) << flooder.Log();
  EXPECT_EQ(FindWorker(fleet.Status(), "flooder"), nullptr);
}

}  // namespace
}  // namespace fleet_test
