// The GPU MSM's plan and the per-thread bodies of its kernels, written as
// plain host/device functions so that tests can run the exact same steps on
// the CPU (tests/gpu/cuda/steps_test.cpp) and the kernels in msm_kernels.cuh
// only add the thread indexing.
//
// Algorithm (Pippenger with signed windows), for n points and c-bit windows:
//   0. Tables (optional, for resident bases): `copies` copies of the bases,
//      copy j = 2^(c·groups·j)·P, built once (TableStep). Window w = j·groups
//      + k then reads copy j and adds into bucket set k, so the windows share
//      `groups` bucket sets instead of one set each: fewer buckets to reduce,
//      hence wider windows and fewer windows (BN254 2^22: 13 windows of 20
//      bits instead of 16 of 16). Without tables, copies = 1 and groups =
//      windows.
//   1. Digits: every scalar is recoded into `windows` signed digits in
//      (-2^(c-1), 2^(c-1)]. Each non-zero digit d of window w = j·groups + k
//      becomes a work item key = k·B + |d|-1 (B = 2^(c-1) buckets per set),
//      value = j·stride + point index (the base in copy j) with the sign in
//      the top bit. Zero digits get the sentinel key (groups·B), so zero
//      scalars cost nothing and a scalar 1 costs one item.
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
//   4. Bucket reduction: per bucket set, sum_b (b+1)·bucket[b], in two
//      levels of running sums. Level 1: `segments` slices of len buckets in
//      parallel; slice s gives T_s = sum_l (l+1)·bucket[s·len + l] and R_s =
//      sum_l bucket[s·len + l], so that the set's sum is sum_s T_s +
//      len·sum_s s·R_s. Level 2: sum_s s·R_s, the same reduction over the R_s
//      as buckets (`run_segments` slices, each offset applied with a small
//      scalar multiplication), times len. The two levels cost fewer
//      additions than one (a small multiplication per level-1 slice) when
//      level 2 has several runs per slice.
//   5. Per set, `fold_blocks` blocks each sum a share of the slices (a
//      block-level tree), and the host combines them: the sums of set k,
//      weighted 2^(c·k) (cheap on the CPU, slow on one GPU thread).
//
// Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>

#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/batch_inverse.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::cuda::msm {

inline constexpr uint32_t kNegFlag = 0x80000000u;  // in an item's value: subtract the point
inline constexpr uint32_t kLaterChunk = 8;          // items per thread after level 0
inline constexpr uint32_t kReduceThreads = 256;     // threads of the per-window tree reduction
inline constexpr int kMaxCopies = 16;               // table copies of the bases, at most
inline constexpr int kMaxSums = 128;                // window sums an MSM hands the host, at most

// The shape of an MSM: window width, how many table copies of the bases it
// reads and how many bucket sets it keeps. Tables are built for one shape;
// every MSM over them uses it.
struct Shape {
  int c = 0;       // window bits
  int copies = 1;  // table copies of the bases (1: no tables)
  int groups = 0;  // bucket sets, ceil(windows / copies)
};

struct Plan {
  uint64_t n = 0;           // points (and scalars)
  int c = 0;                // window bits
  int windows = 0;          // ceil(256 / c) (scalars are < 2^255)
  int copies = 1;           // table copies of the bases the items index
  int groups = 0;           // bucket sets; window w = j·groups + k reads copy j, adds into set k
  uint64_t stride = 0;      // bases between one copy and the next (>= n)
  uint32_t buckets = 0;     // per set, 2^(c-1)
  uint32_t sentinel = 0;    // groups · buckets: the key of "no work"
  int key_bits = 0;         // bits the sort looks at (enough for the sentinel)
  uint64_t items = 0;       // windows · n work-item slots
  uint32_t chunk0 = 0;      // items per thread at level 0
  uint64_t threads0 = 0;    // ceil(items / chunk0)
  int later_levels = 0;     // spill-reduction levels after level 0
  uint32_t segments = 0;    // bucket-reduction slices per set (power of two), level 1
  uint32_t run_segments = 0;  // level-2 slices per set (power of two, divides segments)
  uint32_t slice_stride = 0;  // per set: segments level-1 sums, then run_segments level-2 sums
  uint32_t fold_blocks = 0; // blocks that fold one set's slices
  int sums = 0;             // groups · fold_blocks window sums for the host (<= kMaxSums)
};

inline int WindowsFor(int c) { return (256 + c - 1) / c; }

// The shape for n points with up to max_copies table copies: the window
// width that minimises windows·n + groups·3·B, the accumulation work plus
// the bucket reduction (a bucket costs about three mixed additions' worth).
// Widths up to 21 bits without tables, 24 with (the bucket sets, now few,
// may be larger). force_c > 0 fixes the width. Measured on an H100
// (bench_gpu --msm-widths, docs/benchmarks-gpu.md): the model's choice was
// the fastest width, or within 1 %, at 2^22 (16 bits), 2^23 (19) and 2^24
// (20: 7.5 % faster than 16 on both curves); wider, the bucket reduction
// doubles with each bit.
inline Shape ChooseShape(uint64_t n, int max_copies = 1, int force_c = 0) {
  max_copies = std::max(1, std::min(max_copies, kMaxCopies));
  auto shape_for = [max_copies](int c) {
    const int windows = WindowsFor(c);
    Shape s;
    s.c = c;
    s.groups = (windows + max_copies - 1) / max_copies;
    s.copies = (windows + s.groups - 1) / s.groups;
    return s;
  };
  if (force_c > 0) return shape_for(force_c);
  const int max_c = max_copies > 1 ? 24 : 21;
  Shape best = shape_for(2);
  double best_cost = 1e300;
  for (int c = 2; c <= max_c; ++c) {
    const Shape s = shape_for(c);
    const double cost = static_cast<double>(WindowsFor(c)) * static_cast<double>(n) +
                        3.0 * s.groups * static_cast<double>(1u << (c - 1));
    if (cost < best_cost) {
      best_cost = cost;
      best = s;
    }
  }
  return best;
}

// Window width for n points without tables.
inline int ChooseWindowBits(uint64_t n) { return ChooseShape(n).c; }

// The level-0 work of `items` sorted items: the item slots of every window
// (DigitsStep), or only the non-zero digits (CompactDigitsStep).
inline void SetItems(Plan& p, uint64_t items) {
  p.items = items;
  // About 2^18 level-0 threads: enough to fill an H200 several times over,
  // with chunks long enough that few runs are cut at chunk ends.
  p.chunk0 = static_cast<uint32_t>(std::max<uint64_t>(4, (p.items + (1u << 18) - 1) >> 18));
  p.threads0 = std::max<uint64_t>(1, (p.items + p.chunk0 - 1) / p.chunk0);
  p.later_levels = 0;
  for (uint64_t threads = p.threads0; threads > 1; ++p.later_levels) {
    threads = (2 * threads + kLaterChunk - 1) / kLaterChunk;
  }
}

// The plan of an MSM of n points in `shape`, over bases laid out as
// shape.copies copies `stride` points apart (stride >= n; the tables' point
// count).
inline Plan MakePlan(uint64_t n, const Shape& shape, uint64_t stride) {
  Plan p;
  p.n = n;
  p.c = shape.c;
  p.windows = WindowsFor(p.c);
  p.copies = shape.copies;
  p.groups = shape.groups;
  p.stride = stride;
  p.buckets = 1u << (p.c - 1);
  p.sentinel = static_cast<uint32_t>(p.groups) * p.buckets;
  p.key_bits = 0;
  while ((uint64_t{1} << p.key_bits) <= p.sentinel) ++p.key_bits;
  SetItems(p, static_cast<uint64_t>(p.windows) * n);
  // Slices of at least 8 buckets, and about 2^16 slice threads in all.
  uint32_t segments = 1;
  while (segments * 2 <= p.buckets / 8 && segments * 2 * static_cast<uint64_t>(p.groups) <= (1u << 16)) segments *= 2;
  p.segments = segments;
  // Level 2: while level 1 has fewer threads than the GPU holds, one
  // thread per run (the depth of a slice's sum is what costs); with more,
  // up to 8 runs per thread, for about 2^13 threads (the work is what costs).
  const uint64_t level1_threads = static_cast<uint64_t>(p.groups) * segments;
  uint32_t len2 = 1;
  while (len2 < 8 && len2 * 2 <= segments && level1_threads / (len2 * 2) >= (1u << 13)) len2 *= 2;
  p.run_segments = segments / len2;
  p.slice_stride = p.segments + p.run_segments;
  // Each fold thread sums about 8 slices; never more than kMaxSums sums.
  uint32_t fold = 1;
  while (fold * 2 * kReduceThreads * 8 <= p.slice_stride && static_cast<int>(fold * 2) * p.groups <= kMaxSums) fold *= 2;
  p.fold_blocks = fold;
  p.sums = p.groups * static_cast<int>(fold);
  return p;
}

// Without tables: the bases are the n points themselves.
inline Plan MakePlan(uint64_t n, int force_c = 0) { return MakePlan(n, ChooseShape(n, 1, force_c), n); }

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
// recoded into signed c-bit digits: emit(w, magnitude, negative) for every
// window w, low to high (magnitude 0 for a zero digit).
template <class Emit>
ZK_HD void ForEachDigit(uint64_t i, const Plan& p, const uint32_t* scalars, const Emit& emit) {
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
      // s[8] = 0 pads the top.
      const uint64_t pair = (static_cast<uint64_t>(s[word + 1]) << 32) | s[word];
      raw = static_cast<uint32_t>(pair >> off) & mask;
    }
    const uint32_t v = raw + carry;
    if (v > half) {
      emit(w, full - v, true);
      carry = 1;
    } else {
      emit(w, v, false);
      carry = 0;
    }
  }
}

// A non-zero digit of window w as a work item (see the top).
ZK_HD void DigitItem(const Plan& p, uint64_t i, int w, uint32_t magnitude, bool negative, uint32_t* key,
                     uint32_t* value) {
  const uint32_t copy = static_cast<uint32_t>(w / p.groups), set = static_cast<uint32_t>(w % p.groups);
  *key = set * p.buckets + magnitude - 1;
  *value = static_cast<uint32_t>(copy * p.stride + i) | (negative ? kNegFlag : 0u);
}

// -> one item slot per window at index w·n + i (zero digits: the sentinel).
// c <= 24 bits span at most two words.
ZK_HD void DigitsStep(uint64_t i, const Plan& p, const uint32_t* scalars, uint32_t* keys, uint32_t* values) {
  ForEachDigit(i, p, scalars, [&](int w, uint32_t magnitude, bool negative) {
    const uint64_t slot = static_cast<uint64_t>(w) * p.n + i;
    if (magnitude == 0) {
      keys[slot] = p.sentinel;
      values[slot] = 0;
    } else {
      DigitItem(p, i, w, magnitude, negative, &keys[slot], &values[slot]);
    }
  });
}

// The compact form, for scalars with many zero digits (the bits and small
// values of an assignment: a 0/1 scalar makes one item, not `windows`
// slots): CountDigitsStep gives scalar i's number of non-zero digits; after
// an exclusive prefix sum over them, CompactDigitsStep writes those items at
// [offset, offset + count), windows in order. The sort then sees only real
// work; the accumulation is the same.
ZK_HD uint32_t CountDigitsStep(uint64_t i, const Plan& p, const uint32_t* scalars) {
  uint32_t count = 0;
  ForEachDigit(i, p, scalars, [&](int, uint32_t magnitude, bool) { count += magnitude != 0; });
  return count;
}
ZK_HD void CompactDigitsStep(uint64_t i, const Plan& p, const uint32_t* scalars, uint64_t offset, uint32_t* keys,
                             uint32_t* values) {
  ForEachDigit(i, p, scalars, [&](int w, uint32_t magnitude, bool negative) {
    if (magnitude != 0) {
      DigitItem(p, i, w, magnitude, negative, &keys[offset], &values[offset]);
      ++offset;
    }
  });
}

// ---- step 3: bucket accumulation (one level) ----------------------------------

// Thread t of a level: sums items [t·chunk, (t+1)·chunk) of a key-sorted list
// of `count` entries, finishing the runs that lie inside its chunk and
// spilling the open ones to spill_keys/spill_vals[2t], [2t+1].
// add_item(acc, j) adds entry j's contribution to acc.
//
// A finished run is stored, not added, into its bucket: the list is sorted,
// so a run that starts and ends inside one chunk holds every entry of its
// key, and the entries of a run that crosses a chunk end all go to the spill
// list, where the same holds level after level. So a bucket receives at most
// one sum that is not the identity (identity sums are never written, and
// InitBuckets set every bucket to the identity). A store instead of an
// addition keeps the rare flush short, which matters because the threads of
// a warp flush at different items and wait for each other.
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
          buckets[cur] = acc;  // the bucket's only write (see above)
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
        buckets[cur] = acc;
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

// The running sums over x[0..len), from the top: total = sum (l+1)·x[l],
// running = sum x[l].
template <class Xyzz>
ZK_HD void RunningSums(const Xyzz* x, uint32_t len, Xyzz& running, Xyzz& total) {
  running = Xyzz::infinity();
  total = Xyzz::infinity();
  for (uint32_t l = len; l-- > 0;) {
    running = curve::xyzz_add(running, x[l]);
    total = curve::xyzz_add(total, running);
  }
}

// Level 1, slice `seg` of bucket set k (thread k·segments + seg): T_s into
// slice_sums[k·slice_stride + seg], R_s into runs[k·segments + seg - 1]
// (level 2's buckets: R_s has weight s, so R_0 is dropped and the set's last
// run slot is the identity).
template <class Cfg>
ZK_HD void BucketSliceStep(uint64_t thread, const Plan& p, const curve::Xyzz<Cfg>* buckets,
                           curve::Xyzz<Cfg>* slice_sums, curve::Xyzz<Cfg>* runs) {
  using Xyzz = curve::Xyzz<Cfg>;
  const uint64_t k = thread / p.segments;  // the set
  const uint32_t seg = static_cast<uint32_t>(thread % p.segments), len = p.buckets / p.segments;
  Xyzz running, total;
  RunningSums(buckets + k * p.buckets + static_cast<uint64_t>(seg) * len, len, running, total);
  slice_sums[k * p.slice_stride + seg] = total;
  runs[k * p.segments + (seg > 0 ? seg - 1 : p.segments - 1)] = seg > 0 ? running : Xyzz::infinity();
}

// Level 2, slice `seg` of set k's runs (thread k·run_segments + seg): len·
// sum_j (j+1)·runs[k·segments + j] over its share j, the (j+1) = s weights
// of level 1, into slice_sums[k·slice_stride + segments + seg].
template <class Cfg>
ZK_HD void RunSliceStep(uint64_t thread, const Plan& p, const curve::Xyzz<Cfg>* runs, curve::Xyzz<Cfg>* slice_sums) {
  using Xyzz = curve::Xyzz<Cfg>;
  const uint64_t k = thread / p.run_segments;  // the set
  const uint32_t seg = static_cast<uint32_t>(thread % p.run_segments), len2 = p.segments / p.run_segments;
  Xyzz running, total;
  RunningSums(runs + k * p.segments + static_cast<uint64_t>(seg) * len2, len2, running, total);
  Xyzz out = curve::xyzz_add(total, MulSmall(running, seg * len2));
  for (uint32_t len = p.buckets / p.segments; len > 1 && !out.is_infinity(); len /= 2) out = curve::xyzz_dbl(out);
  slice_sums[k * p.slice_stride + p.segments + seg] = out;
}

// Tree reduction of the slices, block b = k·fold_blocks + f of
// kReduceThreads threads summing its share of set k's slices into sum b.
// First each thread folds the slices j ≡ f·kReduceThreads + tid (mod
// fold_blocks·kReduceThreads) into partial[b·kReduceThreads + tid]; then
// halving rounds (barrier between).
template <class Cfg>
ZK_HD void WindowFoldStep(uint32_t b, uint32_t tid, const Plan& p, const curve::Xyzz<Cfg>* slice_sums,
                          curve::Xyzz<Cfg>* partial) {
  const uint32_t k = b / p.fold_blocks, f = b % p.fold_blocks;
  curve::Xyzz<Cfg> acc = curve::Xyzz<Cfg>::infinity();
  for (uint32_t j = f * kReduceThreads + tid; j < p.slice_stride; j += p.fold_blocks * kReduceThreads) {
    acc = curve::xyzz_add(acc, slice_sums[static_cast<uint64_t>(k) * p.slice_stride + j]);
  }
  partial[static_cast<uint64_t>(b) * kReduceThreads + tid] = acc;
}
template <class Cfg>
ZK_HD void WindowTreeStep(uint32_t b, uint32_t tid, uint32_t half, curve::Xyzz<Cfg>* partial) {
  if (tid < half) {
    curve::Xyzz<Cfg>* base = partial + static_cast<uint64_t>(b) * kReduceThreads;
    base[tid] = curve::xyzz_add(base[tid], base[tid + half]);
  }
}

// ---- step 5 (host): combine the sets -------------------------------------------

// window_sums[b] for b < sums (host types, same bytes as the device's)
// -> sum_k 2^(c·k)·(sum of set k's fold_blocks sums).
template <class HostCfg>
curve::Jacobian<HostCfg> CombineWindows(const curve::Xyzz<HostCfg>* window_sums, const Plan& p) {
  curve::Xyzz<HostCfg> acc = curve::Xyzz<HostCfg>::infinity();
  for (int k = p.groups - 1; k >= 0; --k) {
    if (!acc.is_infinity()) {
      for (int bit = 0; bit < p.c; ++bit) acc = curve::xyzz_dbl(acc);
    }
    for (uint32_t f = 0; f < p.fold_blocks; ++f) acc = curve::xyzz_add(acc, window_sums[k * p.fold_blocks + f]);
  }
  return curve::to_jacobian(acc);
}

// ---- step 0: tables ------------------------------------------------------------

// Base i of a table of p.copies copies, p.stride points apart, whose copy 0
// holds the points: writes copy j = 2^(c·groups·j)·(copy 0) for j >= 1, in
// affine form (infinity as all-zero), with one field inversion per base
// (ff::BatchInverse over its copies).
template <class Cfg>
ZK_HD void TableStep(uint64_t i, const Plan& p, curve::Affine<Cfg>* bases) {
  using F = typename Cfg::Field;
  using Affine = curve::Affine<Cfg>;
  const Affine point = bases[i];
  if (point.is_infinity()) {
    for (int j = 1; j < p.copies; ++j) bases[j * p.stride + i] = Affine::infinity();
    return;
  }
  F zz[kMaxCopies], zzz[kMaxCopies], inv[kMaxCopies], scratch[kMaxCopies];
  curve::Xyzz<Cfg> acc = curve::Xyzz<Cfg>::from_affine(point);
  for (int j = 1; j < p.copies; ++j) {
    for (int d = 0; d < p.c * p.groups; ++d) acc = curve::xyzz_dbl(acc);
    bases[j * p.stride + i] = Affine{acc.x, acc.y};  // not yet divided by ZZ, ZZZ
    zz[j] = acc.zz;
    zzz[j] = acc.zzz;
    // A point of order dividing 2^(c·groups·j) (none in a prime-order
    // group) gives infinity, ZZ = ZZZ = 0: the inversion leaves it at 0.
    inv[j] = acc.zz * acc.zzz;
  }
  ff::BatchInverse(inv + 1, scratch, static_cast<size_t>(p.copies - 1));  // 1 / (ZZ_j·ZZZ_j)
  for (int j = 1; j < p.copies; ++j) {
    const uint64_t at = j * p.stride + i;
    if (zz[j].is_zero()) {
      bases[at] = Affine::infinity();
      continue;
    }
    const Affine raw = bases[at];
    bases[at] = Affine{raw.x * (inv[j] * zzz[j]), raw.y * (inv[j] * zz[j])};  // X/ZZ, Y/ZZZ
  }
}

}  // namespace zkfleet::cuda::msm
