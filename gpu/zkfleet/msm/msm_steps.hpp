// The GPU MSM's plan and the per-thread bodies of its kernels, written as
// plain host/device functions so that tests can run the exact same steps on
// the CPU (tests/gpu/cuda/steps_test.cpp) and the kernels in msm_kernels.cuh
// only add the thread indexing.
//
// Algorithm (Pippenger with signed windows), for n points and c-bit windows:
//   1. Digits: every scalar is recoded into `windows` signed digits in
//      (-2^(c-1), 2^(c-1)]. Each non-zero digit d of window w becomes a work
//      item key = w·B + |d|-1 (B = 2^(c-1) buckets per window), value = point
//      index with the sign in the top bit. Zero digits get the sentinel key
//      (windows·B), so zero scalars cost nothing and a scalar 1 costs one item.
//   2. Sort items by key (cub radix sort); sentinels sort to the end.
//   3. Bucket accumulation as a segmented reduction that is balanced however
//      skewed the buckets are: thread t sums a fixed chunk of the sorted list.
//      A run of equal keys that lies entirely in the chunk is a finished bucket
//      and is written to it; the run at each end of the chunk that continues
//      into the neighbouring chunk is "open" and goes to a spill list (two
//      slots per thread, still sorted by key). The spill list is reduced the
//      same way, level after level, until one thread holds all of it.
//      Unused spill slots hold the key of their neighbour and the identity, so
//      the list stays sorted; sums that are the identity are not written.
//   4. Bucket reduction: per window, sum_b (b+1)·bucket[b] by running sums
//      over `segments` slices of buckets in parallel, each slice's offset
//      applied with a small scalar multiplication.
//   5. Per window, the slices are summed (a block-level tree), and the host
//      combines the windows: acc = acc·2^c + window[w] (cheap on the CPU, slow
//      on one GPU thread).
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>

#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::cuda::msm {

inline constexpr uint32_t kNegFlag = 0x80000000u;  // in an item's value: subtract the point
inline constexpr uint32_t kLaterChunk = 8;          // items per thread after level 0
inline constexpr uint32_t kReduceThreads = 256;     // threads of the per-window tree reduction

struct Plan {
  uint64_t n = 0;           // points (and scalars)
  int c = 0;                // window bits
  int windows = 0;          // ceil(256 / c) (scalars are < 2^255)
  uint32_t buckets = 0;     // per window, 2^(c-1)
  uint32_t sentinel = 0;    // windows · buckets: the key of "no work"
  int key_bits = 0;         // bits the sort looks at (enough for the sentinel)
  uint64_t items = 0;       // windows · n work-item slots
  uint32_t chunk0 = 0;      // items per thread at level 0
  uint64_t threads0 = 0;    // ceil(items / chunk0)
  int later_levels = 0;     // spill-reduction levels after level 0
  uint32_t segments = 0;    // bucket-reduction slices per window (power of two)
};

// Window width for n points on the GPU: minimises windows·(n + 3·B), the
// accumulation work plus the bucket reduction (a bucket costs about three
// mixed additions' worth). Capped at 16 bits.
inline int ChooseWindowBits(uint64_t n) {
  int best = 2;
  double best_cost = 1e300;
  for (int c = 2; c <= 16; ++c) {
    const double windows = (256 + c - 1) / c;
    const double cost = windows * (static_cast<double>(n) + 3.0 * static_cast<double>(1u << (c - 1)));
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
    }
  }
  return best;
}

inline Plan MakePlan(uint64_t n, int force_c = 0) {
  Plan p;
  p.n = n;
  p.c = force_c > 0 ? force_c : ChooseWindowBits(n);
  p.windows = (256 + p.c - 1) / p.c;
  p.buckets = 1u << (p.c - 1);
  p.sentinel = static_cast<uint32_t>(p.windows) * p.buckets;
  p.key_bits = 0;
  while ((uint64_t{1} << p.key_bits) <= p.sentinel) ++p.key_bits;
  p.items = static_cast<uint64_t>(p.windows) * n;
  // About 2^18 level-0 threads: enough to fill an H200 several times over,
  // with chunks long enough that few runs are cut at chunk ends.
  p.chunk0 = static_cast<uint32_t>(std::max<uint64_t>(4, (p.items + (1u << 18) - 1) >> 18));
  p.threads0 = std::max<uint64_t>(1, (p.items + p.chunk0 - 1) / p.chunk0);
  p.later_levels = 0;
  for (uint64_t threads = p.threads0; threads > 1; ++p.later_levels) {
    threads = (2 * threads + kLaterChunk - 1) / kLaterChunk;
  }
  // Slices of at least 8 buckets, and about 2^16 slice threads in all.
  uint32_t segments = 1;
  while (segments * 2 <= p.buckets / 8 && segments * 2 * static_cast<uint64_t>(p.windows) <= (1u << 16)) segments *= 2;
  p.segments = segments;
  return p;
}

// Number of spill entries level `level` (1-based) reads, and its threads.
inline uint64_t LevelInputCount(const Plan& p, int level) {
  uint64_t threads = p.threads0;
  for (int l = 1; l < level; ++l) threads = (2 * threads + kLaterChunk - 1) / kLaterChunk;
  return 2 * threads;
}
inline uint64_t LevelThreads(const Plan& p, int level) {
  return (LevelInputCount(p, level) + kLaterChunk - 1) / kLaterChunk;
}

// ---- step 1: digits ---------------------------------------------------------

// Scalar i (8 little-endian 32-bit words at scalars + 8·i, canonical < 2^255)
// -> one item slot per window at index w·n + i.
ZK_HD void DigitsStep(uint64_t i, const Plan& p, const uint32_t* scalars, uint32_t* keys, uint32_t* values) {
  uint32_t s[9];
  ZK_UNROLL for (int k = 0; k < 8; ++k) s[k] = scalars[8 * i + k];
  s[8] = 0;
  const uint32_t half = 1u << (p.c - 1), full = 1u << p.c, mask = full - 1;
  uint32_t carry = 0;
  for (int w = 0; w < p.windows; ++w) {
    const int bit = w * p.c;
    const int word = bit >> 5, off = bit & 31;
    uint32_t raw = 0;
    if (word < 8) {
      // c <= 16 bits span at most two words; s[8] = 0 pads the top.
      const uint64_t pair = (static_cast<uint64_t>(s[word + 1]) << 32) | s[word];
      raw = static_cast<uint32_t>(pair >> off) & mask;
    }
    const uint32_t v = raw + carry;
    const uint64_t slot = static_cast<uint64_t>(w) * p.n + i;
    uint32_t magnitude;
    bool negative;
    if (v > half) {
      magnitude = full - v;
      negative = true;
      carry = 1;
    } else {
      magnitude = v;
      negative = false;
      carry = 0;
    }
    if (magnitude == 0) {
      keys[slot] = p.sentinel;
      values[slot] = 0;
    } else {
      keys[slot] = static_cast<uint32_t>(w) * p.buckets + magnitude - 1;
      values[slot] = static_cast<uint32_t>(i) | (negative ? kNegFlag : 0u);
    }
  }
}

// ---- step 3: bucket accumulation (one level) ----------------------------------

// Thread t of a level: sums items [t·chunk, (t+1)·chunk) of a key-sorted list
// of `count` entries, finishing the runs that lie inside its chunk and
// spilling the open ones to spill_keys/spill_vals[2t], [2t+1].
// add_item(acc, j) adds entry j's contribution to acc.
template <class Xyzz, class AddItem>
ZK_HD void ReduceRunsStep(uint64_t t, uint64_t count, uint64_t chunk, const uint32_t* keys, uint32_t sentinel,
                          const AddItem& add_item, Xyzz* buckets, uint32_t* spill_keys, Xyzz* spill_vals) {
  const uint64_t lo = t * chunk;
  const uint64_t hi = lo + chunk < count ? lo + chunk : count;
  uint32_t first_key = sentinel, last_key = sentinel;
  // Spill values are stored as soon as they are known (fewer live registers).
  bool slot0_written = false, slot1_written = false;
  if (lo < count && keys[lo] != sentinel) {
    uint32_t cur = keys[lo];
    first_key = cur;
    const bool open_before = lo > 0 && keys[lo - 1] == cur;
    bool first_run = true;
    Xyzz acc = Xyzz::infinity();
    for (uint64_t j = lo; j < hi; ++j) {
      const uint32_t k = keys[j];
      if (k != cur) {
        // Run `cur` ended inside the chunk.
        if (first_run && open_before) {
          spill_vals[2 * t] = acc;
          slot0_written = true;
        } else if (!acc.is_infinity()) {
          buckets[cur] = curve::xyzz_add(buckets[cur], acc);
        }
        first_run = false;
        cur = k;
        acc = Xyzz::infinity();
        if (k == sentinel) break;
      }
      add_item(acc, j);
    }
    if (cur != sentinel) {
      // Run `cur` reaches the end of the chunk.
      last_key = cur;
      const bool open_after = hi < count && keys[hi] == cur;
      if (first_run && open_before) {
        spill_vals[2 * t] = acc;  // continues from the left (and maybe to the right): one spill entry
        slot0_written = true;
      } else if (open_after) {
        spill_vals[2 * t + 1] = acc;
        slot1_written = true;
      } else if (!acc.is_infinity()) {
        buckets[cur] = curve::xyzz_add(buckets[cur], acc);
      }
    }
  }
  spill_keys[2 * t] = first_key;
  spill_keys[2 * t + 1] = last_key;
  if (!slot0_written) spill_vals[2 * t] = Xyzz::infinity();
  if (!slot1_written) spill_vals[2 * t + 1] = Xyzz::infinity();
}

// Level 0: entries are (key, point index | sign) items over affine bases.
// A base at infinity (all-zero) adds nothing: an MSM over a suffix of the
// sorted scalars gives the prefix's bases at infinity.
template <class Cfg>
struct AddSignedBase {
  const curve::Affine<Cfg>* bases;
  const uint32_t* values;
  ZK_HD void operator()(curve::Xyzz<Cfg>& acc, uint64_t j) const {
    const uint32_t v = values[j];
    curve::Affine<Cfg> q = bases[v & ~kNegFlag];
    if (v & kNegFlag) q.y = q.y.neg();
    acc = curve::xyzz_add_mixed(acc, q);
  }
};

// Later levels: entries are partial sums.
template <class Cfg>
struct AddPartial {
  const curve::Xyzz<Cfg>* partials;
  ZK_HD void operator()(curve::Xyzz<Cfg>& acc, uint64_t j) const { acc = curve::xyzz_add(acc, partials[j]); }
};

// ---- step 4: bucket reduction -------------------------------------------------

// k·P for a small k (< 2^32) by double-and-add.
template <class Cfg>
ZK_HD curve::Xyzz<Cfg> MulSmall(const curve::Xyzz<Cfg>& point, uint32_t k) {
  curve::Xyzz<Cfg> acc = curve::Xyzz<Cfg>::infinity();
  for (int bit = 31; bit >= 0; --bit) {
    if (!acc.is_infinity()) acc = curve::xyzz_dbl(acc);
    if ((k >> bit) & 1) acc = curve::xyzz_add(acc, point);
  }
  return acc;
}

// Slice `seg` of window w: sum over its buckets b of (b+1)·bucket[b].
// Thread index = w·segments + seg.
template <class Cfg>
ZK_HD void BucketSliceStep(uint64_t thread, const Plan& p, const curve::Xyzz<Cfg>* buckets,
                           curve::Xyzz<Cfg>* slice_sums) {
  using Xyzz = curve::Xyzz<Cfg>;
  const uint32_t w = static_cast<uint32_t>(thread / p.segments);
  const uint32_t seg = static_cast<uint32_t>(thread % p.segments);
  const uint32_t len = p.buckets / p.segments;
  const uint64_t first = static_cast<uint64_t>(w) * p.buckets + static_cast<uint64_t>(seg) * len;
  Xyzz running = Xyzz::infinity(), total = Xyzz::infinity();
  for (uint32_t l = len; l-- > 0;) {
    running = curve::xyzz_add(running, buckets[first + l]);
    total = curve::xyzz_add(total, running);
  }
  // total = sum (l+1)·bucket[first+l]; bucket b = seg·len + l holds digit b+1.
  slice_sums[thread] = curve::xyzz_add(total, MulSmall(running, seg * len));
}

// Per-window tree reduction of the slices, block w of kReduceThreads threads.
// First each thread folds the slices j ≡ tid (mod kReduceThreads) into
// partial[w·kReduceThreads + tid]; then halving rounds (barrier between).
template <class Cfg>
ZK_HD void WindowFoldStep(uint32_t w, uint32_t tid, const Plan& p, const curve::Xyzz<Cfg>* slice_sums,
                          curve::Xyzz<Cfg>* partial) {
  curve::Xyzz<Cfg> acc = curve::Xyzz<Cfg>::infinity();
  for (uint32_t j = tid; j < p.segments; j += kReduceThreads) {
    acc = curve::xyzz_add(acc, slice_sums[static_cast<uint64_t>(w) * p.segments + j]);
  }
  partial[static_cast<uint64_t>(w) * kReduceThreads + tid] = acc;
}
template <class Cfg>
ZK_HD void WindowTreeStep(uint32_t w, uint32_t tid, uint32_t half, curve::Xyzz<Cfg>* partial) {
  if (tid < half) {
    curve::Xyzz<Cfg>* base = partial + static_cast<uint64_t>(w) * kReduceThreads;
    base[tid] = curve::xyzz_add(base[tid], base[tid + half]);
  }
}

// ---- step 5 (host): combine windows ----------------------------------------

// window_sums[w] for w < windows (host types, same bytes as the device's)
// -> sum_w 2^(c·w)·window_sums[w].
template <class HostCfg>
curve::Jacobian<HostCfg> CombineWindows(const curve::Xyzz<HostCfg>* window_sums, const Plan& p) {
  curve::Xyzz<HostCfg> acc = curve::Xyzz<HostCfg>::infinity();
  for (int w = p.windows - 1; w >= 0; --w) {
    if (!acc.is_infinity()) {
      for (int k = 0; k < p.c; ++k) acc = curve::xyzz_dbl(acc);
    }
    acc = curve::xyzz_add(acc, window_sums[w]);
  }
  return curve::to_jacobian(acc);
}

}  // namespace zkfleet::cuda::msm
