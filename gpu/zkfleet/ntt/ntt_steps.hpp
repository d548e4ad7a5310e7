// Per-thread bodies of the GPU NTT kernels (host/device functions, so that
// tests can run the same steps on the CPU; ntt_device.cu adds the indexing).
//
// Transform: radix-2 decimation in time, natural order in and out, exactly
// the DFT ntt/cpu_ntt.hpp computes (spec §8.2): a bit-reversal permutation, then
// log n butterfly stages; stage j pairs elements h = 2^j apart with twiddle
// w_n^(i·n/2h). Stages are grouped into passes of up to kMaxPassStages; a
// pass loads 2^s elements that only interact with each other in those stages
// (stride 2^first_stage) into shared memory, runs its stages there, and
// writes them back: each pass is one read and one write of the data. The
// first pass gathers from bit-reversed positions of a separate source buffer
// (optionally multiplying by a per-element table, which fuses the coset step
// of the "H trick" into the forward transform).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "zkfleet/ff/hd.hpp"

namespace zkfleet::cuda::ntt {

inline constexpr int kMaxPassStages = 10;  // 1024 elements = 32 KiB of shared memory

// How log_n stages split into passes: as equal as possible, each <= kMax.
struct Passes {
  int count = 0;
  int first_stage[8] = {};
  int stages[8] = {};
};
inline Passes SplitPasses(int log_n) {
  Passes p;
  if (log_n <= 0) return p;
  p.count = (log_n + kMaxPassStages - 1) / kMaxPassStages;
  int begin = 0;
  for (int i = 0; i < p.count; ++i) {
    const int stages = (log_n - begin) / (p.count - i);
    p.first_stage[i] = begin;
    p.stages[i] = stages;
    begin += stages;
  }
  return p;
}

ZK_HD uint32_t BitReverse(uint32_t x, int bits) {
#if defined(__CUDA_ARCH__)
  return bits == 0 ? 0 : __brev(x) >> (32 - bits);
#else
  uint32_t r = 0;
  for (int i = 0; i < bits; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return r;
#endif
}

// Global index of local slot m of block `block` in a pass starting at stage
// `first` with `stages` stages: the low `first` bits come from the block, the
// next `stages` bits are m, the rest are the block's high bits.
ZK_HD uint32_t PassIndex(uint32_t block, uint32_t m, int first, int stages) {
  const uint32_t low = block & ((1u << first) - 1);
  const uint32_t high = (block >> first) << (first + stages);
  return high | (m << first) | low;
}

// Loads slot m of a block into shared[m].
// First pass: value = src[bitrev(idx)] (· scale[bitrev(idx)] if scale).
// Later passes: value = data[idx].
template <class Fr>
ZK_HD void LoadStep(uint32_t block, uint32_t m, int log_n, int first, int stages, bool gather, const Fr* src,
                    const Fr* scale, Fr* shared) {
  const uint32_t idx = PassIndex(block, m, first, stages);
  if (gather) {
    const uint32_t from = BitReverse(idx, log_n);
    Fr v = src[from];
    if (scale) v = v * scale[from];
    shared[m] = v;
  } else {
    shared[m] = src[idx];
  }
}

// Butterfly of thread `tid` (< 2^(stages-1)) in local stage t of the pass.
// Twiddles: tw[k] = w^k for k < n/2 (w or w^-1).
template <class Fr>
ZK_HD void ButterflyStep(uint32_t block, uint32_t tid, int t, int log_n, int first, const Fr* tw, Fr* shared) {
  const uint32_t half = 1u << t;
  const uint32_t m0 = ((tid >> t) << (t + 1)) | (tid & (half - 1));
  const uint32_t m1 = m0 + half;
  const uint32_t low = block & ((1u << first) - 1);
  const int stage = first + t;                                     // global stage: h = 2^stage
  const uint32_t pos = ((tid & (half - 1)) << first) | low;        // position within the 2h block, < h
  const Fr w = tw[static_cast<uint64_t>(pos) << (log_n - stage - 1)];
  const Fr u = shared[m0];
  const Fr v = shared[m1] * w;
  shared[m0] = u + v;
  shared[m1] = u - v;
}

template <class Fr>
ZK_HD void StoreStep(uint32_t block, uint32_t m, int first, int stages, const Fr* shared, Fr* data) {
  data[PassIndex(block, m, first, stages)] = shared[m];
}

// out[j] = scale · base^j for j in [64·t, 64·t + 64) ∩ [0, n).
template <class Fr>
ZK_HD void PowersStep(uint64_t t, uint64_t n, Fr base, Fr scale, Fr* out) {
  const uint64_t begin = 64 * t;
  if (begin >= n) return;
  uint64_t e[1] = {begin};
  Fr x = scale * base.pow(e, 1);
  const uint64_t end = begin + 64 < n ? begin + 64 : n;
  for (uint64_t j = begin; j < end; ++j) {
    out[j] = x;
    x = x * base;
  }
}

}  // namespace zkfleet::cuda::ntt
