// The device memory planner of the CUDA bellman key
// (groth16/assignment_memory_plan.hpp): which placement a budget gets, the
// chunked layouts' arithmetic, and the refusal of a budget that holds
// nothing. Pure arithmetic: runs without a GPU (the CUDA key's use of it is
// tests/gpu/cuda/assignment_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "zkfleet/common/error.hpp"
#include "zkfleet/groth16/assignment_memory_plan.hpp"

namespace zkfleet::groth16 {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A model with the shape of the real one: an MSM workspace of ~400 bytes a
// point (four 4-byte item buffers per window of 16, and the sort's storage)
// plus a fixed part.
DeviceMemoryModel Model(uint64_t overlapped) {
  DeviceMemoryModel model;
  model.resident_overlapped = overlapped;
  model.workspace_bytes = [](uint64_t points) { return 400 * points + (uint64_t{200} << 20); };
  model.window_sum_bytes = 128 * 384;
  return model;
}

// One 32 GiB PoRep partition's shape (the counts of docs/bellman.md's table
// are close to these: a 2^27 domain, ~130 M aux).
engine::BellmanInfo PorepShape() {
  engine::BellmanInfo shape;
  shape.domain_size = 1u << 27;
  shape.n_inputs = 329;
  shape.n_aux = 130'000'000;
  shape.n_a = 120'000'000;
  shape.n_b = 60'000'000;
  return shape;
}

TEST(DeviceMemoryPlan, TheFastestPlacementThatFitsTheBudget) {
  const engine::BellmanInfo shape = PorepShape();
  const DeviceMemoryModel model = Model(200 * kGiB);
  EXPECT_EQ(PlanDeviceMemory(shape, 250 * kGiB, true, model).placement, DevicePlacement::kResidentOverlapped);
  EXPECT_EQ(PlanDeviceMemory(shape, 200 * kGiB, true, model).device_bytes, 200 * kGiB);
  // Overlap not allowed: chunked, although overlapped would fit.
  EXPECT_EQ(PlanDeviceMemory(shape, 250 * kGiB, false, model).placement, DevicePlacement::kResidentChunked);
  // Below the overlapped need: the points stay resident, the MSMs run in
  // chunks of 2^23 (an H200's 141 GB, an H100's 80 GB).
  for (uint64_t gib : {199, 130, 75}) {
    const DevicePlan plan = PlanDeviceMemory(shape, gib * kGiB, true, model);
    ASSERT_EQ(plan.placement, DevicePlacement::kResidentChunked) << gib;
    EXPECT_EQ(plan.chunked.chunk_points, kResidentChunkPoints) << gib;
    EXPECT_TRUE(plan.chunked.points_resident);
    EXPECT_EQ(plan.chunked.points_bytes, PointBytes(shape));
    EXPECT_EQ(plan.device_bytes, plan.chunked.total());
    EXPECT_LE(plan.device_bytes, gib * kGiB);
  }
  // The points alone: (2^27 - 1 + 130 M + 120 M + 60 M) G1 + 60 M G2.
  EXPECT_EQ(PointBytes(shape),
            ((uint64_t{1} << 27) - 1 + 130'000'000 + 120'000'000 + 60'000'000) * 96 + uint64_t{60'000'000} * 192);
  // Just below the smallest resident chunked layout (of any chunk size: small
  // chunks have many window sums): streamed.
  uint64_t least_resident = UINT64_MAX;
  for (uint64_t c = uint64_t{1} << 23; c >= kMinChunkPoints; c /= 2) {
    least_resident = std::min(least_resident, ChunkLayoutFor(shape, c, true, model).total());
  }
  EXPECT_EQ(PlanDeviceMemory(shape, least_resident, true, model).placement, DevicePlacement::kResidentChunked);
  EXPECT_EQ(PlanDeviceMemory(shape, least_resident - 1, true, model).placement, DevicePlacement::kStreaming);
}

TEST(DeviceMemoryPlan, ResidentChunksHoldNoChunkPointBuffers) {
  const engine::BellmanInfo shape = PorepShape();
  const DeviceMemoryModel model = Model(200 * kGiB);
  const uint64_t c = uint64_t{1} << 20;
  const ChunkLayout resident = ChunkLayoutFor(shape, c, true, model);
  const ChunkLayout streamed = ChunkLayoutFor(shape, c, false, model);
  EXPECT_EQ(streamed.msm_bytes - resident.msm_bytes, 2 * c * kG2AffineBytes);
  EXPECT_EQ(streamed.points_bytes, 0u);
  // Here the arena is the NTT scratch either way: the points are the difference.
  ASSERT_EQ(resident.arena_bytes(), resident.ntt_scratch_bytes);
  EXPECT_EQ(resident.total(), streamed.total() + PointBytes(shape));
  EXPECT_EQ(resident.chunks, streamed.chunks);
  const DevicePlan plan = PlanDeviceMemory(shape, 100 * kGiB, true, model);
  EXPECT_NE(plan.Describe().find("resident, chunked MSMs (chunks of 8388608 points"), std::string::npos)
      << plan.Describe();
}

TEST(DeviceMemoryPlan, A2To27PartitionStreamsWithin24GiB) {
  const engine::BellmanInfo shape = PorepShape();
  const DevicePlan plan = PlanDeviceMemory(shape, 24 * kGiB, true, Model(200 * kGiB));
  ASSERT_EQ(plan.placement, DevicePlacement::kStreaming);
  const ChunkLayout& s = plan.chunked;
  EXPECT_FALSE(s.points_resident);
  EXPECT_EQ(s.points_bytes, 0u);
  EXPECT_LE(plan.device_bytes, 24 * kGiB);
  EXPECT_EQ(plan.device_bytes, s.total());
  EXPECT_TRUE(std::has_single_bit(s.chunk_points)) << s.chunk_points;
  // The largest chunk that fits: twice it does not.
  EXPECT_GT(ChunkLayoutFor(shape, 2 * s.chunk_points, false, Model(200 * kGiB)).total(), 24 * kGiB);
  EXPECT_EQ(s.chunk_points, uint64_t{1} << 23);
  // Every chunk of the five MSMs: h (n-1), l, a, b_g1, b_g2.
  const uint64_t c = s.chunk_points;
  const uint64_t want = ((shape.domain_size - 1) + c - 1) / c + (shape.n_aux + c - 1) / c + (shape.n_a + c - 1) / c +
                        2 * ((shape.n_b + c - 1) / c);
  EXPECT_EQ(s.chunks, want);
  // The parts: lean twiddles (n Fr), the a/h vector (n Fr), the assignment,
  // 4-byte indices, and an arena that is the larger of the NTT scratch and
  // the MSM buffers.
  EXPECT_EQ(s.twiddle_bytes, (uint64_t{shape.domain_size} / 2 + 4096 + shape.domain_size / 4096) * 2 * 32);
  EXPECT_EQ(s.vector_bytes, uint64_t{shape.domain_size} * 32);
  EXPECT_EQ(s.assignment_bytes, (uint64_t{shape.n_inputs} + shape.n_aux) * 32);
  EXPECT_EQ(s.index_bytes, (uint64_t{shape.n_a} + shape.n_b) * 4);
  EXPECT_EQ(s.ntt_scratch_bytes, 2 * uint64_t{shape.domain_size} * 32);
  EXPECT_EQ(s.msm_bytes, 400 * c + (uint64_t{200} << 20) + 2 * c * kG2AffineBytes + c * kFrBytes);
  EXPECT_EQ(s.arena_bytes(), std::max(s.ntt_scratch_bytes, s.msm_bytes));
  // The log line says what was chosen.
  EXPECT_NE(plan.Describe().find("chunks of 8388608 points"), std::string::npos) << plan.Describe();
}

TEST(DeviceMemoryPlan, MoreBudgetMeansLargerChunks) {
  const engine::BellmanInfo shape = PorepShape();
  const DeviceMemoryModel model = Model(200 * kGiB);
  uint64_t last = 0;
  for (uint64_t gib : {21, 24, 32, 48, 64}) {
    const DevicePlan plan = PlanDeviceMemory(shape, gib * kGiB, true, model);
    ASSERT_EQ(plan.placement, DevicePlacement::kStreaming) << gib;
    EXPECT_GE(plan.chunked.chunk_points, last) << gib;
    EXPECT_LE(plan.device_bytes, gib * kGiB) << gib;
    last = plan.chunked.chunk_points;
  }
  EXPECT_GT(last, uint64_t{1} << 23);
}

TEST(DeviceMemoryPlan, SmallCircuitsStreamInChunksOfAllTheirPointsOrFewer) {
  engine::BellmanInfo shape;
  shape.domain_size = 1u << 10;
  shape.n_inputs = 3;
  shape.n_aux = 700;
  shape.n_a = 500;
  shape.n_b = 300;
  DeviceMemoryModel model = Model(kGiB);
  model.workspace_bytes = [](uint64_t points) { return 400 * points; };
  model.window_sum_bytes = 1024;
  // Plenty of room: one chunk holds the largest MSM (h: 1023 points).
  const DevicePlan roomy = PlanDeviceMemory(shape, kGiB - 1, true, model);
  ASSERT_EQ(roomy.placement, DevicePlacement::kResidentChunked);
  EXPECT_EQ(roomy.chunked.chunk_points, 1023u);
  EXPECT_EQ(roomy.chunked.chunks, 5u);
  // Too little for the points and the smallest chunks: streamed, tight:
  // down to the smallest chunk.
  const uint64_t least = ChunkLayoutFor(shape, kMinChunkPoints, false, model).total();
  ASSERT_LT(least, ChunkLayoutFor(shape, kMinChunkPoints, true, model).total());
  const DevicePlan tight = PlanDeviceMemory(shape, least, true, model);
  EXPECT_EQ(tight.placement, DevicePlacement::kStreaming);
  EXPECT_EQ(tight.chunked.chunk_points, kMinChunkPoints);
  EXPECT_EQ(tight.chunked.chunks, 4u + 3u + 2u + 2u * 2u);  // h 1023, l 700, a 500, b 300 twice
}

TEST(DeviceMemoryPlan, TheFixedPartIsTheFloor) {
  // Below ~20.6 GiB a 2^27 partition does not stream: twiddles, the a/h
  // vector, the assignment and the NTT scratch alone need that much.
  const engine::BellmanInfo shape = PorepShape();
  EXPECT_THROW((void)PlanDeviceMemory(shape, 20 * kGiB, true, Model(200 * kGiB)), Error);
}

TEST(DeviceMemoryPlan, ABudgetThatHoldsNothingIsRefusedWithTheNeed) {
  const engine::BellmanInfo shape = PorepShape();
  try {
    (void)PlanDeviceMemory(shape, 8 * kGiB, true, Model(200 * kGiB));
    FAIL() << "an 8 GiB budget was accepted for a 2^27 partition";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    const std::string what = e.what();
    EXPECT_NE(what.find("a device memory budget of 8.00 GiB cannot hold these parameters"), std::string::npos) << what;
    EXPECT_NE(what.find("domain 134217728"), std::string::npos) << what;
    EXPECT_NE(what.find("needs at least"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace zkfleet::groth16
