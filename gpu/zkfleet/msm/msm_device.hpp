// Enqueuing a GPU MSM on a stream (CUDA translation units only; the plain
// C++ API for tests and benchmarks is cuda_msm.hpp). See msm_steps.hpp for the
// algorithm.
//
// The caller owns every buffer: a MsmWorkspace sized once (at key load) for
// the largest MSM it will run, so that enqueuing allocates nothing.
//
// Thread-safety: a workspace serves one MSM at a time; EnqueueMsm itself is
// stateless.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"
#include "zkfleet/msm/msm_steps.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::cuda {

// What one planned MSM needs, in bytes per buffer.
struct MsmNeeds {
  size_t item_bytes = 0;       // keys or values, one buffer (4 of them)
  size_t sort_temp_bytes = 0;  // cub radix-sort temporary storage
  size_t bucket_bytes = 0;
  size_t spill_key_bytes = 0;  // one buffer (2 of them)
  size_t spill_val_bytes = 0;  // one buffer (2 of them)
  size_t slice_bytes = 0;
  size_t run_bytes = 0;  // the bucket reduction's level-1 runs
  size_t partial_bytes = 0;

  void Include(const MsmNeeds& o);         // element-wise max
  bool Covers(const MsmNeeds& o) const;    // every buffer at least as large
  size_t Total() const;
};

// Needs of `plan` with points whose XYZZ form has `xyzz_bytes` bytes.
// `sorts` = false: the MSM takes its sorted items from another workspace
// (EnqueueMsmBuckets), so no item or sort buffers.
MsmNeeds MsmNeedsFor(const msm::Plan& plan, size_t xyzz_bytes, bool sorts = true);

// The device buffers of MSMs run one after another.
class MsmWorkspace {
 public:
  MsmWorkspace() = default;
  MsmWorkspace(const MsmNeeds& needs, const std::string& what);
  // Carved from `memory` (at least needs.Total() bytes, 256-byte aligned),
  // which the caller owns and keeps alive: the streaming bellman key lends
  // its arena, which the NTTs use before the MSMs.
  MsmWorkspace(const MsmNeeds& needs, void* memory);

  uint32_t* keys_in = nullptr;
  uint32_t* values_in = nullptr;
  uint32_t* keys_out = nullptr;
  uint32_t* values_out = nullptr;
  void* sort_temp = nullptr;
  size_t sort_temp_bytes = 0;
  void* buckets = nullptr;
  uint32_t* spill_keys[2] = {nullptr, nullptr};
  void* spill_values[2] = {nullptr, nullptr};
  void* slices = nullptr;
  void* runs = nullptr;
  void* partial = nullptr;
  size_t bytes() const { return block_.bytes(); }

 private:
  void Carve(const MsmNeeds& needs, char* p);
  DeviceBuffer block_;  // one allocation, carved into the pointers above (empty when lent)
};

// Events recorded between an MSM's phases, for benchmarks (any may be empty).
struct MsmMarks {
  Event sorted;       // after digits and sort
  Event accumulated;  // after level-0 bucket accumulation
  Event spills;       // after the spill levels
  Event slices;       // after the bucket slices (before the window sums)
};

// Steps 1-2 (msm_steps.hpp): recodes plan.n scalars (device pointer, 8 words
// each, canonical little-endian, < 2^255) into digits and sorts them by
// bucket, into ws.keys_out / ws.values_out. The sorted items depend only on
// the scalars: MSMs of one scalar vector over several point sets share them
// (EnqueueMsmBuckets). Throws zkfleet::Error (naming `phase`).
void EnqueueMsmSort(cudaStream_t stream, const MsmWorkspace& ws, const msm::Plan& plan, const uint32_t* scalars,
                    const std::string& phase);

// The same with the compact digits (msm_steps.hpp, CompactDigitsStep): only
// non-zero digits become items, so 0/1 and small scalars cost the sort
// nothing for their zero windows. Waits on the host for the item count (the
// stream runs up to the digit counts), and returns the plan with that count:
// pass it to EnqueueMsmBuckets. For scalars with many zero digits (an
// assignment's bits); uniformly random scalars gain nothing from it.
msm::Plan EnqueueMsmSortCompact(cudaStream_t stream, const MsmWorkspace& ws, const msm::Plan& plan,
                                const uint32_t* scalars, const std::string& phase);

// Steps 3-5 on `ws`'s buckets, from the items that EnqueueMsmSort left in
// `sorted` (ws itself or another workspace, sorted with the same plan and
// finished before this runs: same stream or an event). Item i uses point
// bases[i] (and its table copies, plan.stride apart); an MSM over a suffix of
// the sorted scalars passes bases whose prefix is at infinity (all-zero points
// add nothing). The window sums (plan.sums of them) land in device memory at
// `window_sums` (host point types, same bytes as the device's); combine them
// with msm::CombineWindows after copying them back.
template <class HostCfg>
void EnqueueMsmBuckets(cudaStream_t stream, const MsmWorkspace& ws, const MsmWorkspace& sorted, const msm::Plan& plan,
                       const curve::Affine<HostCfg>* bases, curve::Xyzz<HostCfg>* window_sums, const std::string& phase,
                       const MsmMarks* marks = nullptr);

// Step 0: builds the tables of `plan` (plan.copies copies, plan.stride points
// apart) from copy 0, bases[0..count), which holds the points; the buffer
// holds plan.copies·plan.stride points. Nothing to do for plan.copies = 1.
template <class HostCfg>
void EnqueueMsmTables(cudaStream_t stream, const msm::Plan& plan, uint64_t count, curve::Affine<HostCfg>* bases,
                      const std::string& what);

// Both: sum_i scalars[i]·bases[i] for i < plan.n on `stream`. plan.n must be
// > 0.
template <class HostCfg>
void EnqueueMsm(cudaStream_t stream, const MsmWorkspace& ws, const msm::Plan& plan,
                const curve::Affine<HostCfg>* bases, const uint32_t* scalars, curve::Xyzz<HostCfg>* window_sums,
                const std::string& phase, const MsmMarks* marks = nullptr) {
  EnqueueMsmSort(stream, ws, plan, scalars, phase);
  if (marks && marks->sorted) marks->sorted.Record(stream, phase + ": MSM phase mark");
  EnqueueMsmBuckets<HostCfg>(stream, ws, ws, plan, bases, window_sums, phase, marks);
}

}  // namespace zkfleet::cuda
