// Where a bellperson key's data lives on a CUDA device of limited memory
// (KeyOptions::device_memory_budget): the arithmetic only, so that it is
// tested on the CPU (tests/unit/bellman_prover/memory_plan_test.cpp) and the
// CUDA key (assignment_cuda_prover.cu) just follows the plan.
//
// Three placements, the first that fits the budget wins:
//   kResidentOverlapped  every point set resident, the five MSMs on four
//                        streams with a workspace each (the fastest where
//                        it fits: small and mid-sized circuits);
//   kResidentChunked     every point set resident, the MSMs one after
//                        another in chunks of at most kResidentChunkPoints
//                        points over one small workspace (at 2^27 one MSM
//                        of every h point was ~1 s slower than 16 chunks of
//                        2^23, and its workspace was 52 GB);
//   kStreaming           the points stay in pinned host memory and pass
//                        through the device in chunks, double-buffered.
// The two chunked placements share one layout (ChunkLayout) and one key
// (assignment_cuda_chunked.cu): each chunk is one MSM of its own; the NTT
// domain is lean (no n-entry coset tables) and its two scratch vectors share
// one arena with the MSM workspace (and, streamed, the two chunk point
// buffers), which are only used after the NTTs. Besides the arena a chunked
// key holds: the twiddles (n Fr), the a (and then h) vector (n Fr), the
// assignment (inputs + aux Fr), the a/b density index arrays (4 bytes per a/b
// point), the chunks' window sums, and, resident, every point.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "zkfleet/engine/assignment.hpp"

namespace zkfleet::groth16 {

enum class DevicePlacement { kResidentOverlapped, kResidentChunked, kStreaming };
const char* DevicePlacementName(DevicePlacement placement);  // "resident, overlapped MSMs" ...

// Bytes the device layout takes, as the CUDA key allocates them.
inline constexpr uint64_t kFrBytes = 32;
inline constexpr uint64_t kG1AffineBytes = 96;
inline constexpr uint64_t kG2AffineBytes = 192;
// DeviceNttDomain::kLeanLowBits (ntt_device.hpp, a CUDA header).
inline constexpr int kLeanCosetLowBits = 12;

// The largest chunk of the resident chunked placement.
inline constexpr uint64_t kResidentChunkPoints = uint64_t{1} << 23;

// Bytes of every point of the five MSMs (h, l, a, b_g1 in G1, b_g2 in G2),
// each section at least one point, as the CUDA keys allocate them.
uint64_t PointBytes(const engine::BellmanInfo& shape);

// What the planner needs to know of the device code: the bytes of the
// overlapped resident layout (computed by the CUDA key from its real
// workspace sizes) and of one MSM workspace for a chunk of `points` points
// whose buckets hold G2 points (cub's sort storage included).
struct DeviceMemoryModel {
  uint64_t resident_overlapped = 0;
  std::function<uint64_t(uint64_t points)> workspace_bytes;
  // Bytes of the window sums of one chunk's MSM (msm::kMaxSums XYZZ G2 points).
  uint64_t window_sum_bytes = 0;
};

// The layout of a chunked key (kResidentChunked or kStreaming).
struct ChunkLayout {
  bool points_resident = false;  // kResidentChunked: every point on the device, no chunk point buffers
  uint64_t chunk_points = 0;   // points per MSM chunk (a power of two, or every point when fewer)
  uint64_t chunks = 0;         // chunk MSMs per proof, all five MSMs together
  uint64_t twiddle_bytes = 0;  // the lean NTT domain
  uint64_t vector_bytes = 0;   // a, then h's scalars: n Fr
  uint64_t assignment_bytes = 0;  // inputs + aux, Fr each: the l scalars, gathered into a and b's
  uint64_t index_bytes = 0;       // a and b density indices
  uint64_t sums_bytes = 0;        // every chunk's window sums
  uint64_t ntt_scratch_bytes = 0;  // the NTT's two scratch vectors (b/c and the transform's)
  uint64_t msm_bytes = 0;          // workspace + one chunk of scalars (+ two chunk point buffers, streamed)
  uint64_t points_bytes = 0;       // resident: every point (PointBytes); streamed: 0
  uint64_t arena_bytes() const { return ntt_scratch_bytes > msm_bytes ? ntt_scratch_bytes : msm_bytes; }
  uint64_t total() const {
    return twiddle_bytes + vector_bytes + assignment_bytes + index_bytes + sums_bytes + arena_bytes() + points_bytes;
  }
};

struct DevicePlan {
  DevicePlacement placement = DevicePlacement::kResidentOverlapped;
  uint64_t device_bytes = 0;  // what the key will hold
  ChunkLayout chunked;  // kResidentChunked and kStreaming
  std::string Describe() const;  // one line for logs
};

// The chunked layout with chunks of `chunk_points` points, the points on
// the device (`points_resident`) or streamed.
ChunkLayout ChunkLayoutFor(const engine::BellmanInfo& shape, uint64_t chunk_points, bool points_resident,
                           const DeviceMemoryModel& model);

// The plan for a key of this shape under `budget` bytes (> 0). `overlap`:
// whether the overlapped resident placement may be chosen
// (KeyOptions::cuda_overlap_msms). Each chunked placement takes the largest
// power-of-two chunk that fits (resident: at most kResidentChunkPoints),
// at least kMinChunkPoints (or every point of the largest MSM, when fewer).
// Throws zkfleet::Error kResourceExhausted when not even the smallest
// streaming layout fits, naming the budget and the need.
inline constexpr uint64_t kMinChunkPoints = 256;
DevicePlan PlanDeviceMemory(const engine::BellmanInfo& shape, uint64_t budget, bool overlap,
                            const DeviceMemoryModel& model);

}  // namespace zkfleet::groth16
