// Child processes for the Prometheus integration test: started with their
// output in a log file, in their own process group, with
// PR_SET_PDEATHSIG(SIGKILL) so they die with the test even on a ctest timeout
// or a crash; ~ChildProcess kills the group and reaps it.
//
// Thread-safety: one thread owns a ChildProcess.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace zkfleet::testing {

// A TCP port on 127.0.0.1 nothing listens on right now.
int FreePort();
std::string ReadFile(const std::string& path);

// Runs `argv` to completion; stdout+stderr into `output`. The exit code, or
// 128 + signal.
int RunCommand(const std::vector<std::string>& argv, std::string* output, const std::string& log_path);

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, std::string log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // Exit code (or 128 + signal) once ended; nullopt on timeout.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);
  std::string Log() const { return ReadFile(log_path_); }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
};

}  // namespace zkfleet::testing
