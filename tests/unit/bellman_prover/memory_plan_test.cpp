// The device memory planner of the CUDA bellman key
// (groth16/assignment_memory_plan.hpp): which placement a budget gets, the
// streaming layout's arithmetic, and the refusal of a budget that holds
// nothing. Pure arithmetic: runs without a GPU (the CUDA key's use of it is
// tests/gpu/cuda/assignment_test.cpp).
#include <gtest/gtest.h>

#include <bit>

#include "zkfleet/common/error.hpp"
#include "zkfleet/groth16/assignment_memory_plan.hpp"

namespace zkfleet::groth16 {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A model with the shape of the real one: an MSM workspace of ~400 bytes a
// point (four 4-byte item buffers per window of 16, and the sort's storage)
// plus a fixed part.
DeviceMemoryModel Model(uint64_t overlapped, uint64_t sequential) {
  DeviceMemoryModel model;
  model.resident_overlapped = overlapped;
  model.resident_sequential = sequential;
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
  const DeviceMemoryModel model = Model(200 * kGiB, 130 * kGiB);
  EXPECT_EQ(PlanDeviceMemory(shape, 250 * kGiB, true, model).placement, DevicePlacement::kResidentOverlapped);
  // Overlap not allowed: sequential, although overlapped would fit.
  EXPECT_EQ(PlanDeviceMemory(shape, 250 * kGiB, false, model).placement, DevicePlacement::kResidentSequential);
  EXPECT_EQ(PlanDeviceMemory(shape, 140 * kGiB, true, model).placement, DevicePlacement::kResidentSequential);
  EXPECT_EQ(PlanDeviceMemory(shape, 130 * kGiB, true, model).device_bytes, 130 * kGiB);
  EXPECT_EQ(PlanDeviceMemory(shape, 130 * kGiB - 1, true, model).placement, DevicePlacement::kStreaming);
}

TEST(DeviceMemoryPlan, A2To27PartitionStreamsWithin24GiB) {
  const engine::BellmanInfo shape = PorepShape();
  const DevicePlan plan = PlanDeviceMemory(shape, 24 * kGiB, true, Model(200 * kGiB, 130 * kGiB));
  ASSERT_EQ(plan.placement, DevicePlacement::kStreaming);
  const StreamingLayout& s = plan.streaming;
  EXPECT_LE(plan.device_bytes, 24 * kGiB);
  EXPECT_EQ(plan.device_bytes, s.total());
  EXPECT_TRUE(std::has_single_bit(s.chunk_points)) << s.chunk_points;
  // The largest chunk that fits: twice it does not.
  EXPECT_GT(StreamingLayoutFor(shape, 2 * s.chunk_points, Model(200 * kGiB, 130 * kGiB)).total(), 24 * kGiB);
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
  const DeviceMemoryModel model = Model(200 * kGiB, 130 * kGiB);
  uint64_t last = 0;
  for (uint64_t gib : {21, 24, 32, 48, 80}) {
    const DevicePlan plan = PlanDeviceMemory(shape, gib * kGiB, true, model);
    ASSERT_EQ(plan.placement, DevicePlacement::kStreaming) << gib;
    EXPECT_GE(plan.streaming.chunk_points, last) << gib;
    EXPECT_LE(plan.device_bytes, gib * kGiB) << gib;
    last = plan.streaming.chunk_points;
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
  DeviceMemoryModel model = Model(kGiB, kGiB);
  model.workspace_bytes = [](uint64_t points) { return 400 * points; };
  model.window_sum_bytes = 1024;
  // Plenty of room: one chunk holds the largest MSM (h: 1023 points).
  const DevicePlan roomy = PlanDeviceMemory(shape, kGiB - 1, true, model);
  ASSERT_EQ(roomy.placement, DevicePlacement::kStreaming);
  EXPECT_EQ(roomy.streaming.chunk_points, 1023u);
  EXPECT_EQ(roomy.streaming.chunks, 5u);
  // Tight: down to the smallest chunk.
  const uint64_t least = StreamingLayoutFor(shape, kMinChunkPoints, model).total();
  const DevicePlan tight = PlanDeviceMemory(shape, least, true, model);
  EXPECT_EQ(tight.streaming.chunk_points, kMinChunkPoints);
  EXPECT_EQ(tight.streaming.chunks, 4u + 3u + 2u + 2u * 2u);  // h 1023, l 700, a 500, b 300 twice
}

TEST(DeviceMemoryPlan, TheFixedPartIsTheFloor) {
  // Below ~20.6 GiB a 2^27 partition does not stream: twiddles, the a/h
  // vector, the assignment and the NTT scratch alone need that much.
  const engine::BellmanInfo shape = PorepShape();
  EXPECT_THROW((void)PlanDeviceMemory(shape, 20 * kGiB, true, Model(200 * kGiB, 130 * kGiB)), Error);
}

TEST(DeviceMemoryPlan, ABudgetThatHoldsNothingIsRefusedWithTheNeed) {
  const engine::BellmanInfo shape = PorepShape();
  try {
    (void)PlanDeviceMemory(shape, 8 * kGiB, true, Model(200 * kGiB, 130 * kGiB));
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
