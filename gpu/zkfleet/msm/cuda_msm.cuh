// DeviceMsm (cuda_msm.hpp), included by the per-curve .cu files.
#pragma once

#include <map>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"
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
  Stream stream;
  Event start, stop;
  MsmMarks marks;  // phase boundaries
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
  m.stream = Stream("MSM setup");
  for (Event* e : {&m.start, &m.stop, &m.marks.sorted, &m.marks.accumulated, &m.marks.spills, &m.marks.slices}) {
    *e = Event(EventTiming::kOn, "MSM setup");
  }
  // Uploads go on the MSM's own stream: a plain cudaMemcpy from pageable
  // memory may return before its DMA lands, and the non-blocking stream does
  // not wait for the legacy stream.
  if (n) {
    CopyToDeviceAsync(m.bases.get(), bases, n * sizeof(curve::Affine<HostCfg>), m.stream, "MSM bases upload");
    SynchronizeStream(m.stream, "MSM bases upload");
  }
  if (n && m.shape.copies > 1) {
    m.start.Record(m.stream, "MSM tables");
    EnqueueMsmTables<HostCfg>(m.stream, msm::MakePlan(n, m.shape, n), n, m.bases.template as<curve::Affine<HostCfg>>(),
                              "MSM");
    m.stop.Record(m.stream, "MSM tables");
    SynchronizeStream(m.stream, "MSM tables");
    m.tables_ms = m.stop.MillisecondsSince(m.start, "MSM tables");
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
    CopyToDeviceAsync(impl_->scalars.get(), scalars, count * 32, impl_->stream, "MSM scalar upload");
    SynchronizeStream(impl_->stream, "MSM scalar upload");
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
  m.start.Record(m.stream, "MSM");
  EnqueueMsm<HostCfg>(m.stream, m.workspace, plan, m.bases.template as<curve::Affine<HostCfg>>(), m.scalars.template as<uint32_t>(), sums,
                      "MSM", &m.marks);
  m.stop.Record(m.stream, "MSM");
  std::vector<curve::Xyzz<HostCfg>> host(plan.sums);
  CopyToHostAsync(host.data(), sums, plan.sums * sizeof(curve::Xyzz<HostCfg>), m.stream, "MSM result download");
  SynchronizeStream(m.stream, "MSM");
  if (device_ms) *device_ms = m.stop.MillisecondsSince(m.start, "MSM timing");
  if (phases) {
    phases->sort = m.marks.sorted.MillisecondsSince(m.start, "MSM timing");
    phases->accumulate = m.marks.accumulated.MillisecondsSince(m.marks.sorted, "MSM timing");
    phases->spills = m.marks.spills.MillisecondsSince(m.marks.accumulated, "MSM timing");
    phases->slices = m.marks.slices.MillisecondsSince(m.marks.spills, "MSM timing");
    phases->window_sums = m.stop.MillisecondsSince(m.marks.slices, "MSM timing");
  }
  return msm::CombineWindows(host.data(), plan);
}

template <class HostCfg>
curve::Jacobian<HostCfg> DeviceMsm<HostCfg>::Run(const uint8_t* scalars, size_t count) {
  UploadScalars(scalars, count);
  return RunUploaded(count);
}

}  // namespace zkfleet::cuda
