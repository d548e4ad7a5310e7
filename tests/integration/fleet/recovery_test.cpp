// Lost workers, dead letters, idempotent resubmission.
#include <gtest/gtest.h>

#include <csignal>
#include <map>

#include <nlohmann/json.hpp>

#include "fleet_harness.hpp"
#include "zkfleet/wire/names.hpp"

namespace fleet_test {
namespace {

namespace proto = zkfleet::proto;

zkfleet::client::internal::JobSubmission Request(const std::string& id, const std::string& circuit, const std::string& witness,
                                      int partitions = 1, proto::Priority priority = proto::PRIORITY_NORMAL) {
  zkfleet::client::internal::JobSubmission job;
  job.request.set_request_id(id);
  job.request.set_circuit_id(circuit);
  job.request.set_priority(priority);
  for (int p = 0; p < partitions; ++p) job.witnesses.push_back(witness);
  return job;
}

// kill -9 of a worker in the middle of a real proof: everything it held is
// proved by another worker, each job answered once.
TEST(FleetRecovery, KilledWorkersJobsFinishElsewhere) {
  Fleet fleet("kill9");
  fleet.StartBroker();
  const std::string zkey = "bn128=" + Fixture("bn128_k12/circuit_final.zkey");
  Process& victim = fleet.StartWorker("victim", {"--circuit", zkey, "--threads", "1", "--capacity", "4"});
  fleet.WaitWorkerReady("victim");

  auto client = fleet.Client();
  const std::string witness = ReadFile(Fixture("bn128_k12/witness.wtns"));
  std::map<uint64_t, int> answers;
  for (int j = 0; j < 3; ++j) answers[client->Submit(Request("k" + std::to_string(j), "bn128", witness, 2), 5s).job_seq()] = 0;

  // The victim starts proving its first item: kill it right there.
  ASSERT_TRUE(victim.WaitForLog("processing priority=NORMAL job_seq=1 partition=0", 10s));
  victim.Kill9();
  // The item it was proving when it died: its last "processing" line.
  auto victim_lines = ProcessingLines(victim.Log());
  ASSERT_FALSE(victim_lines.empty());
  const Processed killed = victim_lines.back();
  Process& rescuer = fleet.StartWorker("rescuer", {"--circuit", zkey, "--threads", "1", "--capacity", "4"});

  std::vector<proto::JobResult> results;
  for (size_t i = 0; i < answers.size(); ++i) {
    auto result = client->NextJobResult(30s);
    ASSERT_TRUE(result) << "lost a job; rescuer log:\n" << rescuer.Log();
    ++answers[result->job_seq()];
    results.push_back(*result);
  }
  EXPECT_FALSE(client->NextJobResult(500ms).has_value()) << "a job was answered twice";
  for (const auto& [seq, count] : answers) EXPECT_EQ(count, 1) << "job " << seq;
  // A second copy never reaches the counts above (the client drops it): the
  // broker ran throughout, so it may not have sent one at all.
  ExpectNoResultCopies(*client);

  bool saw_redelivery = false;
  for (const auto& result : results) {
    ASSERT_EQ(result.state(), proto::JOB_STATE_SUCCEEDED) << result.error();
    for (const auto& p : result.partitions()) {
      if (result.job_seq() == killed.job_seq && p.partition() == killed.partition) {
        // The item being proved at the kill: a second attempt, elsewhere.
        EXPECT_EQ(p.worker_id(), "rescuer");
        EXPECT_EQ(p.attempts(), 2u);
        saw_redelivery = true;
        EXPECT_TRUE(SnarkjsVerifies(Fixture("bn128_k12/verification_key.json"), p.proof_json(), p.public_json(),
                                    fleet.dir()));
      }
    }
  }
  EXPECT_TRUE(saw_redelivery);
  EXPECT_GE(fleet.Status().items_redelivered(), 1u);
}

// A job whose worker dies on every attempt is dead-lettered after
// --max-attempts, with the reason.
TEST(FleetRecovery, JobThatKillsEveryWorkerIsDeadLettered) {
  Fleet fleet("deadletter");
  fleet.StartBroker({"--max-attempts", "2"});
  std::vector<std::string> args = {"--instant", "--instant-delay-ms", "30000", "--circuit", "c1"};
  Process& first = fleet.StartWorker("doomed-1", args);
  fleet.WaitWorkerReady("doomed-1");
  auto client = fleet.Client();
  uint64_t seq = client->Submit(Request("poison", "c1", "w"), 5s).job_seq();

  ASSERT_TRUE(first.WaitForLog("processing .*job_seq=" + std::to_string(seq), 10s));
  // Killed mid-proof, once the broker counts the attempt (its STARTED arrived).
  ASSERT_TRUE(WaitForAttempts(fleet, seq, 0, 1, 10s));
  first.Kill9();
  Process& second = fleet.StartWorker("doomed-2", args);
  ASSERT_TRUE(second.WaitForLog("processing .*job_seq=" + std::to_string(seq) + " partition=0 attempt=2", 10s));
  ASSERT_TRUE(WaitForAttempts(fleet, seq, 0, 2, 10s));
  second.Kill9();

  auto result = client->NextJobResult(10s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->job_seq(), seq);
  EXPECT_EQ(result->state(), proto::JOB_STATE_DEAD_LETTERED);
  EXPECT_NE(result->error().find("--max-attempts 2"), std::string::npos) << result->error();
  EXPECT_EQ(fleet.Status().jobs_dead_lettered(), 1u);

  // And it never loops: a fresh worker gets nothing of it. "Nothing" is
  // known once the broker has served that worker: a control job, submitted
  // after the poison and of its priority, is queued behind any item of the
  // poison's (a returned item keeps its original key), so by the time the
  // worker proves the control it would have been handed the poison first.
  Process& third = fleet.StartWorker("fresh", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("fresh");
  const uint64_t control = client->Submit(Request("control", "c1", "w"), 5s).job_seq();
  auto control_result = client->NextJobResult(10s);
  ASSERT_TRUE(control_result) << "the control job never came back; worker log:\n" << third.Log();
  EXPECT_EQ(control_result->job_seq(), control);
  EXPECT_EQ(control_result->state(), proto::JOB_STATE_SUCCEEDED) << control_result->error();
  const auto served = ProcessingLines(third.Log());
  ASSERT_EQ(served.size(), 1u) << third.Log();
  EXPECT_EQ(served[0].job_seq, control);
  // The broker's own count agrees: two started attempts (the two kills) and
  // one redelivery (after the first), none since the dead letter.
  const proto::JobInfo info = client->GetJob(seq, 5s);
  EXPECT_EQ(info.state(), proto::JOB_STATE_DEAD_LETTERED);
  EXPECT_EQ(info.max_attempts_used(), 2u);
  EXPECT_EQ(fleet.Status().items_redelivered(), 1u);
  ExpectNoResultCopies(*client);
}

// Resubmitting a request id returns the existing job and result without
// proving again (through zkctl, which also tests its --json output).
TEST(FleetRecovery, ResubmittedRequestIdDoesNotProveAgain) {
  Fleet fleet("idempotent");
  fleet.StartBroker();
  Process& worker = fleet.StartWorker("w", {"--circuit", "bn128=" + Fixture("bn128_k12/circuit_final.zkey"),
                                            "--threads", "1"});
  fleet.WaitWorkerReady("w");
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string first_out, second_out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--json", "--circuit", "bn128", "--request-id", "same-id", "--out",
                         fleet.dir() + "/out", witness},
                        &first_out),
            0)
      << first_out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--json", "--circuit", "bn128", "--request-id", "same-id", "--wait", witness},
                        &second_out),
            0)
      << second_out;
  EXPECT_NE(first_out.find("\"state\": \"SUCCEEDED\""), std::string::npos) << first_out;
  // The same job, the same proof.
  EXPECT_NE(second_out.find("\"job_seq\": 1"), std::string::npos) << second_out;
  std::string proof = ReadFile(fleet.dir() + "/out/proof_0.json");
  ASSERT_FALSE(proof.empty());
  // The same client identity and payload through the C++ client: the same job.
  auto client = fleet.Client();
  auto again = client->Submit(Request("same-id", "bn128", ReadFile(witness)), 5s);
  EXPECT_TRUE(again.duplicate());
  auto result = client->NextJobResult(5s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->partitions(0).proof_json(), proof);
  EXPECT_EQ(ProcessingLines(worker.Log()).size(), 1u) << "proved more than once";
  EXPECT_EQ(fleet.Status().jobs_submitted(), 1u);
  EXPECT_TRUE(SnarkjsVerifies(Fixture("bn128_k12/verification_key.json"), proof,
                              ReadFile(fleet.dir() + "/out/public_0.json"), fleet.dir()));
}

// Paranoid Pirate: the broker dies and comes back on the same ports; the
// worker notices the silence, reconnects and registers again by itself.
TEST(FleetRecovery, WorkerReconnectsToARestartedBroker) {
  Fleet fleet("reconnect");
  Process& broker = fleet.StartBroker();
  Process& worker = fleet.StartWorker("pirate", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("pirate");
  broker.Kill9();
  // Silence for 3 heartbeat intervals: the worker starts over on a new socket.
  ASSERT_TRUE(worker.WaitForLog("reconnecting to the broker .*no message for 300 ms", 5s))
      << worker.Log();
  fleet.StartBroker();
  fleet.WaitWorkerReady("pirate");
  auto client = fleet.Client();
  uint64_t seq = client->Submit(Request("after-restart", "c1", "w"), 5s).job_seq();
  auto result = client->NextJobResult(5s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->job_seq(), seq);
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED);
}

// A broker restarted with default options, before any worker has come back:
// a SUBMIT for a circuit its fleet served is queued (not refused for good
// with UNKNOWN_CIRCUIT), and proved when the worker reconnects. A circuit no
// worker ever announced is still refused.
TEST(FleetRecovery, ASubmitJustAfterABrokerRestartWaitsForItsWorker) {
  Fleet fleet("restart_grace", /*heartbeat_ms=*/1000);  // the broker's default heartbeat
  Process& broker = fleet.StartBroker();
  Process& worker = fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  worker.Kill9();
  broker.Kill9();
  fleet.StartBroker();  // no worker connected
  auto client = fleet.Client();
  const auto reply = client->Submit(Request("just-after-restart", "c1", "w"), 5s);
  EXPECT_EQ(reply.state(), proto::JOB_STATE_QUEUED);
  try {
    client->Submit(Request("never-served", "c-unknown", "w"), 5s);
    ADD_FAILURE() << "a circuit no worker ever announced was accepted";
  } catch (const zkfleet::client::internal::BrokerError& e) {
    EXPECT_EQ(e.kind(), proto::ERROR_KIND_UNKNOWN_CIRCUIT) << e.what();
  }
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  auto result = client->NextJobResult(30s);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->job_seq(), reply.job_seq());
  EXPECT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED);
}

// A broker whose flags fail (an endpoint it cannot bind, an allow-list
// directory that is not there) exits before it opens its journal: the epoch
// is not bumped, nothing is written.
TEST(FleetRecovery, ABrokerThatCannotStartLeavesItsJournalAlone) {
  Fleet fleet("bad_flag_journal");
  Process& broker = fleet.StartBroker();
  fleet.Status();  // it serves
  broker.Signal(SIGTERM);
  ASSERT_TRUE(broker.WaitExit(10s));
  auto epoch = [&] {
    std::string out;
    EXPECT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "--data-dir", fleet.broker_data_dir(), "--json"}, &out), 0)
        << out;
    auto parsed = nlohmann::json::parse(out.substr(out.find('{')), nullptr, false);
    return parsed.is_object() ? parsed.value("epoch", 0u) : 0u;
  };
  const unsigned before = epoch();
  ASSERT_GE(before, 1u);
  std::string out;
  EXPECT_NE(RunCommand({BinaryPath("zkbroker"), "--data-dir", fleet.broker_data_dir(), "--insecure-plaintext",
                        "--clients", "tcp://127.0.0.1:notaport"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("notaport"), std::string::npos) << out;
  EXPECT_NE(RunCommand({BinaryPath("zkbroker"), "--data-dir", fleet.broker_data_dir(), "--curve-secret-key",
                        fleet.SecretKeyFile("broker"), "--allow-dir", fleet.dir() + "/no-such-allow-dir"},
                       &out),
            0)
      << out;
  EXPECT_NE(out.find("no-such-allow-dir"), std::string::npos) << out;
  EXPECT_EQ(epoch(), before) << "a broker that could not start bumped the journal's epoch";
}

// zkctl submit --wait and zkctl await keep waiting through a broker crash:
// the job was durable when it was accepted, the worker keeps proving it and
// claims its lease from the restarted broker, and the clients' connections
// resend their waits. Each gets the result once.
TEST(FleetRecovery, ZkctlWaitAndAwaitSurviveABrokerKill) {
  Fleet fleet("zkctl-restart");
  Process* broker = &fleet.StartBroker();
  Process& worker = fleet.StartWorker("w", {"--instant", "--circuit", "c1", "--instant-delay-ms", "2000"});
  fleet.WaitWorkerReady("w");
  const std::string witness = Fixture("bn128_k12/witness.wtns");
  auto zkctl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {BinaryPath("zkctl")};
    auto connection = fleet.ZkctlConnection();
    argv.insert(argv.end(), connection.begin(), connection.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  Process submit(zkctl({"--json", "submit", "--circuit", "c1", "--request-id", "survivor", "--wait", witness}),
                 fleet.dir() + "/zkctl-submit.log");
  ASSERT_TRUE(worker.WaitForLog("processing priority=NORMAL job_seq=1 partition=0", 10s)) << worker.Log();
  Process await(zkctl({"--json", "await", "1"}), fleet.dir() + "/zkctl-await.log");
  std::this_thread::sleep_for(300ms);  // both clients are waiting; the proof is running

  broker->Kill9();
  std::this_thread::sleep_for(200ms);
  broker = &fleet.StartBroker();
  ASSERT_TRUE(broker->WaitForLog("1 live jobs recovered", 5s)) << broker->Log();

  for (Process* zkctl : {&submit, &await}) {
    auto code = zkctl->WaitExit(zkfleet::testing::Scaled(20s));
    ASSERT_TRUE(code.has_value()) << "zkctl still waiting:\n" << zkctl->Log();
    EXPECT_EQ(*code, 0) << zkctl->Log();
    EXPECT_NE(zkctl->Log().find("\"state\": \"SUCCEEDED\""), std::string::npos) << zkctl->Log();
    EXPECT_NE(zkctl->Log().find("\"job_seq\": 1"), std::string::npos) << zkctl->Log();
  }
  // Proved once: the worker kept its lease across the restart.
  EXPECT_EQ(ProcessingLines(worker.Log()).size(), 1u) << worker.Log();
  EXPECT_NE(broker->Log().find("still proving 1 leased item"), std::string::npos) << broker->Log();
  EXPECT_EQ(fleet.Status().results_stale(), 0u);
}

// The broker is SIGKILLed after it leased an item that the worker is proving
// but before its journal recorded the start (the worker withholds STARTED:
// --test-hold-started-ms). The restarted broker finds the item queued and
// leases it again, to the same worker, which keeps the run it has (the JOB is
// a duplicate there): that run's result must answer the new lease, or the
// broker drops it as stale and the job never finishes.
TEST(FleetRecovery, ItemLeasedAgainWhileRunningAfterABrokerKillFinishesOnce) {
  Fleet fleet("relase");
  Process* broker = &fleet.StartBroker();
  // The proof lasts long enough for the restarted broker to lease the item
  // again before it ends (checked below); capacity 2 leaves the worker credit
  // for that second lease while it proves the first.
  const auto proof_ms = zkfleet::testing::Scaled(5s).count();
  Process& worker = fleet.StartWorker("w", {"--instant", "--circuit", "c1", "--instant-delay-ms",
                                            std::to_string(proof_ms), "--capacity", "2",
                                            "--test-hold-started-ms", "600000"});
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();
  const uint64_t seq = client->Submit(Request("leased-twice", "c1", "w"), 5s).job_seq();
  const std::string item = "job_seq=" + std::to_string(seq) + " partition=0";

  // Proving, and its STARTED withheld: the broker never hears of the start.
  ASSERT_TRUE(worker.WaitForLog("STARTED of " + item + " withheld", 10s)) << worker.Log();
  broker->Kill9();
  // The journal the restarted broker reads: the item is not STARTED.
  std::string journal;
  ASSERT_EQ(fleet.Zkctl({"--json", "journal", "--data-dir", fleet.broker_data_dir(), "--job", std::to_string(seq)},
                        &journal),
            0)
      << journal;
  const size_t start = journal.find('{');
  const auto parsed = nlohmann::json::parse(start == std::string::npos ? std::string() : journal.substr(start),
                                            nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(parsed.is_object()) << journal;
  for (const auto& stored : parsed.value("items", nlohmann::json::array())) {
    if (stored.value("partition", 0u) != 0u) continue;
    EXPECT_EQ(stored.value("state", ""), "QUEUED") << journal;
    EXPECT_EQ(stored.value("attempts", 0u), 0u) << journal;
  }

  broker = &fleet.StartBroker();
  ASSERT_TRUE(broker->WaitForLog("1 live jobs recovered \\(1 items queued, 0 started", 5s)) << broker->Log();
  // The worker comes back with the item in progress under its old lease; the
  // broker, which never saw it start, leases it again, to this worker, while
  // the first run still goes on.
  ASSERT_TRUE(worker.WaitForLog(item + " is already queued or running here", 10s))
      << "the item was not leased again during its run; worker log:\n"
      << worker.Log() << "\nbroker log:\n"
      << broker->Log();

  auto result = client->NextJobResult(zkfleet::testing::Scaled(20s));
  ASSERT_TRUE(result) << "the job never finished; worker log:\n" << worker.Log() << "\nbroker log:\n" << broker->Log();
  EXPECT_EQ(result->job_seq(), seq);
  ASSERT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  ASSERT_EQ(result->partitions_size(), 1);
  EXPECT_EQ(result->partitions(0).worker_id(), "w");
  EXPECT_EQ(result->partitions(0).attempts(), 1u);
  EXPECT_FALSE(client->NextJobResult(500ms).has_value()) << "the job was answered twice";
  // The broker was restarted, but no copy is tolerated: a copy needs a
  // result the client asked for twice, and the job had none before the kill
  // (its proof was running), so the re-AWAIT the client sent on reconnecting
  // is the job's only waiter in the new broker's life.
  EXPECT_EQ(client->duplicate_results_dropped(), 0u) << "the restarted broker answered the job twice";
  // Proved once: the second lease was answered by the first run.
  EXPECT_EQ(ProcessingLines(worker.Log()).size(), 1u) << worker.Log();
  const auto status = fleet.Status();
  EXPECT_EQ(status.results_stale(), 0u);
  EXPECT_EQ(status.jobs_completed(), 1u);
  EXPECT_EQ(status.jobs_recovered(), 1u);
}

// The same restart, but the item's run ends before the broker can lease it
// again (capacity 1: no credit while it is held), and its result, under the
// old lease, is dropped as stale. The worker's credit then brings the new
// lease while the pipeline has not yet taken the run off the queue's running
// set (--test-hold-result-ms widens that moment, seen once in 500 jobs of
// the chaos test): the new lease must be proved again, not taken for the run
// already answered, or the job waits forever.
TEST(FleetRecovery, ItemLeasedAgainAfterItsStaleResultIsProvedAgain) {
  Fleet fleet("relase-after");
  Process* broker = &fleet.StartBroker();
  const auto proof_ms = zkfleet::testing::Scaled(2s).count();
  const auto hold_ms = zkfleet::testing::Scaled(3s).count();
  Process& worker = fleet.StartWorker(
      "w", {"--instant", "--circuit", "c1", "--instant-delay-ms", std::to_string(proof_ms), "--capacity", "1",
            "--test-hold-started-ms", "600000", "--test-hold-result-ms", std::to_string(hold_ms)});
  fleet.WaitWorkerReady("w");
  auto client = fleet.Client();
  const uint64_t seq = client->Submit(Request("stale-then-leased", "c1", "w"), 5s).job_seq();
  const std::string item = "job_seq=" + std::to_string(seq) + " partition=0";

  ASSERT_TRUE(worker.WaitForLog("STARTED of " + item + " withheld", 10s)) << worker.Log();
  broker->Kill9();
  broker = &fleet.StartBroker();
  ASSERT_TRUE(broker->WaitForLog("1 live jobs recovered \\(1 items queued, 0 started", 5s)) << broker->Log();

  auto result = client->NextJobResult(zkfleet::testing::Scaled(30s));
  ASSERT_TRUE(result) << "the job never finished; worker log:\n" << worker.Log() << "\nbroker log:\n" << broker->Log();
  EXPECT_EQ(result->job_seq(), seq);
  ASSERT_EQ(result->state(), proto::JOB_STATE_SUCCEEDED) << result->error();
  EXPECT_FALSE(client->NextJobResult(500ms).has_value()) << "the job was answered twice";
  // No copy tolerated across the restart, as above: no result before the
  // kill, one re-AWAIT after it.
  EXPECT_EQ(client->duplicate_results_dropped(), 0u) << "the restarted broker answered the job twice";
  // The first run's result came under the lease the restarted broker did not
  // know; the second run answered the new one.
  EXPECT_NE(broker->Log().find("dropped a stale result from worker w for " + item), std::string::npos)
      << broker->Log();
  EXPECT_EQ(ProcessingLines(worker.Log()).size(), 2u) << worker.Log();
}

}  // namespace
}  // namespace fleet_test
