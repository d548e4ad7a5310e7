// CudaGroth16Key<C>: the CUDA proving key (see cuda_prover.hpp). Included by
// one .cu per curve.
//
// Thread-safety: Prove may be called from several threads. Device work is
// serialised per device (DeviceMutex: from the witness upload to the copy of
// the MSM window sums out of the pinned staging buffer); host-side window
// combination, assembly and verification run outside the lock and overlap
// with the next proof's device work.
//
// The witness goes to the device straight from Witness::values() (no host
// copy): a true async DMA when those bytes are page-locked (cudaHostAlloc, or
// a pool registered with cudaHostRegister), a runtime-staged copy otherwise.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "zkfleet/common/seconds_since.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/groth16/cuda_prover.hpp"
#include "zkfleet/groth16/cuda_steps.hpp"
#include "zkfleet/msm/msm_device.hpp"
#include "zkfleet/ntt/ntt_device.hpp"
#include "zkfleet/groth16/cuda_point_check.cuh"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/key_validation.hpp"
#include "zkfleet/groth16/rows.hpp"

namespace zkfleet::cuda {
namespace prover {

using Clock = std::chrono::steady_clock;

// Proofs' device work on one device runs one proof at a time (they would
// only slow each other down, and each key's scratch, streams and events
// serve one proof).
inline std::mutex& DeviceMutex(int device) {
  static std::mutex mutexes[64];
  return mutexes[static_cast<unsigned>(device) % 64];
}

// A uniformly random scalar < r from the kernel's CSPRNG (rejection
// sampling), as the CPU prover draws it.
template <class Fr>
__global__ void EvaluateRowsKernel(uint32_t n, DeviceRows<Fr> a_rows, DeviceRows<Fr> b_rows, const uint32_t* witness,
                                   Fr* a, Fr* b, Fr* c) {
  const uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n) EvaluateRowsStep(row, a_rows, b_rows, witness, a, b, c);
}

template <class Fr>
__global__ void HScalarsKernel(uint64_t n, const Fr* a, const Fr* b, const Fr* c, uint32_t* scalars) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i < n) HScalarStep(i, a, b, c, scalars);
}

// The streams of one key and the events that order and time a proof:
// the main stream carries the witness upload, A/B/C, the NTTs, the H MSM and
// the download; kSideStreams side streams run the other MSMs concurrently.
class StreamAndEvents {
 public:
  static constexpr int kEvents = 5;
  static constexpr int kSideStreams = 4;
  explicit StreamAndEvents(const std::string& what) : stream_(what) {
    for (auto& s : side_) s = Stream(what);
    for (auto& e : events_) e = Event(EventTiming::kOn, what);
    for (auto& e : side_done_) e = Event(EventTiming::kOff, what);
    witness_sorted_ = Event(EventTiming::kOff, what);
  }
  const Stream& stream() const { return stream_; }
  const Stream& side(int i) const { return side_[i]; }
  const Event& event(int i) const { return events_[i]; }
  const Event& side_done(int i) const { return side_done_[i]; }
  // The witness's MSM items are sorted (the witness MSMs share them).
  const Event& witness_sorted() const { return witness_sorted_; }
  // Seconds between events i and j (after they completed).
  double Seconds(int i, int j, const std::string& phase) const {
    return events_[j].MillisecondsSince(events_[i], phase) / 1000.0;
  }
  // Waits for everything queued on every stream (errors ignored: used when
  // recovering from one).
  void SyncAllIgnoringErrors() const {
    SynchronizeStreamIgnoringErrors(stream_);
    for (const Stream& s : side_) SynchronizeStreamIgnoringErrors(s);
  }

 private:
  // Destroyed in reverse: the events before the streams they were recorded on.
  Stream stream_;
  Stream side_[kSideStreams];
  Event events_[kEvents];
  Event side_done_[kSideStreams];
  Event witness_sorted_;
};

template <class C>
class CudaGroth16Key final : public groth16::Key {
  using Fr = typename C::Fr;
  using G1 = typename C::G1;
  using G2 = typename C::G2;
  using A1 = curve::Affine<G1>;
  using A2 = curve::Affine<G2>;
  using J1 = curve::Jacobian<G1>;
  using J2 = curve::Jacobian<G2>;
  using X1 = curve::Xyzz<G1>;
  using X2 = curve::Xyzz<G2>;
  using DFr = typename DeviceFieldOf<Fr>::type;

  // The five MSMs, in the order of their window-sum slots.
  enum Slot { kSlotA, kSlotB1, kSlotB2, kSlotC, kSlotH, kSlots };
  static constexpr size_t kSlotBytes = msm::kMaxSums * sizeof(X2);  // window sums of the largest point type
  // The MSMs' plans: [0] over the points alone, [1] over the tables (as [0]
  // without tables).
  struct Plans {
    msm::Plan vars, c, h;
  };

 public:
  CudaGroth16Key(const io::ZkeyFile& zkey, const groth16::KeyOptions& options)
      : device_(options.cuda_device),
        overlap_(options.cuda_overlap_msms),
        setup_((SetDevice(options.cuda_device, zkey.path()), zkey.path())) {
    if (sizeof(A1) != zkey.g1_size() || sizeof(A2) != zkey.g2_size()) {
      throw Error(ErrorCode::kInternal, zkey.path() + ": point size does not match the curve");
    }
    const std::string what = zkey.path();
    info_.curve = zkey.curve();
    info_.n_vars = zkey.n_vars();
    info_.n_public = zkey.n_public();
    info_.domain_size = zkey.domain_size();
    info_.n_coeffs = zkey.n_coeffs();
    info_.path = zkey.path();
    r_.assign(zkey.r(), zkey.r() + zkey.n8r());
    std::memcpy(static_cast<void*>(&alpha1_), zkey.alpha1(), sizeof(A1));
    std::memcpy(static_cast<void*>(&beta1_), zkey.beta1(), sizeof(A1));
    std::memcpy(static_cast<void*>(&delta1_), zkey.delta1(), sizeof(A1));
    std::memcpy(static_cast<void*>(&beta2_), zkey.beta2(), sizeof(A2));
    std::memcpy(static_cast<void*>(&delta2_), zkey.delta2(), sizeof(A2));

    const size_t n = info_.domain_size, nv = info_.n_vars;
    n_c_ = zkey.c().count;
    share_c_ = n_c_ + info_.n_public + 1 == nv;
    ChooseShapes(options.cuda_msm_copies);

    // Points (kept for the key's lifetime) and rows go in from one thread
    // each: the copies read, and page-fault in, their parts of the mapped
    // file at once, and the rows are regrouped meanwhile.
    {
      const int device = device_;
      std::vector<std::future<void>> jobs;
      auto job = [&](auto body) {
        jobs.push_back(std::async(std::launch::async, [device, what, body] {
          SetDevice(device, what);
          body();
        }));
      };
      size_t row_bytes[2] = {0, 0};
      // Each buffer has room for its tables' copies, `stride` points apart.
      const size_t vars_room = shape_vars_.copies * nv;
      job([&] { a_ = Upload(zkey.a(), sizeof(A1), vars_room, what + " A points"); });
      job([&] { b1_ = Upload(zkey.b1(), sizeof(A1), vars_room, what + " B1 points"); });
      job([&] { b2_ = Upload(zkey.b2(), sizeof(A2), vars_room, what + " B2 points"); });
      // C's points follow CPrefix() points at infinity, one per public
      // signal and the constant: then point i goes with witness value i and
      // C shares the witness's sorted digits (the prefix adds nothing).
      const size_t c_room = share_c_ ? vars_room : CPrefix() + n_c_;
      job([&] { c_ = Upload(zkey.c(), sizeof(A1), c_room, what + " C points", CPrefix()); });
      job([&] { h_ = Upload(zkey.h(), sizeof(A1), shape_h_.copies * n, what + " H points"); });
      job([&] { row_bytes[0] = UploadRows(zkey, 0); });
      job([&] { row_bytes[1] = UploadRows(zkey, 1); });
      for (auto& j : jobs) j.wait();
      for (auto& j : jobs) j.get();  // the first error, after every job ended
      rows_bytes_ = row_bytes[0] + row_bytes[1];
    }
    int log_n = 0;
    while ((size_t{1} << log_n) < n) ++log_n;
    domain_ = DeviceNttDomain<Fr>(log_n, what);

    // Scratch, sized from the circuit.
    witness_ = DeviceBuffer(nv * 32, what + " witness");
    abc_ = DeviceBuffer(3 * n * sizeof(Fr), what + " A/B/C vectors");
    tmp_ = DeviceBuffer(3 * n * sizeof(Fr), what + " NTT scratch and H scalars");
    // A, B1, B2 and C all multiply by the witness (C by its suffix after the
    // public signals, as snarkjs lays it out): its digits are sorted once, in
    // A's workspace, and the four MSMs accumulate from those items.
    for (int tables = 0; tables < 2; ++tables) {
      const msm::Shape vars = tables ? shape_vars_ : msm::ChooseShape(nv), h = tables ? shape_h_ : msm::ChooseShape(n);
      Plans& p = plans_[tables];
      p.vars = msm::MakePlan(nv, vars, nv);
      p.c = share_c_ ? p.vars : msm::MakePlan(std::max<size_t>(n_c_, 1));
      p.h = msm::MakePlan(n, h, n);
    }
    // Workspaces fit both sets of plans.
    MsmNeeds needs[kSlots];
    for (const Plans& p : plans_) {
      const MsmNeeds slot_needs[kSlots] = {MsmNeedsFor(p.vars, sizeof(X1)), MsmNeedsFor(p.vars, sizeof(X1), false),
                                           MsmNeedsFor(p.vars, sizeof(X2), false),
                                           MsmNeedsFor(p.c, sizeof(X1), !share_c_), MsmNeedsFor(p.h, sizeof(X1))};
      for (int slot = 0; slot < kSlots; ++slot) needs[slot].Include(slot_needs[slot]);
    }
    workspace_bytes_ = 0;
    if (overlap_) {
      for (int slot = 0; slot < kSlots; ++slot) {
        workspaces_[slot] = MsmWorkspace(needs[slot], what + " MSM workspace " + std::to_string(slot));
        workspace_bytes_ += workspaces_[slot].bytes();
      }
    } else {
      MsmNeeds shared = needs[0];
      for (const MsmNeeds& n_slot : needs) shared.Include(n_slot);
      workspaces_[0] = MsmWorkspace(shared, what + " MSM workspace");
      workspace_bytes_ = workspaces_[0].bytes();
    }
    window_sums_ = DeviceBuffer(kSlots * kSlotBytes, what + " MSM window sums");
    // Pinned, for the async window-sum download; the witness needs none (it
    // is uploaded from the caller's bytes).
    staging_ = PinnedBuffer(kSlots * kSlotBytes, what + " pinned window-sum staging");
    // The uploads above are plain cudaMemcpy calls, which may return before
    // their DMA lands; proofs run on non-blocking streams that do not wait
    // for them, so wait here.
    SynchronizeDevice(what + ": upload");
    if (options.validate_key) CheckPointsOnDevice(zkey);
    info_.msm_copies = std::max(shape_vars_.copies, shape_h_.copies);
    if (info_.msm_copies > 1) {
      tables_ = std::make_unique<TableBuild>(what);
      BuildTables();
      if (!options.cuda_msm_tables_in_background) {
        SynchronizeStream(tables_->stream, what + ": MSM tables");
        (void)TablesReady();
      }
    }

    info_.resident_bytes = a_.bytes() + b1_.bytes() + b2_.bytes() + c_.bytes() + h_.bytes() + rows_bytes_ +
                           domain_.resident_bytes() + witness_.bytes() + abc_.bytes() + tmp_.bytes() +
                           workspace_bytes_ + window_sums_.bytes() + staging_.bytes();
  }

  ~CudaGroth16Key() override {
    // The table build may still read and write the point buffers.
    if (tables_) SynchronizeStreamIgnoringErrors(tables_->stream);
  }

  const groth16::CircuitInfo& info() const override { return info_; }

  bool AwaitMsmTables() const override {
    if (!tables_) return false;
    // The build's last step records `done`; a failed build returns its error
    // here, and TablesReady() then clears it and answers false.
    (void)tables_->done.SynchronizeIgnoringErrors();
    return TablesReady();
  }

  groth16::RawProof ProveUnchecked(const io::Witness& witness, const groth16::ProveOptions& options,
                                      bool inject_fault) const override {
    const auto t_start = Clock::now();
    io::CheckWitnessMatches(witness, r_, info_.n_vars, info_.path);
    if (witness.n8() != 32) {
      throw Error(ErrorCode::kMismatch, witness.origin() + ": witness elements are " + std::to_string(witness.n8()) +
                                            " bytes, expected 32");
    }
    uint64_t r[4], s[4];
    groth16::DrawBlinding<Fr>(options, r, s);

    groth16::RawProof proof;
    WindowSums sums;
    const Plans* plans = nullptr;
    {
      std::lock_guard<std::mutex> lock(DeviceMutex(device_));
      plans = &plans_[TablesReady() ? 1 : 0];
      try {
        RunDevice(witness, *plans, proof.timings, sums);
      } catch (...) {
        Recover();
        throw;
      }
    }
    // Host work, outside the lock: the next proof's device work overlaps it.
    const auto t_combine = Clock::now();
    const J1 msm_a = msm::CombineWindows(sums.a.data(), plans->vars);
    const J1 msm_b1 = msm::CombineWindows(sums.b1.data(), plans->vars);
    const J2 msm_b2 = msm::CombineWindows(sums.b2.data(), plans->vars);
    const J1 msm_c = n_c_ > 0 ? msm::CombineWindows(sums.c.data(), plans->c) : J1::infinity();
    const J1 msm_h = msm::CombineWindows(sums.h.data(), plans->h);
    proof.timings.msm_s += SecondsSince(t_combine);
    Assemble(r, s, msm_a, msm_b1, msm_b2, msm_c, msm_h, proof.points, inject_fault);
    proof.timings.total_s = SecondsSince(t_start);
    return proof;
  }

 private:
  // The points after `prefix` points at infinity (all-zero bytes), in a
  // buffer of `room` points (the rest is for the tables).
  static DeviceBuffer Upload(const io::PointArray& points, size_t point_bytes, size_t room, const std::string& what,
                             size_t prefix = 0) {
    DeviceBuffer buf(std::max<size_t>({room, prefix + points.count, 1}) * point_bytes, what);
    Zero(buf.get(), prefix * point_bytes, what + " upload");
    UploadPageable(buf.template as<uint8_t>() + prefix * point_bytes, points.data, points.count * point_bytes, what);
    return buf;
  }

  // The MSMs' shapes: with up to `max_copies` table copies when they fit in
  // half the free device memory (and their indices in 31 bits), else none.
  void ChooseShapes(int max_copies) {
    const size_t n = info_.domain_size, nv = info_.n_vars;
    auto choose = [&](int copies) {
      shape_vars_ = msm::ChooseShape(nv, copies);
      shape_h_ = msm::ChooseShape(n, copies);
    };
    choose(1);
    if (max_copies <= 1) return;
    const uint64_t largest = std::max<uint64_t>(n, nv);
    const int index_limit = static_cast<int>(std::min<uint64_t>(msm::kMaxCopies, (uint64_t{1} << 31) / largest));
    if (index_limit <= 1) {
      info_.msm_tables_skipped = std::to_string(largest) + " points leave no room for copies in 31-bit item indices";
      return;
    }
    choose(std::min(max_copies, index_limit));
    const size_t vars_points = (share_c_ ? 3 : 2) * sizeof(A1) + sizeof(A2);
    const size_t extra = (shape_vars_.copies - 1) * nv * vars_points + (shape_h_.copies - 1) * n * sizeof(A1);
    const uint64_t free_bytes = DeviceMemoryInfo().free;
    if (extra > free_bytes / 2) {
      info_.msm_tables_skipped = "their " + std::to_string(extra >> 20) + " MiB exceed half the device's free " +
                                 std::to_string(free_bytes >> 20) + " MiB";
      choose(1);
    }
  }

  // Step 0 of the MSMs over the key's points (msm/msm_steps.hpp): their
  // table copies, built once from the uploaded (and checked) points on a
  // low-priority stream. Until TablesReady(), proofs use plans_[0] (the
  // points alone, copy 0 of each buffer, which the build only reads).
  void BuildTables() {
    const cudaStream_t stream = tables_->stream;
    const Plans& p = plans_[1];
    const size_t nv = info_.n_vars;
    EnqueueMsmTables<G1>(stream, p.vars, nv, a_.template as<A1>(), info_.path + " A");
    EnqueueMsmTables<G1>(stream, p.vars, nv, b1_.template as<A1>(), info_.path + " B1");
    EnqueueMsmTables<G2>(stream, p.vars, nv, b2_.template as<A2>(), info_.path + " B2");
    if (share_c_) EnqueueMsmTables<G1>(stream, p.vars, nv, c_.template as<A1>(), info_.path + " C");
    EnqueueMsmTables<G1>(stream, p.h, info_.domain_size, h_.template as<A1>(), info_.path + " H");
    tables_->done.Record(stream, info_.path + ": MSM tables");
  }

  // Whether the tables are built (once true, stays true). A failed build
  // (its error surfaces here) leaves the key on the plain plans.
  bool TablesReady() const {
    if (!tables_) return false;
    if (tables_->ready.load(std::memory_order_acquire)) return true;
    if (!tables_->done.Done()) return false;
    tables_->ready.store(true, std::memory_order_release);
    return true;
  }

  size_t CPrefix() const { return size_t{info_.n_public} + 1; }
  const A1* CPoints() const { return c_.template as<A1>() + CPrefix(); }  // without the prefix

  // Host memory (pageable: the mapped file, vectors) to the device through
  // two pinned chunks on the calling thread's own stream: the copy into one
  // chunk overlaps the DMA of the other, and copies on several threads run
  // at once (pageable cudaMemcpy would stage them one at a time).
  static void UploadPageable(void* dst, const void* src, size_t bytes, const std::string& what) {
    if (bytes == 0) return;
    constexpr size_t kChunk = size_t{8} << 20;
    const size_t chunk = std::min(bytes, kChunk);
    PinnedBuffer stage(2 * chunk, what + ": upload staging");
    StreamAndEvents copy(what + ": upload");
    const auto* from = static_cast<const uint8_t*>(src);
    auto* to = static_cast<uint8_t*>(dst);
    for (size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
      const int slot = static_cast<int>(k % 2);
      if (k >= 2) copy.event(slot).Synchronize(what + " upload");
      const size_t len = std::min(chunk, bytes - off);
      uint8_t* staged = stage.template as<uint8_t>() + slot * chunk;
      std::memcpy(staged, from + off, len);
      CopyToDeviceAsync(to + off, staged, len, copy.stream(), what + " upload");
      copy.event(slot).Record(copy.stream(), what + " upload");
    }
    SynchronizeStream(copy.stream(), what + " upload");
  }

  // groth16::ValidateZkeyPoints's checks of sections A, B1, B2, C and H, on
  // the uploaded points (the header points and IC are checked on the CPU
  // before the key is made). Throws its error for the first bad point.
  void CheckPointsOnDevice(const io::ZkeyFile& zkey) const {
    struct Check {
      const char* section;
      const void* points;
      uint64_t count;
      bool g2;
    };
    const Check checks[] = {{"A", a_.get(), zkey.a().count, false},
                            {"B1", b1_.get(), zkey.b1().count, false},
                            {"B2", b2_.get(), zkey.b2().count, true},
                            {"C", CPoints(), zkey.c().count, false},
                            {"H", h_.get(), zkey.h().count, false}};
    for (const Check& c : checks) {
      const std::string what = info_.path + ": checking section " + c.section + " on the device";
      const uint64_t bad = c.g2 ? FirstBadPoint<G2>(c.points, c.count, setup_.stream(), what)
                                : FirstBadPoint<G1>(c.points, c.count, setup_.stream(), what);
      if (bad < c.count) {
        groth16::CheckZkeyPoint(zkey, c.section, bad);  // throws, describing the point
        throw Error(ErrorCode::kInternal, what + ": the device rejected point " + std::to_string(bad) +
                                              " that the CPU check accepts");
      }
    }
  }

  // Regroups section 4's records of matrix m (0 = A, 1 = B) by row (the
  // CPU key's row builder, groth16/rows.hpp) and uploads them; returns the
  // device bytes.
  size_t UploadRows(const io::ZkeyFile& zkey, int m) {
    const std::vector<uint32_t> start = ::zkfleet::groth16::RowStarts(zkey, m);
    std::vector<Fr> coef(start.back());
    std::vector<uint32_t> signal(start.back());
    ::zkfleet::groth16::PlaceByRow(zkey, m, start, [&](uint32_t slot, const io::CoeffRecord& rec) {
      std::memcpy(static_cast<void*>(&coef[slot]), rec.value, 32);
      signal[slot] = rec.signal;
    });
    const std::string what = zkey.path() + (m == 0 ? " A rows" : " B rows");
    row_start_[m] = DeviceBuffer(start.size() * sizeof(uint32_t), what);
    row_coef_[m] = DeviceBuffer(std::max<size_t>(coef.size(), 1) * sizeof(Fr), what);
    row_signal_[m] = DeviceBuffer(std::max<size_t>(signal.size(), 1) * sizeof(uint32_t), what);
    CopyToDevice(row_start_[m].get(), start.data(), start.size() * sizeof(uint32_t), what);
    CopyToDevice(row_coef_[m].get(), coef.data(), coef.size() * sizeof(Fr), what);
    CopyToDevice(row_signal_[m].get(), signal.data(), signal.size() * sizeof(uint32_t), what);
    return row_start_[m].bytes() + row_coef_[m].bytes() + row_signal_[m].bytes();
  }

  DeviceRows<DFr> Rows(int m) const {
    return DeviceRows<DFr>{row_start_[m].template as<uint32_t>(), row_coef_[m].template as<DFr>(),
                           row_signal_[m].template as<uint32_t>()};
  }

  char* SlotDevice(Slot slot) const { return window_sums_.template as<char>() + slot * kSlotBytes; }
  const char* SlotHost(Slot slot) const { return staging_.template as<char>() + slot * kSlotBytes; }

  // One proof's MSM window sums, copied out of the shared pinned staging
  // buffer so they can be combined after the device lock is released.
  struct WindowSums {
    std::vector<X1> a, b1, c, h;
    std::vector<X2> b2;
  };
  template <class X>
  static void CopyOut(const char* slot, const msm::Plan& plan, std::vector<X>& out) {
    out.resize(plan.sums);
    std::memcpy(static_cast<void*>(out.data()), slot, plan.sums * sizeof(X));
  }

  // Everything between the witness upload and the window sums' download,
  // with `plans` (plans_[0] or [1]). Called with DeviceMutex(device_) held.
  void RunDevice(const io::Witness& witness, const Plans& plans, groth16::PhaseTimings& timings,
                 WindowSums& sums) const {
    SetDevice(device_, "selecting the device");
    const cudaStream_t stream = setup_.stream();
    const size_t n = info_.domain_size, nv = info_.n_vars, skip = info_.n_public + 1;

    // 1. Witness: straight from the caller's bytes to the device (no host
    // copy; they stay alive until the synchronisation below, or Recover()).
    setup_.event(0).Record(stream, "witness transfer");
    CopyToDeviceAsync(witness_.get(), witness.values(), nv * 32, stream, "witness transfer");
    setup_.event(1).Record(stream, "witness transfer");
    InjectFaultIfRequested(stream);

    const uint32_t* w = witness_.template as<uint32_t>();
    DFr* a = abc_.template as<DFr>();
    uint32_t* h_scalars = tmp_.template as<uint32_t>();

    // The MSMs over the witness need only the witness: with overlap they
    // start now on the side streams, next to A/B/C and the NTTs. The
    // witness's items are sorted once on A's stream; the others wait for it.
    auto enqueue_witness_msms = [&](cudaStream_t sa, cudaStream_t sb1, cudaStream_t sb2, cudaStream_t sc) {
      const MsmWorkspace& sorted = Workspace(kSlotA);
      EnqueueMsmSort(sa, sorted, plans.vars, w, "MSM A/B/C (witness digits)");
      setup_.witness_sorted().Record(sa, "MSM fork");
      for (cudaStream_t other : {sb1, sb2, sc}) {
        if (other != sa) WaitFor(other, setup_.witness_sorted(), "MSM fork");
      }
      EnqueueMsmBuckets<G1>(sa, Workspace(kSlotA), sorted, plans.vars, a_.template as<A1>(),
                            reinterpret_cast<X1*>(SlotDevice(kSlotA)), "MSM A");
      EnqueueMsmBuckets<G1>(sb1, Workspace(kSlotB1), sorted, plans.vars, b1_.template as<A1>(),
                            reinterpret_cast<X1*>(SlotDevice(kSlotB1)), "MSM B1");
      EnqueueMsmBuckets<G2>(sb2, Workspace(kSlotB2), sorted, plans.vars, b2_.template as<A2>(),
                            reinterpret_cast<X2*>(SlotDevice(kSlotB2)), "MSM B2");
      if (n_c_ > 0 && share_c_) {
        EnqueueMsmBuckets<G1>(sc, Workspace(kSlotC), sorted, plans.vars, c_.template as<A1>(),
                              reinterpret_cast<X1*>(SlotDevice(kSlotC)), "MSM C");
      } else if (n_c_ > 0) {
        EnqueueMsm<G1>(sc, Workspace(kSlotC), plans.c, CPoints(), w + 8 * skip,
                       reinterpret_cast<X1*>(SlotDevice(kSlotC)), "MSM C");
      }
    };
    if (overlap_) {
      for (int k = 0; k < StreamAndEvents::kSideStreams; ++k) {
        WaitFor(setup_.side(k), setup_.event(1), "MSM fork");
      }
      enqueue_witness_msms(setup_.side(0), setup_.side(1), setup_.side(2), setup_.side(3));
      for (int k = 0; k < StreamAndEvents::kSideStreams; ++k) {
        setup_.side_done(k).Record(setup_.side(k), "MSM fork");
      }
    }

    // 2. A, B, C = A·B on the domain.
    EvaluateRowsKernel<DFr><<<static_cast<unsigned>((n + 127) / 128), 128, 0, stream>>>(
        static_cast<uint32_t>(n), Rows(0), Rows(1), w, a, a + n, a + 2 * n);
    ZK_CUDA_CHECK_LAUNCH("A/B/C evaluation");
    setup_.event(2).Record(stream, "A/B/C evaluation");

    // 3. Odd coset (3 iNTT + 3 NTT, batched) and the H scalars into tmp.
    domain_.EnqueueToOddCoset(stream, abc_.template as<Fr>(), tmp_.template as<Fr>(), 3, "NTT");
    HScalarsKernel<DFr><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(n, a, a + n, a + 2 * n, h_scalars);
    ZK_CUDA_CHECK_LAUNCH("H scalars");
    setup_.event(3).Record(stream, "NTT");

    // 4. The remaining MSMs (spec §8.4), window sums into their slots; join.
    if (!overlap_) enqueue_witness_msms(stream, stream, stream, stream);
    EnqueueMsm<G1>(stream, Workspace(kSlotH), plans.h, h_.template as<A1>(), h_scalars,
                   reinterpret_cast<X1*>(SlotDevice(kSlotH)), "MSM H");
    if (overlap_) {
      for (int k = 0; k < StreamAndEvents::kSideStreams; ++k) {
        WaitFor(stream, setup_.side_done(k), "MSM join");
      }
    }
    setup_.event(4).Record(stream, "MSM");
    CopyToHostAsync(staging_.get(), window_sums_.get(), kSlots * kSlotBytes, stream, "MSM result download");
    SynchronizeStream(stream, "proof (device work)");

    // A few KiB per MSM: copy them out so the next proof may reuse staging_.
    CopyOut(SlotHost(kSlotA), plans.vars, sums.a);
    CopyOut(SlotHost(kSlotB1), plans.vars, sums.b1);
    CopyOut(SlotHost(kSlotB2), plans.vars, sums.b2);
    if (n_c_ > 0) CopyOut(SlotHost(kSlotC), plans.c, sums.c);
    CopyOut(SlotHost(kSlotH), plans.h, sums.h);
    // The events are reused by the next proof: read them now.
    timings.witness_transfer_s = setup_.Seconds(0, 1, "timing");
    timings.build_abc_s = setup_.Seconds(1, 2, "timing");
    timings.ntt_s = setup_.Seconds(2, 3, "timing");
    // With overlap the MSMs run from the witness upload on, alongside A/B/C
    // and the NTTs: msm_s is then that whole span (plus, added by the
    // caller, the host-side window combination).
    timings.msm_s = setup_.Seconds(overlap_ ? 1 : 3, 4, "timing");
  }

  void InjectFaultIfRequested(cudaStream_t stream) const {
    switch (TakeInjectedFault()) {
      case InjectedFault::kNone:
        return;
      case InjectedFault::kOutOfMemory: {
        DeviceBuffer absurd(size_t{1} << 52, "injected fault (absurd scratch)");  // 4 PiB: always fails
        return;
      }
      case InjectedFault::kBadCopy:
        // An invalid copy direction: rejected by the runtime, context unharmed.
        // (The source is the window-sum staging: any valid host pointer does.)
        QueueInvalidCopyForTesting(witness_.get(), staging_.get(), stream, "witness transfer (injected fault)");
        return;
    }
  }

  // After a failure: let queued work finish (it may still read the caller's
  // witness or write the staging area) and clear the non-sticky error so the
  // next proof starts clean.
  void Recover() const {
    setup_.SyncAllIgnoringErrors();
    ClearPendingError();
  }

  const MsmWorkspace& Workspace(Slot slot) const { return workspaces_[overlap_ ? slot : 0]; }

  // Blinding and assembly (spec §8.5), shared with the CPU prover.
  void Assemble(const uint64_t r[4], const uint64_t s[4], const J1& pi_a_msm, const J1& b1_msm, const J2& pi_b_msm,
                const J1& c_msm, const J1& h_msm, groth16::Proof& proof, bool inject_fault) const {
    const groth16::Groth16HeaderPoints<C> header{alpha1_, beta1_, delta1_, beta2_, delta2_};
    // inject_fault (test-only, ZKFLEET_FAULT_INJECT): pi_a's MSM result as it
    // came back from the device is corrupted before assembly.
    groth16::AssembleProof<C>(header, {pi_a_msm, b1_msm, c_msm, h_msm, pi_b_msm}, r, s, proof, inject_fault);
  }

  int device_;
  bool overlap_;  // MSMs on their own streams with their own workspaces
  StreamAndEvents setup_;
  groth16::CircuitInfo info_;
  std::vector<uint8_t> r_;
  A1 alpha1_, beta1_, delta1_;
  A2 beta2_, delta2_;
  uint64_t n_c_ = 0;
  bool share_c_ = false;  // C's points are the witness after the public signals: C uses the shared sort
  DeviceBuffer a_, b1_, b2_, c_, h_;
  DeviceBuffer row_start_[2], row_coef_[2], row_signal_[2];
  size_t rows_bytes_ = 0;
  DeviceNttDomain<Fr> domain_;
  DeviceBuffer witness_, abc_, tmp_;
  msm::Shape shape_vars_, shape_h_;  // with tables: of the witness MSMs (and C's when it shares their sort), of H
  Plans plans_[2];  // [0] over the points alone, [1] over the tables (as [0] without tables)
  // The background build of the tables (null without tables).
  struct TableBuild {
    // Lowest priority: proofs' blocks go first.
    explicit TableBuild(const std::string& what)
        : stream(what + ": MSM tables", StreamPriority::kLowest), done(EventTiming::kOff, what + ": MSM tables") {}
    Stream stream;
    Event done;
    std::atomic<bool> ready{false};
  };
  std::unique_ptr<TableBuild> tables_;
  MsmWorkspace workspaces_[kSlots];  // [0] only, shared, without overlap
  size_t workspace_bytes_ = 0;
  DeviceBuffer window_sums_;
  PinnedBuffer staging_;  // kSlots window-sum slots (downloaded under DeviceMutex)
};

}  // namespace prover
}  // namespace zkfleet::cuda
