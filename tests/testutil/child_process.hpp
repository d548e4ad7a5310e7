// Child processes for the multi-process tests (fleet, Prometheus): started
// with stdout+stderr in a log file, in their own process group, with
// PR_SET_PDEATHSIG(SIGKILL) so they die with the test even on a ctest
// timeout or a crash; ~ChildProcess kills the group and reaps it.
//
// Thread-safety: one thread owns a ChildProcess.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace zkfleet::testing {

// A TCP port on 127.0.0.1 that nothing listens on right now, chosen at
// random below the kernel's ephemeral range (where outgoing connections
// cannot take it before the test's server binds it).
int FreePort();

// Runs `argv` (argv[0] looked up in PATH when it has no '/') to completion,
// stdout+stderr into `log_path` (a temporary file when empty) and, when
// given, into `output`. Returns the exit code, or 128 + signal.
int RunProcess(const std::vector<std::string>& argv, std::string* output, const std::string& log_path = "");

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, std::string log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal);  // to the process itself, not its group
  void Kill9();             // SIGKILL and reap
  // Exit code (or 128 + signal) once it has ended; nullopt on timeout.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);
  bool running();
  std::string Log() const;
  // Waits until the log matches the regular expression; false on timeout.
  bool WaitForLog(const std::string& pattern, std::chrono::milliseconds timeout) const;

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
};

}  // namespace zkfleet::testing
