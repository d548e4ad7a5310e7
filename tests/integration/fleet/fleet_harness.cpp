#include "fleet_harness.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

namespace fleet_test {

std::string Fixture(const std::string& name) { return std::string(ZKFLEET_FIXTURES_DIR) + "/" + name; }

std::string BinaryPath(const std::string& tool) {
  return std::string(ZKFLEET_BINARY_DIR) + "/cmd/" + tool + "/" + tool;
}

int RunCommand(const std::vector<std::string>& argv, std::string* output) {
  return zkfleet::testing::RunProcess(argv, output);
}

Fleet::Fleet(const std::string& test_name)
    : client_port_(FreePort()), worker_port_(FreePort()), context_(1) {
  dir_ = (std::filesystem::temp_directory_path() / ("zkfleet-" + test_name + "-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
}

Fleet::~Fleet() {
  processes_.clear();
  if (::testing::Test::HasFailure()) {
    std::fprintf(stderr, "fleet logs kept in %s\n", dir_.c_str());
  } else {
    std::filesystem::remove_all(dir_);
  }
}

Process& Fleet::StartBroker(std::vector<std::string> extra_args) {
  std::vector<std::string> argv = {BinaryPath("zkbroker"), "--clients", client_endpoint(), "--workers",
                                   worker_endpoint(), "--heartbeat-ms", std::to_string(kHeartbeatMs)};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  processes_.push_back(std::make_unique<Process>(argv, dir_ + "/broker.log"));
  Process& broker = *processes_.back();
  if (!broker.WaitForLog("broker serving", 10s)) ADD_FAILURE() << "broker did not start:\n" << broker.Log();
  return broker;
}

Process& Fleet::StartWorker(const std::string& worker_id, std::vector<std::string> args) {
  std::vector<std::string> argv = {BinaryPath("zkworker"), "--broker", worker_endpoint(), "--id", worker_id,
                                   "--heartbeat-ms", std::to_string(kHeartbeatMs)};
  argv.insert(argv.end(), args.begin(), args.end());
  processes_.push_back(std::make_unique<Process>(argv, dir_ + "/" + worker_id + ".log"));
  return *processes_.back();
}

void Fleet::WaitWorkerReady(const std::string& worker_id, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = Status();
    for (const auto& w : status.workers()) {
      if (w.worker_id() == worker_id && w.state() == zkfleet::proto::WORKER_STATE_READY && w.credit() > 0) return;
    }
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "worker " << worker_id << " did not become READY";
}

std::unique_ptr<zkfleet::fleet::BrokerClient> Fleet::Client(const zkfleet::fleet::SocketLimits& limits) {
  return std::make_unique<zkfleet::fleet::BrokerClient>(context_, client_endpoint(), limits);
}

zkfleet::proto::StatusReply Fleet::Status() { return Client()->Status(5s); }

int Fleet::Zkctl(std::vector<std::string> args, std::string* output) {
  std::vector<std::string> argv = {BinaryPath("zkctl"), "--broker", client_endpoint()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, output);
}

SlowCircuit GetSlowCircuit() {
  constexpr int kDomainPower = 16;
  constexpr int kSeed = 7;
  const std::string key = "fleet-bn128-p" + std::to_string(kDomainPower) + "-s" + std::to_string(kSeed);
  const std::string root = std::string(ZKFLEET_BINARY_DIR) + "/test-cache";
  if (auto installed = zkfleet::testing::RequireSnarkjs(); !installed) {
    ADD_FAILURE() << installed.message();
    return {};
  }
  const std::string dev = BinaryPath("zkfleet-dev");
  std::string dir = zkfleet::testing::CachedDirectory(root, key, [&](const std::string& out) {
    std::string output;
    const std::vector<std::vector<std::string>> steps = {
        {dev, "gen-circuit", "--curve", "bn128", "--domain-power", std::to_string(kDomainPower), "--seed",
         std::to_string(kSeed), "--out", out},
        {dev, "setup", out + "/circuit.r1cs", out + "/circuit.zkey", "--insecure", "--seed", std::to_string(kSeed)},
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
  if (dir.empty()) return {};
  return {dir + "/circuit.zkey", dir + "/witness.wtns", dir + "/verification_key.json"};
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

}  // namespace fleet_test
