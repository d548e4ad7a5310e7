// One child process with its three standard streams on pipes: the build's
// tools (wasm2c, cc) and the compiled generators run through this.
//
// The child is started with posix_spawn (no fork of a process holding GPU
// contexts and pinned memory), in a process group of its own, with every
// signal at its default and none blocked (the worker blocks some for its
// signalfd), and no descriptor but 0, 1 and 2. Run writes `input` to its
// stdin, hands its stdout to an OutputSink, keeps the tail of its stderr,
// and kills the whole group (SIGKILL) at the deadline or when `cancel` is set.
//
// Thread-safety: one ChildProcess per thread; any number may run at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace zkfleet::witgen {

// Where the child's stdout goes. Buffer() is where the next bytes are read
// into (empty: the output is longer than expected; the rest is discarded and
// ChildExit::output_overflow set); Commit(n) says n bytes arrived there.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  virtual std::span<uint8_t> Buffer() = 0;
  virtual void Commit(size_t n) = 0;
};

// Appends stdout to a string, up to a cap (tool output in error messages).
class StringSink : public OutputSink {
 public:
  explicit StringSink(size_t cap = 1 << 20) : cap_(cap) {}
  std::span<uint8_t> Buffer() override;
  void Commit(size_t n) override;
  const std::string& text() const { return text_; }

 private:
  size_t cap_;
  std::string text_;
  uint8_t scratch_[65536];
};

struct ChildExit {
  bool exited = false;      // exited normally, with `code`
  int code = -1;
  int signal = 0;           // killed by this signal
  bool timed_out = false;   // we killed it at the deadline
  bool cancelled = false;   // we killed it for `cancel`
  bool output_overflow = false;
  double cpu_seconds = 0;   // user + system, from wait4
  std::string stderr_tail;  // the last 64 KiB of its stderr
  std::string Describe() const;  // "exit 3", "killed by SIGXCPU", "timed out after the deadline"
};

struct ChildOptions {
  std::vector<std::string> argv;      // argv[0]: a path, or a name looked up in PATH
  bool inherit_environment = false;   // else an empty environment
  std::string working_directory;      // empty: this process's
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancel = nullptr;
  int stdout_fd = -1;                 // >= 0: the child's stdout is this file (RunChild's sink unused)
};

// Starts argv in a session of its own (setsid), its standard streams on
// /dev/null, this process's environment, and does not wait: it outlives
// this process (a one-shot zkprove leaves the native generator's build
// running behind it). Throws zkfleet::Error (kIo) when it cannot start.
void SpawnDetached(const std::vector<std::string>& argv);

// Spawns and runs the child to its end. Throws zkfleet::Error (kIo) only when
// it cannot be started at all (naming argv[0] and errno).
ChildExit RunChild(const ChildOptions& options, std::span<const uint8_t> input, OutputSink& output);

}  // namespace zkfleet::witgen
