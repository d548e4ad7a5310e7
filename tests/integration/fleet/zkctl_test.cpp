// zkctl's other subcommands: status, workers, await, cancel, journal, client
// identities, deadlines, BUSY, and its errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

TEST(Zkctl, StatusWorkersAwaitCancel) {
  Fleet fleet("zkctl");
  fleet.StartBroker();
  // Job 3 must be queued before job 1's item ends (else job 2 starts first):
  // the delay grows with the sanitizers' slower zkctl starts.
  const std::string delay_ms = std::to_string(static_cast<int>(400 * std::max(1.0, zkfleet::testing::TimeScale())));
  fleet.StartWorker("slowpoke", {"--instant", "--instant-delay-ms", delay_ms, "--circuit", "c1", "--capacity", "1"});
  fleet.WaitWorkerReady("slowpoke");
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;

  // Three jobs; the first occupies the worker (capacity 1), the others wait.
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--priority", "high", witness}, &out), 0) << out;
  EXPECT_NE(out.find("job 1 submitted"), std::string::npos) << out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--priority", "low", witness, witness}, &out), 0) << out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", witness}, &out), 0) << out;

  ASSERT_EQ(fleet.Zkctl({"status"}, &out), 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(LOW\s+2\s+\d+\.\d)"))) << out;     // 2 items of job 2 queued
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(NORMAL\s+1\s+\d+\.\d)"))) << out;  // job 3
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(slowpoke\s+fleet-worker\s+READY\s+\S+\s+instant\s+c1\s+1\s+0\s+1)"))) << out;

  ASSERT_EQ(fleet.Zkctl({"workers", "--json"}, &out), 0) << out;
  EXPECT_NE(out.find("\"worker_id\": \"slowpoke\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"state\": \"READY\""), std::string::npos) << out;

  ASSERT_EQ(fleet.Zkctl({"cancel", "2"}, &out), 0) << out;
  EXPECT_NE(out.find("job 2 cancelled"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"await", "2"}, &out), 3) << out;  // ended, but not SUCCEEDED
  EXPECT_NE(out.find("CANCELLED"), std::string::npos) << out;

  ASSERT_EQ(fleet.Zkctl({"await", "3", "--out", fleet.dir() + "/out3"}, &out), 0) << out;
  EXPECT_NE(out.find("job 3  SUCCEEDED"), std::string::npos) << out;
  EXPECT_NE(ReadFile(fleet.dir() + "/out3/proof_0.json").find("benchmark"), std::string::npos);

  EXPECT_EQ(fleet.Zkctl({"await", "99"}, &out), 5) << out;  // unknown job: its own exit code
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"drain", "nobody"}, &out), 1) << out;
  EXPECT_NE(out.find("UNKNOWN_WORKER"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--priority", "urgent", witness}, &out), 2) << out;  // usage
  EXPECT_NE(out.find("--priority urgent"), std::string::npos) << out;
}

TEST(Zkctl, NoBrokerIsAClearError) {
  std::string out;
  int code = RunCommand({BinaryPath("zkctl"), "--broker", "tcp://127.0.0.1:" + std::to_string(FreePort()),
                         "--insecure-plaintext", "--timeout", "0.3", "status"},
                        &out);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("no reply from the broker"), std::string::npos) << out;
}

// CURVE is on by default: without keys (and without --insecure-plaintext)
// each program says what it needs and exits before touching the network.
TEST(Zkctl, WithoutKeysEveryProgramSaysWhatItNeeds) {
  std::string out;
  int code = RunCommand({"/usr/bin/env", "-u", "ZKFLEET_CURVE_SECRET_KEY", "-u", "ZKFLEET_BROKER_PUBLIC_KEY",
                         BinaryPath("zkctl"), "--broker", "tcp://127.0.0.1:" + std::to_string(FreePort()), "status"},
                        &out);
  EXPECT_EQ(code, 2);  // a usage error: nothing was sent
  EXPECT_NE(out.find("--curve-secret-key"), std::string::npos) << out;
  EXPECT_NE(out.find("--insecure-plaintext"), std::string::npos) << out;
  code = RunCommand({BinaryPath("zkbroker"), "--data-dir", ::testing::TempDir() + "/never-created"}, &out);
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--allow-dir"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(::testing::TempDir() + "/never-created"));
  code = RunCommand({BinaryPath("zkworker"), "--instant", "--circuit", "c1"}, &out);
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--broker-public-key"), std::string::npos) << out;
}

// A mistyped --circuit path is a configuration error (exit 2, naming the
// path) found before the worker connects: it never registers.
TEST(Zkctl, AWorkerWithAMistypedCircuitPathNeverRegisters) {
  Fleet fleet("worker_bad_circuit");
  fleet.StartBroker();
  std::string out;
  int code = RunCommand({BinaryPath("zkworker"), "--broker", fleet.worker_endpoint(), "--curve-secret-key",
                         fleet.SecretKeyFile("fleet-worker"), "--broker-public-key", fleet.broker_public_key(),
                         "--circuit", "c1=" + fleet.dir() + "/no-such.zkey"},
                        &out);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--circuit c1=" + fleet.dir() + "/no-such.zkey: no such file"), std::string::npos) << out;
  code = RunCommand({BinaryPath("zkworker"), "--broker", fleet.worker_endpoint(), "--curve-secret-key",
                     fleet.SecretKeyFile("fleet-worker"), "--broker-public-key", fleet.broker_public_key(),
                     "--circuit", "c1=" + Fixture("bn128_k12/witness.wtns")},
                    &out);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("is not a .zkey"), std::string::npos) << out;
  EXPECT_EQ(fleet.Status().workers_size(), 0) << "a worker with a bad --circuit registered";
}

// The worker's pool flags are checked before anything is pinned.
TEST(Zkctl, AWorkerWithBadPoolFlagsSaysWhichAndStartsNothing) {
  std::string out;
  int code = RunCommand({BinaryPath("zkworker"), "--insecure-plaintext", "--instant", "--circuit", "c1",
                         "--pool-mode", "turbo"},
                        &out);
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--pool-mode turbo: expected auto, hugepage, cuda-host or mmap"), std::string::npos) << out;
  code = RunCommand({BinaryPath("zkworker"), "--insecure-plaintext", "--instant", "--circuit", "c1",
                     "--pool-ready", "lots"},
                    &out);
  EXPECT_EQ(code, 2);
  EXPECT_NE(out.find("--pool-ready"), std::string::npos) << out;
  EXPECT_EQ(out.find("pinned pool"), std::string::npos) << out;
}

// The JSON document zkctl printed, or a test failure (zkctl's stderr lines
// such as "job 1 submitted, waiting" are not part of a --json run's stdout,
// but RunCommand merges both: parse from the first '{').
nlohmann::json ParseJsonOutput(const std::string& out) {
  auto start = out.find('{');
  if (start == std::string::npos) {
    ADD_FAILURE() << "no JSON in:\n" << out;
    return {};
  }
  auto parsed = nlohmann::json::parse(out.substr(start), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) ADD_FAILURE() << "not JSON:\n" << out;
  return parsed;
}

TEST(Zkctl, JournalListsAProvedJobWhileTheBrokerRuns) {
  Fleet fleet("zkctl_journal");
  fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"--curve-secret-key", fleet.SecretKeyFile("alice"), "--broker-public-key",
                         fleet.broker_public_key(), "submit", "--circuit", "c1", "--request-id", "r-journal", "--wait",
                         witness, witness},
                        &out),
            0)
      << out;

  // Read-only, next to the running broker.
  ASSERT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "--data-dir", fleet.broker_data_dir(), "--json"}, &out), 0)
      << out;
  nlohmann::json journal = ParseJsonOutput(out);
  EXPECT_GE(journal.value("epoch", 0u), 1u) << out;
  EXPECT_EQ(journal.value("next_job_seq", 0u), 2u) << out;
  EXPECT_EQ(journal.value("live_jobs", 99u), 0u) << out;
  EXPECT_EQ(journal.value("finished_jobs", 0u), 1u) << out;
  EXPECT_EQ(journal.value("requests", 0u), 1u) << out;
  EXPECT_GT(journal.value("store_bytes", 0u), 0u) << out;
  ASSERT_TRUE(journal["jobs"].is_array() && journal["jobs"].size() == 1) << out;
  const auto& job = journal["jobs"][0];
  EXPECT_EQ(job.value("job_seq", 0u), 1u) << out;
  EXPECT_EQ(job.value("state", ""), "SUCCEEDED") << out;
  EXPECT_EQ(job.value("client_id", ""), "alice") << out;
  EXPECT_EQ(job.value("request_id", ""), "r-journal") << out;
  EXPECT_EQ(job.value("circuit_id", ""), "c1") << out;
  EXPECT_EQ(job.value("partitions", 0u), 2u) << out;
  EXPECT_GT(job.value("finished_unix_s", 0.0), 0.0) << out;

  // One job in detail: both items DONE by w1, with their proofs.
  ASSERT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "--data-dir", fleet.broker_data_dir(), "--job", "1"}, &out), 0)
      << out;
  EXPECT_NE(out.find("job 1  SUCCEEDED"), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n0\s+DONE\s+1\s+\S+\s+w1\s)"))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n1\s+DONE\s+1\s+\S+\s+w1\s)"))) << out;
  EXPECT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "--data-dir", fleet.broker_data_dir(), "--job", "7"}, &out), 5)
      << out;
  EXPECT_NE(out.find("job 7 is not in the journal"), std::string::npos) << out;

  // The broker did not notice.
  ASSERT_EQ(fleet.Zkctl({"status", "--json"}, &out), 0) << out;
  nlohmann::json status = ParseJsonOutput(out);
  EXPECT_EQ(status["jobs"].value("completed", 0u), 1u) << out;
  EXPECT_GE(status["broker"].value("journal_commits", 0u), 1u) << out;
}

TEST(Zkctl, JournalOfNoJournalIsAClearError) {
  std::string out;
  EXPECT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "--data-dir", "/nonexistent"}, &out), 1) << out;
  EXPECT_NE(out.find("/nonexistent is not a directory"), std::string::npos) << out;

  // A directory, but no broker ever used it: nothing is created in it.
  Fleet fleet("zkctl_journal_none");
  std::string empty = fleet.dir() + "/empty";
  std::filesystem::create_directories(empty);
  EXPECT_EQ(RunCommand({BinaryPath("zkctl"), "journal", "--data-dir", empty, "--json"}, &out), 1) << out;
  EXPECT_NE(out.find("holds no broker journal"), std::string::npos) << out;
  EXPECT_TRUE(std::filesystem::is_empty(empty));
}

// With CURVE the client is its key: alice's job is hers; bob (another
// submit key) can neither await nor cancel it, and is not told it exists:
// the broker answers as for a job that does not (UNKNOWN_JOB; brokers before
// issue 27 said FOREIGN_JOB).
TEST(Zkctl, AnotherClientsJobIsRefused) {
  Fleet fleet("zkctl_foreign");
  fleet.StartBroker({"--accept-unrouted"});  // no worker: the job stays queued
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;
  auto as = [&](const std::string& key) {
    return std::vector<std::string>{"--curve-secret-key", fleet.SecretKeyFile(key), "--broker-public-key",
                                    fleet.broker_public_key()};
  };
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  ASSERT_EQ(fleet.Zkctl(with(as("alice"), {"submit", "--circuit", "c1", witness}), &out), 0) << out;
  EXPECT_NE(out.find("job 1 submitted"), std::string::npos) << out;

  std::string never;  // what bob hears of a job that does not exist
  EXPECT_EQ(fleet.Zkctl(with(as("bob"), {"await", "99"}), &never), 5) << never;
  EXPECT_EQ(fleet.Zkctl(with(as("bob"), {"await", "1"}), &out), 5) << out;
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;
  EXPECT_EQ(out.find("another client"), std::string::npos) << out;
  EXPECT_EQ(std::regex_replace(out, std::regex(R"(\b1\b)"), "N"), std::regex_replace(never, std::regex(R"(\b99\b)"), "N"))
      << "alice's job and no job must read the same to bob";
  // A declared --client-id does not help once keys are used.
  EXPECT_EQ(fleet.Zkctl(with(as("bob"), {"cancel", "1", "--client-id", "alice"}), &out), 5) << out;
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;

  // The owner can (its key may also come from the environment).
  std::vector<std::string> argv = {"/usr/bin/env", "ZKFLEET_CURVE_SECRET_KEY=" + fleet.SecretKeyFile("alice"),
                                   "ZKFLEET_BROKER_PUBLIC_KEY=" + fleet.broker_public_key(), BinaryPath("zkctl"),
                                   "--broker", fleet.client_endpoint(), "cancel", "1"};
  ASSERT_EQ(RunCommand(argv, &out), 0) << out;
  EXPECT_NE(out.find("job 1 cancelled"), std::string::npos) << out;
}

TEST(Zkctl, SubmitPastItsDeadlineEndsExpired) {
  Fleet fleet("zkctl_deadline");
  fleet.StartBroker({"--accept-unrouted"});  // nobody proves circuit c1
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--deadline", "1", "--wait", witness}, &out), 3) << out;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 8s);
  EXPECT_NE(out.find("job 1  EXPIRED"), std::string::npos) << out;
  EXPECT_NE(out.find("ended EXPIRED"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"await", "1"}, &out), 3) << out;
  EXPECT_NE(out.find("EXPIRED"), std::string::npos) << out;

  ASSERT_EQ(fleet.Zkctl({"status", "--json"}, &out), 0) << out;
  EXPECT_EQ(ParseJsonOutput(out)["jobs"].value("expired", 0u), 1u) << out;
  ASSERT_EQ(fleet.Zkctl({"status"}, &out), 0) << out;
  EXPECT_NE(out.find("1 expired"), std::string::npos) << out;
}

// --public: the public.json the proof must carry. A broker holding the
// circuit's key refuses a witness committing to others (exit 1, the reason
// printed, nothing queued) and takes the right one.
TEST(Zkctl, SubmitWithPublicSignalsTheWitnessDoesNotHaveIsRefused) {
  Fleet fleet("zkctl_public");
  fleet.StartBroker({"--accept-unrouted", "--verification-key", "c1=" + Fixture("bn128_k12/verification_key.json")});
  const std::string witness = Fixture("bn128_k12/witness.wtns");
  const std::string other = fleet.dir() + "/other_public.json";
  std::ofstream(other) << "[\"1\", \"2\"]\n";
  std::string out;
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--public", other, witness}, &out), 1) << out;
  EXPECT_NE(out.find("other public signals"), std::string::npos) << out;
  EXPECT_EQ(fleet.Status().jobs_submitted(), 0u);
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--public", Fixture("bn128_k12/public.json"), witness}, &out),
            0)
      << out;
  EXPECT_EQ(fleet.Status().jobs_submitted(), 1u);
}

TEST(Zkctl, SubmitReportsBusyAndGivesUp) {
  Fleet fleet("zkctl_busy");
  fleet.StartBroker({"--accept-unrouted", "--max-live-items", "1", "--busy-retry-after", "0.2"});
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", witness}, &out), 0) << out;
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--busy-timeout", "1.5", witness}, &out), 1) << out;
  EXPECT_NE(out.find("zkctl: broker busy ("), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(retrying in \d+\.\d s)"))) << out;
  EXPECT_NE(out.find("still busy after 1.5 s"), std::string::npos) << out;

  ASSERT_EQ(fleet.Zkctl({"status", "--json"}, &out), 0) << out;
  EXPECT_GE(ParseJsonOutput(out)["admission"].value("submits_busy", 0u), 2u) << out;
}

// Issue 49, item 8: an await that runs out while the job is still queued
// said "is zkbroker running there?" of a broker that was running.
TEST(Zkctl, AnAwaitThatRunsOutOnARunningBrokerSaysTheJobMayStillRun) {
  Fleet fleet("zkctl-await-timeout");
  fleet.StartBroker({"--accept-unrouted"});
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "nobody-holds-it", Fixture("bn128_k12/witness.wtns")}, &out),
            0)
      << out;
  EXPECT_EQ(fleet.Zkctl({"--wait-timeout", "1", "await", "1"}, &out), 1) << out;
  EXPECT_NE(out.find("job 1 did not end within 1000 ms"), std::string::npos) << out;
  EXPECT_NE(out.find("zkctl job 1"), std::string::npos) << out;
  EXPECT_EQ(out.find("is zkbroker running there"), std::string::npos) << out;
}

// A job whose result passed the retention: awaiting it or looking its
// request up is an error of its own (exit 4, saying what to do), never a
// success without a proof; submitting it again with its witness proves it
// again, and --out gets the proof.
TEST(Zkctl, AResultPastTheRetentionIsAnErrorAndResubmittingProvesItAgain) {
  Fleet fleet("zkctl_retention");
  fleet.StartBroker({"--result-ttl", "0.3", "--dedup-window", "60"});
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--request-id", "r1", "--wait", witness}, &out), 0) << out;
  // Expiry runs on the broker's heartbeat tick: look the request up until it has.
  int code = 0;
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(100ms);
    code = fleet.Zkctl({"--json", "submit", "--circuit", "c1", "--request-id", "r1"}, &out);
    if (code != 0) break;
  }
  ASSERT_EQ(code, 4) << out;
  nlohmann::json error = ParseJsonOutput(out);
  EXPECT_EQ(error["error"].value("code", ""), "RESULT_EXPIRED") << out;
  EXPECT_NE(error["error"].value("message", "").find("submit it again with its witnesses"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"await", "1", "--out", fleet.dir() + "/gone"}, &out), 4) << out;
  EXPECT_NE(out.find("RESULT_EXPIRED"), std::string::npos) << out;
  EXPECT_NE(out.find("--result-ttl"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(fleet.dir() + "/gone/proof_0.json"));

  // The same witness under the same request id: proved again, as job 2.
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--request-id", "r1", "--out", fleet.dir() + "/again", witness},
                        &out),
            0)
      << out;
  EXPECT_NE(out.find("job 2  SUCCEEDED"), std::string::npos) << out;
  EXPECT_NE(ReadFile(fleet.dir() + "/again/proof_0.json").find("benchmark"), std::string::npos) << out;  // --instant
}

// Usage errors exit 2 (nothing is sent); with --json every error is JSON on
// stdout, usage errors included.
TEST(Zkctl, UsageErrorsExitTwoAndJsonErrorsAreJson) {
  std::string out;
  const std::string zkctl = BinaryPath("zkctl");
  EXPECT_EQ(RunCommand({zkctl, "--no-such-flag", "status"}, &out), 2) << out;
  EXPECT_NE(out.find("--no-such-flag"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({zkctl, "submit"}, &out), 2) << out;  // no --circuit
  EXPECT_NE(out.find("--circuit"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({zkctl, "submit", "--circuit", "c1", "/nonexistent.wtns"}, &out), 2) << out;
  EXPECT_EQ(RunCommand({zkctl}, &out), 2) << out;  // no subcommand
  EXPECT_EQ(RunCommand({zkctl, "--help"}, &out), 0) << out;

  EXPECT_EQ(RunCommand({zkctl, "--json", "await", "notanumber"}, &out), 2) << out;
  nlohmann::json usage = ParseJsonOutput(out);
  EXPECT_EQ(usage["error"].value("code", ""), "USAGE") << out;
  EXPECT_EQ(usage["error"].value("exit_code", 0), 2) << out;

  // A key file that is not there: a usage error too, as JSON.
  EXPECT_EQ(RunCommand({zkctl, "--json", "status", "--curve-secret-key", "/nonexistent.secret", "--broker-public-key",
                        "/nonexistent.pub"},
                       &out),
            2)
      << out;
  nlohmann::json refused = ParseJsonOutput(out);
  EXPECT_NE(refused["error"].value("message", "").find("/nonexistent.secret"), std::string::npos) << out;
}

// The key mistakes a user makes, each reported at once with the fix, not
// after the reply timeout as "is zkbroker running there?".
TEST(Zkctl, KeyMistakesAreReportedAtOnceAndSayWhichKey) {
  Fleet fleet("zkctl_key_mistakes");
  fleet.StartBroker();
  std::string out;
  const std::string zkctl = BinaryPath("zkctl");
  const std::string endpoint = fleet.client_endpoint();
  auto seconds_of = [&](const std::vector<std::string>& argv, int* code) {
    const auto start = std::chrono::steady_clock::now();
    *code = RunCommand(argv, &out);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  int code = 0;
  // A key in no allow-list, with a 60 s reply timeout: refused at once.
  double took = seconds_of({zkctl, "--broker", endpoint, "--timeout", "60", "--curve-secret-key",
                            fleet.SecretKeyFile("stranger"), "--broker-public-key", fleet.broker_public_key(), "status"},
                           &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("allow-list"), std::string::npos) << out;
  EXPECT_LT(took, 30.0) << "waited out the reply timeout: " << out;
  // Another broker's public key (alice's, say): the handshake never completes.
  took = seconds_of({zkctl, "--broker", endpoint, "--timeout", "60", "--curve-secret-key", fleet.SecretKeyFile("alice"),
                     "--broker-public-key", fleet.key_dir() + "/alice.pub", "status"},
                    &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("--broker-public-key"), std::string::npos) << out;
  EXPECT_EQ(out.find("is zkbroker running there"), std::string::npos) << out;
  EXPECT_LT(took, 30.0) << "waited out the reply timeout: " << out;
  // NAME.pub as the secret key, and the broker's secret as its public key.
  EXPECT_EQ(RunCommand({zkctl, "--broker", endpoint, "--curve-secret-key", fleet.key_dir() + "/alice.pub",
                        "--broker-public-key", fleet.broker_public_key(), "status"},
                       &out),
            2)
      << out;
  EXPECT_NE(out.find("holds only a public key"), std::string::npos) << out;
  EXPECT_EQ(out.find("chmod"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({zkctl, "--broker", endpoint, "--curve-secret-key", fleet.SecretKeyFile("alice"),
                        "--broker-public-key", fleet.key_dir() + "/broker.secret", "status"},
                       &out),
            2)
      << out;
  EXPECT_NE(out.find("holds a secret key"), std::string::npos) << out;
  // No keys at all (--insecure-plaintext) against this CURVE broker: told to give them.
  took = seconds_of({zkctl, "--broker", endpoint, "--timeout", "60", "--insecure-plaintext", "status"}, &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("instead of --insecure-plaintext"), std::string::npos) << out;
  EXPECT_LT(took, 30.0) << "waited out the reply timeout: " << out;
}

// zkctl finds the broker in $ZKFLEET_BROKER (as the Python client does); a
// lookup of a request id never submitted is UNKNOWN_JOB (exit 5); a name over
// the broker's bounds is refused before sending (exit 2); the daemons' usage
// errors exit 2 too.
TEST(Zkctl, EnvironmentLookupsAndBoundsAreUsersTerms) {
  Fleet fleet("zkctl_env");
  fleet.StartBroker();
  std::string out;
  EXPECT_EQ(RunCommand({"/usr/bin/env", "ZKFLEET_BROKER=" + fleet.client_endpoint(), BinaryPath("zkctl"),
                        "--curve-secret-key", fleet.SecretKeyFile("fleet-test"), "--broker-public-key",
                        fleet.broker_public_key(), "status", "--json"},
                       &out),
            0)
      << out;
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--request-id", "never-made"}, &out), 5) << out;
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;
  EXPECT_NE(out.find("never-made"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", std::string(200, 'c'), Fixture("bn128_k12/witness.wtns")}, &out), 2)
      << out;
  EXPECT_EQ(RunCommand({BinaryPath("zkbroker"), "--data-dir", fleet.dir() + "/never", "--no-such-flag"}, &out), 2)
      << out;
  EXPECT_NE(out.find("--no-such-flag"), std::string::npos) << out;
  EXPECT_EQ(RunCommand({BinaryPath("zkworker"), "--no-such-flag"}, &out), 2) << out;
  EXPECT_EQ(RunCommand({BinaryPath("zkbroker")}, &out), 2) << out;  // --data-dir is required
  EXPECT_EQ(RunCommand({BinaryPath("zkbroker"), "--help"}, &out), 0) << out;
}

// zkctl job/jobs: JSON is Protobuf's mapping of the broker's JobInfo (every
// field, the retry history included, as gRPC clients get it); the table has
// a header, and an empty list says so.
TEST(Zkctl, JobsTableAndJobJsonAreTheBrokersMessage) {
  Fleet fleet("zkctl_jobs");
  fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--request-id", "first", "--wait",
                         Fixture("bn128_k12/witness.wtns")},
                        &out),
            0)
      << out;
  ASSERT_EQ(fleet.Zkctl({"--json", "job", "1"}, &out), 0) << out;
  auto job = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(job.is_object()) << out;
  EXPECT_EQ(job.value("job_seq", ""), "1") << out;
  EXPECT_EQ(job.value("state", ""), "JOB_STATE_SUCCEEDED") << out;
  EXPECT_EQ(job.value("request_id", ""), "first") << out;
  EXPECT_TRUE(job.contains("history") && job["history"].is_array()) << out;
  EXPECT_TRUE(job.contains("payload") && job.contains("deadline_unix_s")) << out;
  ASSERT_EQ(fleet.Zkctl({"jobs"}, &out), 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(JOB\s+STATE\s+CIRCUIT\s+CLIENT\s+REQUEST\s+PROVED\s+SUBMITTED)")))
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n1\s+SUCCEEDED\s+c1\s+\S+\s+first\s+1/1\s+\d{4}-)"))) << out;
  ASSERT_EQ(fleet.Zkctl({"jobs", "--state", "failed"}, &out), 0) << out;
  EXPECT_EQ(out, "no jobs match\n");
  ASSERT_EQ(fleet.Zkctl({"--json", "jobs", "--state", "failed"}, &out), 0) << out;
  auto empty = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(empty.is_object()) << out;
  EXPECT_TRUE(empty["jobs"].is_array() && empty["jobs"].empty()) << out;
}

// zkctl undrain against a real broker: an admin's request, answered with
// the worker's state; an unknown worker and a non-admin key are refused.
// (What undrain does to DRAINING / FAULTED workers: the broker's own tests.)
TEST(Zkctl, Undrain) {
  Fleet fleet("zkctl_undrain");
  fleet.StartBroker();
  fleet.StartWorker("w1", {"--instant", "--circuit", "c1"});
  fleet.WaitWorkerReady("w1");
  std::string out;
  ASSERT_EQ(fleet.Zkctl({"undrain", "w1"}, &out), 0) << out;
  EXPECT_NE(out.find("worker w1 is READY again"), std::string::npos) << out;
  ASSERT_EQ(fleet.Zkctl({"--json", "undrain", "w1"}, &out), 0) << out;
  auto reply = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(reply.is_object()) << out;
  EXPECT_EQ(reply.value("worker_id", ""), "w1");
  EXPECT_EQ(reply.value("state", ""), "READY");
  EXPECT_EQ(fleet.Zkctl({"undrain", "nobody"}, &out), 1) << out;
  EXPECT_NE(out.find("UNKNOWN_WORKER"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"undrain", "w1", "--curve-secret-key", fleet.SecretKeyFile("alice"), "--broker-public-key",
                         fleet.broker_public_key()}, &out), 1) << out;
  EXPECT_NE(out.find("FORBIDDEN"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"undrain", std::string(200, 'w')}, &out), 2) << out;  // refused before sending
  EXPECT_NE(out.find("worker id of 200 bytes is longer than the broker's limit of 128 bytes"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace fleet_test
