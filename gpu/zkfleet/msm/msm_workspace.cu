// MSM workspace sizing and the curve-independent steps: digits and sort.
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>

#include "zkfleet/common/error.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/msm/msm_device.hpp"

namespace zkfleet::cuda {
namespace {

constexpr size_t kAlign = 256;
size_t AlignUp(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

__global__ void MsmDigits(msm::Plan plan, const uint32_t* scalars, uint32_t* keys, uint32_t* values) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < plan.n) msm::DigitsStep(i, plan, scalars, keys, values);
}

__global__ void MsmCountDigits(msm::Plan plan, const uint32_t* scalars, uint32_t* counts) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < plan.n) counts[i] = msm::CountDigitsStep(i, plan, scalars);
}

__global__ void MsmCompactDigits(msm::Plan plan, const uint32_t* scalars, const uint32_t* offsets, uint32_t* keys,
                                 uint32_t* values) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < plan.n) msm::CompactDigitsStep(i, plan, scalars, offsets[i], keys, values);
}

size_t ScanTempBytes(uint64_t n) {
  size_t bytes = 0;
  const cudaError_t err = cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                                        static_cast<uint32_t*>(nullptr), static_cast<int64_t>(n));
  if (err != cudaSuccess) ThrowCudaError(err, "cub::DeviceScan::ExclusiveSum (size query)", "MSM planning");
  return bytes;
}

size_t SortTempBytes(uint64_t items, int key_bits) {
  size_t bytes = 0;
  const cudaError_t err = cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr), static_cast<int64_t>(items), 0, key_bits);
  if (err != cudaSuccess) ThrowCudaError(err, "cub::DeviceRadixSort::SortPairs (size query)", "MSM planning");
  return bytes;
}

}  // namespace

void EnqueueMsmSort(cudaStream_t stream, const MsmWorkspace& ws, const msm::Plan& plan, const uint32_t* scalars,
                    const std::string& phase) {
  MsmDigits<<<static_cast<unsigned>((plan.n + 255) / 256), 256, 0, stream>>>(plan, scalars, ws.keys_in, ws.values_in);
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM digits");
  size_t temp_bytes = ws.sort_temp_bytes;
  ZK_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(ws.sort_temp, temp_bytes, ws.keys_in, ws.keys_out, ws.values_in,
                                                ws.values_out, static_cast<int64_t>(plan.items), 0, plan.key_bits,
                                                stream),
                phase + ": MSM sort by bucket");
}

msm::Plan EnqueueMsmSortCompact(cudaStream_t stream, const MsmWorkspace& ws, const msm::Plan& plan,
                                const uint32_t* scalars, const std::string& phase) {
  // Item offsets fit 32 bits (the sentinel form's slots, windows·n, bound them).
  if (plan.n == 0 || plan.items >= (uint64_t{1} << 32)) {
    EnqueueMsmSort(stream, ws, plan, scalars, phase);
    return plan;
  }
  // Counts in keys_out, their prefix sums in values_out (both hold at least
  // n words), the items in keys_in / values_in, sorted into the *_out pair.
  const unsigned blocks = static_cast<unsigned>((plan.n + 255) / 256);
  MsmCountDigits<<<blocks, 256, 0, stream>>>(plan, scalars, ws.keys_out);
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM digit counts");
  size_t temp_bytes = ws.sort_temp_bytes;
  ZK_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(ws.sort_temp, temp_bytes, ws.keys_out, ws.values_out,
                                              static_cast<int64_t>(plan.n), stream),
                phase + ": MSM digit offsets");
  uint32_t last[2] = {0, 0};  // the last scalar's offset and count
  CopyToHostAsync(&last[0], ws.values_out + plan.n - 1, 4, stream, phase + ": MSM item count");
  CopyToHostAsync(&last[1], ws.keys_out + plan.n - 1, 4, stream, phase + ": MSM item count");
  SynchronizeStream(stream, phase + ": MSM item count");
  msm::Plan compact = plan;
  msm::SetItems(compact, uint64_t{last[0]} + last[1]);
  MsmCompactDigits<<<blocks, 256, 0, stream>>>(plan, scalars, ws.values_out, ws.keys_in, ws.values_in);
  ZK_CUDA_CHECK_LAUNCH(phase + ": MSM digits");
  temp_bytes = ws.sort_temp_bytes;
  ZK_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(ws.sort_temp, temp_bytes, ws.keys_in, ws.keys_out, ws.values_in,
                                                ws.values_out, static_cast<int64_t>(compact.items), 0, compact.key_bits,
                                                stream),
                phase + ": MSM sort by bucket");
  return compact;
}

void MsmNeeds::Include(const MsmNeeds& o) {
  item_bytes = std::max(item_bytes, o.item_bytes);
  sort_temp_bytes = std::max(sort_temp_bytes, o.sort_temp_bytes);
  bucket_bytes = std::max(bucket_bytes, o.bucket_bytes);
  spill_key_bytes = std::max(spill_key_bytes, o.spill_key_bytes);
  spill_val_bytes = std::max(spill_val_bytes, o.spill_val_bytes);
  slice_bytes = std::max(slice_bytes, o.slice_bytes);
  run_bytes = std::max(run_bytes, o.run_bytes);
  partial_bytes = std::max(partial_bytes, o.partial_bytes);
}

bool MsmNeeds::Covers(const MsmNeeds& o) const {
  return item_bytes >= o.item_bytes && sort_temp_bytes >= o.sort_temp_bytes && bucket_bytes >= o.bucket_bytes &&
         spill_key_bytes >= o.spill_key_bytes && spill_val_bytes >= o.spill_val_bytes &&
         slice_bytes >= o.slice_bytes && run_bytes >= o.run_bytes && partial_bytes >= o.partial_bytes;
}

size_t MsmNeeds::Total() const {
  return 4 * AlignUp(item_bytes) + AlignUp(sort_temp_bytes) + AlignUp(bucket_bytes) + 2 * AlignUp(spill_key_bytes) +
         2 * AlignUp(spill_val_bytes) + AlignUp(slice_bytes) + AlignUp(run_bytes) + AlignUp(partial_bytes);
}

MsmNeeds MsmNeedsFor(const msm::Plan& plan, size_t xyzz_bytes, bool sorts) {
  MsmNeeds needs;
  if (sorts) {
    needs.item_bytes = plan.items * sizeof(uint32_t);
    // The compact form's prefix sum borrows the sort's storage.
    needs.sort_temp_bytes = std::max(SortTempBytes(plan.items, plan.key_bits), ScanTempBytes(plan.n));
  }
  needs.bucket_bytes = static_cast<size_t>(plan.sentinel) * xyzz_bytes;
  needs.spill_key_bytes = 2 * plan.threads0 * sizeof(uint32_t);
  needs.spill_val_bytes = 2 * plan.threads0 * xyzz_bytes;
  needs.slice_bytes = static_cast<size_t>(plan.groups) * plan.slice_stride * xyzz_bytes;
  needs.run_bytes = static_cast<size_t>(plan.groups) * plan.segments * xyzz_bytes;
  needs.partial_bytes = static_cast<size_t>(plan.sums) * msm::kReduceThreads * xyzz_bytes;
  return needs;
}

MsmWorkspace::MsmWorkspace(const MsmNeeds& needs, const std::string& what) : block_(needs.Total(), what) {
  Carve(needs, block_.as<char>());
}

MsmWorkspace::MsmWorkspace(const MsmNeeds& needs, void* memory) { Carve(needs, static_cast<char*>(memory)); }

void MsmWorkspace::Carve(const MsmNeeds& needs, char* p) {
  auto carve = [&p](size_t bytes) {
    void* out = p;
    p += AlignUp(bytes);
    return out;
  };
  keys_in = static_cast<uint32_t*>(carve(needs.item_bytes));
  values_in = static_cast<uint32_t*>(carve(needs.item_bytes));
  keys_out = static_cast<uint32_t*>(carve(needs.item_bytes));
  values_out = static_cast<uint32_t*>(carve(needs.item_bytes));
  sort_temp = carve(needs.sort_temp_bytes);
  sort_temp_bytes = needs.sort_temp_bytes;
  buckets = carve(needs.bucket_bytes);
  for (int i = 0; i < 2; ++i) {
    spill_keys[i] = static_cast<uint32_t*>(carve(needs.spill_key_bytes));
    spill_values[i] = carve(needs.spill_val_bytes);
  }
  slices = carve(needs.slice_bytes);
  runs = carve(needs.run_bytes);
  partial = carve(needs.partial_bytes);
}

}  // namespace zkfleet::cuda
