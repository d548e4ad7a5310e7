#include "fleet_harness.hpp"

#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "unit/metrics/http_client.hpp"

namespace fleet_test {

std::string Fixture(const std::string& name) { return std::string(ZKFLEET_FIXTURES_DIR) + "/" + name; }

std::string BinaryPath(const std::string& tool) {
  return std::string(ZKFLEET_BINARY_DIR) + "/cmd/" + tool + "/" + tool;
}

int RunCommand(const std::vector<std::string>& argv, std::string* output) {
  return zkfleet::testing::RunProcess(argv, output);
}

Fleet::Fleet(const std::string& test_name, int heartbeat_ms)
    : heartbeat_ms_(heartbeat_ms), client_ports_{FreePort()}, worker_ports_{FreePort()}, context_(1) {
  dir_ = (std::filesystem::temp_directory_path() / ("zkfleet-" + test_name + "-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  // Keys and allow-lists (see the header).
  std::filesystem::create_directories(allow_dir() + "/workers");
  std::filesystem::create_directories(allow_dir() + "/clients");
  auto make = [&](const std::string& name, const char* kind, const char* role) {
    auto keys = zkfleet::fleet::GenerateCurveKeyPair();
    zkfleet::fleet::WriteKeyPair(key_dir(), name, keys);
    if (kind == nullptr) return;
    std::ofstream entry(allow_dir() + "/" + kind + "/" + name + ".pub");
    entry << "public-key = " << keys.public_z85 << "\n";
    if (role) entry << "role = " << role << "\n";
  };
  make("broker", nullptr, nullptr);
  make("fleet-worker", "workers", nullptr);
  make(kClientId, "clients", "admin");
  make("alice", "clients", "submit");
  make("bob", "clients", "submit");
  make("watcher", "clients", "observe");
  make("stranger", nullptr, nullptr);
}

Fleet::~Fleet() {
  processes_.clear();
  if (::testing::Test::HasFailure()) {
    std::fprintf(stderr, "fleet logs kept in %s\n", dir_.c_str());
  } else {
    std::filesystem::remove_all(dir_);
  }
}

void Fleet::SetBrokerSlots(int n) {
  while (static_cast<int>(client_ports_.size()) < n) {
    client_ports_.push_back(FreePort());
    worker_ports_.push_back(FreePort());
  }
}

std::string Fleet::Endpoints(const std::vector<int>& ports) {
  std::string list;
  for (int port : ports) list += (list.empty() ? "" : ",") + std::string("tcp://127.0.0.1:") + std::to_string(port);
  return list;
}

Process& Fleet::StartBroker(std::vector<std::string> extra_args, int slot) {
  Process& broker = LaunchBroker(std::move(extra_args), slot);
  if (!broker.WaitForLog("broker serving", 10s)) ADD_FAILURE() << "broker did not start:\n" << broker.Log();
  return broker;
}

Process& Fleet::LaunchBroker(std::vector<std::string> extra_args, int slot) {
  std::vector<std::string> argv = {BinaryPath("zkbroker"), "--clients", Endpoints({client_ports_.at(slot)}),
                                   "--workers", Endpoints({worker_ports_.at(slot)}), "--heartbeat-ms",
                                   std::to_string(heartbeat_ms_)};
  plaintext_ = std::find(extra_args.begin(), extra_args.end(), "--insecure-plaintext") != extra_args.end();
  if (!plaintext_) {
    argv.insert(argv.end(), {"--curve-secret-key", SecretKeyFile("broker"), "--allow-dir", allow_dir()});
  }
  if (std::find(extra_args.begin(), extra_args.end(), "--data-dir") == extra_args.end() &&
      std::find(extra_args.begin(), extra_args.end(), "--journal") == extra_args.end()) {
    argv.insert(argv.end(), {"--data-dir", broker_data_dir()});
  }
  // Most tests' workers do not prove (--instant): their circuits run
  // unverified unless the test gives the broker a verification key.
  auto named = [&](const char* flag) {
    return std::any_of(extra_args.begin(), extra_args.end(),
                       [&](const std::string& arg) { return arg.rfind(flag, 0) == 0; });
  };
  if (!named("--verification-key") && !named("--unverified-circuits")) argv.push_back("--unverified-circuits=*");
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  // One log per broker life: broker.log, broker-2.log, ...
  ++broker_starts_;
  std::string log = dir_ + (broker_starts_ == 1 ? "/broker.log" : "/broker-" + std::to_string(broker_starts_) + ".log");
  processes_.push_back(std::make_unique<Process>(argv, log));
  return *processes_.back();
}

Process& Fleet::StartWorker(const std::string& worker_id, std::vector<std::string> args) {
  auto named = [&](const char* flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
  std::vector<std::string> argv = {BinaryPath("zkworker"), "--id", worker_id, "--heartbeat-ms",
                                   std::to_string(heartbeat_ms_)};
  if (!named("--broker")) argv.insert(argv.end(), {"--broker", worker_endpoint()});
  if (plaintext_) {
    if (!named("--insecure-plaintext")) argv.push_back("--insecure-plaintext");
  } else if (!named("--curve-secret-key") && !named("--insecure-plaintext")) {
    argv.insert(argv.end(), {"--curve-secret-key", SecretKeyFile("fleet-worker"), "--broker-public-key",
                             broker_public_key()});
  }
  // Hermetic: remembered key checks stay in this fleet's directory.
  if (!named("--key-check-cache")) argv.insert(argv.end(), {"--key-check-cache", dir_ + "/checked-keys"});
  argv.insert(argv.end(), args.begin(), args.end());
  processes_.push_back(std::make_unique<Process>(argv, dir_ + "/" + worker_id + ".log"));
  return *processes_.back();
}

void Fleet::WaitWorkerReady(const std::string& worker_id, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(timeout);
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = Status();
    for (const auto& w : status.workers()) {
      if (w.worker_id() == worker_id && w.state() == zkfleet::proto::WORKER_STATE_READY && w.credit() > 0) return;
    }
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "worker " << worker_id << " did not become READY";
}

zkfleet::fleet::ClientSecurity Fleet::Security(const std::string& key_name) const {
  return zkfleet::fleet::ClientSecurity::Load(plaintext_, SecretKeyFile(key_name), broker_public_key());
}

std::unique_ptr<zkfleet::client::internal::BrokerClient> Fleet::Client(const zkfleet::fleet::SocketLimits& limits,
                                                            const std::string& key_name) {
  return std::make_unique<zkfleet::client::internal::BrokerClient>(context_, client_endpoint(), Security(key_name), limits,
                                                        key_name);
}

std::vector<std::string> Fleet::ZkctlConnection(const std::string& key_name) const {
  if (plaintext_) return {"--broker", client_endpoint(), "--insecure-plaintext", "--client-id", key_name};
  return {"--broker", client_endpoint(), "--curve-secret-key", SecretKeyFile(key_name), "--broker-public-key",
          broker_public_key()};
}

zkfleet::proto::StatusReply Fleet::Status() { return Client()->Status(5s); }

int Fleet::Zkctl(std::vector<std::string> args, std::string* output) {
  std::vector<std::string> argv = {BinaryPath("zkctl")};
  auto named = [&](const char* flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
  if (named("--curve-secret-key") || named("--insecure-plaintext")) {
    argv.insert(argv.end(), {"--broker", client_endpoint()});
  } else {
    auto connection = ZkctlConnection(kClientId);
    argv.insert(argv.end(), connection.begin(), connection.end());
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, output);
}

void AddWorkerKey(Fleet& fleet, const std::string& name) {
  auto keys = zkfleet::fleet::GenerateCurveKeyPair();
  zkfleet::fleet::WriteKeyPair(fleet.key_dir(), name, keys);
  std::ofstream entry(fleet.allow_dir() + "/workers/" + name + ".pub");
  entry << "public-key = " << keys.public_z85 << "\n";
}

namespace {

constexpr int kSlowSeed = 7;
constexpr int kCalibrationPower = 14;  // ~0.4 s per proof in a release build here
constexpr int kMaxSlowPower = 17;
// Aim over a second: one doubling of the domain makes a proof ~1.85x longer
// (measured 2^14 -> 2^16: 0.40 -> 1.45 s, 2^17: 2.8 s); counting 2x per
// doubling, a predicted 1.5 s is at least ~1.3 s. Measured on a loaded
// machine, the estimate picks a smaller circuit, but the same load slows the
// tests' proofs too. Here: 2^16 (~1.3-1.5 s) under load, 2^17 when quiet.
constexpr double kSlowProofSeconds = 1.5;
constexpr double kGrowthPerDoubling = 2.0;

// bn128 circuit of domain 2^power with its key and verification key, cached
// under `root`. Empty on failure (the test failed).
std::string CachedCircuit(const std::string& root, int power) {
  const std::string key = "fleet-bn128-p" + std::to_string(power) + "-s" + std::to_string(kSlowSeed);
  const std::string dev = BinaryPath("zkfleet-dev");
  return zkfleet::testing::CachedDirectory(root, key, [&](const std::string& out) {
    std::string output;
    const std::vector<std::vector<std::string>> steps = {
        {dev, "gen-circuit", "--curve", "bn128", "--domain-power", std::to_string(power), "--seed",
         std::to_string(kSlowSeed), "--out", out},
        {dev, "setup", out + "/circuit.r1cs", out + "/circuit.zkey", "--insecure", "--seed", std::to_string(kSlowSeed)},
        {zkfleet::testing::SnarkjsPath(), "zkey", "export", "verificationkey", out + "/circuit.zkey",
         out + "/verification_key.json"},
    };
    for (const auto& argv : steps) {
      int code = RunCommand(argv, &output);
      if (code != 0) {
        ADD_FAILURE() << argv[0] << " " << argv[1] << " failed (" << code << "):\n" << output;
        return false;
      }
    }
    std::filesystem::remove(out + "/circuit.r1cs");  // not needed to prove
    return true;
  });
}

}  // namespace

SlowCircuit GetSlowCircuit() {
  const std::string root = std::string(ZKFLEET_BINARY_DIR) + "/test-cache";
  if (auto installed = zkfleet::testing::RequireSnarkjs(); !installed) {
    ADD_FAILURE() << installed.message();
    return {};
  }
  // The size: one-thread proofs of the 2^14 circuit, timed once per build
  // directory with this build's zkprove (a sanitizer build proves several
  // times slower, so it needs a smaller circuit for the same wall time), then
  // the domain doubled until a proof should take kSlowProofSeconds. The
  // decision is cached too, so every case of a build uses the same circuit.
  const std::string calibration = zkfleet::testing::CachedDirectory(
      root, "fleet-bn128-s" + std::to_string(kSlowSeed) + "-size", [&](const std::string& out) {
        const std::string base = CachedCircuit(root, kCalibrationPower);
        if (base.empty()) return false;
        // The fastest of three proofs (zkprove --timings: the proof alone, not
        // the key's load): the least disturbed by whatever else runs.
        std::string output;
        int code = RunCommand({BinaryPath("zkprove"), "--threads", "1", "--timings", "--repeat", "3",
                               base + "/circuit.zkey", base + "/witness.wtns", out + "/proof.json", out + "/public.json"},
                              &output);
        if (code != 0) {
          ADD_FAILURE() << "zkprove failed (" << code << "):\n" << output;
          return false;
        }
        double seconds = 0;
        static const std::regex total(R"(proof \d+: total=([0-9.]+)s)");
        for (auto it = std::sregex_iterator(output.begin(), output.end(), total); it != std::sregex_iterator(); ++it) {
          double t = std::stod((*it)[1].str());
          if (seconds == 0 || t < seconds) seconds = t;
        }
        if (seconds <= 0) {
          ADD_FAILURE() << "no proof time in zkprove --timings output:\n" << output;
          return false;
        }
        int power = kCalibrationPower;
        for (double t = seconds; t < kSlowProofSeconds && power < kMaxSlowPower; t *= kGrowthPerDoubling) ++power;
        std::ofstream(out + "/power") << power << "\n";
        std::ofstream(out + "/measured") << "2^" << kCalibrationPower << " proof, 1 thread, fastest of 3: " << seconds
                                         << " s\n";
        return true;
      });
  if (calibration.empty()) return {};
  int power = 0;
  std::ifstream(calibration + "/power") >> power;
  if (power < kCalibrationPower || power > kMaxSlowPower) {
    ADD_FAILURE() << "bad circuit size in " << calibration << "/power";
    return {};
  }
  const std::string dir = CachedCircuit(root, power);
  if (dir.empty()) return {};
  return {dir + "/circuit.zkey", dir + "/witness.wtns", dir + "/verification_key.json"};
}

std::map<uint64_t, zkfleet::proto::JobResult> CollectResults(zkfleet::client::internal::BrokerClient& client,
                                                             size_t count, std::chrono::seconds timeout) {
  std::map<uint64_t, zkfleet::proto::JobResult> results;
  const auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(timeout);
  while (results.size() < count && std::chrono::steady_clock::now() < deadline) {
    auto result = client.NextJobResult(std::chrono::milliseconds(500));
    if (!result) continue;
    EXPECT_TRUE(results.emplace(result->job_seq(), *result).second) << "a second result for job " << result->job_seq();
  }
  EXPECT_EQ(results.size(), count) << "results missing";
  ExpectNoResultCopies(client, 300ms);
  return results;
}

void ExpectNoResultCopies(zkfleet::client::internal::BrokerClient& client, std::chrono::milliseconds settle) {
  if (settle > 0ms) {
    // Job 0 is never a job (job_seq starts at 1): the wait takes nothing and
    // keeps every envelope for later calls, but each arriving JobResult
    // passes the client's bookkeeping, which counts a copy.
    (void)client.NextJobResult(/*job_seq=*/0, settle);
  }
  EXPECT_EQ(client.duplicate_results_dropped(), 0u)
      << "the broker delivered a job's result to this client more than once (BrokerClient dropped the copies)";
}

size_t SnarkjsVerifyBatch(const std::vector<ProofToVerify>& proofs, const std::string& dir) {
  std::filesystem::create_directories(dir);
  nlohmann::json cases = nlohmann::json::array();
  for (const ProofToVerify& proof : proofs) {
    const std::string base = dir + "/" + proof.name;
    zkfleet::testing::WriteFile(base + ".proof.json", proof.proof_json);
    zkfleet::testing::WriteFile(base + ".public.json", proof.public_json);
    cases.push_back({{"vk", proof.vk_path}, {"public", base + ".public.json"}, {"proof", base + ".proof.json"}});
  }
  zkfleet::testing::WriteFile(dir + "/cases.json", cases.dump());
  auto run = zkfleet::testing::RunCommand(
      "node " + zkfleet::testing::Quote(std::string(ZKFLEET_SOURCE_DIR) + "/tests/tools/snarkjs_verify_batch.mjs") +
      " " + zkfleet::testing::Quote(dir + "/cases.json") + " " + zkfleet::testing::Quote(dir + "/verdicts.json"));
  if (run.exit_code != 0) {
    ADD_FAILURE() << "snarkjs_verify_batch.mjs exited " << run.exit_code << ":\n" << run.output;
    return 0;
  }
  const nlohmann::json verdicts = nlohmann::json::parse(ReadFile(dir + "/verdicts.json"));
  if (verdicts.size() != cases.size()) {
    ADD_FAILURE() << verdicts.size() << " verdicts for " << cases.size() << " proofs";
    return 0;
  }
  size_t verified = 0;
  for (size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i]["ok"].get<bool>()) {
      ++verified;
    } else {
      ADD_FAILURE() << cases[i]["proof"] << " does not verify: " << verdicts[i]["error"];
    }
  }
  return verified;
}

bool SnarkjsVerifies(const std::string& vk_path, const std::string& proof_json, const std::string& public_json,
                     const std::string& scratch_dir) {
  if (auto installed = zkfleet::testing::RequireSnarkjs(); !installed) {
    ADD_FAILURE() << installed.message();
    return false;
  }
  static int counter = 0;
  std::string base = scratch_dir + "/verify-" + std::to_string(counter++);
  std::ofstream(base + "-proof.json") << proof_json;
  std::ofstream(base + "-public.json") << public_json;
  std::string output;
  int code = RunCommand({std::string(ZKFLEET_NODE_BIN) + "/snarkjs", "groth16", "verify", vk_path,
                         base + "-public.json", base + "-proof.json"},
                        &output);
  const bool ok = code == 0 && output.find("OK!") != std::string::npos;
  if (!ok) ADD_FAILURE() << "snarkjs verify failed (" << code << "):\n" << output;
  return ok;
}

std::vector<Processed> ProcessingLines(const std::string& log) {
  static const std::regex line(R"(processing priority=(\w+) job_seq=(\d+) partition=(\d+))");
  std::vector<Processed> out;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    out.push_back({(*it)[1].str(), std::stoull((*it)[2].str()), static_cast<uint32_t>(std::stoul((*it)[3].str()))});
  }
  return out;
}

bool WaitForAttempts(Fleet& fleet, uint64_t job_seq, uint32_t partition, uint32_t attempts,
                     std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(timeout);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string output;
    if (fleet.Zkctl({"--json", "journal", "--data-dir", fleet.broker_data_dir(), "--job", std::to_string(job_seq)},
                    &output) == 0) {
      const size_t start = output.find('{');  // past any line on stderr
      const auto parsed = nlohmann::json::parse(start == std::string::npos ? std::string() : output.substr(start),
                                                nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object() && parsed.contains("items")) {
        for (const auto& item : parsed["items"]) {
          if (item.value("partition", 0u) == partition && item.value("attempts", 0u) >= attempts) return true;
        }
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

Process& StartWorkerWithFaults(Fleet& fleet, const std::string& id, const std::string& inject,
                               std::vector<std::string> args) {
  if (!inject.empty()) setenv("ZKFLEET_FAULT_INJECT", inject.c_str(), 1);
  Process& worker = fleet.StartWorker(id, std::move(args));
  unsetenv("ZKFLEET_FAULT_INJECT");
  return worker;
}

double Sample(int port, const std::string& series) {
  return SampleValue(zkfleet::testing::HttpGet(port, "/metrics", std::chrono::seconds(2)).body, series);
}

double SampleValue(const std::string& body, const std::string& series) {
  std::istringstream lines(body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return -1;
}

double SampleWhen(int port, const std::string& series, double expected) {
  const auto deadline = std::chrono::steady_clock::now() + zkfleet::testing::Scaled(std::chrono::seconds(5));
  double value = Sample(port, series);
  while (value != expected && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    value = Sample(port, series);
  }
  return value;
}

}  // namespace fleet_test
