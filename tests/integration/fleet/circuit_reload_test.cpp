// Circuits added to and removed from a running worker (issue 49, item 4):
// zkworker rereads its circuit flags and --config on SIGHUP, loads what is
// new beside the proofs it runs, hands back what goes, and announces the
// change in a new READY. The broker routes by what it announced.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;
using zkfleet::testing::WriteFile;

// The circuits the broker says `worker_id` announced, sorted ("" when absent).
std::vector<std::string> AnnouncedCircuits(Fleet& fleet, const std::string& worker_id) {
  const proto::StatusReply status = fleet.Status();
  for (const auto& w : status.workers()) {
    if (w.worker_id() != worker_id) continue;
    std::vector<std::string> circuits(w.circuits().begin(), w.circuits().end());
    std::sort(circuits.begin(), circuits.end());
    return circuits;
  }
  return {};
}

bool WaitAnnounced(Fleet& fleet, const std::string& worker_id, const std::vector<std::string>& circuits) {
  const auto until = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(30s);
  while (std::chrono::steady_clock::now() < until) {
    if (AnnouncedCircuits(fleet, worker_id) == circuits) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

size_t CountMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

std::string Toml(const std::vector<std::string>& circuits) {
  std::string list;
  for (const std::string& c : circuits) list += (list.empty() ? "\"" : ", \"") + c + "\"";
  return "circuit = [" + list + "]\n";
}

TEST(CircuitReload, SighupAddsARealCircuitBesideTheOneProvingAndRemovesOne) {
  // (and an admin's zkctl reload --workers does what SIGHUP does)
  Fleet fleet("circuit_reload");
  Process& broker = fleet.StartBroker();
  const std::string zkey = Fixture("bn128_k12/circuit_final.zkey");
  const std::string config = fleet.dir() + "/worker.toml";
  WriteFile(config, Toml({"first=" + zkey}));
  Process& worker = fleet.StartWorker("w", {"--config", config, "--backend", "cpu", "--threads", "1"});
  fleet.WaitWorkerReady("w");
  ASSERT_EQ(AnnouncedCircuits(fleet, "w"), (std::vector<std::string>{"first"}));
  auto client = fleet.Client();
  const std::string witness = ReadFile(Fixture("bn128_k12/witness.wtns"));
  auto prove = [&](const std::string& circuit, const std::string& request_id) {
    proto::SubmitRequest request;
    request.set_request_id(request_id);
    request.set_circuit_id(circuit);
    const auto reply = client->Submit(request, {witness}, 10s);
    auto result = client->NextJobResult(reply.job_seq(), zkfleet::testing::Scaled(120s));
    return result ? *result : proto::JobResult();
  };
  ASSERT_EQ(prove("first", "before").state(), proto::JOB_STATE_SUCCEEDED);

  // A second circuit in the file: loaded while the worker serves, then announced.
  WriteFile(config, Toml({"first=" + zkey, "second=" + zkey}));
  worker.Signal(SIGHUP);
  ASSERT_TRUE(worker.WaitForLog("circuits reloaded: the worker holds first, second now", 60s)) << worker.Log();
  ASSERT_TRUE(WaitAnnounced(fleet, "w", {"first", "second"})) << worker.Log();
  const proto::JobResult second = prove("second", "on-second");
  ASSERT_EQ(second.state(), proto::JOB_STATE_SUCCEEDED) << second.error() << worker.Log();
  ASSERT_EQ(second.partitions_size(), 1);
  EXPECT_TRUE(SnarkjsVerifies(Fixture("bn128_k12/verification_key.json"), second.partitions(0).proof_json(),
                              second.partitions(0).public_json(), fleet.dir()));

  // The first circuit leaves: READY without it, its key freed; the other proves on.
  WriteFile(config, Toml({"second=" + zkey}));
  worker.Signal(SIGHUP);
  ASSERT_TRUE(worker.WaitForLog("circuits reloaded: the worker holds second now", 60s)) << worker.Log();
  ASSERT_TRUE(WaitAnnounced(fleet, "w", {"second"})) << worker.Log();
  EXPECT_EQ(prove("second", "after").state(), proto::JOB_STATE_SUCCEEDED) << worker.Log();

  // A file that names a missing key changes nothing and says why.
  WriteFile(config, Toml({"second=" + zkey, "third=" + fleet.dir() + "/missing.zkey"}));
  worker.Signal(SIGHUP);
  ASSERT_TRUE(worker.WaitForLog("circuits not reloaded \\(nothing changes\\): --circuit third=.*no such file", 20s))
      << worker.Log();
  EXPECT_EQ(AnnouncedCircuits(fleet, "w"), (std::vector<std::string>{"second"}));
  // The same through the broker, for a host where sending a signal is not
  // at hand: an admin's `zkctl reload --workers w`.
  WriteFile(config, Toml({"second=" + zkey, "third=" + zkey}));
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"reload", "--workers", "w"}, &out), 0) << out;
  EXPECT_NE(out.find("worker w told to read its circuits again"), std::string::npos) << out;
  ASSERT_TRUE(worker.WaitForLog("circuits reloaded: the worker holds second, third now", 60s)) << worker.Log();
  ASSERT_TRUE(WaitAnnounced(fleet, "w", {"second", "third"})) << worker.Log();
  EXPECT_EQ(fleet.Zkctl({"reload", "--workers", "nobody"}, &out), 1) << out;
  EXPECT_NE(out.find("no worker nobody is connected"), std::string::npos) << out;
  EXPECT_TRUE(worker.running()) << "the worker left: " << worker.Log();
  // The broker took each new READY as an update: one registration, two
  // announcements, no worker removed (nor lost: that feeds an alert).
  EXPECT_EQ(CountMatches(broker.Log(), "worker w registered"), 1u) << broker.Log();
  EXPECT_EQ(CountMatches(broker.Log(), "worker w announces circuits="), 3u) << broker.Log();
  EXPECT_EQ(CountMatches(broker.Log(), "worker w removed"), 0u) << broker.Log();
}

}  // namespace
}  // namespace fleet_test
