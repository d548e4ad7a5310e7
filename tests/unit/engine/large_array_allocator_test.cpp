#include "zkfleet/runtime/large_array_allocator.hpp"

#include <cstdint>
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
