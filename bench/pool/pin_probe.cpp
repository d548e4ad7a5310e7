// zkfleet_pin_probe: how fast the worker's pinned pool (PinnedPool) pins,
// copies from and gives back host memory with each CUDA kind (issue 15):
//
//   zkfleet_pin_probe SIZE_GIB [--threads N] [--kinds cuda-host-alloc,hugepage-registered]
//                     [--chunk-mib M] [--no-warmup]
//
// For each kind it prints, one line per figure:
//   pin      seconds and s/GiB to pin SIZE GiB through PinnedPool::Allocate
//            (and the mode the pool ended in: a refused registration falls
//            back to cuda-host-alloc), with AnonHugePages gained;
//   h2d      cudaMemcpy bandwidth from 1 GiB of pool buffers to the device
//            (GB/s: the registered memory is DMA-able and fast), with the
//            pointer's CUDA memory type;
//   release  seconds to ReleaseChunk the whole pool;
//   kill9    after kill -9 of a process holding the pinned pool: seconds
//            until waitpid returns and until MemAvailable is back within
//            2 GiB of what it was before that process started (timeout 120 s).
//
// Every measure runs in a forked child: CUDA is never initialised in this
// parent (a forked CUDA context is unusable), and each kind starts from a
// clean process like a worker does. Output is unbuffered, so a run cut short
// still shows what it measured.
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/worker/pinned_pool.hpp"

namespace {

namespace cuda = zkfleet::cuda;
using zkfleet::worker::PinnedPool;
using zkfleet::worker::PoolBuffer;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kGiB = 1ull << 30;

double Since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A /proc/meminfo field in bytes, or -1.
long long MeminfoBytes(const char* field) {
  std::ifstream file("/proc/meminfo");
  std::string line;
  const size_t length = std::strlen(field);
  while (std::getline(file, line)) {
    if (line.compare(0, length, field) == 0 && line.size() > length && line[length] == ':') {
      return std::atoll(line.c_str() + length + 1) * 1024;
    }
  }
  return -1;
}

std::string Fixed(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

double Gib(long long bytes) { return static_cast<double>(bytes) / static_cast<double>(kGiB); }

std::string FirstLine(const char* path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return "(missing)";
  return line;
}

PinnedPool::Kind KindOf(const std::string& name) {
  if (name == "hugepage-registered") return PinnedPool::Kind::kHugepageRegistered;
  if (name == "cuda-host-alloc") return PinnedPool::Kind::kCudaHost;
  if (name == "mmap-locked") return PinnedPool::Kind::kLockedMmap;
  std::fprintf(stderr, "zkfleet_pin_probe: unknown kind %s\n", name.c_str());
  std::exit(2);
}

struct Options {
  uint64_t size_gib = 96;
  unsigned threads = PinnedPool::kDefaultThreads;
  uint64_t chunk_mib = 0;  // 0: the pool's default for the kind
  std::vector<std::string> kinds = {"cuda-host-alloc", "hugepage-registered"};
  bool warmup = true;
};

PinnedPool::AllocateOptions AllocateOptionsFor(const Options& options) {
  PinnedPool::AllocateOptions allocate;
  allocate.threads = options.threads;
  allocate.chunk_bytes = options.chunk_mib << 20;
  return allocate;
}

// Runs body() in a forked child; returns its exit status (or -1 when it was
// killed after `timeout_s`).
int InChild(const std::function<int()>& body, double timeout_s = 540) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  auto start = Clock::now();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (Since(start) > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      std::printf("error: child killed after %.0f s\n", timeout_s);
      return -1;
    }
    usleep(20000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Host-to-device bandwidth from up to 1 GiB of `pool` buffers (each at most a
// chunk), into one device buffer.
void MeasureH2D(PinnedPool& pool, const std::string& kind, uint64_t chunk_bytes) {
  std::vector<PoolBuffer> buffers;
  uint64_t total = 0;
  const uint64_t piece = std::min<uint64_t>(chunk_bytes, kGiB);
  while (total < kGiB) {
    PoolBuffer buffer = pool.Acquire(static_cast<size_t>(std::min(piece, kGiB - total)));
    if (!buffer) break;
    std::memset(buffer.data(), 0x5a, buffer.size());
    total += buffer.size();
    buffers.push_back(std::move(buffer));
  }
  if (buffers.empty()) {
    std::printf("h2d kind=%s error=no-buffer\n", kind.c_str());
    return;
  }
  const std::string type = cuda::HostMemoryKind(buffers.front().data());
  try {
    cuda::DeviceBuffer device(total, "the h2d probe");
    auto copy_all = [&] {
      uint64_t offset = 0;
      for (const PoolBuffer& buffer : buffers) {
        cuda::CopyToDevice(device.as<uint8_t>() + offset, buffer.data(), buffer.size(), "h2d probe");
        offset += buffer.size();
      }
    };
    copy_all();  // warm-up
    cuda::SynchronizeDevice("h2d probe");
    constexpr int kRepeats = 5;
    auto start = Clock::now();
    for (int i = 0; i < kRepeats; ++i) copy_all();
    cuda::SynchronizeDevice("h2d probe");
    double seconds = Since(start);
    std::printf("h2d kind=%s bytes=%llu buffers=%zu gbps=%.2f memory_type=%s status=ok\n", kind.c_str(),
                static_cast<unsigned long long>(total), buffers.size(),
                static_cast<double>(total) * kRepeats / seconds / 1e9, type.c_str());
  } catch (const std::exception& e) {
    std::printf("h2d kind=%s error=\"%s\"\n", kind.c_str(), e.what());
  }
}

// The same copy from ordinary (pageable) memory: what the pool must beat.
int PageableReference() {
  std::vector<uint8_t> host(kGiB, 0x5a);
  try {
    cuda::DeviceBuffer device(kGiB, "the pageable h2d reference");
    cuda::CopyToDevice(device.get(), host.data(), kGiB, "pageable h2d reference");
    auto start = Clock::now();
    for (int i = 0; i < 5; ++i) cuda::CopyToDevice(device.get(), host.data(), kGiB, "pageable h2d reference");
    cuda::SynchronizeDevice("pageable h2d reference");
    std::printf("h2d kind=pageable-reference bytes=%llu gbps=%.2f\n", static_cast<unsigned long long>(kGiB),
                5.0 * kGiB / Since(start) / 1e9);
  } catch (const std::exception& e) {
    std::printf("h2d kind=pageable-reference error=\"%s\"\n", e.what());
    return 1;
  }
  return 0;
}

// Pin, copy, release, in this (child) process.
int PinCopyRelease(const Options& options, const std::string& kind_name) {
  // Create the context first: its cost is not the pool's.
  try {
    cuda::CreateContext(0, "the pin probe");
  } catch (const std::exception& e) {
    std::printf("pin kind=%s error=\"no CUDA context: %s\"\n", kind_name.c_str(), e.what());
    return 1;
  }
  PinnedPool pool;
  const uint64_t bytes = options.size_gib * kGiB;
  const long long huge_before = MeminfoBytes("AnonHugePages");
  auto start = Clock::now();
  try {
    pool.Allocate(bytes, KindOf(kind_name), AllocateOptionsFor(options));
  } catch (const std::exception& e) {
    std::printf("pin kind=%s error=\"%s\" after_s=%.3f\n", kind_name.c_str(), e.what(), Since(start));
    return 1;
  }
  double seconds = Since(start);
  auto stats = pool.stats();
  std::printf("pin kind=%s size_gib=%llu seconds=%.3f s_per_gib=%.4f mode=%s chunks=%llu threads=%u "
              "anon_huge_gained_gib=%.1f\n",
              kind_name.c_str(), static_cast<unsigned long long>(options.size_gib), seconds,
              seconds / static_cast<double>(options.size_gib), stats.mode.c_str(),
              static_cast<unsigned long long>(stats.alloc_calls), options.threads,
              Gib(MeminfoBytes("AnonHugePages") - huge_before));
  const uint64_t chunk = stats.alloc_calls ? stats.pool_bytes / stats.alloc_calls : kGiB;
  MeasureH2D(pool, kind_name, chunk);
  start = Clock::now();
  while (pool.ReleaseChunk() != 0) {
  }
  seconds = Since(start);
  std::printf("release kind=%s seconds=%.3f s_per_gib=%.4f\n", kind_name.c_str(), seconds,
              seconds / static_cast<double>(options.size_gib));
  return 0;
}

// Waits (at most 30 s) until MemAvailable moves less than 256 MiB in a
// second: memory an earlier child gave back must not count as this one's.
long long SettledMemAvailable() {
  long long last = MeminfoBytes("MemAvailable");
  for (int i = 0; i < 30; ++i) {
    sleep(1);
    long long now = MeminfoBytes("MemAvailable");
    if (std::llabs(now - last) < (256ll << 20)) return now;
    last = now;
  }
  return last;
}

// A child pins the pool, says "ready" and waits; the parent kills it with
// SIGKILL and times the memory's return.
void KillNine(const Options& options, const std::string& kind_name) {
  const long long baseline = SettledMemAvailable();
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    std::printf("kill9 kind=%s error=pipe\n", kind_name.c_str());
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    PinnedPool pool;
    try {
      pool.Allocate(options.size_gib * kGiB, KindOf(kind_name), AllocateOptionsFor(options));
    } catch (const std::exception& e) {
      std::printf("kill9 kind=%s error=\"%s\"\n", kind_name.c_str(), e.what());
      _exit(1);
    }
    if (write(pipe_fds[1], "ready\n", 6) != 6) _exit(1);
    for (;;) pause();
  }
  close(pipe_fds[1]);
  pollfd ready{pipe_fds[0], POLLIN, 0};
  char text[8] = {};
  bool pinned = poll(&ready, 1, 400 * 1000) == 1 && read(pipe_fds[0], text, sizeof text) > 0 &&
                std::strncmp(text, "ready", 5) == 0;
  close(pipe_fds[0]);
  if (!pinned) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::printf("kill9 kind=%s error=child-did-not-pin\n", kind_name.c_str());
    return;
  }
  const long long held = MeminfoBytes("MemAvailable");
  auto start = Clock::now();
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  const double reaped = Since(start);
  constexpr long long kSlack = 2ll << 30;
  double back = -1;
  long long now = held;
  while (Since(start) < 120) {
    now = MeminfoBytes("MemAvailable");
    if (now >= baseline - kSlack) {
      back = Since(start);
      break;
    }
    usleep(50 * 1000);
  }
  std::printf("kill9 kind=%s size_gib=%llu waitpid_s=%.3f return_s=%s baseline_avail_gib=%.1f held_avail_gib=%.1f "
              "final_avail_gib=%.1f\n",
              kind_name.c_str(), static_cast<unsigned long long>(options.size_gib), reaped,
              back < 0 ? "timeout" : Fixed(back).c_str(), Gib(baseline), Gib(held), Gib(now));
}

// Touch SIZE GiB once and give it back: on a VM whose memory grows on first
// use the first kind measured would otherwise pay for the growth.
void Warmup(const Options& options) {
  const size_t bytes = options.size_gib * kGiB;
  auto start = Clock::now();
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    std::printf("warmup error=mmap\n");
    return;
  }
  madvise(base, bytes, MADV_HUGEPAGE);
  const unsigned threads = options.threads;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([=] {
      for (size_t off = bytes / threads * t; off < bytes / threads * (t + 1); off += 4096) {
        static_cast<volatile uint8_t*>(base)[off] = 1;
      }
    });
  }
  for (auto& w : workers) w.join();
  double touched = Since(start);
  munmap(base, bytes);
  std::printf("warmup size_gib=%llu touch_s=%.3f total_s=%.3f\n", static_cast<unsigned long long>(options.size_gib),
              touched, Since(start));
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "zkfleet_pin_probe: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--threads") {
      options.threads = static_cast<unsigned>(std::stoul(value()));
    } else if (arg == "--chunk-mib") {
      options.chunk_mib = std::stoull(value());
    } else if (arg == "--kinds") {
      options.kinds.clear();
      std::stringstream list(value());
      for (std::string kind; std::getline(list, kind, ',');) options.kinds.push_back(kind);
    } else if (arg == "--no-warmup") {
      options.warmup = false;
    } else if (!arg.empty() && arg[0] != '-') {
      options.size_gib = std::stoull(arg);
    } else {
      std::fprintf(stderr, "usage: zkfleet_pin_probe SIZE_GIB [--threads N] [--kinds a,b] [--chunk-mib M] "
                           "[--no-warmup]\n");
      return 2;
    }
  }
  for (const auto& kind : options.kinds) KindOf(kind);  // exits on a typo before anything runs

  std::printf("host thp_enabled=\"%s\" thp_defrag=\"%s\" auto_kind=%s hardware_threads=%u mem_total_gib=%.1f "
              "mem_available_gib=%.1f\n",
              FirstLine(PinnedPool::kThpEnabledPath).c_str(),
              FirstLine("/sys/kernel/mm/transparent_hugepage/defrag").c_str(),
              PinnedPool::KindName(PinnedPool::ChooseKind(true, zkfleet::worker::PoolModeRequest::kAuto)),
              std::thread::hardware_concurrency(), Gib(MeminfoBytes("MemTotal")), Gib(MeminfoBytes("MemAvailable")));
  if (options.warmup) Warmup(options);
  InChild(PageableReference, 120);
  for (const std::string& kind : options.kinds) {
    int status = InChild([&] { return PinCopyRelease(options, kind); });
    if (status != 0) std::printf("error: the pin/copy/release child for %s ended with %d\n", kind.c_str(), status);
    KillNine(options, kind);
  }
  std::printf("done\n");
  return 0;
}
