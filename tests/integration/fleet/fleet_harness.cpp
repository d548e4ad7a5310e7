#include "fleet_harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace fleet_test {

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string Fixture(const std::string& name) { return std::string(ZKFLEET_FIXTURES_DIR) + "/" + name; }

std::string BinaryPath(const std::string& tool) {
  return std::string(ZKFLEET_BINARY_DIR) + "/cmd/" + tool + "/" + tool;
}

namespace {

// fork + exec with stdout/stderr to `log_path`; the child dies with us.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // parent already gone
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  dup2(fd, 2);
  // The test process may block signals; the child starts clean.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

}  // namespace

int RunCommand(const std::vector<std::string>& argv, std::string* output) {
  std::string log = std::filesystem::temp_directory_path() /
                    ("zkfleet-cmd-" + std::to_string(getpid()) + "-" + std::to_string(rand()) + ".log");
  pid_t pid = Spawn(argv, log);
  int status = 0;
  waitpid(pid, &status, 0);
  if (output) *output = ReadFile(log);
  std::filesystem::remove(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Process::Process(std::vector<std::string> argv, std::string log_path) : log_path_(std::move(log_path)) {
  pid_ = Spawn(argv, log_path_);
}

Process::~Process() {
  if (!exit_code_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void Process::Signal(int signal) {
  if (!exit_code_) kill(pid_, signal);
}

void Process::Kill9() {
  Signal(SIGKILL);
  WaitExit(5s);
}

std::optional<int> Process::WaitExit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!exit_code_) {
    int status = 0;
    pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(5ms);
  }
  return exit_code_;
}

bool Process::running() { return !WaitExit(0ms).has_value(); }

std::string Process::Log() const { return ReadFile(log_path_); }

bool Process::WaitForLog(const std::string& pattern, std::chrono::milliseconds timeout) const {
  std::regex re(pattern);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::regex_search(Log(), re)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
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

bool SnarkjsVerifies(const std::string& vk_path, const std::string& proof_json, const std::string& public_json,
                     const std::string& scratch_dir) {
  static int counter = 0;
  std::string base = scratch_dir + "/verify-" + std::to_string(counter++);
  std::ofstream(base + "-proof.json") << proof_json;
  std::ofstream(base + "-public.json") << public_json;
  std::string output;
  int code = RunCommand({std::string(ZKFLEET_NODE_BIN) + "/snarkjs", "groth16", "verify", vk_path,
                         base + "-public.json", base + "-proof.json"},
                        &output);
  if (code != 0) ADD_FAILURE() << "snarkjs verify failed (" << code << "):\n" << output;
  return code == 0;
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
