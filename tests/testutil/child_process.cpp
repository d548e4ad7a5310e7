#include "testutil/child_process.hpp"
#include "testutil/test_support.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

#include "testutil/test_support.hpp"

namespace zkfleet::testing {
namespace {

// fork + exec with stdout/stderr to `log_path`; the child dies with us.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // the test is already gone
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  dup2(fd, 1);
  dup2(fd, 2);
  // The test process may block signals (the fleet under test uses
  // signalfd); the child starts clean.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

int DecodeStatus(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

namespace {

// Whether a listening socket could bind `port` on 127.0.0.1 now (0: any;
// the bound port is returned through `port`).
bool CanBind(int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  socklen_t length = sizeof(address);
  if (ok && getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) port = ntohs(address.sin_port);
  close(fd);
  return ok;
}

// The low end of the kernel's ephemeral port range (32768 by default).
int EphemeralLow() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  return range >> low >> high ? low : 32768;
}

}  // namespace

int FreePort() {
  // Below the ephemeral range: a port from that range can be taken by any
  // process's outgoing connection between this check and the server's bind
  // (seen under TSan: "Address already in use"); below it only another
  // test's server can, and each picks at random.
  const int low = EphemeralLow();
  if (low > 12000) {
    static std::mt19937 rng(static_cast<uint32_t>(getpid()) * 2654435761u ^
                            static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    std::uniform_int_distribution<int> pick(10000, low - 1);
    for (int attempt = 0; attempt < 200; ++attempt) {
      int port = pick(rng);
      if (CanBind(port)) return port;
    }
  }
  int port = 0;
  CanBind(port);
  return port;
}

int RunProcess(const std::vector<std::string>& argv, std::string* output, const std::string& log_path) {
  static std::atomic<int> counter{0};
  const bool temporary = log_path.empty();
  const std::string log = temporary ? (std::filesystem::temp_directory_path() /
                                       ("zkfleet-cmd-" + std::to_string(getpid()) + "-" +
                                        std::to_string(counter++) + ".log"))
                                          .string()
                                    : log_path;
  const pid_t pid = Spawn(argv, log);
  int status = 0;
  waitpid(pid, &status, 0);
  if (output) *output = ReadFile(log);
  if (temporary) std::filesystem::remove(log);
  return DecodeStatus(status);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, std::string log_path)
    : log_path_(std::move(log_path)) {
  pid_ = Spawn(argv, log_path_);
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_code_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void ChildProcess::Signal(int signal) {
  if (!exit_code_) kill(pid_, signal);
}

void ChildProcess::Kill9() {
  Signal(SIGKILL);
  WaitExit(std::chrono::seconds(5));
}

std::optional<int> ChildProcess::WaitExit(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + Scaled(timeout);
  while (!exit_code_) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = DecodeStatus(status);
      kill(-pid_, SIGKILL);  // anything it left in its group
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exit_code_;
}

bool ChildProcess::running() { return !WaitExit(std::chrono::milliseconds(0)).has_value(); }

std::string ChildProcess::Log() const { return ReadFile(log_path_); }

bool ChildProcess::WaitForLog(const std::string& pattern, std::chrono::milliseconds timeout) const {
  const std::regex re(pattern);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::regex_search(Log(), re)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace zkfleet::testing
