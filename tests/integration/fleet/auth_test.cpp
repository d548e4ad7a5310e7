// CURVE authentication and roles with the real processes (issue 14): peers
// without a key, with an unknown key or with a key on the wrong port are
// refused at the handshake (no reply, nothing changed, counted); each client
// key's role is enforced per request (FORBIDDEN, counted); a submit key only
// touches its own jobs; SIGHUP reloads the allow-lists and keeps the
// connections already made; everything runs end to end over CURVE.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "fleet_harness.hpp"
#include "zkfleet/fleet/curve_keys.hpp"

namespace fleet_test {
namespace {

using zkfleet::proto::StatusReply;

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// zkctl as client key `key_name` (whatever its role), with a short reply timeout.
int ZkctlAs(Fleet& fleet, const std::string& key_name, const std::vector<std::string>& args, std::string* out,
            const std::string& timeout_s = "5") {
  auto argv = Concat({BinaryPath("zkctl")}, fleet.ZkctlConnection(key_name));
  argv.insert(argv.end(), {"--timeout", timeout_s});
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, out);
}

// Polls the broker (admin key) until `done` holds; the last status either way.
StatusReply WaitStatus(Fleet& fleet, const std::function<bool(const StatusReply&)>& done,
                       std::chrono::milliseconds timeout = 5s) {
  auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(timeout);
  StatusReply status = fleet.Status();
  while (!done(status) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    status = fleet.Status();
  }
  return status;
}

const zkfleet::proto::WorkerInfo* FindWorker(const StatusReply& status, const std::string& worker_id) {
  for (const auto& w : status.workers()) {
    if (w.worker_id() == worker_id) return &w;
  }
  return nullptr;
}

// What zkctl says when the broker refuses it at the handshake: it waited
// for a reply in vain, or (when the refused connection never came up, as
// under a sanitizer's slower start) its send timed out saying why.
bool SaysRefused(const std::string& out) {
  return out.find("no reply from the broker") != std::string::npos ||
         out.find("refused at the handshake?") != std::string::npos;
}

bool Ready(const StatusReply& status, const std::string& worker_id) {
  const auto* w = FindWorker(status, worker_id);
  return w != nullptr && w->state() == zkfleet::proto::WORKER_STATE_READY;
}

zkfleet::client::internal::JobSubmission OneWitnessJob(const std::string& circuit, const std::string& request_id) {
  zkfleet::client::internal::JobSubmission job;
  job.request.set_circuit_id(circuit);
  job.request.set_request_id(request_id);
  job.witnesses.push_back(ReadFile(Fixture("bn128_k12/witness.wtns")));
  return job;
}

// `call` must end with zkfleet::Error(kIo) (no reply), not with a broker answer.
void ExpectNoReply(const std::function<void()>& call, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << what << ": the broker answered";
  } catch (const zkfleet::client::internal::BrokerError& e) {
    ADD_FAILURE() << what << ": the broker answered with an error: " << e.what();
  } catch (const zkfleet::Error& e) {
    EXPECT_EQ(e.code(), zkfleet::ErrorCode::kIo) << what << ": " << e.what();
  }
}

// Waits until the broker log holds `count` "allow-lists reloaded" lines.
bool WaitReloads(const Process& broker, int count, std::chrono::milliseconds timeout = 5s) {
  static const std::regex reloaded("allow-lists reloaded");
  auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(timeout);
  while (true) {
    std::string log = broker.Log();
    auto n = std::distance(std::sregex_iterator(log.begin(), log.end(), reloaded), std::sregex_iterator());
    if (n >= count) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// 1. A client without a key (NULL mechanism) against the CURVE broker: no reply, nothing submitted.
TEST(FleetAuth, ClientWithoutKeyGetsNoReplyAndNothingIsSubmitted) {
  Fleet fleet("auth_keyless");
  Process& broker = fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  const StatusReply before = fleet.Status();

  zkfleet::fleet::ClientSecurity plaintext;
  plaintext.plaintext = true;
  // One request per client: after the refused handshake libzmq ends the
  // connection for good (no reconnect after a protocol error), and a second
  // send on that DEALER would block with no pipe to queue on.
  {
    zkfleet::client::internal::BrokerClient keyless(fleet.context(), fleet.client_endpoint(), plaintext, {}, "intruder");
    zkfleet::proto::Envelope status_request;
    status_request.mutable_status();
    ExpectNoReply([&] { keyless.Call(status_request, 1500ms); }, "STATUS without a key");
  }
  {
    zkfleet::client::internal::BrokerClient keyless(fleet.context(), fleet.client_endpoint(), plaintext, {}, "intruder");
    ExpectNoReply([&] { keyless.Submit(OneWitnessJob("c1", "keyless-1"), 1500ms); }, "SUBMIT without a key");
  }
  std::string out;
  EXPECT_EQ(RunCommand({BinaryPath("zkctl"), "--broker", fleet.client_endpoint(), "--insecure-plaintext",
                        "--client-id", "intruder", "--timeout", "1", "drain", "w1"},
                       &out),
            1)
      << out;
  EXPECT_TRUE(SaysRefused(out)) << out;

  // Nothing changed. A NULL-mechanism peer against a CURVE server fails the
  // ZMTP greeting (mechanism mismatch) inside libzmq before any ZAP request;
  // the broker counts it from its sockets' monitors as reason=mechanism.
  const StatusReply after =
      WaitStatus(fleet, [&](const StatusReply& s) { return s.auth_rejected_mechanism() >= 3; });
  EXPECT_GE(after.auth_rejected_mechanism(), 3u);  // two clients and zkctl, at least once each
  EXPECT_EQ(after.jobs_submitted(), before.jobs_submitted());
  EXPECT_EQ(after.next_job_seq(), before.next_job_seq());
  EXPECT_EQ(after.workers_size(), 1);
  EXPECT_TRUE(Ready(after, "w1")) << after.DebugString();
  EXPECT_EQ(after.requests_forbidden(), 0u);
  EXPECT_EQ(after.auth_rejected_unknown_key(), 0u);
  EXPECT_EQ(after.auth_rejected_wrong_endpoint(), 0u);
  EXPECT_NE(broker.Log().find("handshake failed before authentication"), std::string::npos) << broker.Log();
}

// 2. A client key in no allow-list: no reply, counted as unknown_key, nothing submitted.
TEST(FleetAuth, UnknownClientKeyIsRefusedAndCounted) {
  Fleet fleet("auth_unknown");
  fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  const StatusReply before = fleet.Status();
  ASSERT_EQ(before.auth_rejected_unknown_key(), 0u);

  auto stranger = fleet.Client({}, "stranger");
  ExpectNoReply([&] { stranger->Submit(OneWitnessJob("c1", "stranger-1"), 1500ms); }, "SUBMIT with an unknown key");
  std::string out;
  EXPECT_EQ(ZkctlAs(fleet, "stranger", {"drain", "w1"}, &out, "1"), 1) << out;
  EXPECT_TRUE(SaysRefused(out)) << out;

  const StatusReply after =
      WaitStatus(fleet, [](const StatusReply& s) { return s.auth_rejected_unknown_key() >= 2; });
  EXPECT_GE(after.auth_rejected_unknown_key(), 2u);  // the client's and zkctl's handshakes
  EXPECT_EQ(after.auth_rejected_wrong_endpoint(), 0u);
  EXPECT_EQ(after.jobs_submitted(), before.jobs_submitted());
  EXPECT_EQ(after.next_job_seq(), before.next_job_seq());
  EXPECT_EQ(after.requests_forbidden(), 0u);
  EXPECT_EQ(after.workers_size(), 1);
  EXPECT_TRUE(Ready(after, "w1")) << after.DebugString();
  // What an operator sees (zkctl status --json with the admin key).
  ASSERT_EQ(fleet.Zkctl({"status", "--json"}, &out), 0) << out;
  auto json = nlohmann::json::parse(out.substr(std::min(out.find('{'), out.size())), nullptr, false);
  ASSERT_TRUE(json.is_object()) << out;
  EXPECT_GE(json["auth"].value("rejected_unknown_key", 0u), 2u) << out;
  EXPECT_EQ(json["jobs"].value("submitted", 99u), 0u) << out;
}

// 3. Roles: submit may not drain nor read the status; observe may read but not submit.
TEST(FleetAuth, RolesAreEnforcedPerRequest) {
  Fleet fleet("auth_roles");
  fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  const std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;

  EXPECT_EQ(ZkctlAs(fleet, "alice", {"drain", "w1"}, &out), 1) << out;
  EXPECT_NE(out.find("FORBIDDEN"), std::string::npos) << out;
  EXPECT_NE(out.find("role submit"), std::string::npos) << out;
  StatusReply status = fleet.Status();
  EXPECT_EQ(status.requests_forbidden(), 1u);
  EXPECT_TRUE(Ready(status, "w1")) << status.DebugString();

  EXPECT_EQ(ZkctlAs(fleet, "alice", {"status"}, &out), 1) << out;
  EXPECT_NE(out.find("FORBIDDEN"), std::string::npos) << out;
  EXPECT_NE(out.find("role submit"), std::string::npos) << out;
  EXPECT_EQ(fleet.Status().requests_forbidden(), 2u);

  // observe: status and workers yes, submit no.
  ASSERT_EQ(ZkctlAs(fleet, "watcher", {"status"}, &out), 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(w1\s+fleet-worker\s+READY)"))) << out;
  ASSERT_EQ(ZkctlAs(fleet, "watcher", {"workers", "--json"}, &out), 0) << out;
  EXPECT_NE(out.find("\"worker_id\": \"w1\""), std::string::npos) << out;
  EXPECT_EQ(ZkctlAs(fleet, "watcher", {"submit", "--circuit", "c1", witness}, &out), 1) << out;
  EXPECT_NE(out.find("FORBIDDEN"), std::string::npos) << out;
  EXPECT_NE(out.find("role observe"), std::string::npos) << out;

  ASSERT_EQ(fleet.Zkctl({"status", "--json"}, &out), 0) << out;
  auto json = nlohmann::json::parse(out.substr(std::min(out.find('{'), out.size())), nullptr, false);
  ASSERT_TRUE(json.is_object()) << out;
  EXPECT_EQ(json["auth"].value("requests_forbidden", 0u), 3u) << out;
  status = fleet.Status();
  EXPECT_EQ(status.requests_forbidden(), 3u);
  EXPECT_EQ(status.jobs_submitted(), 0u);
  EXPECT_EQ(status.next_job_seq(), 1u);
  EXPECT_EQ(status.auth_rejected_unknown_key() + status.auth_rejected_wrong_endpoint() +
                status.auth_rejected_mechanism(),
            0u);
  ASSERT_EQ(status.workers_size(), 1);
  EXPECT_TRUE(Ready(status, "w1")) << status.DebugString();

  // The worker was never drained: it still proves (alice may submit).
  ASSERT_EQ(ZkctlAs(fleet, "alice", {"submit", "--circuit", "c1", "--wait", witness}, &out), 0) << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
  status = fleet.Status();
  EXPECT_EQ(status.jobs_completed(), 1u);
  EXPECT_TRUE(Ready(status, "w1")) << status.DebugString();
  EXPECT_EQ(FindWorker(status, "w1")->items_completed(), 1u);
  EXPECT_EQ(status.requests_forbidden(), 3u);
}

// 4. A submit key reads and cancels only its own jobs; an admin any.
TEST(FleetAuth, SubmitKeysOnlyTouchTheirOwnJobs) {
  Fleet fleet("auth_foreign");
  fleet.StartBroker({"--accept-unrouted"});  // no worker yet: the job stays queued
  const std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;

  ASSERT_EQ(ZkctlAs(fleet, "alice", {"submit", "--circuit", "c1", witness}, &out), 0) << out;
  EXPECT_NE(out.find("job 1 submitted"), std::string::npos) << out;

  // Another client's job answers exactly as one that does not exist (job 7).
  std::string unknown;
  EXPECT_NE(ZkctlAs(fleet, "bob", {"await", "7"}, &unknown), 0) << unknown;
  EXPECT_NE(unknown.find("UNKNOWN_JOB"), std::string::npos) << unknown;
  EXPECT_NE(ZkctlAs(fleet, "bob", {"await", "1"}, &out), 0) << out;
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;
  EXPECT_EQ(out.find("FOREIGN"), std::string::npos) << out;
  EXPECT_NE(ZkctlAs(fleet, "bob", {"cancel", "1"}, &out), 0) << out;
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;
  {
    auto bob = fleet.Client({}, "bob");
    try {
      bob->Cancel(1, 5s);
      ADD_FAILURE() << "bob cancelled alice's job";
    } catch (const zkfleet::client::internal::BrokerError& e) {
      EXPECT_EQ(e.kind(), zkfleet::proto::ERROR_KIND_UNKNOWN_JOB) << e.what();
    }
  }

  // Nothing changed: job 1 is still queued, not cancelled.
  StatusReply status = fleet.Status();
  EXPECT_EQ(status.jobs_submitted(), 1u);
  EXPECT_EQ(status.jobs_cancelled(), 0u);
  EXPECT_EQ(status.jobs_in_table(), 1u);
  uint64_t queued = 0;
  for (const auto& q : status.queues()) queued += q.depth();
  EXPECT_EQ(queued, 1u) << status.DebugString();

  // The admin may await it (a worker arrives and proves it).
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  ASSERT_EQ(fleet.Zkctl({"--timeout", "10", "await", "1"}, &out), 0) << out;
  EXPECT_NE(out.find("job 1  SUCCEEDED"), std::string::npos) << out;
  // And alice, its owner, too.
  ASSERT_EQ(ZkctlAs(fleet, "alice", {"await", "1"}, &out), 0) << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
  // Bob still may not, now that it has ended.
  EXPECT_NE(ZkctlAs(fleet, "bob", {"await", "1"}, &out), 0) << out;
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;
  status = fleet.Status();
  EXPECT_EQ(status.jobs_completed(), 1u);
  EXPECT_EQ(status.jobs_cancelled(), 0u);
}

// 5. Worker port: a key in no allow-list, and a client key, never register.
TEST(FleetAuth, RogueWorkerKeysNeverRegister) {
  Fleet fleet("auth_rogue");
  Process& broker = fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");

  fleet.StartWorker("rogue", {"--instant", "--circuit", "c1", "--curve-secret-key", fleet.SecretKeyFile("stranger"),
                              "--broker-public-key", fleet.broker_public_key()});
  StatusReply status = WaitStatus(fleet, [](const StatusReply& s) { return s.auth_rejected_unknown_key() >= 1; });
  EXPECT_GE(status.auth_rejected_unknown_key(), 1u);
  fleet.StartWorker("sneaky", {"--instant", "--circuit", "c1", "--curve-secret-key", fleet.SecretKeyFile("alice"),
                               "--broker-public-key", fleet.broker_public_key()});
  status = WaitStatus(fleet, [](const StatusReply& s) { return s.auth_rejected_wrong_endpoint() >= 1; });
  EXPECT_GE(status.auth_rejected_wrong_endpoint(), 1u);

  // A few seconds (many worker heartbeats and reconnection attempts): neither is ever listed.
  auto until = std::chrono::steady_clock::now() + 2500ms;
  while (std::chrono::steady_clock::now() < until) {
    status = fleet.Status();
    EXPECT_EQ(FindWorker(status, "rogue"), nullptr) << status.DebugString();
    EXPECT_EQ(FindWorker(status, "sneaky"), nullptr) << status.DebugString();
    if (::testing::Test::HasFailure()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(status.workers_size(), 1);
  EXPECT_TRUE(Ready(status, "w1")) << status.DebugString();
  EXPECT_EQ(status.jobs_submitted(), 0u);
  EXPECT_EQ(status.requests_forbidden(), 0u);
  const std::string log = broker.Log();
  EXPECT_EQ(log.find("worker rogue"), std::string::npos) << log;
  EXPECT_EQ(log.find("worker sneaky"), std::string::npos) << log;
  EXPECT_NE(log.find("unknown_key"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong_endpoint"), std::string::npos) << log;
}

// 6. Key rotation: SIGHUP adds a client key and retires the worker key; the
// connected worker stays, a new one with the retired key is refused.
TEST(FleetAuth, SighupRotationCutsRemovedKeysOff) {
  Fleet fleet("auth_rotation");
  Process& broker = fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  const std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;

  auto carol = zkfleet::fleet::GenerateCurveKeyPair();
  zkfleet::fleet::WriteKeyPair(fleet.key_dir(), "carol", carol);
  EXPECT_EQ(ZkctlAs(fleet, "carol", {"submit", "--circuit", "c1", witness}, &out, "1"), 1) << out;
  EXPECT_TRUE(SaysRefused(out)) << out;
  StatusReply status = WaitStatus(fleet, [](const StatusReply& s) { return s.auth_rejected_unknown_key() >= 1; });
  EXPECT_GE(status.auth_rejected_unknown_key(), 1u);
  EXPECT_EQ(status.jobs_submitted(), 0u);

  {
    std::ofstream entry(fleet.allow_dir() + "/clients/carol.pub");
    entry << "public-key = " << carol.public_z85 << "\nrole = submit\n";
  }
  broker.Signal(SIGHUP);
  ASSERT_TRUE(WaitReloads(broker, 1)) << broker.Log();
  ASSERT_EQ(ZkctlAs(fleet, "carol", {"submit", "--circuit", "c1", "--wait", witness}, &out), 0) << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
  status = fleet.Status();
  EXPECT_EQ(status.jobs_submitted(), 1u);
  EXPECT_EQ(status.jobs_completed(), 1u);

  // Retire the worker key: w1's live connection is cut off (issue 27: a
  // removed key is served no more), and a new worker with it is refused at
  // its handshake.
  const uint64_t unknown_before = status.auth_rejected_unknown_key();
  ASSERT_TRUE(std::filesystem::remove(fleet.allow_dir() + "/workers/fleet-worker.pub"));
  broker.Signal(SIGHUP);
  ASSERT_TRUE(WaitReloads(broker, 2)) << broker.Log();
  status = WaitStatus(fleet, [](const StatusReply& s) { return FindWorker(s, "w1") == nullptr; });
  EXPECT_EQ(FindWorker(status, "w1"), nullptr) << status.DebugString();
  fleet.StartWorker("w2", {"--instant", "--circuit", "c1"});
  status = WaitStatus(fleet,
                      [&](const StatusReply& s) { return s.auth_rejected_unknown_key() > unknown_before; });
  EXPECT_GT(status.auth_rejected_unknown_key(), unknown_before);
  auto until = std::chrono::steady_clock::now() + 1500ms;
  while (std::chrono::steady_clock::now() < until) {
    status = fleet.Status();
    EXPECT_EQ(FindWorker(status, "w2"), nullptr) << status.DebugString();
    EXPECT_EQ(FindWorker(status, "w1"), nullptr) << status.DebugString();
    if (::testing::Test::HasFailure()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(status.workers_size(), 0);
  EXPECT_EQ(broker.Log().find("worker w2 registered"), std::string::npos) << broker.Log();
}

// 7. A real proof end to end over CURVE; the worker is known by its key's name.
TEST(FleetAuth, RealProofOverCurve) {
  Fleet fleet("auth_real");
  Process& broker = fleet.StartBroker();
  ASSERT_FALSE(fleet.plaintext());
  fleet.StartWorker("prover", {"--circuit", "bn128=" + Fixture("bn128_k12/circuit_final.zkey"), "--threads", "1"});
  fleet.WaitWorkerReady("prover");
  std::string out;
  ASSERT_EQ(ZkctlAs(fleet, "alice",
                    {"submit", "--circuit", "bn128", "--wait", "--out", fleet.dir() + "/out",
                     Fixture("bn128_k12/witness.wtns")},
                    // A real proof on one thread of a loaded machine: the
                    // wait ends with the result, the bound only stops a hang.
                    &out, std::to_string(zkfleet::testing::Scaled(60s).count() / 1000)),
            0)
      << out;
  EXPECT_NE(out.find("SUCCEEDED"), std::string::npos) << out;
  EXPECT_NE(ReadFile(fleet.dir() + "/out/proof_0.json").find("pi_a"), std::string::npos);

  StatusReply status = fleet.Status();
  const auto* prover = FindWorker(status, "prover");
  ASSERT_NE(prover, nullptr) << status.DebugString();
  EXPECT_EQ(prover->key_name(), "fleet-worker");
  EXPECT_EQ(status.jobs_completed(), 1u);
  EXPECT_NE(broker.Log().find("worker prover registered: key=fleet-worker"), std::string::npos) << broker.Log();

  ASSERT_EQ(fleet.Zkctl({"workers", "--json"}, &out), 0) << out;
  auto workers = nlohmann::json::parse(out.substr(std::min(out.find('['), out.size())), nullptr, false);
  ASSERT_TRUE(workers.is_array() && workers.size() == 1) << out;
  EXPECT_EQ(workers[0].value("worker_id", ""), "prover") << out;
  EXPECT_EQ(workers[0].value("key_name", ""), "fleet-worker") << out;
}

}  // namespace
}  // namespace fleet_test
