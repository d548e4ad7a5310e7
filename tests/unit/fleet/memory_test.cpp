// The memory gate's sources and the pinned pool.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <cstring>
#include <fstream>

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

}  // namespace
}  // namespace zkfleet::worker
