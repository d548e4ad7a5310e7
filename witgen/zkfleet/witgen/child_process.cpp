#include "zkfleet/witgen/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "zkfleet/common/error.hpp"

extern char** environ;

namespace zkfleet::witgen {
namespace {

constexpr size_t kStderrTail = 64 * 1024;

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

void MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(ErrorCode::kIo, std::string("pipe: ") + std::strerror(errno));
  read_end.fd = fds[0];
  write_end.fd = fds[1];
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

const char* SignalName(int sig) {
  switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGXCPU: return "SIGXCPU";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGTERM: return "SIGTERM";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
  }
}

// Every signal at its default and none blocked (the worker blocks some for
// its signalfd), plus `flags` (a process group or a session of its own).
void InitSpawnAttributes(posix_spawnattr_t* attr, short flags) {
  posix_spawnattr_init(attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(attr, &none);
  posix_spawnattr_setsigdefault(attr, &all);
  posix_spawnattr_setflags(attr, static_cast<short>(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | flags));
}

// posix_spawn's argv: the strings' pointers, then null. Valid while `args` lives.
std::vector<char*> ArgvOf(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

}  // namespace

std::span<uint8_t> StringSink::Buffer() { return {scratch_, sizeof scratch_}; }

void StringSink::Commit(size_t n) {
  size_t room = cap_ > text_.size() ? cap_ - text_.size() : 0;
  text_.append(reinterpret_cast<const char*>(scratch_), std::min(n, room));
}

std::string ChildExit::Describe() const {
  if (timed_out) return "killed at its wall-clock limit";
  if (cancelled) return "cancelled";
  if (exited) return "exit " + std::to_string(code);
  return std::string("killed by ") + SignalName(signal) + " (" + std::to_string(signal) + ")";
}

void SpawnDetached(const std::vector<std::string>& argv_in) {
  if (argv_in.empty()) throw Error(ErrorCode::kInvalidArgument, "SpawnDetached: no program");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int fd = 0; fd < 3; ++fd) posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  InitSpawnAttributes(&attr, POSIX_SPAWN_SETSID);
  std::vector<char*> argv = ArgvOf(argv_in);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error(ErrorCode::kIo, "cannot start " + argv_in[0] + ": " + std::strerror(rc));
}

ChildExit RunChild(const ChildOptions& options, std::span<const uint8_t> input, OutputSink& output) {
  if (options.argv.empty()) throw Error(ErrorCode::kInvalidArgument, "RunChild: no program");
  Fd in_r, in_w, out_r, out_w, err_r, err_w;
  MakePipe(in_r, in_w);
  if (options.stdout_fd < 0) MakePipe(out_r, out_w);
  MakePipe(err_r, err_w);
  // A witness is tens of MB: a 1 MiB pipe (the default cap of
  // /proc/sys/fs/pipe-max-size) moves it in 16x fewer wake-ups than 64 KiB.
  // Best effort: a smaller cap only costs speed.
  if (out_w.fd >= 0) ::fcntl(out_w.fd, F_SETPIPE_SZ, 1 << 20);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.fd, 0);
  posix_spawn_file_actions_adddup2(&actions, options.stdout_fd >= 0 ? options.stdout_fd : out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!options.working_directory.empty()) {
    posix_spawn_file_actions_addchdir_np(&actions, options.working_directory.c_str());
  }
  posix_spawnattr_t attr;
  InitSpawnAttributes(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> argv = ArgvOf(options.argv);
  char* empty_env[] = {nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), options.inherit_environment ? environ : empty_env);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error(ErrorCode::kIo, "cannot start " + options.argv[0] + ": " + std::strerror(rc));
  in_r.Close();
  out_w.Close();
  err_w.Close();
  SetNonBlocking(in_w.fd);
  if (out_r.fd >= 0) SetNonBlocking(out_r.fd);
  SetNonBlocking(err_r.fd);

  // A child that exits before reading all of its stdin makes our write fail
  // with EPIPE, and raise SIGPIPE, which would kill this whole process (the
  // worker): it is blocked on this thread while we run the child, and a
  // pending one is consumed before the mask is restored.
  sigset_t pipe_signal, old_mask;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old_mask);
  struct RestoreMask {
    sigset_t pipe_signal, old_mask;
    ~RestoreMask() {
      timespec zero{};
      while (sigtimedwait(&pipe_signal, nullptr, &zero) > 0) {
      }
      pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    }
  } restore{pipe_signal, old_mask};

  ChildExit result;
  size_t written = 0;
  if (input.empty()) in_w.Close();
  uint8_t discard[65536];
  char err_buf[8192];
  bool killed = false;
  auto kill_group = [&] {
    if (!killed) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      killed = true;
    }
  };
  // Pump the three pipes until stdout and stderr are closed.
  while (out_r.fd >= 0 || err_r.fd >= 0) {
    if (!killed && options.cancel && options.cancel->load(std::memory_order_relaxed)) {
      result.cancelled = true;
      kill_group();
    }
    auto now = std::chrono::steady_clock::now();
    if (!killed && now >= options.deadline) {
      result.timed_out = true;
      kill_group();
    }
    pollfd fds[3];
    int n = 0;
    int i_out = -1, i_err = -1, i_in = -1;
    if (out_r.fd >= 0) fds[i_out = n++] = {out_r.fd, POLLIN, 0};
    if (err_r.fd >= 0) fds[i_err = n++] = {err_r.fd, POLLIN, 0};
    if (in_w.fd >= 0) fds[i_in = n++] = {in_w.fd, POLLOUT, 0};
    int wait_ms = 100;
    if (!killed && options.deadline != std::chrono::steady_clock::time_point::max()) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(options.deadline - now).count();
      wait_ms = static_cast<int>(std::clamp<long long>(left + 1, 0, 100));
    }
    int ready = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (i_in >= 0 && (fds[i_in].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t put = ::write(in_w.fd, input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if ((put < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) in_w.Close();
    }
    if (i_out >= 0 && (fds[i_out].revents & (POLLIN | POLLERR | POLLHUP))) {
      for (;;) {
        std::span<uint8_t> buffer = output.Buffer();
        bool overflow = buffer.empty();
        if (overflow) buffer = {discard, sizeof discard};
        ssize_t got = ::read(out_r.fd, buffer.data(), buffer.size());
        if (got > 0) {
          if (overflow) {
            result.output_overflow = true;
          } else {
            output.Commit(static_cast<size_t>(got));
          }
          continue;
        }
        if (got == 0 || (errno != EAGAIN && errno != EINTR)) out_r.Close();
        break;
      }
    }
    if (i_err >= 0 && (fds[i_err].revents & (POLLIN | POLLERR | POLLHUP))) {
      ssize_t got = ::read(err_r.fd, err_buf, sizeof err_buf);
      if (got > 0) {
        result.stderr_tail.append(err_buf, static_cast<size_t>(got));
        if (result.stderr_tail.size() > 2 * kStderrTail) {
          result.stderr_tail.erase(0, result.stderr_tail.size() - kStderrTail);
        }
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        err_r.Close();
      }
    }
  }
  if (result.stderr_tail.size() > kStderrTail) result.stderr_tail.erase(0, result.stderr_tail.size() - kStderrTail);
  // Both streams are closed: reap it (killing it at the deadline if it lingers).
  // A pidfd turns readable when the child exits: no polling latency between
  // its exit and ours (it matters for a 10 ms witness).
  Fd exited{static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
  int status = 0;
  rusage usage{};
  for (;;) {
    pid_t r = ::wait4(pid, &status, killed ? 0 : WNOHANG, &usage);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (r == 0) {
      bool cancel = options.cancel && options.cancel->load(std::memory_order_relaxed);
      if (std::chrono::steady_clock::now() >= options.deadline || cancel) {
        (cancel ? result.cancelled : result.timed_out) = true;
        kill_group();
      } else if (exited.fd >= 0) {
        pollfd pfd{exited.fd, POLLIN, 0};
        ::poll(&pfd, 1, 20);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  }
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  if (WIFEXITED(status)) {
    result.exited = true;
    result.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace zkfleet::witgen
