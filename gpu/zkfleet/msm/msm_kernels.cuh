// Kernels of the GPU MSM's bucket phase and EnqueueMsmBuckets (see
// msm_device.hpp, msm_steps.hpp; digits and sort are in msm_workspace.cu).
// Included by one .cu per curve, which instantiates EnqueueMsmBuckets for its
// G1 and G2, so that the two curves compile in parallel.
#pragma once

#include <algorithm>

#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/msm/msm_device.hpp"
#include "zkfleet/msm/msm_steps.hpp"

namespace zkfleet::cuda {

namespace msm_kernels {

inline constexpr int kAccumulateThreads = 128;  // register-heavy kernels: small blocks

inline unsigned Blocks(uint64_t threads, int per_block) {
  return static_cast<unsigned>((threads + per_block - 1) / per_block);
}

template <class Cfg>
__global__ void InitBuckets(curve::Xyzz<Cfg>* buckets, uint64_t count) {
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < count; i += uint64_t{gridDim.x} * blockDim.x) {
    buckets[i] = curve::Xyzz<Cfg>::infinity();
  }
}

// Level 0 of the accumulation. No launch bounds: with the products as calls
// (ff/field32.hpp), every bound tried on the H200 was slower (docs/benchmarks-gpu.md:
// BN254 G1 at 5 and 6 blocks per SM 1.05x and 1.06x slower, BN254 G2 at
// 3 blocks, the best bound while the products were inlined, 1.10x slower
// than ptxas's 218 registers, BLS12-381 G1 at 4 blocks 1.07x slower).
template <class Cfg>
__global__ void AccumulateLevel0(uint64_t count, uint64_t chunk, const uint32_t* keys, uint32_t sentinel,
                                 const curve::Affine<Cfg>* bases, const uint32_t* values, curve::Xyzz<Cfg>* buckets,
                                 uint32_t* spill_keys, curve::Xyzz<Cfg>* spill_values, uint64_t threads) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (t >= threads) return;
  msm::ReduceRunsStep(t, count, chunk, keys, sentinel, msm::AddSignedBase<Cfg>{bases, values}, buckets, spill_keys,
                      spill_values);
}

template <class Cfg>
__global__ void AccumulateLevel(uint64_t count, uint64_t chunk, const uint32_t* keys, uint32_t sentinel,
                                const curve::Xyzz<Cfg>* partials, curve::Xyzz<Cfg>* buckets, uint32_t* spill_keys,
                                curve::Xyzz<Cfg>* spill_values, uint64_t threads) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (t >= threads) return;
  msm::ReduceRunsStep(t, count, chunk, keys, sentinel, msm::AddPartial<Cfg>{partials}, buckets, spill_keys,
                      spill_values);
}

template <class Cfg>
__global__ void BucketSlices(msm::Plan plan, const curve::Xyzz<Cfg>* buckets, curve::Xyzz<Cfg>* slices,
                             curve::Xyzz<Cfg>* runs) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (t >= static_cast<uint64_t>(plan.groups) * plan.segments) return;
  msm::BucketSliceStep(t, plan, buckets, slices, runs);
}

template <class Cfg>
__global__ void RunSlices(msm::Plan plan, const curve::Xyzz<Cfg>* runs, curve::Xyzz<Cfg>* slices) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (t >= static_cast<uint64_t>(plan.groups) * plan.run_segments) return;
  msm::RunSliceStep(t, plan, runs, slices);
}

template <class Cfg>
__global__ void __launch_bounds__(msm::kReduceThreads)
    WindowSums(msm::Plan plan, const curve::Xyzz<Cfg>* slices, curve::Xyzz<Cfg>* partial, curve::Xyzz<Cfg>* out) {
  const uint32_t b = blockIdx.x, tid = threadIdx.x;
  msm::WindowFoldStep(b, tid, plan, slices, partial);
  for (uint32_t half = msm::kReduceThreads / 2; half >= 1; half /= 2) {
    __syncthreads();  // orders the global-memory partials within the block
    msm::WindowTreeStep(b, tid, half, partial);
  }
  __syncthreads();
  if (tid == 0) out[b] = partial[static_cast<uint64_t>(b) * msm::kReduceThreads];
}

template <class Cfg>
__global__ void Tables(msm::Plan plan, uint64_t count, curve::Affine<Cfg>* bases) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < count) msm::TableStep(i, plan, bases);
}

}  // namespace msm_kernels

template <class HostCfg>
void EnqueueMsmBuckets(cudaStream_t stream, const MsmWorkspace& ws, const MsmWorkspace& sorted, const msm::Plan& plan,
                       const curve::Affine<HostCfg>* bases, curve::Xyzz<HostCfg>* window_sums,
                       const std::string& phase, const MsmMarks* marks) {
  using namespace msm_kernels;
  using Cfg = DeviceCurve<HostCfg>;
  using Xyzz = curve::Xyzz<Cfg>;
  static_assert(sizeof(Xyzz) == sizeof(curve::Xyzz<HostCfg>));
  auto* buckets = static_cast<Xyzz*>(ws.buckets);
  auto* spill0 = static_cast<Xyzz*>(ws.spill_values[0]);
  const auto* dev_bases = reinterpret_cast<const curve::Affine<Cfg>*>(bases);
  auto mark = [&](const Event& event) {
    if (event) event.Record(stream, phase + ": MSM phase mark");
  };

  InitBuckets<Cfg><<<std::min<unsigned>(4096, Blocks(plan.sentinel, 256)), 256, 0, stream>>>(buckets, plan.sentinel);
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM bucket init");

  AccumulateLevel0<Cfg><<<Blocks(plan.threads0, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(
      plan.items, plan.chunk0, sorted.keys_out, plan.sentinel, dev_bases, sorted.values_out, buckets,
      ws.spill_keys[0], spill0, plan.threads0);
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM bucket accumulation");
  if (marks) mark(marks->accumulated);

  for (int level = 1; level <= plan.later_levels; ++level) {
    const int in = (level - 1) % 2, out = level % 2;
    const uint64_t count = msm::LevelInputCount(plan, level);
    const uint64_t threads = msm::LevelThreads(plan, level);
    AccumulateLevel<Cfg><<<Blocks(threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(
        count, msm::kLaterChunk, ws.spill_keys[in], plan.sentinel, static_cast<const Xyzz*>(ws.spill_values[in]),
        buckets, ws.spill_keys[out], static_cast<Xyzz*>(ws.spill_values[out]), threads);
    ZK_CUDA_CHECK_LAUNCH(phase + ": MSM spill reduction");
  }
  if (marks) mark(marks->spills);

  const uint64_t slice_threads = static_cast<uint64_t>(plan.groups) * plan.segments;
  BucketSlices<Cfg><<<Blocks(slice_threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(
      plan, buckets, static_cast<Xyzz*>(ws.slices), static_cast<Xyzz*>(ws.runs));
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM bucket reduction");
  const uint64_t run_threads = static_cast<uint64_t>(plan.groups) * plan.run_segments;
  RunSlices<Cfg><<<Blocks(run_threads, kAccumulateThreads), kAccumulateThreads, 0, stream>>>(
      plan, static_cast<const Xyzz*>(ws.runs), static_cast<Xyzz*>(ws.slices));
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM bucket reduction (level 2)");
  if (marks) mark(marks->slices);

  WindowSums<Cfg><<<plan.sums, msm::kReduceThreads, 0, stream>>>(
      plan, static_cast<const Xyzz*>(ws.slices), static_cast<Xyzz*>(ws.partial), reinterpret_cast<Xyzz*>(window_sums));
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM window sums");
}

template <class HostCfg>
void EnqueueMsmTables(cudaStream_t stream, const msm::Plan& plan, uint64_t count, curve::Affine<HostCfg>* bases,
                      const std::string& what) {
  using Cfg = DeviceCurve<HostCfg>;
  if (plan.copies <= 1 || count == 0) return;
  msm_kernels::Tables<Cfg><<<msm_kernels::Blocks(count, msm_kernels::kAccumulateThreads),
                             msm_kernels::kAccumulateThreads, 0, stream>>>(
      plan, count, reinterpret_cast<curve::Affine<Cfg>*>(bases));
  ZK_CUDA_CHECK_LAUNCH(what + ": MSM tables");
}

}  // namespace zkfleet::cuda
