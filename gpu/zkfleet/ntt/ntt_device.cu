// DeviceNttDomain (ntt_device.hpp) and the public DeviceNtt (cuda_ntt.hpp) for the
// scalar fields of both curves.
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/ntt/ntt_device.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"
#include "zkfleet/ff/field32.hpp"
#include "zkfleet/ntt/cuda_ntt.hpp"
#include "zkfleet/ntt/ntt_steps.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"

namespace zkfleet::cuda {
namespace {

template <class HostFr>
using DevFr = typename DeviceFieldOf<HostFr>::type;

template <class Fr>
__global__ void Powers(uint64_t n, Fr base, Fr scale, Fr* out) {
  ntt::PowersStep(blockIdx.x * uint64_t{blockDim.x} + threadIdx.x, n, base, scale, out);
}

// out[i] = in[i] · table[i mod n] (vectors of a batch share the table).
template <class Fr>
__global__ void MulByTable(uint64_t count, int log_n, const Fr* in, const Fr* table, Fr* out) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < count) out[i] = in[i] * table[i & ((uint64_t{1} << log_n) - 1)];
}

// out[i] = in[i] · low[j mod L] · high[j / L], j = i mod n: the coset
// factors of a lean domain.
template <class Fr>
__global__ void MulByPowers(uint64_t count, int log_n, int low_bits, const Fr* in, const Fr* low, const Fr* high,
                            Fr* out) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < count) {
    const uint64_t j = i & ((uint64_t{1} << log_n) - 1);
    out[i] = in[i] * low[j & ((uint64_t{1} << low_bits) - 1)] * high[j >> low_bits];
  }
}

template <class Fr>
__global__ void ScaleBy(uint64_t count, Fr factor, Fr* data) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < count) data[i] = data[i] * factor;
}

// One pass (see ntt_steps.hpp); blockIdx.y selects the vector of the batch.
template <class Fr>
__global__ void NttPass(int log_n, int first, int stages, bool gather, const Fr* src, const Fr* scale, Fr* data,
                        const Fr* tw) {
  extern __shared__ uint4 shared_words[];
  Fr* shared = reinterpret_cast<Fr*>(shared_words);
  const uint64_t offset = static_cast<uint64_t>(blockIdx.y) << log_n;
  src += offset;
  data += offset;
  const uint32_t block = blockIdx.x, tid = threadIdx.x, threads = blockDim.x;
  ntt::LoadStep(block, tid, log_n, first, stages, gather, src, scale, shared);
  ntt::LoadStep(block, tid + threads, log_n, first, stages, gather, src, scale, shared);
  for (int t = 0; t < stages; ++t) {
    __syncthreads();
    ntt::ButterflyStep(block, tid, t, log_n, first, tw, shared);
  }
  __syncthreads();
  ntt::StoreStep(block, tid, first, stages, shared, data);
  ntt::StoreStep(block, tid + threads, first, stages, shared, data);
}

template <class HostFr>
const DevFr<HostFr>* Dev(const HostFr* p) {
  return reinterpret_cast<const DevFr<HostFr>*>(p);
}
template <class HostFr>
DevFr<HostFr>* Dev(HostFr* p) {
  return reinterpret_cast<DevFr<HostFr>*>(p);
}

template <class HostFr>
void FillPowers(const DeviceBuffer& out, uint64_t n, const HostFr& base, const HostFr& scale, const std::string& what) {
  using Fr = DevFr<HostFr>;
  const uint64_t threads = (n + 63) / 64;
  Powers<Fr><<<static_cast<unsigned>((threads + 127) / 128), 128>>>(n, BitCopy<Fr>(base), BitCopy<Fr>(scale),
                                                                    out.as<Fr>());
  ZK_CUDA_CHECK_LAUNCH(what + ": NTT twiddle tables");
}

}  // namespace

template <class HostFr>
DeviceNttDomain<HostFr>::DeviceNttDomain(int log_n, const std::string& what) : log_n_(log_n) {
  const uint64_t n = uint64_t{1} << log_n;
  const uint64_t half = std::max<uint64_t>(1, n / 2);
  const HostFr w = HostFr::root_of_unity(log_n);
  HostFr inc = HostFr::root_of_unity(log_n + 1);  // zero past the 2-adicity: snarkjs then shifts by 25 (spec §8.7)
  if (inc.is_zero()) inc = HostFr::from_uint(25);
  n_inv_ = HostFr::from_uint(n).inverse();
  twiddles_ = DeviceBuffer(half * sizeof(HostFr), what + " NTT twiddles");
  inv_twiddles_ = DeviceBuffer(half * sizeof(HostFr), what + " NTT inverse twiddles");
  coset_ = DeviceBuffer(n * sizeof(HostFr), what + " NTT coset factors");
  FillPowers(twiddles_, half, w, HostFr::one(), what);
  FillPowers(inv_twiddles_, half, w.inverse(), HostFr::one(), what);
  FillPowers(coset_, n, inc, n_inv_, what);
  SynchronizeDevice(what + ": NTT twiddle tables");
}

template <class HostFr>
DeviceNttDomain<HostFr>::DeviceNttDomain(int log_n, const std::string& what, const HostFr& root, const HostFr& shift,
                                         bool lean)
    : log_n_(log_n), lean_(lean) {
  const uint64_t n = uint64_t{1} << log_n;
  const uint64_t half = std::max<uint64_t>(1, n / 2);
  n_inv_ = HostFr::from_uint(n).inverse();
  twiddles_ = DeviceBuffer(half * sizeof(HostFr), what + " NTT twiddles");
  inv_twiddles_ = DeviceBuffer(half * sizeof(HostFr), what + " NTT inverse twiddles");
  FillPowers(twiddles_, half, root, HostFr::one(), what);
  FillPowers(inv_twiddles_, half, root.inverse(), HostFr::one(), what);
  if (lean) {
    const int low_bits = std::min(log_n, kLeanLowBits);
    const uint64_t low = uint64_t{1} << low_bits, high = n >> low_bits;
    uint64_t e[1] = {low};
    const HostFr shift_inv = shift.inverse();
    coset_low_ = DeviceBuffer(low * sizeof(HostFr), what + " NTT coset factors");
    coset_high_ = DeviceBuffer(high * sizeof(HostFr), what + " NTT coset factors");
    coset_inv_low_ = DeviceBuffer(low * sizeof(HostFr), what + " NTT inverse coset factors");
    coset_inv_high_ = DeviceBuffer(high * sizeof(HostFr), what + " NTT inverse coset factors");
    FillPowers(coset_low_, low, shift, n_inv_, what);
    FillPowers(coset_high_, high, shift.pow(e, 1), HostFr::one(), what);
    FillPowers(coset_inv_low_, low, shift_inv, n_inv_, what);
    FillPowers(coset_inv_high_, high, shift_inv.pow(e, 1), HostFr::one(), what);
  } else {
    coset_ = DeviceBuffer(n * sizeof(HostFr), what + " NTT coset factors");
    coset_inv_ = DeviceBuffer(n * sizeof(HostFr), what + " NTT inverse coset factors");
    FillPowers(coset_, n, shift, n_inv_, what);
    FillPowers(coset_inv_, n, shift.inverse(), n_inv_, what);
  }
  SynchronizeDevice(what + ": NTT twiddle tables");
}

template <class HostFr>
void DeviceNttDomain<HostFr>::EnqueueTransform(cudaStream_t stream, const HostFr* src, HostFr* dst, int batch,
                                               const HostFr* tw, const HostFr* scale, const std::string& phase) const {
  using Fr = DevFr<HostFr>;
  const size_t n = size();
  if (log_n_ == 0) {
    // A 1-point transform is the identity (times the scale).
    CopyOnDeviceAsync(dst, src, batch * sizeof(HostFr), stream, phase);
    if (scale) throw Error(ErrorCode::kInternal, "NTT: coset step on a 1-point domain");
    return;
  }
  const ntt::Passes passes = ntt::SplitPasses(log_n_);
  for (int p = 0; p < passes.count; ++p) {
    const int first = passes.first_stage[p], stages = passes.stages[p];
    const unsigned threads = 1u << (stages - 1);
    const dim3 grid(static_cast<unsigned>(n >> stages), static_cast<unsigned>(batch));
    const bool gather = p == 0;
    NttPass<Fr><<<grid, threads, (size_t{1} << stages) * sizeof(Fr), stream>>>(
        log_n_, first, stages, gather, gather ? Dev(src) : Dev(dst), gather ? Dev(scale) : nullptr, Dev(dst), Dev(tw));
    ZK_CUDA_CHECK_LAUNCH(phase + ": NTT pass");
  }
}

template <class HostFr>
void DeviceNttDomain<HostFr>::EnqueueForward(cudaStream_t stream, const HostFr* src, HostFr* dst, int batch,
                                             const std::string& phase) const {
  EnqueueTransform(stream, src, dst, batch, twiddles_.as<HostFr>(), nullptr, phase);
}

template <class HostFr>
void DeviceNttDomain<HostFr>::EnqueueInverse(cudaStream_t stream, const HostFr* src, HostFr* dst, int batch,
                                             const std::string& phase) const {
  using Fr = DevFr<HostFr>;
  EnqueueTransform(stream, src, dst, batch, inv_twiddles_.as<HostFr>(), nullptr, phase);
  const uint64_t count = static_cast<uint64_t>(batch) << log_n_;
  ScaleBy<Fr><<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(count, BitCopy<Fr>(n_inv_), Dev(dst));
  ZK_CUDA_CHECK_LAUNCH(phase + ": iNTT 1/n");
}

template <class HostFr>
void DeviceNttDomain<HostFr>::EnqueueToOddCoset(cudaStream_t stream, HostFr* data, HostFr* tmp, int batch,
                                                const std::string& phase) const {
  using Fr = DevFr<HostFr>;
  EnqueueTransform(stream, data, tmp, batch, inv_twiddles_.as<HostFr>(), nullptr, phase);
  if (lean_) {
    // The factors in a pass of their own (no n-entry table to gather them from).
    const uint64_t count = static_cast<uint64_t>(batch) << log_n_;
    MulByPowers<Fr><<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(
        count, log_n_, std::min(log_n_, kLeanLowBits), Dev(tmp), Dev(coset_low_.as<HostFr>()),
        Dev(coset_high_.as<HostFr>()), Dev(tmp));
    ZK_CUDA_CHECK_LAUNCH(phase + ": coset factors");
    EnqueueTransform(stream, tmp, data, batch, twiddles_.as<HostFr>(), nullptr, phase);
    return;
  }
  // The forward transform's gather multiplies by w_2n^j / n: the iNTT's 1/n
  // and the coset shift in one step.
  EnqueueTransform(stream, tmp, data, batch, twiddles_.as<HostFr>(), coset_.as<HostFr>(), phase);
}

template <class HostFr>
void DeviceNttDomain<HostFr>::EnqueueFromCoset(cudaStream_t stream, HostFr* data, HostFr* tmp, int batch,
                                               const std::string& phase) const {
  using Fr = DevFr<HostFr>;
  if (!coset_inv_.get() && !lean_) {
    throw Error(ErrorCode::kInternal, "NTT: FromCoset on a domain without an explicit shift");
  }
  EnqueueTransform(stream, data, tmp, batch, inv_twiddles_.as<HostFr>(), nullptr, phase);
  const uint64_t count = static_cast<uint64_t>(batch) << log_n_;
  if (lean_) {
    MulByPowers<Fr><<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(
        count, log_n_, std::min(log_n_, kLeanLowBits), Dev(tmp), Dev(coset_inv_low_.as<HostFr>()),
        Dev(coset_inv_high_.as<HostFr>()), Dev(data));
    ZK_CUDA_CHECK_LAUNCH(phase + ": coset iNTT factors");
    return;
  }
  MulByTable<Fr><<<static_cast<unsigned>((count + 255) / 256), 256, 0, stream>>>(count, log_n_, Dev(tmp),
                                                                                 Dev(coset_inv_.as<HostFr>()), Dev(data));
  ZK_CUDA_CHECK_LAUNCH(phase + ": coset iNTT factors");
}

template class DeviceNttDomain<ff::Bn254Fr>;
template class DeviceNttDomain<ff::Bls12_381Fr>;

// ---- DeviceNtt (cuda_ntt.hpp) ----------------------------------------------------

template <class HostFr>
struct DeviceNtt<HostFr>::Impl {
  DeviceNttDomain<HostFr> domain;
  DeviceBuffer data, tmp;
  int batch = 1;
  Stream stream;
  Event start, stop;
};

template <class HostFr>
DeviceNtt<HostFr>::DeviceNtt(int log_n, int batch) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.batch = batch;
  m.domain = DeviceNttDomain<HostFr>(log_n, "DeviceNtt");
  m.data = DeviceBuffer(m.domain.size() * batch * sizeof(HostFr), "DeviceNtt data");
  m.tmp = DeviceBuffer(m.domain.size() * batch * sizeof(HostFr), "DeviceNtt scratch");
  m.stream = Stream("DeviceNtt setup");
  m.start = Event(EventTiming::kOn, "DeviceNtt setup");
  m.stop = Event(EventTiming::kOn, "DeviceNtt setup");
}

template <class HostFr>
DeviceNtt<HostFr>::~DeviceNtt() = default;

template <class HostFr>
void DeviceNtt<HostFr>::Upload(const HostFr* values) {
  // On the transform stream, then wait: a plain cudaMemcpy from pageable
  // memory may return before its DMA lands, and our non-blocking stream does
  // not wait for the legacy stream (a race seen on the H200).
  CopyToDeviceAsync(impl_->data.get(), values, impl_->data.bytes(), impl_->stream, "DeviceNtt upload");
  SynchronizeStream(impl_->stream, "DeviceNtt upload");
}

template <class HostFr>
float DeviceNtt<HostFr>::RunUploaded(NttOp op) {
  Impl& m = *impl_;
  auto* data = m.data.template as<HostFr>();
  auto* tmp = m.tmp.template as<HostFr>();
  m.start.Record(m.stream, "DeviceNtt");
  switch (op) {
    case NttOp::kForward:
      m.domain.EnqueueForward(m.stream, data, tmp, m.batch, "DeviceNtt");
      break;
    case NttOp::kInverse:
      m.domain.EnqueueInverse(m.stream, data, tmp, m.batch, "DeviceNtt");
      break;
    case NttOp::kToOddCoset:
      m.domain.EnqueueToOddCoset(m.stream, data, tmp, m.batch, "DeviceNtt");
      break;
  }
  m.stop.Record(m.stream, "DeviceNtt");
  SynchronizeStream(m.stream, "DeviceNtt");
  // Forward and inverse leave the result in tmp: swap so data holds it.
  if (op != NttOp::kToOddCoset) std::swap(m.data, m.tmp);
  return m.stop.MillisecondsSince(m.start, "DeviceNtt timing");
}

template <class HostFr>
void DeviceNtt<HostFr>::Download(HostFr* values) {
  CopyToHost(values, impl_->data.get(), impl_->data.bytes(), "DeviceNtt download");
}

template <class HostFr>
void DeviceNtt<HostFr>::Run(NttOp op, HostFr* values) {
  Upload(values);
  RunUploaded(op);
  Download(values);
}

template class DeviceNtt<ff::Bn254Fr>;
template class DeviceNtt<ff::Bls12_381Fr>;

}  // namespace zkfleet::cuda
