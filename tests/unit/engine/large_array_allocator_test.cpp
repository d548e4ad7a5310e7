#include "zkfleet/runtime/large_array_allocator.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

namespace zkfleet::runtime {
namespace {

struct Point {  // trivially default constructible, as the engine's affine points are
  uint64_t limbs[12];
};
using Points = std::vector<Point, LargeArrayAllocator<Point>>;

TEST(LargeArrayAllocator, LargeBlocksAreTwoMibAlignedMappingsThatCudaCanRegisterInPlace) {
  Points big(3 * (kLargeArrayAlignment / sizeof(Point)) + 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % kLargeArrayAlignment, 0u);
  // Every byte is usable, to the last one.
  std::memset(big.data(), 0xab, big.size() * sizeof(Point));
  EXPECT_EQ(big.back().limbs[11], 0xababababababababull);
}

// A large block's pages replaced by a private mapping of a file (how a
// decoded image is loaded): the vector reads the file's bytes, a write to the
// vector stays in the process (copy on write), the file is unchanged, and the
// vector frees the block as before. A small block is refused, untouched.
TEST(LargeArrayAllocator, AFileMappedIntoALargeBlockIsReadCopyOnWrite) {
  const size_t count = kLargeArrayAlignment / sizeof(Point) + 7;
  std::vector<Point> source(count + 100);
  for (size_t i = 0; i < source.size(); ++i) source[i].limbs[3] = i * 3 + 1;
  char path[] = "/tmp/zkfleet-large-array-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const size_t bytes = source.size() * sizeof(Point);
  ASSERT_EQ(pwrite(fd, source.data(), bytes, 0), static_cast<ssize_t>(bytes));
  {
    Points v(count);
    // From the file's second page on: offsets are whole pages.
    ASSERT_TRUE(MapFileIntoLargeArray(v.data(), count * sizeof(Point), fd, 4096));
    const auto* expected = reinterpret_cast<const uint8_t*>(source.data()) + 4096;
    EXPECT_EQ(std::memcmp(v.data(), expected, count * sizeof(Point)), 0);
    v[0].limbs[0] = 42;
    v.back().limbs[11] = 43;
    EXPECT_EQ(v[0].limbs[0], 42u);
    Points small(10);
    EXPECT_FALSE(MapFileIntoLargeArray(small.data(), small.size() * sizeof(Point), fd, 0));
    EXPECT_FALSE(MapFileIntoLargeArray(v.data(), count * sizeof(Point), fd, 100)) << "not a whole page";
  }
  std::vector<Point> after(source.size());
  ASSERT_EQ(pread(fd, after.data(), bytes, 0), static_cast<ssize_t>(bytes));
  EXPECT_EQ(std::memcmp(after.data(), source.data(), bytes), 0) << "the file was written through";
  close(fd);
  unlink(path);
}

TEST(LargeArrayAllocator, ResizeLeavesTrivialPointsUninitialised) {
  // A vector shrunk and grown again within its capacity: a value-
  // initialising resize would write zeros over what was there; this one
  // constructs nothing (the decoder overwrites every point anyway).
  Points v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i].limbs[0] = i + 1;
  v.resize(10);
  v.resize(1000);
  EXPECT_EQ(v[999].limbs[0], 1000u);
  EXPECT_EQ(v[500].limbs[0], 501u);
}

TEST(LargeArrayAllocator, BehavesAsAVectorOtherwise) {
  std::vector<uint64_t, LargeArrayAllocator<uint64_t>> v;
  for (uint64_t i = 0; i < 600000; ++i) v.push_back(i);  // grows from operator new into mappings
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), uint64_t{0}), uint64_t{600000} * 599999 / 2);
  auto copy = v;
  auto moved = std::move(v);
  EXPECT_EQ(copy, moved);
  std::vector<uint64_t, LargeArrayAllocator<uint64_t>> filled(7, 42);  // an explicit value is still written
  EXPECT_EQ(filled[6], 42u);
}

}  // namespace
}  // namespace zkfleet::runtime
