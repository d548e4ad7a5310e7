// DeviceMsm (cuda_msm.hpp), included by the per-curve .cu files.
#pragma once

#include <map>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/msm/cuda_msm.hpp"
#include "zkfleet/msm/msm_kernels.cuh"

namespace zkfleet::cuda {

template <class HostCfg>
struct DeviceMsm<HostCfg>::Impl {
  size_t n = 0;
  int window_bits = 0;
  msm::Shape shape;  // of the tables (copies = 1: none)
  float tables_ms = 0;
  DeviceBuffer bases, scalars, window_sums;
  MsmNeeds needs;  // what `workspace` was sized for
  MsmWorkspace workspace;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  MsmMarks marks;  // phase boundaries

  ~Impl() {
    for (cudaEvent_t e : {start, stop, marks.sorted, marks.accumulated, marks.spills, marks.slices}) {
      if (e) cudaEventDestroy(e);
    }
    if (stream) cudaStreamDestroy(stream);
  }
};

template <class HostCfg>
DeviceMsm<HostCfg>::DeviceMsm(const curve::Affine<HostCfg>* bases, size_t n, int window_bits, int max_copies)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.n = n;
  m.window_bits = window_bits;
  const size_t count = std::max<size_t>(n, 1);
  m.shape = msm::ChooseShape(count, max_copies, window_bits);
  m.bases = DeviceBuffer(m.shape.copies * count * sizeof(curve::Affine<HostCfg>), "MSM bases");
  m.scalars = DeviceBuffer(count * 32, "MSM scalars");
  // At most kMaxSums window sums; one buffer fits every plan.
  m.window_sums = DeviceBuffer(msm::kMaxSums * sizeof(curve::Xyzz<HostCfg>), "MSM window sums");
  m.needs = MsmNeedsFor(msm::MakePlan(count, m.shape, count), sizeof(curve::Xyzz<HostCfg>));
  m.workspace = MsmWorkspace(m.needs, "MSM workspace");
  ZK_CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "MSM setup");
  ZK_CUDA_CHECK(cudaEventCreate(&m.start), "MSM setup");
  ZK_CUDA_CHECK(cudaEventCreate(&m.stop), "MSM setup");
  for (cudaEvent_t* e : {&m.marks.sorted, &m.marks.accumulated, &m.marks.spills, &m.marks.slices}) {
    ZK_CUDA_CHECK(cudaEventCreate(e), "MSM setup");
  }
  // Uploads go on the MSM's own stream: a plain cudaMemcpy from pageable
  // memory may return before its DMA lands, and the non-blocking stream does
  // not wait for the legacy stream.
  if (n) {
    ZK_CUDA_CHECK(cudaMemcpyAsync(m.bases.get(), bases, n * sizeof(curve::Affine<HostCfg>), cudaMemcpyHostToDevice,
                                  m.stream),
                  "MSM bases upload");
    ZK_CUDA_CHECK(cudaStreamSynchronize(m.stream), "MSM bases upload");
  }
  if (n && m.shape.copies > 1) {
    ZK_CUDA_CHECK(cudaEventRecord(m.start, m.stream), "MSM tables");
    EnqueueMsmTables<HostCfg>(m.stream, msm::MakePlan(n, m.shape, n), n, m.bases.template as<curve::Affine<HostCfg>>(),
                              "MSM");
    ZK_CUDA_CHECK(cudaEventRecord(m.stop, m.stream), "MSM tables");
    ZK_CUDA_CHECK(cudaStreamSynchronize(m.stream), "MSM tables");
    ZK_CUDA_CHECK(cudaEventElapsedTime(&m.tables_ms, m.start, m.stop), "MSM tables");
  }
}

template <class HostCfg>
int DeviceMsm<HostCfg>::copies() const {
  return impl_->shape.copies;
}

template <class HostCfg>
float DeviceMsm<HostCfg>::tables_ms() const {
  return impl_->tables_ms;
}

template <class HostCfg>
DeviceMsm<HostCfg>::~DeviceMsm() = default;

template <class HostCfg>
size_t DeviceMsm<HostCfg>::device_bytes() const {
  return impl_->bases.bytes() + impl_->scalars.bytes() + impl_->window_sums.bytes() + impl_->workspace.bytes();
}

template <class HostCfg>
void DeviceMsm<HostCfg>::UploadScalars(const uint8_t* scalars, size_t count) {
  if (count > impl_->n) throw Error(ErrorCode::kInvalidArgument, "DeviceMsm: more scalars than bases");
  if (count) {
    ZK_CUDA_CHECK(cudaMemcpyAsync(impl_->scalars.get(), scalars, count * 32, cudaMemcpyHostToDevice, impl_->stream),
                  "MSM scalar upload");
    ZK_CUDA_CHECK(cudaStreamSynchronize(impl_->stream), "MSM scalar upload");
  }
}

template <class HostCfg>
curve::Jacobian<HostCfg> DeviceMsm<HostCfg>::RunUploaded(size_t count, float* device_ms, MsmPhaseMs* phases) {
  Impl& m = *impl_;
  if (count > m.n) throw Error(ErrorCode::kInvalidArgument, "DeviceMsm: more scalars than bases");
  if (device_ms) *device_ms = 0;
  if (count == 0) return curve::Jacobian<HostCfg>::infinity();
  // With tables, every MSM keeps their shape (they hold its multiples).
  const msm::Plan plan = m.shape.copies > 1 ? msm::MakePlan(count, m.shape, m.n) : msm::MakePlan(count, m.window_bits);
  const MsmNeeds needs = MsmNeedsFor(plan, sizeof(curve::Xyzz<HostCfg>));
  if (!m.needs.Covers(needs)) {
    // A smaller count can use more windows than n did: grow the workspace
    // (this test/benchmark API allocates here; the prover never does).
    m.workspace = MsmWorkspace();
    m.needs.Include(needs);
    m.workspace = MsmWorkspace(m.needs, "MSM workspace");
  }
  auto* sums = m.window_sums.template as<curve::Xyzz<HostCfg>>();
  ZK_CUDA_CHECK(cudaEventRecord(m.start, m.stream), "MSM");
  EnqueueMsm<HostCfg>(m.stream, m.workspace, plan, m.bases.template as<curve::Affine<HostCfg>>(), m.scalars.template as<uint32_t>(), sums,
                      "MSM", &m.marks);
  ZK_CUDA_CHECK(cudaEventRecord(m.stop, m.stream), "MSM");
  std::vector<curve::Xyzz<HostCfg>> host(plan.sums);
  ZK_CUDA_CHECK(cudaMemcpyAsync(host.data(), sums, plan.sums * sizeof(curve::Xyzz<HostCfg>), cudaMemcpyDeviceToHost,
                                m.stream),
                "MSM result download");
  ZK_CUDA_CHECK(cudaStreamSynchronize(m.stream), "MSM");
  if (device_ms) ZK_CUDA_CHECK(cudaEventElapsedTime(device_ms, m.start, m.stop), "MSM timing");
  if (phases) {
    ZK_CUDA_CHECK(cudaEventElapsedTime(&phases->sort, m.start, m.marks.sorted), "MSM timing");
    ZK_CUDA_CHECK(cudaEventElapsedTime(&phases->accumulate, m.marks.sorted, m.marks.accumulated), "MSM timing");
    ZK_CUDA_CHECK(cudaEventElapsedTime(&phases->spills, m.marks.accumulated, m.marks.spills), "MSM timing");
    ZK_CUDA_CHECK(cudaEventElapsedTime(&phases->slices, m.marks.spills, m.marks.slices), "MSM timing");
    ZK_CUDA_CHECK(cudaEventElapsedTime(&phases->window_sums, m.marks.slices, m.stop), "MSM timing");
  }
  return msm::CombineWindows(host.data(), plan);
}

template <class HostCfg>
curve::Jacobian<HostCfg> DeviceMsm<HostCfg>::Run(const uint8_t* scalars, size_t count) {
  UploadScalars(scalars, count);
  return RunUploaded(count);
}

}  // namespace zkfleet::cuda
