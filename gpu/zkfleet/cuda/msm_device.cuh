// Kernels of the GPU MSM's bucket phase and EnqueueMsmBuckets (see
// msm_device.hpp, msm_steps.hpp; digits and sort are in msm_workspace.cu).
// Included by one .cu per curve, which instantiates EnqueueMsmBuckets for its
// G1 and G2, so that the two curves compile in parallel.
#pragma once

#include <algorithm>

#include "zkfleet/cuda/device_check.hpp"
#include "zkfleet/cuda/device_curve.hpp"
#include "zkfleet/cuda/msm_device.hpp"
#include "zkfleet/cuda/msm_steps.hpp"

namespace zkfleet::cuda {

namespace msm_kernels {

inline constexpr int kAccumulateThreads = 128;  // register-heavy kernels: small blocks

// Blocks of kAccumulateThreads per multiprocessor the accumulation kernels
// are compiled for, or 0 for no bound. Left alone, ptxas gives BN254's G2
// accumulation 255 registers (2 blocks per SM: too few warps to hide the
// carry chains' latency); capped to 128 registers (4 blocks) with a few
// spills to L1 it ran 1.55x faster on the H200, and G1 at 96 registers (5
// blocks) 1.5x faster than at 239 (docs/benchmarks-gpu.md, "Occupancy").
// BLS12-381's kernels call an outlined multiplication and keep ptxas's
// choice (not measured with bounds).
template <class Cfg>
constexpr int AccumulateMinBlocks() {
  constexpr size_t field_bytes = sizeof(typename Cfg::Field);
  if constexpr (field_bytes == 32) return 5;  // BN254 G1 (Fp, 8 words)
  if constexpr (field_bytes == 64) return 4;  // BN254 G2 (Fp2 of 8 words)
  return 0;
}

// Level 0 sums sorted (bucket, point) items; later levels sum spilled partial
// sums (msm_steps.hpp). __launch_bounds__ cannot be switched off by a template
// argument, so each has a bounded and an unbounded kernel over one body;
// EnqueueMsmBuckets instantiates only the one AccumulateMinBlocks picks.
struct Level0Args {
  uint64_t count, chunk;
  const uint32_t* keys;
  uint32_t sentinel;
  const void* bases;
  const uint32_t* values;
  uint32_t first_index;
  void* buckets;
  uint32_t* spill_keys;
  void* spill_values;
  uint64_t threads;
};
struct LevelArgs {
  uint64_t count, chunk;
  const uint32_t* keys;
  uint32_t sentinel;
  const void* partials;
  void* buckets;
  uint32_t* spill_keys;
  void* spill_values;
  uint64_t threads;
};

template <class Cfg>
__device__ __forceinline__ void Level0Body(const Level0Args& a) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (t >= a.threads) return;
  using X = curve::Xyzz<Cfg>;
  msm::ReduceRunsStep(t, a.count, a.chunk, a.keys, a.sentinel,
                      msm::AddSignedBase<Cfg>{static_cast<const curve::Affine<Cfg>*>(a.bases), a.values, a.first_index},
                      static_cast<X*>(a.buckets), a.spill_keys, static_cast<X*>(a.spill_values));
}
template <class Cfg>
__device__ __forceinline__ void LevelBody(const LevelArgs& a) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (t >= a.threads) return;
  using X = curve::Xyzz<Cfg>;
  msm::ReduceRunsStep(t, a.count, a.chunk, a.keys, a.sentinel, msm::AddPartial<Cfg>{static_cast<const X*>(a.partials)},
                      static_cast<X*>(a.buckets), a.spill_keys, static_cast<X*>(a.spill_values));
}
template <class Cfg>
__global__ void AccumulateLevel0(Level0Args a) { Level0Body<Cfg>(a); }
template <class Cfg>
__global__ void AccumulateLevel(LevelArgs a) { LevelBody<Cfg>(a); }
template <class Cfg, int kMinBlocks>
__global__ void __launch_bounds__(kAccumulateThreads, kMinBlocks) BoundedAccumulateLevel0(Level0Args a) {
  Level0Body<Cfg>(a);
}
template <class Cfg, int kMinBlocks>
__global__ void __launch_bounds__(kAccumulateThreads, kMinBlocks) BoundedAccumulateLevel(LevelArgs a) {
  LevelBody<Cfg>(a);
}

inline unsigned Blocks(uint64_t threads, int per_block) {
  return static_cast<unsigned>((threads + per_block - 1) / per_block);
}

template <class Cfg>
__global__ void InitBuckets(curve::Xyzz<Cfg>* buckets, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    buckets[i] = curve::Xyzz<Cfg>::infinity();
  }
}

template <class Cfg>
__global__ void BucketSlices(msm::Plan plan, const curve::Xyzz<Cfg>* buckets, curve::Xyzz<Cfg>* slices) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (t >= static_cast<uint64_t>(plan.windows) * plan.segments) return;
  msm::BucketSliceStep(t, plan, buckets, slices);
}

template <class Cfg>
__global__ void __launch_bounds__(msm::kReduceThreads)
    WindowSums(msm::Plan plan, const curve::Xyzz<Cfg>* slices, curve::Xyzz<Cfg>* partial, curve::Xyzz<Cfg>* out) {
  const uint32_t w = blockIdx.x, tid = threadIdx.x;
  msm::WindowFoldStep(w, tid, plan, slices, partial);
  for (uint32_t half = msm::kReduceThreads / 2; half >= 1; half /= 2) {
    __syncthreads();  // orders the global-memory partials within the block
    msm::WindowTreeStep(w, tid, half, partial);
  }
  __syncthreads();
  if (tid == 0) out[w] = partial[static_cast<uint64_t>(w) * msm::kReduceThreads];
}

}  // namespace msm_kernels

template <class HostCfg>
void EnqueueMsmBuckets(cudaStream_t stream, const MsmWorkspace& ws, const MsmWorkspace& sorted, const msm::Plan& plan,
                       const curve::Affine<HostCfg>* bases, uint32_t first_index, curve::Xyzz<HostCfg>* window_sums,
                       const std::string& phase, const MsmMarks* marks) {
  using namespace msm_kernels;
  using Cfg = DeviceCurve<HostCfg>;
  using Xyzz = curve::Xyzz<Cfg>;
  static_assert(sizeof(Xyzz) == sizeof(curve::Xyzz<HostCfg>));
  auto* buckets = static_cast<Xyzz*>(ws.buckets);
  auto* spill0 = static_cast<Xyzz*>(ws.spill_values[0]);
  const auto* dev_bases = reinterpret_cast<const curve::Affine<Cfg>*>(bases);
  auto mark = [&](cudaEvent_t event) {
    if (event) ZK_CUDA_CHECK(cudaEventRecord(event, stream), phase + ": MSM phase mark");
  };

  InitBuckets<Cfg><<<std::min<unsigned>(4096, Blocks(plan.sentinel, 256)), 256, 0, stream>>>(buckets, plan.sentinel);
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM bucket init");

  // Level 0 over the sorted items, then the spill levels until one thread
  // holds what is left.
  constexpr int kMinBlocks = AccumulateMinBlocks<Cfg>();
  auto run_level0 = [&](const Level0Args& args) {
    if constexpr (kMinBlocks > 0) {
      BoundedAccumulateLevel0<Cfg, kMinBlocks><<<Blocks(args.threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(args);
    } else {
      AccumulateLevel0<Cfg><<<Blocks(args.threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(args);
    }
  };
  auto run_level = [&](const LevelArgs& args) {
    if constexpr (kMinBlocks > 0) {
      BoundedAccumulateLevel<Cfg, kMinBlocks><<<Blocks(args.threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(args);
    } else {
      AccumulateLevel<Cfg><<<Blocks(args.threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(args);
    }
  };
  run_level0(Level0Args{plan.items, plan.chunk0, sorted.keys_out, plan.sentinel, dev_bases, sorted.values_out,
                        first_index, buckets, ws.spill_keys[0], spill0, plan.threads0});
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM bucket accumulation");
  if (marks) mark(marks->accumulated);

  for (int level = 1; level <= plan.later_levels; ++level) {
    const int in = (level - 1) % 2, out = level % 2;
    run_level(LevelArgs{msm::LevelInputCount(plan, level), msm::kLaterChunk, ws.spill_keys[in], plan.sentinel,
                        ws.spill_values[in], buckets, ws.spill_keys[out], ws.spill_values[out],
                        msm::LevelThreads(plan, level)});
    ZK_CUDA_CHECK_LAUNCH(phase + ": MSM spill reduction");
  }
  if (marks) mark(marks->spills);

  const uint64_t slice_threads = static_cast<uint64_t>(plan.windows) * plan.segments;
  BucketSlices<Cfg><<<Blocks(slice_threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(
      plan, buckets, static_cast<Xyzz*>(ws.slices));
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM bucket reduction");
  if (marks) mark(marks->slices);

  WindowSums<Cfg><<<plan.windows, msm::kReduceThreads, 0, stream>>>(
      plan, static_cast<const Xyzz*>(ws.slices), static_cast<Xyzz*>(ws.partial), reinterpret_cast<Xyzz*>(window_sums));
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM window sums");
}

}  // namespace zkfleet::cuda
