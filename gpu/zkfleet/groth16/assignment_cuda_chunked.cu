// The chunked CUDA key for bellperson parameters whose five whole MSMs do not
// fit a device memory budget side by side (assignment_memory_plan.hpp has the
// layout, this file follows it; assignment_cuda_prover.cu chooses). Same
// results as the overlapped key and the CPU, bit for bit.
//
// Load: resident (kResidentChunked), every point goes to the device once;
// streamed (kStreaming), the points are page-locked where the parameters
// were decoded. Either way the device gets the lean NTT domain, the a/h
// vector, the assignment, the density indices, the chunks' window sums and
// one arena.
// Prove, on one compute stream and one copy stream:
//   1. the assignment goes up on the copy stream (it is needed only by the
//      MSMs) while the compute stream starts on h;
//   2. h: a and b go up one after another, b while a's NTT runs, into the a
//      vector and the arena's first half, and each goes to the coset (the
//      arena's second half is the transform's scratch); a·b in the a vector,
//      then c into the first half, (a·b - c)/Z, the coset iNTT and h's
//      scalars, in place;
//   3. the MSMs, chunk by chunk, over the arena (now the MSM workspace, a
//      chunk of gathered scalars and, streamed, two to four point buffers:
//      the copy stream runs up to three chunks ahead of the compute stream,
//      and the streamed order interleaves h's chunks, whose arithmetic is
//      long, with the assignment's, whose upload is longer than their
//      arithmetic); each chunk leaves its window sums in a slot of its own;
//   4. the host combines every chunk's sums and adds them up per MSM.
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "zkfleet/bellman/domain.hpp"
#include "zkfleet/common/seconds_since.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/assignment_cuda_prover.hpp"
#include "zkfleet/groth16/assignment_cuda_steps.cuh"
#include "zkfleet/groth16/assignment_memory_plan.hpp"
#include "zkfleet/msm/msm_device.hpp"
#include "zkfleet/ntt/ntt_device.hpp"

namespace zkfleet::cuda {
namespace {

using namespace assignment;
using Clock = std::chrono::steady_clock;

constexpr size_t kSlotBytes = msm::kMaxSums * sizeof(X2);
static_assert(DeviceNttDomain<Fr>::kLeanLowBits == groth16::kLeanCosetLowBits, "the planner counts the lean tables");
constexpr uint64_t kAlign = 256;
uint64_t AlignUp(uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

enum Slot { kH, kL, kA, kB1, kB2, kSlots };

// One chunk MSM: points [begin, begin + count) of MSM `slot`.
struct ChunkJob {
  Slot slot;
  uint64_t begin, count;
  msm::Plan plan;
};

// Chunk point buffers of a streamed key: at least the two the planner
// budgets, and as many more (up to four) as the arena's NTT half leaves room
// for after the workspace, so that the copy stream can run further ahead.
constexpr int kMinPointBuffers = 2, kMaxPointBuffers = 4;

// The two streams and the events that order them: the point buffers handed
// between them, the NTT phase's uploads, and one timing mark per chunk job.
struct StreamPair {
  Stream compute, copy;
  Event uploaded[kMaxPointBuffers], free[kMaxPointBuffers];
  // The NTT phase: a, b and the assignment uploaded; a·b formed (the buffer
  // c goes into is free); c uploaded.
  Event a_up, b_up, vars_up, product, c_up;
  std::vector<Event> marks;  // timing: where each chunk job starts, and the end
  StreamPair(const std::string& what, size_t jobs) : compute(what), copy(what) {
    for (size_t j = 0; j <= jobs; ++j) marks.emplace_back(EventTiming::kOn, what);
    for (int i = 0; i < kMaxPointBuffers; ++i) {
      uploaded[i] = Event(EventTiming::kOff, what);
      free[i] = Event(EventTiming::kOff, what);
    }
    for (Event* e : {&a_up, &b_up, &vars_up, &product, &c_up}) *e = Event(EventTiming::kOff, what);
  }
};

// Every chunk MSM of a proof, in the order they run. Resident: h, l, a,
// b_g1, b_g2, one MSM after another. Streamed (`interleave`): h's chunks
// spread evenly among the others, each h chunk followed by its share of
// them, so that their point uploads (an assignment chunk's arithmetic is a
// fraction of its upload) run under h's arithmetic (an h chunk of random
// scalars takes several uploads' time).
std::vector<ChunkJob> ChunkJobs(const engine::BellmanInfo& info, uint64_t chunk, bool interleave) {
  const uint64_t counts[kSlots] = {info.domain_size > 0 ? info.domain_size - 1u : 0u, info.n_aux, info.n_a, info.n_b,
                                   info.n_b};
  std::vector<ChunkJob> h, others;
  for (int k = 0; k < kSlots; ++k) {
    for (uint64_t begin = 0; begin < counts[k]; begin += chunk) {
      const uint64_t count = std::min(chunk, counts[k] - begin);
      (k == kH ? h : others).push_back(ChunkJob{static_cast<Slot>(k), begin, count, msm::MakePlan(count)});
    }
  }
  std::vector<ChunkJob> jobs;
  if (!interleave || h.empty()) {
    jobs = std::move(h);
    jobs.insert(jobs.end(), others.begin(), others.end());
    return jobs;
  }
  size_t next = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    jobs.push_back(h[i]);
    const size_t until = others.size() * (i + 1) / h.size();
    for (; next < until; ++next) jobs.push_back(others[next]);
  }
  return jobs;
}

class ChunkedAssignmentKey final : public groth16::AssignmentKey {
 public:
  ChunkedAssignmentKey(bellman::Parameters params, const groth16::KeyOptions& options, const groth16::DevicePlan& plan)
      : device_(options.cuda_device), info_(groth16::ShapeOf(params)), layout_(plan.chunked) {
    const std::string what = layout_.points_resident ? "bellman parameters (resident, chunked)"
                                                     : "bellman parameters (streamed)";
    SetDevice(device_, what);
    info_.backend = engine::Backend::kCuda;
    info_.placement = plan.Describe();
    const uint64_t n = info_.domain_size;
    const int log_n = std::countr_zero(info_.domain_size);
    header_ = {params.vk.alpha_g1, params.vk.beta_g1, params.vk.delta_g1, params.vk.beta_g2, params.vk.delta_g2};
    if (layout_.points_resident) {
      UploadPoints(params, what, options.validate_key);
    } else {
      PinPoints(params, what);
    }

    domain_ = DeviceNttDomain<Fr>(log_n, what, bellman::DomainRoot(log_n), Fr::from_uint(bellman::kMultiplicativeGenerator),
                                  /*lean=*/true);
    uint64_t n_limb[1] = {n};
    z_inv_ = (Fr::from_uint(bellman::kMultiplicativeGenerator).pow(n_limb, 1) - Fr::one()).inverse();
    vector_ = DeviceBuffer(n * sizeof(Fr), what + " a vector and h scalars");
    vars_ = DeviceBuffer(std::max<size_t>(size_t{info_.n_inputs} + info_.n_aux, 1) * 32, what + " assignment");
    index_a_ = DeviceBuffer(std::max<size_t>(info_.n_a, 1) * 4, what + " a scalar indices");
    index_b_ = DeviceBuffer(std::max<size_t>(info_.n_b, 1) * 4, what + " b scalar indices");

    jobs_ = ChunkJobs(info_, layout_.chunk_points, /*interleave=*/!layout_.points_resident);
    // The planner's own figure (one owner: what it budgeted is what is
    // carved): the workspace, a chunk of scalars, and (streamed) two point
    // buffers, or more where the NTT scratch leaves the arena larger.
    const MsmNeeds needs = ChunkWorkspaceNeeds(info_, layout_.chunk_points);
    const uint64_t points_bytes =
        layout_.points_resident ? 0 : AlignUp(layout_.chunk_points * groth16::kG2AffineBytes);
    msm_offset_scalars_ = AlignUp(needs.Total());
    msm_offset_points_ = msm_offset_scalars_ + AlignUp(layout_.chunk_points * 32);
    const uint64_t msm_bytes = msm_offset_points_ + kMinPointBuffers * points_bytes;
    const uint64_t arena_bytes = std::max<uint64_t>(2 * n * sizeof(Fr), msm_bytes);
    if (points_bytes) {
      point_buffers_ = static_cast<int>(std::min<uint64_t>(kMaxPointBuffers, (arena_bytes - msm_offset_points_) / points_bytes));
    }
    if (point_buffers_) info_.placement += "; " + std::to_string(point_buffers_) + " chunk point buffers";
    arena_ = DeviceBuffer(arena_bytes, what + " arena (NTT scratch, MSM chunks)");
    workspace_ = MsmWorkspace(needs, arena_.get());
    points_bytes_ = points_bytes;
    window_sums_ = DeviceBuffer(std::max<size_t>(jobs_.size(), 1) * kSlotBytes, what + " MSM window sums");
    staging_ = PinnedBuffer(std::max<size_t>(jobs_.size(), 1) * kSlotBytes, what + " pinned window-sum staging");
    streams_ = std::make_unique<StreamPair>(what, jobs_.size());
    SynchronizeDevice(what + ": set-up");
    if (options.validate_key && !layout_.points_resident) CheckStreamedPointsOnDevice();
    info_.resident_bytes = domain_.resident_bytes() + vector_.bytes() + vars_.bytes() + index_a_.bytes() +
                           index_b_.bytes() + arena_.bytes() + window_sums_.bytes();
    for (const DeviceBuffer& points : device_points_) info_.resident_bytes += points.bytes();
  }

  const engine::BellmanInfo& info() const override { return info_; }

  groth16::RawProof ProveUnchecked(const engine::AssignmentView& v, const groth16::ProveOptions& options,
                                   bool inject_fault) const override {
    const auto t_start = Clock::now();
    groth16::CheckAssignmentShape(v, info_);
    uint64_t r[4], s[4];
    groth16::DrawBlinding<Fr>(options, r, s);
    groth16::RawProof proof;
    J1 g1[kSlots] = {J1::infinity(), J1::infinity(), J1::infinity(), J1::infinity(), J1::infinity()};
    J2 b2 = J2::infinity();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      try {
        RunDevice(v, proof.timings);
      } catch (...) {
        SynchronizeStreamIgnoringErrors(streams_->copy);
        SynchronizeStreamIgnoringErrors(streams_->compute);
        ClearPendingError();
        throw;
      }
      const auto t_combine = Clock::now();
      for (size_t j = 0; j < jobs_.size(); ++j) {
        const ChunkJob& job = jobs_[j];
        const char* slot = staging_.as<char>() + j * kSlotBytes;
        if (job.slot == kB2) {
          b2 = curve::add(b2, msm::CombineWindows(reinterpret_cast<const X2*>(slot), job.plan));
        } else {
          g1[job.slot] = curve::add(g1[job.slot], msm::CombineWindows(reinterpret_cast<const X1*>(slot), job.plan));
        }
      }
      proof.timings.msm_s += SecondsSince(t_combine);
    }
    groth16::Groth16MsmResults<C> msm;
    msm.h = g1[kH];
    msm.c = g1[kL];
    msm.a = g1[kA];
    msm.b1 = g1[kB1];
    msm.b2 = b2;
    groth16::AssembleProof<C>(header_, msm, r, s, proof.points, inject_fault);
    proof.timings.total_s = SecondsSince(t_start);
    return proof;
  }

 private:
  // kResidentChunked: each section goes to the device once, the five on
  // five threads, and is checked there (KeyOptions::validate_key) while the
  // parameters, which describe a bad point, are still at hand.
  void UploadPoints(const bellman::Parameters& params, const std::string& what, bool validate) {
    const char* names[kSlots] = {"h", "l", "a", "b_g1", "b_g2"};
    const auto failed = OnSectionThreads(what, [&](int k) {
      const std::string section = what + " " + names[k] + " points";
      switch (k) {
        case kH: device_points_[k] = UploadVector(params.h, section); break;
        case kL: device_points_[k] = UploadVector(params.l, section); break;
        case kA: device_points_[k] = UploadVector(params.a, section); break;
        case kB1: device_points_[k] = UploadVector(params.b_g1, section); break;
        default: device_points_[k] = UploadVector(params.b_g2, section); break;
      }
    });
    for (const auto& e : failed) {
      if (e) std::rethrow_exception(e);
    }
    counts_[kH] = params.h.size();
    counts_[kL] = params.l.size();
    counts_[kA] = params.a.size();
    counts_[kB1] = params.b_g1.size();
    counts_[kB2] = params.b_g2.size();
    if (!validate) return;
    const void* host[kSlots] = {params.h.data(), params.l.data(), params.a.data(), params.b_g1.data(), params.b_g2.data()};
    for (int k = 0; k < kSlots; ++k) {
      CheckBellmanPointsOnDevice(names[k], device_points_[k].get(), host[k], counts_[k], k == kB2, 0, nullptr);
    }
  }

  // kStreaming: the points stay in the parameters' own vectors (PointVector: page
  // aligned mappings), page-locked where they are, the five sections on five
  // threads: no second copy in host memory and no cudaHostAlloc (at 2^27 the
  // copy into cudaHostAlloc'd blocks was 22.8 s of a 36.5 s load). Where
  // CUDA refuses to register a section, it is copied into a cudaHostAlloc'd
  // block as before, and the placement says so.
  void PinPoints(bellman::Parameters& params, const std::string& what) {
    g1_points_[kH] = std::move(params.h);
    g1_points_[kL] = std::move(params.l);
    g1_points_[kA] = std::move(params.a);
    g1_points_[kB1] = std::move(params.b_g1);
    g2_points_ = std::move(params.b_g2);
    static_assert(sizeof(A1) == groth16::kG1AffineBytes && sizeof(A2) == groth16::kG2AffineBytes);
    static_assert(sizeof(bellman::G1Affine) == sizeof(A1) && sizeof(bellman::G2Affine) == sizeof(A2));
    char* data[kSlots];
    uint64_t bytes[kSlots];
    for (int k = 0; k < kSlots; ++k) {
      data[k] = k == kB2 ? reinterpret_cast<char*>(g2_points_.data()) : reinterpret_cast<char*>(g1_points_[k].data());
      counts_[k] = k == kB2 ? g2_points_.size() : g1_points_[k].size();
      bytes[k] = counts_[k] * (k == kB2 ? sizeof(A2) : sizeof(A1));
    }
    std::string refused[kSlots];
    const auto failed = OnSectionThreads(
        what, [&](int k) { registered_[k] = HostRegistration::Try(data[k], bytes[k], &refused[k]); });
    for (int k = 0; k < kSlots; ++k) {
      if (!failed[k]) continue;
      try {
        std::rethrow_exception(failed[k]);
      } catch (const std::exception& e) {
        refused[k] = e.what();
      }
    }
    std::string copied;
    for (int k = 0; k < kSlots; ++k) {
      host_points_[k] = data[k];
      if (bytes[k] == 0 || registered_[k].registered()) continue;
      copies_[k] = PinnedBuffer(bytes[k], what + " pinned points");
      CopyInParallel(copies_[k].as<char>(), data[k], bytes[k]);
      host_points_[k] = copies_[k].as<char>();
      if (k == kB2) {
        bellman::PointVector<bellman::G2Affine>().swap(g2_points_);
      } else {
        bellman::PointVector<bellman::G1Affine>().swap(g1_points_[k]);
      }
      if (copied.empty()) copied = refused[k];
    }
    info_.placement += copied.empty() ? "; points page-locked in place"
                                      : "; points copied into page-locked memory (" + copied + ")";
  }

  // Runs fn(k) for the five sections, each on a thread of its own on the
  // key's device; what each one threw, if anything.
  std::array<std::exception_ptr, kSlots> OnSectionThreads(const std::string& what,
                                                          const std::function<void(int)>& fn) const {
    std::array<std::exception_ptr, kSlots> failed;
    std::vector<std::thread> threads;
    for (int k = 0; k < kSlots; ++k) {
      threads.emplace_back([&, k] {
        try {
          SetDevice(device_, what);  // a fresh thread would otherwise open device 0's context
          fn(k);
        } catch (...) {
          failed[k] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    return failed;
  }

  static void CopyInParallel(char* dst, const char* src, uint64_t bytes) {
    const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    const uint64_t piece = (bytes + threads - 1) / threads;
    std::vector<std::thread> copiers;
    for (unsigned t = 0; t < threads && t * piece < bytes; ++t) {
      copiers.emplace_back([=] { std::memcpy(dst + t * piece, src + t * piece, std::min(piece, bytes - t * piece)); });
    }
    for (auto& c : copiers) c.join();
  }

  // The point checks of a streamed key (KeyOptions::validate_key), one pass
  // of every section through the arena, a chunk at a time.
  void CheckStreamedPointsOnDevice() const {
    const char* names[kSlots] = {"h", "l", "a", "b_g1", "b_g2"};
    const uint64_t chunk_bytes = std::min<uint64_t>(arena_.bytes(), uint64_t{1} << 30);
    for (int k = 0; k < kSlots; ++k) {
      const uint64_t point_bytes = k == kB2 ? groth16::kG2AffineBytes : groth16::kG1AffineBytes;
      const uint64_t count = counts_[k];
      const uint64_t per_chunk = chunk_bytes / point_bytes;
      for (uint64_t begin = 0; begin < count; begin += per_chunk) {
        const uint64_t n = std::min(per_chunk, count - begin);
        const char* host = host_points_[k] + begin * point_bytes;
        CopyToDeviceAsync(arena_.get(), host, n * point_bytes, streams_->compute, "bellman parameters: point check upload");
        CheckBellmanPointsOnDevice(names[k], arena_.get(), host, n, k == kB2, begin, streams_->compute);
      }
    }
  }

  // Steps 1-3 (top of the file); the window sums end in staging_. Called
  // with mutex_ held.
  void RunDevice(const engine::AssignmentView& v, groth16::PhaseTimings& timings) const {
    SetDevice(device_, "selecting the device");
    const cudaStream_t st = streams_->compute;
    const uint64_t n = info_.domain_size, m = v.a.size();
    const auto t_upload = Clock::now();
    indices_.Update(v, info_, index_a_.as<uint32_t>(), index_b_.as<uint32_t>(), st);
    const uint64_t n_vars = uint64_t{info_.n_inputs} + info_.n_aux;
    const cudaStream_t cp = streams_->copy;
    auto record = [](const Event& e, cudaStream_t stream, const char* what) { e.Record(stream, what); };
    auto wait = [](cudaStream_t stream, const Event& e, const char* what) { WaitFor(stream, e, what); };

    // h (step 2). The arena's halves: the vector in hand and the scratch.
    // The copy stream uploads a, b and the assignment one after another
    // (each while the compute stream transforms the one before), then c once
    // a·b has freed its buffer.
    const auto t_ntt = Clock::now();
    Fr* acc = vector_.as<Fr>();
    Fr* other = arena_.as<Fr>();
    Fr* scratch = other + n;
    auto upload = [&](std::span<const engine::FrMont> part, Fr* dst) {
      CopyToDeviceAsync(dst, part.data(), m * sizeof(Fr), cp, "a/b/c upload");
      if (m < n) ZeroAsync(dst + m, (n - m) * sizeof(Fr), cp, "a/b/c upload");
    };
    auto upload_assignment = [&] {
      uint8_t* vars = vars_.as<uint8_t>();
      CopyToDeviceAsync(vars, v.input.data(), v.input.size() * 32, cp, "assignment upload");
      CopyToDeviceAsync(vars + v.input.size() * 32, v.aux.data(), v.aux.size() * 32, cp, "assignment upload");
      record(streams_->vars_up, cp, "assignment upload");
    };
    if (n > 1) {
      upload(v.a, acc);
      record(streams_->a_up, cp, "a upload");
      upload(v.b, other);
      record(streams_->b_up, cp, "b upload");
      upload_assignment();
      wait(st, streams_->a_up, "NTT of a");
      domain_.EnqueueToOddCoset(st, acc, scratch, 1, "NTT of a (to the coset)");
      wait(st, streams_->b_up, "NTT of b");
      domain_.EnqueueToOddCoset(st, other, scratch, 1, "NTT of b (to the coset)");
      MulInPlaceKernel<<<Blocks(n, 256), 256, 0, st>>>(n, reinterpret_cast<DFr*>(acc), reinterpret_cast<const DFr*>(other));
      ZK_CUDA_CHECK_LAUNCH("a·b");
      record(streams_->product, st, "a·b");
      wait(cp, streams_->product, "c upload");
      upload(v.c, other);
      record(streams_->c_up, cp, "c upload");
      wait(st, streams_->c_up, "NTT of c");
      domain_.EnqueueToOddCoset(st, other, scratch, 1, "NTT of c (to the coset)");
      SubScaleKernel<<<Blocks(n, 256), 256, 0, st>>>(n, reinterpret_cast<DFr*>(acc), reinterpret_cast<const DFr*>(other),
                                                     BitCopy<DFr>(z_inv_));
      ZK_CUDA_CHECK_LAUNCH("h quotient");
      domain_.EnqueueFromCoset(st, acc, scratch, 1, "NTT (from the coset)");
      CanonicalScalarKernel<<<Blocks(n - 1, 256), 256, 0, st>>>(n - 1, reinterpret_cast<const DFr*>(acc),
                                                                 vector_.as<uint32_t>());
      ZK_CUDA_CHECK_LAUNCH("h scalars");
    } else {
      upload_assignment();
    }
    // The assignment: the l scalars, gathered into a's and b's.
    wait(st, streams_->vars_up, "assignment to canonical");
    CanonicalInPlaceKernel<<<Blocks(n_vars, 256), 256, 0, st>>>(n_vars, vars_.as<uint32_t>());
    ZK_CUDA_CHECK_LAUNCH("assignment to canonical");
    timings.witness_transfer_s = SecondsSince(t_upload);
    // The arena turns into MSM buffers only after the NTTs.
    for (const Event& e : streams_->free) e.Record(st, "MSM chunks");
    timings.ntt_s = SecondsSince(t_ntt);

    // The MSMs (step 3).
    const auto t_msm = Clock::now();
    const uint32_t* scalars_h = vector_.as<uint32_t>();
    const uint32_t* scalars_l = vars_.as<uint32_t>() + 8 * size_t{info_.n_inputs};
    uint32_t* chunk_scalars = reinterpret_cast<uint32_t*>(arena_.as<char>() + msm_offset_scalars_);
    auto point_bytes = [](const ChunkJob& job) {
      return job.slot == kB2 ? groth16::kG2AffineBytes : groth16::kG1AffineBytes;
    };
    // Streamed: job u's points go into buffer u % point_buffers_ once the
    // job before it in that buffer is done. The uploads are enqueued ahead
    // of the jobs (the compact sort waits on the host for its item count,
    // so an upload enqueued with its own job would start only then).
    size_t next_upload = 0;
    auto enqueue_uploads_until = [&](size_t end) {
      for (; next_upload < std::min(end, jobs_.size()); ++next_upload) {
        const ChunkJob& job = jobs_[next_upload];
        const int buf = static_cast<int>(next_upload % point_buffers_);
        char* buffer = arena_.as<char>() + msm_offset_points_ + buf * points_bytes_;
        wait(cp, streams_->free[buf], "MSM chunk upload");
        CopyToDeviceAsync(buffer, host_points_[job.slot] + job.begin * point_bytes(job), job.count * point_bytes(job),
                          cp, "MSM chunk upload");
        record(streams_->uploaded[buf], cp, "MSM chunk upload");
      }
    };
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const ChunkJob& job = jobs_[j];
      record(streams_->marks[j], st, "MSM timing");
      const char* points = nullptr;
      if (layout_.points_resident) {
        points = device_points_[job.slot].as<char>() + job.begin * point_bytes(job);
      } else {
        enqueue_uploads_until(j + point_buffers_);
        const int buf = static_cast<int>(j % point_buffers_);
        wait(st, streams_->uploaded[buf], "MSM chunk");
        points = arena_.as<char>() + msm_offset_points_ + buf * points_bytes_;
      }
      const uint32_t* scalars = nullptr;
      switch (job.slot) {
        case kH:
          scalars = scalars_h + 8 * job.begin;
          break;
        case kL:
          scalars = scalars_l + 8 * job.begin;
          break;
        case kA:
        case kB1:
        case kB2: {
          const uint32_t* index = (job.slot == kA ? index_a_.as<uint32_t>() : index_b_.as<uint32_t>()) + job.begin;
          GatherScalarsKernel<<<Blocks(job.count, 256), 256, 0, st>>>(job.count, index, vars_.as<uint4>(),
                                                                      reinterpret_cast<uint4*>(chunk_scalars));
          ZK_CUDA_CHECK_LAUNCH("a/b scalars");
          scalars = chunk_scalars;
          break;
        }
        default:
          break;
      }
      char* sums = window_sums_.as<char>() + j * kSlotBytes;
      const std::string phase = "MSM chunk " + std::to_string(j);
      // h's scalars are uniformly random; the assignment's are mostly bits
      // and small values: only their non-zero digits are sorted.
      const msm::Plan plan = job.slot == kH ? job.plan
                                            : EnqueueMsmSortCompact(st, workspace_, job.plan, scalars, phase);
      if (job.slot == kH) EnqueueMsmSort(st, workspace_, plan, scalars, phase);
      if (job.slot == kB2) {
        EnqueueMsmBuckets<G2>(st, workspace_, workspace_, plan, reinterpret_cast<const A2*>(points),
                              reinterpret_cast<X2*>(sums), phase);
      } else {
        EnqueueMsmBuckets<G1>(st, workspace_, workspace_, plan, reinterpret_cast<const A1*>(points),
                              reinterpret_cast<X1*>(sums), phase);
      }
      if (!layout_.points_resident) record(streams_->free[j % point_buffers_], st, "MSM chunk");
    }
    record(streams_->marks[jobs_.size()], st, "MSM timing");
    CopyToHostAsync(staging_.get(), window_sums_.get(), jobs_.size() * kSlotBytes, st, "MSM result download");
    SynchronizeStream(st, "proof (device work)");
    timings.msm_s = SecondsSince(t_msm);
    // Each MSM's device time: the sum of its chunk jobs' spans on the
    // compute stream (a streamed job's span includes waiting for its points).
    for (double& seconds : timings.msm_device_s) seconds = 0;
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const float ms = streams_->marks[j + 1].MillisecondsSince(streams_->marks[j], "MSM timing");
      timings.msm_device_s[jobs_[j].slot] += ms / 1e3;
    }
  }

  int device_;
  engine::BellmanInfo info_;
  groth16::ChunkLayout layout_;
  groth16::Groth16HeaderPoints<C> header_;
  DeviceBuffer device_points_[kSlots];  // resident: each MSM's points (UploadPoints)
  // Streamed: each MSM's points (PinPoints): the parameters' vectors,
  // registered where they are (the registrations are declared after the
  // vectors, so they end first), or page-locked copies.
  bellman::PointVector<bellman::G1Affine> g1_points_[kB2];
  bellman::PointVector<bellman::G2Affine> g2_points_;
  HostRegistration registered_[kSlots];
  PinnedBuffer copies_[kSlots];
  const char* host_points_[kSlots] = {};
  uint64_t counts_[kSlots] = {};
  DeviceNttDomain<Fr> domain_;
  Fr z_inv_;
  DeviceBuffer vector_, vars_, index_a_, index_b_, arena_, window_sums_;
  uint64_t msm_offset_points_ = 0, msm_offset_scalars_ = 0, points_bytes_ = 0;  // in arena_, after the NTTs
  int point_buffers_ = 0;  // streamed: chunk point buffers in arena_ (kMinPointBuffers..kMaxPointBuffers)
  MsmWorkspace workspace_;  // carved from arena_
  std::vector<ChunkJob> jobs_;
  PinnedBuffer staging_;
  std::unique_ptr<StreamPair> streams_;
  mutable DensityIndexCache indices_;  // under mutex_
  mutable std::mutex mutex_;
};

}  // namespace

MsmNeeds ChunkWorkspaceNeeds(const engine::BellmanInfo& shape, uint64_t chunk_points) {
  // The distinct chunk sizes: whole chunks and each MSM's remainder.
  const uint64_t chunk = std::max<uint64_t>(chunk_points, 1);
  const uint64_t counts[kSlots] = {shape.domain_size > 0 ? shape.domain_size - 1u : 0u, shape.n_aux, shape.n_a,
                                   shape.n_b, shape.n_b};
  MsmNeeds needs;
  for (uint64_t count : counts) {
    if (count >= chunk) needs.Include(MsmNeedsFor(msm::MakePlan(chunk), sizeof(X2)));
    if (count % chunk) needs.Include(MsmNeedsFor(msm::MakePlan(count % chunk), sizeof(X2)));
  }
  return needs;
}

std::unique_ptr<groth16::AssignmentKey> MakeChunkedAssignmentKey(bellman::Parameters params,
                                                                 const groth16::KeyOptions& options,
                                                                 const groth16::DevicePlan& plan) {
  return std::make_unique<ChunkedAssignmentKey>(std::move(params), options, plan);
}

}  // namespace zkfleet::cuda
