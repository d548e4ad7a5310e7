#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/groth16/assignment_cuda_prover.hpp"

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "zkfleet/bellman/domain.hpp"
#include "zkfleet/common/seconds_since.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/assignment_cuda_steps.cuh"
#include "zkfleet/groth16/assignment_memory_plan.hpp"
#include "zkfleet/groth16/cuda_steps.hpp"
#include "zkfleet/msm/msm_device.hpp"
#include "zkfleet/ntt/ntt_device.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"

namespace zkfleet::cuda {
namespace {

using Clock = std::chrono::steady_clock;
using namespace assignment;

// The five MSMs, in the order of their window-sum slots.
enum Slot { kH, kL, kA, kB1, kB2, kSlots };
constexpr size_t kSlotBytes = msm::kMaxSums * sizeof(X2);
constexpr int kStreams = 4;  // main (NTTs, H), L, A, B (B1 then B2)

// The MSM plans and workspace needs of the resident key, and every byte it
// allocates on the device (what the memory planner compares with the budget).
struct ResidentLayout {
  msm::Plan plans[kSlots];
  MsmNeeds needs[kSlots];
  uint64_t device_bytes = 0;
};

ResidentLayout ResidentLayoutFor(const engine::BellmanInfo& info) {
  ResidentLayout out;
  const uint64_t n = info.domain_size;
  const uint64_t counts[kSlots] = {n - 1, info.n_aux, info.n_a, info.n_b, info.n_b};
  for (int k = 0; k < kSlots; ++k) {
    out.plans[k] = msm::MakePlan(std::max<uint64_t>(counts[k], 1));
    const bool sorts = k != kB2;  // B2 buckets B1's sorted items
    out.needs[k] = MsmNeedsFor(out.plans[k], k == kB2 ? sizeof(X2) : sizeof(X1), sorts);
  }
  auto at_least_one = [](uint64_t count) { return std::max<uint64_t>(count, 1); };
  const uint64_t fr = groth16::kFrBytes;
  uint64_t bytes = groth16::PointBytes(info);                                  // points
  bytes += std::max<uint64_t>(n / 2, 1) * 2 * fr + 2 * n * fr;                 // NTT tables
  bytes += 3 * n * fr + 3 * n * fr;                                            // a/b/c, NTT scratch
  bytes += (uint64_t{info.n_inputs} + info.n_aux) * fr;                        // assignment
  bytes += (at_least_one(info.n_a) + at_least_one(info.n_b)) * (fr + 4);       // a/b scalars, indices
  bytes += kSlots * kSlotBytes;                                                // window sums
  for (const MsmNeeds& needs : out.needs) bytes += needs.Total();
  // cudaMalloc rounds each of the ~20 blocks up to its 2 MiB pages.
  out.device_bytes = bytes + (uint64_t{64} << 20);
  return out;
}

// The key's streams and events, destroyed with it (or when its constructor
// throws after making them).
struct StreamSet {
  Stream streams[kStreams];
  Event joins[kStreams];
  Event scalars_ready;
  explicit StreamSet(const std::string& what) : scalars_ready(EventTiming::kOff, what) {
    for (auto& s : streams) s = Stream(what);
    for (auto& e : joins) e = Event(EventTiming::kOff, what);
  }
};

// Every point resident, the five MSMs overlapped on four streams, each with
// a workspace of its own (the planner's kResidentOverlapped).
class CudaAssignmentKey final : public groth16::AssignmentKey {
 public:
  CudaAssignmentKey(bellman::Parameters params, const groth16::KeyOptions& options)
      : device_(options.cuda_device), info_(groth16::ShapeOf(params)) {
    const std::string what = "bellman parameters";
    SetDevice(device_, what);
    info_.backend = engine::Backend::kCuda;
    const size_t n = info_.domain_size;
    const int log_n = std::countr_zero(info_.domain_size);
    header_ = {params.vk.alpha_g1, params.vk.beta_g1, params.vk.delta_g1, params.vk.beta_g2, params.vk.delta_g2};
    h_ = UploadVector(params.h, what + " h points");
    l_ = UploadVector(params.l, what + " l points");
    a_ = UploadVector(params.a, what + " a points");
    b1_ = UploadVector(params.b_g1, what + " b_g1 points");
    b2_ = UploadVector(params.b_g2, what + " b_g2 points");
    domain_ = DeviceNttDomain<Fr>(log_n, what, bellman::DomainRoot(log_n), Fr::from_uint(bellman::kMultiplicativeGenerator));
    uint64_t n_limb[1] = {n};
    z_inv_ = (Fr::from_uint(bellman::kMultiplicativeGenerator).pow(n_limb, 1) - Fr::one()).inverse();

    abc_ = DeviceBuffer(3 * n * sizeof(Fr), what + " a/b/c vectors");
    tmp_ = DeviceBuffer(3 * n * sizeof(Fr), what + " NTT scratch and h scalars");
    vars_ = DeviceBuffer((size_t{info_.n_inputs} + info_.n_aux) * 32, what + " assignment (the l scalars)");
    scalars_a_ = DeviceBuffer(std::max<size_t>(info_.n_a, 1) * 32, what + " a scalars");
    scalars_b_ = DeviceBuffer(std::max<size_t>(info_.n_b, 1) * 32, what + " b scalars");
    index_a_ = DeviceBuffer(std::max<size_t>(info_.n_a, 1) * 4, what + " a scalar indices");
    index_b_ = DeviceBuffer(std::max<size_t>(info_.n_b, 1) * 4, what + " b scalar indices");
    const ResidentLayout layout = ResidentLayoutFor(info_);
    for (int k = 0; k < kSlots; ++k) {
      plans_[k] = layout.plans[k];
      workspaces_[k] = MsmWorkspace(layout.needs[k], what + " MSM workspace " + std::to_string(k));
    }
    if (options.validate_key) {
      // On the uploaded points: milliseconds, where 16 CPU cores take minutes at 2^27.
      SynchronizeDevice(what + ": upload");
      CheckBellmanPointsOnDevice("h", h_.get(), params.h.data(), params.h.size(), false, 0, nullptr);
      CheckBellmanPointsOnDevice("l", l_.get(), params.l.data(), params.l.size(), false, 0, nullptr);
      CheckBellmanPointsOnDevice("a", a_.get(), params.a.data(), params.a.size(), false, 0, nullptr);
      CheckBellmanPointsOnDevice("b_g1", b1_.get(), params.b_g1.data(), params.b_g1.size(), false, 0, nullptr);
      CheckBellmanPointsOnDevice("b_g2", b2_.get(), params.b_g2.data(), params.b_g2.size(), true, 0, nullptr);
    }
    window_sums_ = DeviceBuffer(kSlots * kSlotBytes, what + " MSM window sums");
    staging_ = PinnedBuffer(kSlots * kSlotBytes, what + " pinned window-sum staging");
    sync_ = std::make_unique<StreamSet>(what);
    SynchronizeDevice(what + ": upload");
    info_.resident_bytes = h_.bytes() + l_.bytes() + a_.bytes() + b1_.bytes() + b2_.bytes() + domain_.resident_bytes() +
                           abc_.bytes() + tmp_.bytes() + vars_.bytes() + scalars_a_.bytes() + scalars_b_.bytes() +
                           index_a_.bytes() + index_b_.bytes() +
                           window_sums_.bytes() + staging_.bytes();
    for (const auto& ws : workspaces_) info_.resident_bytes += ws.bytes();
  }

  const engine::BellmanInfo& info() const override { return info_; }
  void set_placement(std::string placement) { info_.placement = std::move(placement); }

  groth16::RawProof ProveUnchecked(const engine::AssignmentView& v, const groth16::ProveOptions& options,
                                   bool inject_fault) const override {
    const auto t_start = Clock::now();
    groth16::CheckAssignmentShape(v, info_);
    uint64_t r[4], s[4];
    groth16::DrawBlinding<Fr>(options, r, s);
    groth16::RawProof proof;
    auto t0 = Clock::now();

    std::vector<X1> sums1[kSlots];
    std::vector<X2> sums_b2;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      try {
        RunDevice(v, proof.timings);
        for (int k = 0; k < kSlots; ++k) {
          const char* slot = staging_.as<char>() + k * kSlotBytes;
          if (k == kB2) {
            sums_b2.resize(plans_[k].sums);
            std::memcpy(static_cast<void*>(sums_b2.data()), slot, sums_b2.size() * sizeof(X2));
          } else {
            sums1[k].resize(plans_[k].sums);
            std::memcpy(static_cast<void*>(sums1[k].data()), slot, sums1[k].size() * sizeof(X1));
          }
        }
        proof.timings.msm_s = SecondsSince(t0);
      } catch (...) {
        for (const Stream& st : sync_->streams) SynchronizeStreamIgnoringErrors(st);
        ClearPendingError();
        throw;
      }
    }
    auto combine = [&](int k) { return msm::CombineWindows(sums1[k].data(), plans_[k]); };
    groth16::Groth16MsmResults<C> msm;
    msm.h = info_.domain_size > 1 ? combine(kH) : J1::infinity();
    msm.c = info_.n_aux ? combine(kL) : J1::infinity();
    msm.a = info_.n_a ? combine(kA) : J1::infinity();
    msm.b1 = info_.n_b ? combine(kB1) : J1::infinity();
    msm.b2 = info_.n_b ? msm::CombineWindows(sums_b2.data(), plans_[kB2]) : J2::infinity();
    groth16::AssembleProof<C>(header_, msm, r, s, proof.points, inject_fault);
    proof.timings.total_s = SecondsSince(t_start);
    return proof;
  }

 private:
  // Everything from the uploads to the window sums in staging_; called with
  // mutex_ held.
  void RunDevice(const engine::AssignmentView& v, groth16::PhaseTimings& timings) const {
    SetDevice(device_, "selecting the device");
    const cudaStream_t main = sync_->streams[0];
    const size_t n = info_.domain_size, m = v.a.size();
    Fr* abc = abc_.as<Fr>();
    const auto t_upload = Clock::now();
    // The MSMs' scalars, on stream 1: the assignment goes up as the caller
    // holds it, becomes canonical in place (the l MSM's scalars: every aux
    // value), and the a and b scalars are gathered from it by index arrays
    // made from the densities (cached: a circuit's densities do not change).
    const auto t_index = Clock::now();
    indices_.Update(v, info_, index_a_.as<uint32_t>(), index_b_.as<uint32_t>(), StreamAt(1));
    timings.build_abc_s = SecondsSince(t_index);
    const cudaStream_t s1 = StreamAt(1);
    const size_t n_vars = size_t{info_.n_inputs} + info_.n_aux;
    uint8_t* vars = vars_.as<uint8_t>();
    CopyToDeviceAsync(vars, v.input.data(), v.input.size() * 32, s1, "assignment upload");
    CopyToDeviceAsync(vars + v.input.size() * 32, v.aux.data(), v.aux.size() * 32, s1, "assignment upload");
    CanonicalInPlaceKernel<<<Blocks(n_vars, 256), 256, 0, s1>>>(n_vars, vars_.as<uint32_t>());
    ZK_CUDA_CHECK_LAUNCH("assignment to canonical");
    if (info_.n_a) {
      GatherScalarsKernel<<<Blocks(info_.n_a, 256), 256, 0, s1>>>(info_.n_a, index_a_.as<uint32_t>(), vars_.as<uint4>(),
                                                                  scalars_a_.as<uint4>());
      ZK_CUDA_CHECK_LAUNCH("a scalars");
    }
    if (info_.n_b) {
      GatherScalarsKernel<<<Blocks(info_.n_b, 256), 256, 0, s1>>>(info_.n_b, index_b_.as<uint32_t>(), vars_.as<uint4>(),
                                                                  scalars_b_.as<uint4>());
      ZK_CUDA_CHECK_LAUNCH("b scalars");
    }
    sync_->scalars_ready.Record(s1, "scalars");
    for (int k = 2; k < kStreams; ++k) WaitFor(StreamAt(k), sync_->scalars_ready, "scalars");
    timings.witness_transfer_s = SecondsSince(t_upload);

    // a, b, c as the caller holds them (Montgomery = the device's layout),
    // zero past abc_size.
    const std::span<const engine::FrMont> parts[3] = {v.a, v.b, v.c};
    for (int k = 0; k < 3; ++k) {
      CopyToDeviceAsync(abc + k * n, parts[k].data(), m * sizeof(Fr), main, "a/b/c upload");
      if (m < n) ZeroAsync(abc + k * n + m, (n - m) * sizeof(Fr), main, "a/b/c upload");
    }
    // h: coset NTTs of a, b, c (batched), the quotient, the coset iNTT. A
    // 1-point domain has no h points: nothing to compute.
    if (n > 1) {
      domain_.EnqueueToOddCoset(main, abc, tmp_.as<Fr>(), 3, "NTT (to the coset)");
      CosetQuotientKernel<<<Blocks(n, 256), 256, 0, main>>>(n, reinterpret_cast<DFr*>(abc), reinterpret_cast<DFr*>(abc + n),
                                                            reinterpret_cast<DFr*>(abc + 2 * n), BitCopy<DFr>(z_inv_));
      ZK_CUDA_CHECK_LAUNCH("h quotient");
      domain_.EnqueueFromCoset(main, abc, tmp_.as<Fr>(), 1, "NTT (from the coset)");
      uint32_t* h_scalars = tmp_.as<uint32_t>();
      CanonicalScalarKernel<<<Blocks(n - 1, 256), 256, 0, main>>>(n - 1, reinterpret_cast<const DFr*>(abc), h_scalars);
      ZK_CUDA_CHECK_LAUNCH("h scalars");
    }
    // The assignment's MSMs, their scalars mostly bits and small values: only
    // non-zero digits are sorted (each sort waits on the host for its item
    // count, while the NTTs above run). b_g2 buckets b_g1's sorted items.
    auto sums = [&](Slot k) { return staging_dev(k); };
    if (info_.n_aux) {
      const uint32_t* scalars_l = vars_.as<uint32_t>() + 8 * size_t{info_.n_inputs};
      const msm::Plan plan = EnqueueMsmSortCompact(s1, Workspace(kL), plans_[kL], scalars_l, "MSM l");
      EnqueueMsmBuckets<G1>(s1, Workspace(kL), Workspace(kL), plan, l_.as<A1>(), reinterpret_cast<X1*>(sums(kL)), "MSM l");
    }
    if (info_.n_a) {
      const msm::Plan plan = EnqueueMsmSortCompact(StreamAt(2), Workspace(kA), plans_[kA], scalars_a_.as<uint32_t>(), "MSM a");
      EnqueueMsmBuckets<G1>(StreamAt(2), Workspace(kA), Workspace(kA), plan, a_.as<A1>(), reinterpret_cast<X1*>(sums(kA)),
                            "MSM a");
    }
    if (info_.n_b) {
      const msm::Plan plan =
          EnqueueMsmSortCompact(StreamAt(3), Workspace(kB1), plans_[kB1], scalars_b_.as<uint32_t>(), "MSM b_g1");
      EnqueueMsmBuckets<G1>(StreamAt(3), Workspace(kB1), Workspace(kB1), plan, b1_.as<A1>(),
                            reinterpret_cast<X1*>(sums(kB1)), "MSM b_g1");
      EnqueueMsmBuckets<G2>(StreamAt(3), Workspace(kB2), Workspace(kB1), plan, b2_.as<A2>(),
                            reinterpret_cast<X2*>(sums(kB2)), "MSM b_g2");
    }
    if (n > 1) {
      EnqueueMsm<G1>(main, Workspace(kH), plans_[kH], h_.as<A1>(), tmp_.as<uint32_t>(), reinterpret_cast<X1*>(sums(kH)),
                     "MSM h");
    }
    for (int k = 1; k < kStreams; ++k) {
      sync_->joins[k].Record(sync_->streams[k], "MSM join");
      WaitFor(main, sync_->joins[k], "MSM join");
    }
    CopyToHostAsync(staging_.get(), window_sums_.get(), kSlots * kSlotBytes, main, "MSM result download");
    SynchronizeStream(main, "proof (device work)");
  }

  cudaStream_t StreamAt(int k) const { return sync_->streams[k]; }
  const MsmWorkspace& Workspace(Slot k) const { return workspaces_[k]; }

  char* staging_dev(Slot k) const { return window_sums_.as<char>() + k * kSlotBytes; }

  int device_;
  engine::BellmanInfo info_;
  groth16::Groth16HeaderPoints<C> header_;
  DeviceBuffer h_, l_, a_, b1_, b2_;
  DeviceNttDomain<Fr> domain_;
  Fr z_inv_;
  DeviceBuffer abc_, tmp_, vars_, scalars_a_, scalars_b_, index_a_, index_b_;
  mutable DensityIndexCache indices_;  // the host side of index_a_ / index_b_ (under mutex_)
  msm::Plan plans_[kSlots];
  MsmWorkspace workspaces_[kSlots];
  DeviceBuffer window_sums_;
  PinnedBuffer staging_;
  std::unique_ptr<StreamSet> sync_;
  mutable std::mutex mutex_;
};

}  // namespace

groth16::DevicePlan PlanCudaAssignmentKey(const engine::BellmanInfo& shape, const groth16::KeyOptions& options) {
  SetDevice(options.cuda_device, "bellman parameters");
  groth16::DeviceMemoryModel model;
  model.resident_overlapped = ResidentLayoutFor(shape).device_bytes;
  model.window_sum_bytes = kSlotBytes;
  model.workspace_bytes = [&shape](uint64_t chunk) { return ChunkWorkspaceNeeds(shape, chunk).Total(); };
  uint64_t budget = options.device_memory_budget;
  if (budget == 0) {
    // What the device has free now, less room for the context's own growth.
    const uint64_t free = DeviceMemoryInfo().free;
    constexpr uint64_t kMargin = uint64_t{512} << 20;
    budget = free > kMargin ? free - kMargin : 1;
  }
  return groth16::PlanDeviceMemory(shape, budget, options.cuda_overlap_msms, model);
}

std::unique_ptr<groth16::AssignmentKey> MakeCudaAssignmentKey(bellman::Parameters params,
                                                              const groth16::KeyOptions& options) {
  const groth16::DevicePlan plan = PlanCudaAssignmentKey(groth16::ShapeOf(params), options);
  if (plan.placement != groth16::DevicePlacement::kResidentOverlapped) {
    return MakeChunkedAssignmentKey(std::move(params), options, plan);
  }
  auto key = std::make_unique<CudaAssignmentKey>(std::move(params), options);
  key->set_placement(plan.Describe());
  return key;
}

}  // namespace zkfleet::cuda
