#include "zkfleet/groth16/assignment_memory_plan.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "zkfleet/common/error.hpp"

namespace zkfleet::groth16 {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint64_t AlignUp(uint64_t x) { return CeilDiv(x, 256) * 256; }

// "24.00 GiB", "3.5 MiB", "64 KiB".
std::string GiB(uint64_t bytes) {
  char buf[40];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1ull << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>((bytes + 1023) >> 10));
  }
  return buf;
}

// The point counts of the five MSMs: h, l, a, b_g1, b_g2.
struct Counts {
  uint64_t c[5];
};
Counts CountsOf(const engine::BellmanInfo& shape) {
  return {{shape.domain_size > 0 ? shape.domain_size - 1u : 0u, shape.n_aux, shape.n_a, shape.n_b, shape.n_b}};
}

}  // namespace

const char* DevicePlacementName(DevicePlacement placement) {
  switch (placement) {
    case DevicePlacement::kResidentOverlapped:
      return "resident, overlapped MSMs";
    case DevicePlacement::kResidentChunked:
      return "resident, chunked MSMs";
    case DevicePlacement::kStreaming:
      return "streamed from pinned host memory";
  }
  return "?";
}

uint64_t PointBytes(const engine::BellmanInfo& shape) {
  const Counts counts = CountsOf(shape);
  uint64_t bytes = 0;
  for (int k = 0; k < 5; ++k) bytes += std::max<uint64_t>(counts.c[k], 1) * (k == 4 ? kG2AffineBytes : kG1AffineBytes);
  return bytes;
}

ChunkLayout ChunkLayoutFor(const engine::BellmanInfo& shape, uint64_t chunk_points, bool points_resident,
                           const DeviceMemoryModel& model) {
  ChunkLayout out;
  const uint64_t n = shape.domain_size;
  const Counts counts = CountsOf(shape);
  out.points_resident = points_resident;
  out.chunk_points = std::max<uint64_t>(chunk_points, 1);
  for (uint64_t count : counts.c) out.chunks += CeilDiv(count, out.chunk_points);
  // Twiddles both ways, and the lean domain's coset factor tables: 2^12 low
  // and n / 2^12 high powers, both ways (ntt_device.hpp).
  const int log_n = n > 1 ? std::countr_zero(n) : 0;
  const uint64_t low = uint64_t{1} << std::min(log_n, kLeanCosetLowBits);
  out.twiddle_bytes = (std::max<uint64_t>(n / 2, 1) + low + std::max<uint64_t>(n / low, 1)) * 2 * kFrBytes;
  out.vector_bytes = n * kFrBytes;
  out.assignment_bytes = (uint64_t{shape.n_inputs} + shape.n_aux) * kFrBytes;
  out.index_bytes = (std::max<uint64_t>(shape.n_a, 1) + std::max<uint64_t>(shape.n_b, 1)) * 4;
  out.sums_bytes = std::max<uint64_t>(out.chunks, 1) * model.window_sum_bytes;
  out.ntt_scratch_bytes = 2 * n * kFrBytes;
  // As the key carves its arena: each part 256-byte aligned.
  out.msm_bytes = AlignUp(model.workspace_bytes(out.chunk_points)) + AlignUp(out.chunk_points * kFrBytes);
  if (points_resident) {
    out.points_bytes = PointBytes(shape);
  } else {
    out.msm_bytes += 2 * AlignUp(out.chunk_points * kG2AffineBytes);
  }
  return out;
}

DevicePlan PlanDeviceMemory(const engine::BellmanInfo& shape, uint64_t budget, bool overlap,
                            const DeviceMemoryModel& model) {
  DevicePlan plan;
  if (overlap && model.resident_overlapped <= budget) {
    plan.placement = DevicePlacement::kResidentOverlapped;
    plan.device_bytes = model.resident_overlapped;
    return plan;
  }
  const Counts counts = CountsOf(shape);
  const uint64_t largest = std::max<uint64_t>(*std::max_element(counts.c, counts.c + 5), 1);
  const uint64_t smallest = std::min(largest, kMinChunkPoints);
  // From every point of the largest MSM in one chunk (resident: at most
  // kResidentChunkPoints) down to the smallest chunk.
  for (const bool resident : {true, false}) {
    const uint64_t most = resident ? std::min(largest, kResidentChunkPoints) : largest;
    for (uint64_t chunk = std::bit_ceil(most); chunk >= smallest; chunk /= 2) {
      const ChunkLayout layout = ChunkLayoutFor(shape, std::min(chunk, largest), resident, model);
      if (layout.total() <= budget) {
        plan.placement = resident ? DevicePlacement::kResidentChunked : DevicePlacement::kStreaming;
        plan.chunked = layout;
        plan.device_bytes = layout.total();
        return plan;
      }
      if (chunk == 1) break;
    }
  }
  // The least each chunked placement can do (small chunks mean many window
  // sums: the least is not always at the smallest chunk).
  auto least = [&](bool resident) {
    ChunkLayout best = ChunkLayoutFor(shape, smallest, resident, model);
    for (uint64_t chunk = std::bit_ceil(largest); chunk > smallest; chunk /= 2) {
      const ChunkLayout layout = ChunkLayoutFor(shape, std::min(chunk, largest), resident, model);
      if (layout.total() < best.total()) best = layout;
    }
    return best;
  };
  const ChunkLayout streamed = least(false);
  throw Error(ErrorCode::kResourceExhausted,
              "a device memory budget of " + GiB(budget) + " cannot hold these parameters (domain " +
                  std::to_string(shape.domain_size) + ", " + std::to_string(shape.n_aux) +
                  " aux): streaming the points needs at least " + GiB(streamed.total()) + " (twiddles " +
                  GiB(streamed.twiddle_bytes) + ", a/h vector " + GiB(streamed.vector_bytes) + ", assignment " +
                  GiB(streamed.assignment_bytes) + ", NTT scratch " + GiB(streamed.ntt_scratch_bytes) +
                  "); keeping them resident " + GiB(least(true).total()));
}

std::string DevicePlan::Describe() const {
  std::string out = DevicePlacementName(placement);
  if (placement != DevicePlacement::kResidentOverlapped) {
    out += " (chunks of " + std::to_string(chunked.chunk_points) + " points, " + std::to_string(chunked.chunks) +
           " chunk MSMs a proof)";
  }
  out += ", " + GiB(device_bytes) + " of device memory";
  return out;
}

}  // namespace zkfleet::groth16
