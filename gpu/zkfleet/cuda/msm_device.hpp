// Enqueuing a GPU MSM on a stream (CUDA translation units only; the plain
// C++ API for tests and benchmarks is msm.hpp). See msm_steps.hpp for the
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

#include "zkfleet/cuda/device.hpp"
#include "zkfleet/cuda/msm_steps.hpp"
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
  size_t partial_bytes = 0;

  void Include(const MsmNeeds& o);         // element-wise max
  bool Covers(const MsmNeeds& o) const;    // every buffer at least as large
  size_t Total() const;
};

// Needs of `plan` with points whose XYZZ form has `xyzz_bytes` bytes.
MsmNeeds MsmNeedsFor(const msm::Plan& plan, size_t xyzz_bytes);

// The device buffers of MSMs run one after another.
class MsmWorkspace {
 public:
  MsmWorkspace() = default;
  MsmWorkspace(const MsmNeeds& needs, const std::string& what);

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
  void* partial = nullptr;
  size_t bytes() const { return block_.bytes(); }

 private:
  DeviceBuffer block_;  // one allocation, carved into the pointers above
};

// Enqueues sum_i scalars[i]·bases[i] for i < plan.n on `stream`. `bases` and
// `scalars` (8 words per scalar, canonical little-endian, < 2^255) are device
// pointers; the plan.windows window sums land in device memory at
// `window_sums` (host point types, same bytes as the device's); combine them
// with msm::CombineWindows after copying them back. plan.n must be > 0.
// Throws zkfleet::Error (naming `phase`) when a launch fails.
template <class HostCfg>
void EnqueueMsm(cudaStream_t stream, const MsmWorkspace& ws, const msm::Plan& plan,
                const curve::Affine<HostCfg>* bases, const uint32_t* scalars, curve::Xyzz<HostCfg>* window_sums,
                const std::string& phase);

}  // namespace zkfleet::cuda
