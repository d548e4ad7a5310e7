// What the two CUDA bellman keys share (assignment_cuda_prover.cu overlaps
// five whole MSMs, assignment_cuda_chunked.cu runs them in chunks, the points
// resident or streamed): the assignment's kernels, the density index arrays
// and the upload of a large host vector. CUDA translation units only.
//
// Thread-safety: the kernels are stateless; a DensityIndexCache is used
// under its key's mutex.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/engine/assignment.hpp"
#include "zkfleet/groth16/assignment_key.hpp"
#include "zkfleet/groth16/assignment_memory_plan.hpp"
#include "zkfleet/msm/msm_device.hpp"
#include "zkfleet/groth16/cuda_steps.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"

namespace zkfleet::cuda::assignment {

using C = curve::Bls12_381;
using Fr = C::Fr;
using G1 = C::G1;
using G2 = C::G2;
using A1 = curve::Affine<G1>;
using A2 = curve::Affine<G2>;
using J1 = curve::Jacobian<G1>;
using J2 = curve::Jacobian<G2>;
using X1 = curve::Xyzz<G1>;
using X2 = curve::Xyzz<G2>;
using DFr = typename DeviceFieldOf<Fr>::type;

inline unsigned Blocks(uint64_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// A copy of `v` in device memory (at least one element). A large vector is
// page-locked in place for its upload (a DMA at the link's rate, where a
// pageable copy is staged through the driver's small buffers at a fraction
// of it); where CUDA refuses, the copy is pageable.
template <class Vector>
DeviceBuffer UploadVector(const Vector& v, const std::string& what) {
  using T = typename Vector::value_type;
  const size_t bytes = v.size() * sizeof(T);
  DeviceBuffer buf(std::max<size_t>(bytes, sizeof(T)), what);
  if (bytes == 0) return buf;
  HostRegistration locked;
  if (bytes >= (size_t{64} << 20)) locked = HostRegistration::Try(const_cast<T*>(v.data()), bytes, nullptr);
  CopyToDevice(buf.get(), v.data(), bytes, what);
  return buf;
}

// a = (a·b - c)·z_inv on the coset.
__global__ inline void CosetQuotientKernel(uint64_t n, DFr* a, const DFr* b, const DFr* c, DFr z_inv) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) prover::CosetQuotientStep(i, a, b, c, z_inv);
}

// The same in two steps, for a key that holds two coset vectors, not three:
// a = a·b, then a = (a - c)·z_inv.
__global__ inline void MulInPlaceKernel(uint64_t n, DFr* a, const DFr* b) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) a[i] = a[i] * b[i];
}
__global__ inline void SubScaleKernel(uint64_t n, DFr* a, const DFr* c, DFr z_inv) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) a[i] = (a[i] - c[i]) * z_inv;
}

// values[i] -> 8 canonical words at scalars + 8i (in place when the two alias:
// each thread reads its element before it writes the same 32 bytes).
__global__ inline void CanonicalScalarKernel(uint64_t n, const DFr* values, uint32_t* scalars) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) prover::CanonicalScalarStep(i, values, scalars);
}

// The canonical form of every variable, in place (Montgomery in, 8 canonical
// words out: the MSMs' scalars).
__global__ inline void CanonicalInPlaceKernel(uint64_t n, uint32_t* words) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) {
    const DFr x = reinterpret_cast<const DFr*>(words)[i];
    uint32_t out[DFr::kWords];
    x.to_canonical(out);
    for (int k = 0; k < DFr::kWords; ++k) words[8 * i + k] = out[k];
  }
}

// dst[k] = src[index[k]], 8 words each: the scalars of the variables that
// have a point in a density-packed section.
__global__ inline void GatherScalarsKernel(uint64_t n, const uint32_t* index, const uint4* src, uint4* dst) {
  const uint64_t k = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (k < n) {
    const uint64_t from = index[k];
    dst[2 * k] = src[2 * from];
    dst[2 * k + 1] = src[2 * from + 1];
  }
}

// The a and b index arrays (variable numbers, inputs first) of an
// assignment's densities, rebuilt only when they differ from the last
// proof's (a circuit's densities do not change) and uploaded on the stream
// whose kernels read them. The host vectors stay alive until the next
// rebuild, which comes after the proof that uploaded them has synchronised.
class DensityIndexCache {
 public:
  void Update(const engine::AssignmentView& v, const engine::BellmanInfo& info, uint32_t* index_a, uint32_t* index_b,
              cudaStream_t stream);

 private:
  std::vector<uint64_t> a_aux_, b_inp_, b_aux_;  // the densities the indices were made from
  std::vector<uint32_t> a_idx_, b_idx_;
  bool valid_ = false;
};

}  // namespace zkfleet::cuda::assignment

namespace zkfleet::cuda {

// The parameters' point checks on the device (KeyOptions::validate_key):
// every point on its curve and in the prime-order subgroup (infinity
// allowed), the endomorphism tests of groth16/cuda_point_check.cuh, over
// `count` points already in device memory. A bad point is described by the
// host's test of the same point (`host_points`, the decoded parameters):
// throws kBadFormat "<section>[<index>]: not on the curve | not in the
// prime-order subgroup (checked on the device)".
void CheckBellmanPointsOnDevice(const char* section, const void* device_points, const void* host_points, uint64_t count,
                                bool g2, uint64_t first_index, cudaStream_t stream);

// The chunked key (assignment_cuda_chunked.cu): the workspace its chunk
// MSMs need, and the key itself, laid out as `plan` (kResidentChunked or
// kStreaming) says.
MsmNeeds ChunkWorkspaceNeeds(const engine::BellmanInfo& shape, uint64_t chunk_points);
std::unique_ptr<groth16::AssignmentKey> MakeChunkedAssignmentKey(bellman::Parameters params,
                                                                 const groth16::KeyOptions& options,
                                                                 const groth16::DevicePlan& plan);

}  // namespace zkfleet::cuda
