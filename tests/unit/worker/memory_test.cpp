// The memory gate's sources and the pinned pool.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "zkfleet/common/byte_size.hpp"
#include "zkfleet/common/error.hpp"

#include "zkfleet/worker/memory_source.hpp"
#include "zkfleet/worker/pinned_pool.hpp"

namespace zkfleet::worker {
namespace {

class FakeRoot {
 public:
  FakeRoot() {
    dir_ = std::filesystem::temp_directory_path() / ("zkfleet-mem-" + std::to_string(getpid()) + "-" +
                                                     std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "proc/self");
    std::filesystem::create_directories(dir_ / "cgroup");
  }
  ~FakeRoot() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& relative, const std::string& text) {
    auto path = dir_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  std::string proc() const { return (dir_ / "proc").string(); }
  std::string cgroup() const { return (dir_ / "cgroup").string(); }
  std::string path() const { return dir_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
};

constexpr uint64_t kMiB = 1 << 20;

TEST(SystemMemorySource, MemAvailableWithoutCgroupLimit) {
  FakeRoot root;
  root.Write("proc/meminfo", "MemTotal:       16000000 kB\nMemFree:  100 kB\nMemAvailable:    2048000 kB\n");
  root.Write("proc/self/cgroup", "0::/job\n");
  root.Write("cgroup/job/memory.max", "max\n");
  root.Write("cgroup/job/memory.current", "123456\n");
  auto reading = SystemMemorySource(root.proc(), root.cgroup()).Read();
  EXPECT_EQ(reading.available_bytes, 2048000ull * 1024);
  EXPECT_NE(reading.detail.find("MemAvailable"), std::string::npos);
}

TEST(SystemMemorySource, CgroupV2LimitMinusUsage) {
  FakeRoot root;
  root.Write("proc/meminfo", "MemAvailable:    20000000 kB\n");
  root.Write("proc/self/cgroup", "0::/kubepods/pod1\n");
  root.Write("cgroup/kubepods/pod1/memory.max", std::to_string(1024 * kMiB) + "\n");
  root.Write("cgroup/kubepods/pod1/memory.current", std::to_string(300 * kMiB) + "\n");
  auto reading = SystemMemorySource(root.proc(), root.cgroup()).Read();
  EXPECT_EQ(reading.available_bytes, 724 * kMiB);
  EXPECT_NE(reading.detail.find("limit 1024 MiB"), std::string::npos) << reading.detail;
}

TEST(SystemMemorySource, CgroupV1AndTheSmallerOfTheTwo) {
  FakeRoot root;
  root.Write("proc/meminfo", "MemAvailable:    102400 kB\n");  // 100 MiB
  root.Write("proc/self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/docker/abc\n");
  root.Write("cgroup/memory/docker/abc/memory.limit_in_bytes", std::to_string(4096 * kMiB));
  root.Write("cgroup/memory/docker/abc/memory.usage_in_bytes", std::to_string(1024 * kMiB));
  auto reading = SystemMemorySource(root.proc(), root.cgroup()).Read();
  EXPECT_EQ(reading.available_bytes, 100 * kMiB);  // the host has less than the cgroup allows
}

TEST(SimulatedMemorySource, PoolsInTheLedgerReduceWhatIsAvailable) {
  FakeRoot root;
  SimulatedMemorySource source(100 * kMiB, root.path() + "/ledger");
  EXPECT_EQ(source.Read().available_bytes, 100 * kMiB);
  source.OnPoolChanged("a", 64 * kMiB);
  SimulatedMemorySource other(100 * kMiB, root.path() + "/ledger");
  EXPECT_EQ(other.Read().available_bytes, 36 * kMiB);
  source.OnPoolChanged("a", 0);
  EXPECT_EQ(other.Read().available_bytes, 100 * kMiB);
}

TEST(MemoryBudget, BytesOrShare) {
  EXPECT_EQ(ParseByteSize("512MiB"), 512 * kMiB);
  EXPECT_EQ(ParseByteSize("2G"), 2048 * kMiB);
  EXPECT_EQ(ParseByteSize("1048576"), kMiB);
  EXPECT_FALSE(ParseByteSize("12 parsecs").has_value());
  EXPECT_FALSE(ParseByteSize("-1").has_value());
  // zkworker --device-memory-budget takes the same sizes (0 = the device's free memory).
  EXPECT_EQ(ParseByteSize("24GiB"), 24 * 1024 * kMiB);
  EXPECT_EQ(ParseByteSize("0"), 0u);
  auto share = ParseMemoryBudget("25%");
  ASSERT_TRUE(share);
  EXPECT_EQ(share->Resolve(400 * kMiB), 100 * kMiB);
  EXPECT_EQ(ParseMemoryBudget("64MiB")->Resolve(1), 64 * kMiB);
  EXPECT_FALSE(ParseMemoryBudget("150%").has_value());
}

TEST(PinnedPool, CarvesBuffersAndReleasesChunkByChunk) {
  PinnedPool pool;
  std::vector<uint64_t> observed;
  pool.set_observer([&](uint64_t bytes) { observed.push_back(bytes); });
  pool.Allocate(4 * kMiB, PinnedPool::Kind::kLockedMmap, kMiB);
  auto stats = pool.stats();
  EXPECT_EQ(stats.pool_bytes, 4 * kMiB);
  EXPECT_EQ(stats.alloc_calls, 4u);
  EXPECT_EQ(observed, (std::vector<uint64_t>{kMiB, 2 * kMiB, 3 * kMiB, 4 * kMiB}));

  PoolBuffer a = pool.Acquire(1000);
  PoolBuffer b = pool.Acquire(kMiB - 4096);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  std::memset(a.data(), 0x5a, a.size());
  std::memset(b.data(), 0xa5, b.size());
  EXPECT_EQ(static_cast<unsigned char>(a.view()[999]), 0x5a);
  EXPECT_FALSE(pool.Acquire(2 * kMiB));  // larger than a chunk: the caller uses the heap
  EXPECT_GT(pool.stats().in_use_bytes, kMiB - 4096);

  // The last chunk is free: released; the first is in use: kept.
  b = PoolBuffer();
  EXPECT_EQ(pool.ReleaseChunk(), 3 * kMiB);
  EXPECT_EQ(pool.ReleaseChunk(), 2 * kMiB);
  EXPECT_EQ(pool.ReleaseChunk(), 1 * kMiB);
  EXPECT_EQ(pool.ReleaseChunk(), 1 * kMiB);  // `a` still uses chunk 0
  a.Reset();
  EXPECT_EQ(pool.stats().in_use_bytes, 0u);
  EXPECT_EQ(pool.ReleaseChunk(), 0u);
  EXPECT_EQ(observed.back(), 0u);
}

TEST(PinnedPool, FreedSpaceIsReusedAfterCoalescing) {
  PinnedPool pool;
  pool.Allocate(kMiB, PinnedPool::Kind::kLockedMmap, kMiB);
  std::vector<PoolBuffer> quarters;
  for (int i = 0; i < 4; ++i) quarters.push_back(pool.Acquire(kMiB / 4));
  for (auto& q : quarters) ASSERT_TRUE(q);
  EXPECT_FALSE(pool.Acquire(1));
  quarters[1].Reset();
  quarters[2].Reset();
  EXPECT_TRUE(pool.Acquire(kMiB / 2));  // the two freed neighbours merged
}

using Kind = PinnedPool::Kind;

TEST(PinnedPool, ChooserAutoFollowsTransparentHugepages) {
  FakeRoot root;
  root.Write("thp/madvise", "always [madvise] never\n");
  root.Write("thp/always", "[always] madvise never\n");
  root.Write("thp/never", "always madvise [never]\n");
  const std::string dir = root.path() + "/thp/";
  EXPECT_TRUE(PinnedPool::TransparentHugepagesUsable(dir + "madvise"));
  EXPECT_FALSE(PinnedPool::TransparentHugepagesUsable(dir + "never"));
  EXPECT_FALSE(PinnedPool::TransparentHugepagesUsable(dir + "missing"));  // no THP (gVisor)
  EXPECT_EQ(PinnedPool::ChooseKind(true, PoolModeRequest::kAuto, dir + "madvise"), Kind::kHugepageRegistered);
  EXPECT_EQ(PinnedPool::ChooseKind(true, PoolModeRequest::kAuto, dir + "always"), Kind::kHugepageRegistered);
  EXPECT_EQ(PinnedPool::ChooseKind(true, PoolModeRequest::kAuto, dir + "never"), Kind::kCudaHost);
  EXPECT_EQ(PinnedPool::ChooseKind(true, PoolModeRequest::kAuto, dir + "missing"), Kind::kCudaHost);
}

TEST(PinnedPool, ChooserObeysExplicitRequestsAndCpuAlwaysMaps) {
  FakeRoot root;
  root.Write("never", "always madvise [never]\n");
  const std::string never = root.path() + "/never";
  EXPECT_EQ(PinnedPool::ChooseKind(true, PoolModeRequest::kHugepage, never), Kind::kHugepageRegistered);
  EXPECT_EQ(PinnedPool::ChooseKind(true, PoolModeRequest::kCudaHost, never), Kind::kCudaHost);
  EXPECT_EQ(PinnedPool::ChooseKind(true, PoolModeRequest::kMmap, never), Kind::kLockedMmap);
  for (auto request : {PoolModeRequest::kAuto, PoolModeRequest::kHugepage, PoolModeRequest::kCudaHost,
                       PoolModeRequest::kMmap}) {
    EXPECT_EQ(PinnedPool::ChooseKind(false, request, never), Kind::kLockedMmap);
  }
  EXPECT_EQ(ParsePoolModeRequest("auto"), PoolModeRequest::kAuto);
  EXPECT_EQ(ParsePoolModeRequest("hugepage"), PoolModeRequest::kHugepage);
  EXPECT_EQ(ParsePoolModeRequest("cuda-host"), PoolModeRequest::kCudaHost);
  EXPECT_EQ(ParsePoolModeRequest("mmap"), PoolModeRequest::kMmap);
  EXPECT_FALSE(ParsePoolModeRequest("hugepages").has_value());
}

TEST(PinnedPool, ModeNames) {
  EXPECT_STREQ(PinnedPool::KindName(Kind::kHugepageRegistered), "hugepage-registered");
  EXPECT_STREQ(PinnedPool::KindName(Kind::kCudaHost), "cuda-host-alloc");
  EXPECT_STREQ(PinnedPool::KindName(Kind::kLockedMmap), "mmap-locked");
  PinnedPool pool;
  EXPECT_EQ(pool.mode_name(), "none");
  EXPECT_EQ(pool.stats().mode, "none");
  pool.Allocate(kMiB, Kind::kLockedMmap, kMiB);
  auto stats = pool.stats();
  // mlock may be refused here (RLIMIT_MEMLOCK): the name says which.
  EXPECT_EQ(stats.mode, stats.locked ? "mmap-locked" : "mmap-unlocked");
  EXPECT_EQ(pool.mode_name(), stats.mode);
}

TEST(PinnedPool, HugepageAdvisedMmapHandsOutAlignedBuffers) {
  PinnedPool pool;
  PinnedPool::AllocateOptions options;
  options.chunk_bytes = 4 * kMiB;
  options.threads = 4;
  EXPECT_EQ(pool.Allocate(10 * kMiB, Kind::kLockedMmap, options), 10 * kMiB);
  auto stats = pool.stats();
  EXPECT_EQ(stats.pool_bytes, 10 * kMiB);
  EXPECT_EQ(stats.target_bytes, 10 * kMiB);
  EXPECT_EQ(stats.pending_bytes, 0u);
  EXPECT_EQ(stats.alloc_calls, 3u);  // 4 + 4 + 2 MiB
  PoolBuffer first = pool.Acquire(100);
  PoolBuffer second = pool.Acquire(3 * kMiB);
  ASSERT_TRUE(first);
  ASSERT_TRUE(second);
  // Chunks start on a huge-page boundary; buffers on 256 bytes.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first.data()) % PinnedPool::kHugepageBytes, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second.data()) % 256, 0u);
  std::memset(second.data(), 0x11, second.size());  // the pages are ours and writable
  EXPECT_EQ(second.data()[second.size() - 1], 0x11);
}

TEST(PinnedPool, DefaultChunkOfTheTouchingKindsIsLarge) {
  PinnedPool pool;
  pool.Allocate(3 * kMiB, Kind::kLockedMmap, PinnedPool::AllocateOptions{});
  EXPECT_EQ(pool.stats().alloc_calls, 1u);  // one chunk: the default is 1 GiB
  EXPECT_EQ(pool.stats().pool_bytes, 3 * kMiB);
}

TEST(PinnedPool, GrowsInTwoCallsAndReleasesChunkByChunkToZero) {
  PinnedPool pool;
  std::vector<uint64_t> observed;
  pool.set_observer([&](uint64_t bytes) { observed.push_back(bytes); });
  PinnedPool::AllocateOptions options;
  options.chunk_bytes = 2 * kMiB;
  options.threads = 2;
  EXPECT_EQ(pool.Allocate(4 * kMiB, Kind::kLockedMmap, options), 4 * kMiB);
  PoolBuffer early = pool.Acquire(kMiB);  // the worker uses the pool while it grows
  ASSERT_TRUE(early);
  EXPECT_EQ(pool.Allocate(4 * kMiB, Kind::kLockedMmap, options), 4 * kMiB);
  auto stats = pool.stats();
  EXPECT_EQ(stats.pool_bytes, 8 * kMiB);
  EXPECT_EQ(stats.target_bytes, 8 * kMiB);
  EXPECT_EQ(stats.alloc_calls, 4u);
  EXPECT_EQ(stats.in_use_bytes, kMiB);
  EXPECT_EQ(observed, (std::vector<uint64_t>{2 * kMiB, 4 * kMiB, 6 * kMiB, 8 * kMiB}));
  // Another kind cannot join a held pool.
  try {
    pool.Allocate(kMiB, Kind::kCudaHost, kMiB);
    FAIL() << "a cuda-host-alloc chunk joined a mmap pool";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kUnsupported) << e.what();
  }
  EXPECT_EQ(pool.stats().pool_bytes, 8 * kMiB);

  observed.clear();
  EXPECT_EQ(pool.ReleaseChunk(), 6 * kMiB);
  EXPECT_EQ(pool.ReleaseChunk(), 4 * kMiB);
  EXPECT_EQ(pool.ReleaseChunk(), 2 * kMiB);
  EXPECT_EQ(pool.ReleaseChunk(), 2 * kMiB);  // `early` holds the first chunk
  early.Reset();
  EXPECT_EQ(pool.ReleaseChunk(), 0u);
  EXPECT_EQ(observed, (std::vector<uint64_t>{6 * kMiB, 4 * kMiB, 2 * kMiB, 0}));
  stats = pool.stats();
  EXPECT_EQ(stats.pool_bytes, 0u);
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(stats.target_bytes, 0u);
}

TEST(PinnedPool, CancelStopsTheGrowthBetweenChunks) {
  PinnedPool pool;
  std::atomic<bool> cancel{false};
  std::vector<uint64_t> observed;
  // The drain arrives once the first chunk is in.
  pool.set_observer([&](uint64_t bytes) {
    observed.push_back(bytes);
    cancel = true;
  });
  PinnedPool::AllocateOptions options;
  options.chunk_bytes = 2 * kMiB;
  options.threads = 1;  // one chunk a batch: the flag is seen right after it
  options.cancel = &cancel;
  EXPECT_EQ(pool.Allocate(8 * kMiB, Kind::kLockedMmap, options), 2 * kMiB);
  auto stats = pool.stats();
  EXPECT_EQ(stats.pool_bytes, 2 * kMiB);
  EXPECT_EQ(stats.target_bytes, 2 * kMiB);  // no more growth to come
  EXPECT_EQ(stats.pending_bytes, 0u);
  EXPECT_EQ(observed, (std::vector<uint64_t>{2 * kMiB}));
  // Cancelled before it starts: nothing added.
  EXPECT_EQ(pool.Allocate(8 * kMiB, Kind::kLockedMmap, options), 0u);
  EXPECT_EQ(pool.ReleaseChunk(), 0u);
}

TEST(PinnedPool, GrowsWhileOtherThreadsAcquireAndRead) {
  PinnedPool pool;
  PinnedPool::AllocateOptions options;
  options.chunk_bytes = kMiB;
  options.threads = 2;
  pool.Allocate(kMiB, Kind::kLockedMmap, options);
  std::atomic<bool> done{false};
  std::atomic<int> violations{0};
  std::thread user([&] {
    while (!done) {
      PoolBuffer buffer = pool.Acquire(256 * 1024);
      auto stats = pool.stats();
      if (stats.in_use_bytes > stats.pool_bytes || stats.target_bytes < stats.pool_bytes) ++violations;
      if (buffer) std::memset(buffer.data(), 1, buffer.size());
    }
  });
  EXPECT_EQ(pool.Allocate(16 * kMiB, Kind::kLockedMmap, options), 16 * kMiB);
  done = true;
  user.join();
  EXPECT_EQ(violations.load(), 0);
  auto stats = pool.stats();
  EXPECT_EQ(stats.pool_bytes, 17 * kMiB);
  EXPECT_EQ(stats.in_use_bytes, 0u);
  while (pool.ReleaseChunk() != 0) {
  }
  EXPECT_EQ(pool.stats().pool_bytes, 0u);
}

// The worker's drain: stop the background growth, join it, release.
TEST(PinnedPool, DrainStopsBackgroundGrowthThenReleasesEverything) {
  PinnedPool pool;
  std::atomic<bool> cancel{false};
  PinnedPool::AllocateOptions options;
  options.chunk_bytes = kMiB;
  options.threads = 1;
  options.cancel = &cancel;
  uint64_t grown = 0;
  std::thread growth([&] { grown = pool.Allocate(256 * kMiB, Kind::kLockedMmap, options); });
  while (pool.stats().pool_bytes == 0) std::this_thread::yield();
  EXPECT_EQ(pool.stats().target_bytes, 256 * kMiB);  // what the heartbeat shows while it grows
  cancel = true;
  growth.join();
  auto stats = pool.stats();
  EXPECT_EQ(stats.pool_bytes, grown);
  EXPECT_EQ(stats.target_bytes, grown);
  EXPECT_EQ(stats.pending_bytes, 0u);
  EXPECT_GE(grown, kMiB);
  while (pool.ReleaseChunk() != 0) {
  }
  EXPECT_EQ(pool.stats().pool_bytes, 0u);
}

#ifndef ZKFLEET_HAVE_CUDA
TEST(PinnedPool, CudaKindsNeedTheCudaBackend) {
  PinnedPool pool;
  try {
    pool.Allocate(kMiB, Kind::kHugepageRegistered, PinnedPool::AllocateOptions{});
    FAIL() << "registered without CUDA";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  }
  EXPECT_EQ(pool.stats().pool_bytes, 0u);
  EXPECT_EQ(pool.mode_name(), "none");
}
#endif

}  // namespace
}  // namespace zkfleet::worker
