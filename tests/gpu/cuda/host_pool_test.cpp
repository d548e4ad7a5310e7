// memory::HostPool: carving, coalescing, exhaustion, statistics and chunked
// release; the pinned backing too when a GPU is present.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/memory/host_pool.hpp"
#if defined(ZKFLEET_HAVE_CUDA)
#include "zkfleet/cuda/device.hpp"
#endif

namespace zkfleet::memory {
namespace {

// `segment` is the largest block the pool can hand out.
void ExerciseCarving(HostPool& pool, size_t segment) {
  auto a = pool.Allocate(1000);  // rounded up to 1024
  auto b = pool.Allocate(4096);
  auto c = pool.Allocate(10);
  EXPECT_EQ(a.bytes, 1024u);
  EXPECT_EQ(c.bytes, HostPool::kAlign);
  std::memset(a.data, 1, a.bytes);  // the memory is usable
  std::memset(b.data, 2, b.bytes);
  EXPECT_EQ(static_cast<char*>(a.data)[0], 1);
  EXPECT_EQ(pool.stats().bytes_in_use, a.bytes + b.bytes + c.bytes);
  EXPECT_EQ(pool.stats().alloc_calls, 3u);

  // Too large for what is left: a clear error, nothing changes.
  try {
    pool.Allocate(segment + 1);
    ADD_FAILURE() << "allocation larger than the free space succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
  }
  EXPECT_EQ(pool.stats().failed_allocs, 1u);

  // Freeing the middle block then its neighbours coalesces everything: the
  // whole pool is one free range again.
  pool.Free(b);
  pool.Free(a);
  pool.Free(c);
  EXPECT_EQ(pool.stats().bytes_in_use, 0u);
  auto all = pool.Allocate(segment);
  EXPECT_EQ(all.bytes, segment);
  EXPECT_EQ(all.data, a.data);  // first fit: the coalesced range starts where a did
  EXPECT_THROW(pool.Free(HostPool::Block{static_cast<char*>(all.data) + 256, 256}), Error);  // part of a block
  pool.Free(all);
  EXPECT_THROW(pool.Free(all), Error);  // double free
}

TEST(HostPool, PageableCarvesAndReleasesInChunks) {
  const size_t total = 1 << 20;
  HostPool pool(total, HostPool::Backing::kPageable);
  EXPECT_EQ(pool.stats().bytes_total, total);
  ExerciseCarving(pool, total);

  auto held = pool.Allocate(100);
  EXPECT_THROW(pool.Release(1 << 16, nullptr), Error);  // a block is still in use
  pool.Free(held);
  std::vector<uint64_t> progress;
  pool.Release(1 << 18, [&](uint64_t still_held) { progress.push_back(still_held); });
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.front(), total - (1 << 18));
  EXPECT_EQ(progress.back(), 0u);
  EXPECT_EQ(pool.stats().bytes_total, 0u);
  EXPECT_THROW(pool.Allocate(1), Error);
}

TEST(HostPool, SegmentsBoundBlocks) {
  HostPool pool(4 << 16, HostPool::Backing::kPageable, 1 << 16);
  EXPECT_EQ(pool.stats().bytes_total, 4u << 16);
  auto a = pool.Allocate(1 << 16);  // a whole segment
  EXPECT_THROW(pool.Allocate((1 << 16) + 1), Error);  // no block spans two segments
  pool.Free(a);
}

#if defined(ZKFLEET_HAVE_CUDA)
TEST(HostPool, PinnedIsCountedAndReleasedPerSegment) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: pinned memory needs a GPU and driver";
  const auto before = cuda::AllocationStats();
  const size_t total = 4 << 20;
  HostPool pool(total, HostPool::Backing::kPinned, 1 << 20);
  EXPECT_EQ(cuda::AllocationStats().pinned_allocs, before.pinned_allocs + 4);
  ExerciseCarving(pool, 1 << 20);
  int steps = 0;
  pool.Release(1 << 20, [&](uint64_t) { ++steps; });
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(cuda::AllocationStats().pinned_bytes_live, before.pinned_bytes_live);
}
#endif

}  // namespace
}  // namespace zkfleet::memory
