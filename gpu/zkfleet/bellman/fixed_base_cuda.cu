#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/bellman/fixed_base_cuda.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "zkfleet/bellman/fixed_base_steps.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/ff/field32.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"
#include "zkfleet/runtime/cuda_device.hpp"

namespace zkfleet::bellman {
namespace fixed_base_kernels {

inline constexpr int kThreads = 128;  // register-heavy, as the MSM's accumulation

using DeviceFr = cuda::DeviceFieldOf<ff::Bls12_381Fr>::type;
static_assert(sizeof(DeviceFr) == sizeof(ff::Bls12_381Fr));

inline unsigned Blocks(uint64_t threads, int per_block) {
  return static_cast<unsigned>((threads + per_block - 1) / per_block);
}

template <class Cfg>
__global__ void Mul(uint64_t count, const DeviceFr* scalars, const curve::Affine<Cfg>* table, curve::Xyzz<Cfg>* out) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < count) out[i] = fixed_base::MulStep<Cfg>(scalars[i], table);
}

template <class Cfg>
__global__ void ToAffine(uint64_t count, uint64_t run, const curve::Xyzz<Cfg>* in, curve::Affine<Cfg>* out) {
  const uint64_t t = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  fixed_base::ToAffineRunStep<Cfg>(t, run, count, in, out);
}

}  // namespace fixed_base_kernels

template <class HostCfg>
struct CudaFixedBase<HostCfg>::Impl {
  using Cfg = cuda::DeviceCurve<HostCfg>;
  using DAffine = curve::Affine<Cfg>;
  using DXyzz = curve::Xyzz<Cfg>;
  static_assert(sizeof(DAffine) == sizeof(curve::Affine<HostCfg>));
  static constexpr int kSlots = 2;

  int device = 0;
  size_t chunk = 0;
  cuda::DeviceBuffer table;
  cuda::DeviceBuffer scalars[kSlots], xyzz[kSlots], points[kSlots];
  cuda::PinnedBuffer scalars_host[kSlots], points_host[kSlots];
  cuda::Stream streams[kSlots];
  cuda::Event done[kSlots];

  ~Impl() {
    // Pending work may still read or write the buffers: let it finish first
    // (errors are ignored here; the failing call has already thrown).
    for (const cuda::Stream& stream : streams) {
      if (stream) cuda::SynchronizeStreamIgnoringErrors(stream);
    }
  }
};

template <class HostCfg>
CudaFixedBase<HostCfg>::CudaFixedBase(const Affine& base, int device, size_t chunk_points) : impl_(new Impl) {
  const std::string what = "fixed-base multiplication";
  Impl& m = *impl_;
  m.device = device;
  m.chunk = chunk_points ? chunk_points : kDefaultChunk;
  cuda::SetDevice(device, what);
  const std::vector<Affine> table = fixed_base::BuildTable(base);
  m.table = cuda::DeviceBuffer(table.size() * sizeof(Affine), what + ": table");
  cuda::CopyToDevice(m.table.get(), table.data(), table.size() * sizeof(Affine), what + ": table upload");
  for (int s = 0; s < Impl::kSlots; ++s) {
    m.scalars[s] = cuda::DeviceBuffer(m.chunk * sizeof(ff::Bls12_381Fr), what + ": scalars");
    m.xyzz[s] = cuda::DeviceBuffer(m.chunk * sizeof(typename Impl::DXyzz), what + ": XYZZ points");
    m.points[s] = cuda::DeviceBuffer(m.chunk * sizeof(Affine), what + ": affine points");
    m.scalars_host[s] = cuda::PinnedBuffer(m.chunk * sizeof(ff::Bls12_381Fr), what + ": pinned scalars");
    m.points_host[s] = cuda::PinnedBuffer(m.chunk * sizeof(Affine), what + ": pinned points");
    m.streams[s] = cuda::Stream(what);
    m.done[s] = cuda::Event(cuda::EventTiming::kOff, what);
  }
}

template <class HostCfg>
CudaFixedBase<HostCfg>::~CudaFixedBase() = default;

template <class HostCfg>
size_t CudaFixedBase<HostCfg>::chunk_points() const {
  return impl_->chunk;
}

template <class HostCfg>
void CudaFixedBase<HostCfg>::Mul(size_t count, const ScalarFill& fill, Affine* out, cpu::ThreadPool& pool) {
  namespace k = fixed_base_kernels;
  // Public names for the kernels' template arguments (nvcc's stubs name them).
  using Cfg = cuda::DeviceCurve<HostCfg>;
  using DXyzz = curve::Xyzz<Cfg>;
  using DAffine = curve::Affine<Cfg>;
  const std::string what = "fixed-base multiplication";
  Impl& m = *impl_;
  if (count == 0) return;
  cuda::SetDevice(m.device, what);
  const size_t chunks = (count + m.chunk - 1) / m.chunk;
  // Chunk c's points, once computed, into out.
  auto drain = [&](size_t c) {
    const int s = static_cast<int>(c % Impl::kSlots);
    m.done[s].Synchronize(what);
    const size_t lo = c * m.chunk, n = std::min(m.chunk, count - lo);
    const auto* src = m.points_host[s].template as<const Affine>();
    pool.ParallelFor(n, [&](size_t a, size_t b) { std::memcpy(out + lo + a, src + a, (b - a) * sizeof(Affine)); });
  };
  for (size_t c = 0; c < chunks; ++c) {
    const int s = static_cast<int>(c % Impl::kSlots);
    // The slot's last chunk (c - 2) must be out (its upload is done too).
    if (c >= Impl::kSlots) drain(c - Impl::kSlots);
    const size_t lo = c * m.chunk, n = std::min(m.chunk, count - lo);
    auto* scalars_host = m.scalars_host[s].template as<ff::Bls12_381Fr>();
    pool.ParallelFor(n, [&](size_t a, size_t b) { fill(lo + a, lo + b, scalars_host + a); });
    const cudaStream_t stream = m.streams[s];
    cuda::CopyToDeviceAsync(m.scalars[s].get(), scalars_host, n * sizeof(ff::Bls12_381Fr), stream,
                            what + ": scalar upload");
    k::Mul<Cfg><<<k::Blocks(n, k::kThreads), k::kThreads, 0, stream>>>(
        n, m.scalars[s].template as<const k::DeviceFr>(), m.table.template as<const DAffine>(),
        m.xyzz[s].template as<DXyzz>());
    ZK_CUDA_CHECK_LAUNCH(what + ": multiplication");
    const uint64_t runs = (n + fixed_base::kDefaultRun - 1) / fixed_base::kDefaultRun;
    k::ToAffine<Cfg><<<k::Blocks(runs, k::kThreads), k::kThreads, 0, stream>>>(
        n, fixed_base::kDefaultRun, m.xyzz[s].template as<const DXyzz>(), m.points[s].template as<DAffine>());
    ZK_CUDA_CHECK_LAUNCH(what + ": affine conversion");
    cuda::CopyToHostAsync(m.points_host[s].get(), m.points[s].get(), n * sizeof(Affine), stream,
                          what + ": point download");
    m.done[s].Record(stream, what);
  }
  for (size_t c = chunks > Impl::kSlots ? chunks - Impl::kSlots : 0; c < chunks; ++c) drain(c);
}

template <class HostCfg>
void CudaFixedBase<HostCfg>::Mul(const std::vector<ff::Bls12_381Fr>& scalars, Affine* out, cpu::ThreadPool& pool) {
  const ff::Bls12_381Fr* src = scalars.data();
  Mul(
      scalars.size(),
      [src](size_t lo, size_t hi, ff::Bls12_381Fr* dst) { std::memcpy(dst, src + lo, (hi - lo) * sizeof(*dst)); }, out,
      pool);
}

template class CudaFixedBase<curve::Bls12_381G1>;
template class CudaFixedBase<curve::Bls12_381G2>;

}  // namespace zkfleet::bellman
