// Multi-threaded Pippenger multi-scalar multiplication on the CPU:
//   result = sum_i scalars[i] * bases[i]
// for G1 or G2 of either curve (Cfg is a curve config from zkfleet/curve).
//
// Scalars are canonical little-endian integers of 32 bytes (the scalar field
// of both curves has < 256 bits), read straight from .wtns data or from the
// H vector. Circom witnesses are mostly 0 and 1: zero scalars (and infinity
// bases) are skipped, one-valued scalars are summed directly (affine
// additions with batched inversions, OnesSum), and only the rest goes
// through the bucket method with signed windows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/batch_inverse.hpp"

namespace zkfleet::cpu {

namespace msm_detail {

inline void LoadScalar(const uint8_t* p, uint64_t out[4]) { std::memcpy(out, p, 32); }

// How the buckets of one window are filled: affine additions with a batched
// inversion (cheap per point, but a batch needs many distinct buckets) or
// XYZZ mixed additions (no batching constraints).
struct WindowPlan {
  int bits;          // window width c; 2^(c-1) buckets
  bool affine;       // use AffineBuckets
  size_t batch;      // affine batch size
};

// Affine batch size for n buckets: a bucket takes part once per batch, so a
// batch much larger than n/4 would mostly wait on collisions.
inline size_t AffineBatch(size_t nbuckets) { return std::min<size_t>(512, nbuckets / 4); }

// Picks the window width and method minimising the estimated multiplication
// count: per point ~10M (XYZZ) or ~6M plus a share of one inversion per batch
// (affine); per bucket ~24M to reduce. `inversion_cost` is an inversion in
// multiplications of the same field: ~380 for Fq (Fermat), ~130 for Fq2 (one
// Fq inversion, but each Fq2 multiplication is already ~3 Fq ones).
inline WindowPlan ChooseWindow(size_t points, double inversion_cost = 380.0) {
  WindowPlan best{2, false, 0};
  double best_cost = 1e300;
  for (int c = 2; c <= 16; ++c) {
    const double windows = (256 + c - 1) / c;
    const size_t nbuckets = size_t{1} << (c - 1);
    const double reduce = 24.0 * static_cast<double>(nbuckets);
    double cost = windows * (10.0 * static_cast<double>(points) + reduce);
    if (cost < best_cost) { best_cost = cost; best = {c, false, 0}; }
    const size_t batch = AffineBatch(nbuckets);
    if (batch >= 32) {
      cost = windows * ((6.0 + inversion_cost / static_cast<double>(batch)) * static_cast<double>(points) + reduce);
      if (cost < best_cost) { best_cost = cost; best = {c, true, batch}; }
    }
  }
  return best;
}

// Signed-digit recoding: digits d_w in (-2^(c-1), 2^(c-1)] with
// scalar = sum_w d_w * 2^(w*c). Since scalars are < 2^255 and windows*c >= 256
// the top digit never carries out.
inline void SignedDigits(const uint64_t s[4], int c, int windows, int32_t* out, size_t stride) {
  const uint32_t half = 1u << (c - 1);
  const uint32_t full = 1u << c;
  uint32_t carry = 0;
  for (int w = 0; w < windows; ++w) {
    int bit = w * c;
    uint64_t raw = 0;
    int limb = bit / 64, off = bit % 64;
    if (limb < 4) {
      raw = s[limb] >> off;
      if (off + c > 64 && limb + 1 < 4) raw |= s[limb + 1] << (64 - off);
    }
    uint32_t v = static_cast<uint32_t>(raw & (full - 1)) + carry;
    if (v > half) {
      out[w * stride] = static_cast<int32_t>(v) - static_cast<int32_t>(full);
      carry = 1;
    } else {
      out[w * stride] = static_cast<int32_t>(v);
      carry = 0;
    }
  }
}


// Bucket accumulation in affine coordinates with batched inversion: an
// affine addition costs one inversion, shared by a whole batch through
// Montgomery's trick (3 multiplications each), plus 2M + 1S — about 6
// multiplications instead of the 10 of a mixed XYZZ addition. A bucket may
// take part in one addition per batch; a second hit on it waits for the next
// batch. Handles P + P (doubling) and P + (-P) (the bucket empties).
//
// digits[j] selects bucket |digits[j]| - 1 for point bases[index[j]],
// negated when the digit is negative. On return filled[k] says whether
// bucket k holds a point.
template <class Cfg>
class AffineBuckets {
  using Affine = curve::Affine<Cfg>;
  using Field = typename Cfg::Field;

 public:
  explicit AffineBuckets(size_t nbuckets)
      : buckets_(nbuckets), filled_(nbuckets, 0), stamp_(nbuckets, 0) {}

  const Affine& bucket(size_t k) const { return buckets_[k]; }
  bool filled(size_t k) const { return filled_[k] != 0; }

  void Accumulate(const Affine* bases, const uint32_t* index, const int32_t* digits, size_t begin, size_t end,
                  size_t batch) {
    const size_t kBatch = std::min<size_t>(batch, kMaxBatch);
    std::vector<Op> ops(kBatch);
    std::vector<Field> denom(kBatch), prefix(kBatch);
    std::vector<Op> deferred, next_deferred;
    size_t cursor = begin;
    uint32_t batch_id = 0;
    while (cursor < end || !deferred.empty()) {
      ++batch_id;
      size_t k = 0;
      next_deferred.clear();
      auto consider = [&](const Op& op) {
        if (stamp_[op.bucket] == batch_id) {  // bucket busy in this batch
          next_deferred.push_back(op);
          return;
        }
        Affine& b = buckets_[op.bucket];
        if (!filled_[op.bucket]) {
          b = op.point;
          filled_[op.bucket] = 1;
          return;
        }
        if (b.x == op.point.x) {
          if (b.y != op.point.y || b.y.is_zero()) {  // P + (-P)
            filled_[op.bucket] = 0;
            return;
          }
          denom[k] = b.y.dbl();  // doubling: lambda = 3x^2 / 2y
        } else {
          denom[k] = op.point.x - b.x;
        }
        stamp_[op.bucket] = batch_id;
        ops[k++] = op;
      };
      for (const Op& op : deferred) {
        if (k == kBatch) { next_deferred.push_back(op); continue; }
        consider(op);
      }
      // Stop reading new points while many wait: keeps the waiting list short.
      while (k < kBatch && cursor < end && next_deferred.size() < kBatch) {
        int32_t d = digits[cursor];
        if (d != 0) {
          Op op;
          op.bucket = static_cast<uint32_t>((d > 0 ? d : -d) - 1);
          op.point = bases[index[cursor]];
          if (d < 0) op.point.y = op.point.y.neg();
          consider(op);
        }
        ++cursor;
      }
      std::swap(deferred, next_deferred);
      if (k == 0) continue;

      // One inversion for the whole batch.
      ff::BatchInverse(denom.data(), prefix.data(), k);
      for (size_t i = k; i-- > 0;) {
        const Field& inv_i = denom[i];
        Affine& b = buckets_[ops[i].bucket];
        const Affine& p = ops[i].point;
        Field lambda;
        if (b.x == p.x) {
          Field xx = b.x.sqr();
          lambda = (xx.dbl() + xx) * inv_i;
        } else {
          lambda = (p.y - b.y) * inv_i;
        }
        Field x3 = lambda.sqr() - b.x - p.x;
        b.y = lambda * (b.x - x3) - b.y;
        b.x = x3;
      }
    }
  }

 private:
  static constexpr size_t kMaxBatch = 512;
  struct Op {
    uint32_t bucket;
    Affine point;
  };
  std::vector<Affine> buckets_;
  std::vector<uint8_t> filled_;
  std::vector<uint32_t> stamp_;  // batch in which the bucket was last used
};

// The sum of points whose scalar is 1, fed one at a time: kept in blocks of
// kBlock and reduced pairwise, level by level, with one batched inversion a
// level (Montgomery's trick), so that an addition costs ~6 multiplications
// where a mixed XYZZ addition costs ~10. A level stops paying once it has
// fewer pairs than `min_pairs` (the inversion's share outgrows the saving):
// the last points take the XYZZ path. A pair with equal x (P + P, or
// P + (-P)) goes to the XYZZ accumulator too, which handles both.
template <class Cfg>
class OnesSum {
  using Affine = curve::Affine<Cfg>;
  using Field = typename Cfg::Field;
  using Xyzz = curve::Xyzz<Cfg>;

 public:
  static constexpr size_t kBlock = 4096;
  // `inversion_cost`: an inversion in multiplications of the field (as ChooseWindow).
  explicit OnesSum(double inversion_cost)
      : min_pairs_(std::max<size_t>(8, static_cast<size_t>(inversion_cost / 3.0))) {
    points_.reserve(kBlock);
  }

  void Add(const Affine& p) {
    points_.push_back(p);
    if (points_.size() == kBlock) Reduce();
  }

  Xyzz Finish() {
    Reduce();
    return acc_;
  }

 private:
  void Reduce() {
    size_t n = points_.size();
    while (n / 2 >= min_pairs_) {
      const size_t pairs = n / 2;
      denom_.resize(pairs);
      scratch_.resize(pairs);
      for (size_t i = 0; i < pairs; ++i) denom_[i] = points_[2 * i + 1].x - points_[2 * i].x;
      ff::BatchInverse(denom_.data(), scratch_.data(), pairs);  // zeros (equal x) stay zero
      size_t out = 0;
      for (size_t i = 0; i < pairs; ++i) {
        const Affine a = points_[2 * i], b = points_[2 * i + 1];
        if (denom_[i].is_zero()) {
          acc_ = curve::xyzz_add_mixed(curve::xyzz_add_mixed(acc_, a), b);
          continue;
        }
        const Field lambda = (b.y - a.y) * denom_[i];
        const Field x3 = lambda.sqr() - a.x - b.x;
        points_[out++] = Affine{x3, lambda * (a.x - x3) - a.y};
      }
      if (n % 2 == 1) points_[out++] = points_[n - 1];
      n = out;
    }
    for (size_t i = 0; i < n; ++i) acc_ = curve::xyzz_add_mixed(acc_, points_[i]);
    points_.clear();
  }

  size_t min_pairs_;
  std::vector<Affine> points_;
  std::vector<Field> denom_, scratch_;
  Xyzz acc_ = Xyzz::infinity();
};

}  // namespace msm_detail

template <class Cfg>
curve::Jacobian<Cfg> Msm(const curve::Affine<Cfg>* bases, const uint8_t* scalars, size_t scalar_stride,
                         size_t n, ThreadPool& pool) {
  using Xyzz = curve::Xyzz<Cfg>;
  using Jacobian = curve::Jacobian<Cfg>;
  if (n == 0) return Jacobian::infinity();

  // 1. Classify: skip 0 (and infinity bases), sum the 1s, keep the rest.
  const size_t nchunks = std::min<size_t>(n, static_cast<size_t>(pool.size()) * 4);
  const size_t step = (n + nchunks - 1) / nchunks;
  std::vector<std::vector<uint32_t>> big_per_chunk(nchunks);
  std::vector<Xyzz> ones_per_chunk(nchunks, Xyzz::infinity());
  constexpr bool kExtensionField = requires(typename Cfg::Field f) { f.c0; };
  const double inversion_cost = kExtensionField ? 130.0 : 380.0;
  pool.RunTasks(nchunks, [&](size_t chunk) {
    size_t begin = chunk * step, end = std::min(n, begin + step);
    auto& big = big_per_chunk[chunk];
    msm_detail::OnesSum<Cfg> ones(inversion_cost);
    for (size_t i = begin; i < end; ++i) {
      uint64_t s[4];
      msm_detail::LoadScalar(scalars + i * scalar_stride, s);
      if ((s[0] | s[1] | s[2] | s[3]) == 0 || bases[i].is_infinity()) continue;
      if (s[0] == 1 && (s[1] | s[2] | s[3]) == 0) {
        ones.Add(bases[i]);
      } else {
        big.push_back(static_cast<uint32_t>(i));
      }
    }
    ones_per_chunk[chunk] = ones.Finish();
  });
  std::vector<uint32_t> big;
  for (auto& v : big_per_chunk) big.insert(big.end(), v.begin(), v.end());
  big_per_chunk.clear();
  Xyzz ones = Xyzz::infinity();
  for (auto& p : ones_per_chunk) ones = curve::xyzz_add(ones, p);

  const size_t m = big.size();
  if (m == 0) return curve::to_jacobian(ones);

  // 2. Signed digits for every remaining scalar, window-major.
  const msm_detail::WindowPlan plan = msm_detail::ChooseWindow(m, inversion_cost);
  const int c = plan.bits;
  const int windows = (256 + c - 1) / c;
  std::vector<int32_t> digits(static_cast<size_t>(windows) * m);
  pool.ParallelFor(m, [&](size_t begin, size_t end) {
    for (size_t j = begin; j < end; ++j) {
      uint64_t s[4];
      msm_detail::LoadScalar(scalars + static_cast<size_t>(big[j]) * scalar_stride, s);
      msm_detail::SignedDigits(s, c, windows, &digits[j], m);
    }
  });

  // 3. Bucket accumulation, one task per (window, point slice). Slices exist
  //    so that many threads have work when there are few windows.
  const size_t slices = std::max<size_t>(1, (static_cast<size_t>(pool.size()) * 2 + windows - 1) / windows);
  const size_t slice_len = (m + slices - 1) / slices;
  const size_t nbuckets = size_t{1} << (c - 1);
  std::vector<Xyzz> window_sums(static_cast<size_t>(windows) * slices, Xyzz::infinity());
  pool.RunTasks(static_cast<size_t>(windows) * slices, [&](size_t task) {
    const size_t w = task / slices, slice = task % slices;
    const size_t begin = slice * slice_len, end = std::min(m, begin + slice_len);
    if (begin >= end) return;
    const int32_t* d = &digits[w * m];
    // sum_k (k+1) * bucket[k] by a running sum from the top.
    Xyzz running = Xyzz::infinity(), total = Xyzz::infinity();
    // The top window sees only the scalars' last few bits, so few buckets:
    // too few for batching to pay; it takes the XYZZ path.
    const int bits_left = 255 - static_cast<int>(w) * c;
    const size_t used_buckets = bits_left >= c - 1 ? nbuckets : size_t{1} << std::max(bits_left, 0);
    if (plan.affine && msm_detail::AffineBatch(used_buckets) >= 32) {
      msm_detail::AffineBuckets<Cfg> buckets(nbuckets);
      buckets.Accumulate(bases, big.data(), d, begin, end, plan.batch);
      for (size_t k = nbuckets; k-- > 0;) {
        if (buckets.filled(k)) running = curve::xyzz_add_mixed(running, buckets.bucket(k));
        total = curve::xyzz_add(total, running);
      }
    } else {
      std::vector<Xyzz> buckets(nbuckets, Xyzz::infinity());
      for (size_t j = begin; j < end; ++j) {
        const int32_t digit = d[j];
        if (digit > 0) {
          buckets[digit - 1] = curve::xyzz_add_mixed(buckets[digit - 1], bases[big[j]]);
        } else if (digit < 0) {
          buckets[-digit - 1] = curve::xyzz_add_mixed(buckets[-digit - 1], curve::neg(bases[big[j]]));
        }
      }
      for (size_t k = nbuckets; k-- > 0;) {
        running = curve::xyzz_add(running, buckets[k]);
        total = curve::xyzz_add(total, running);
      }
    }
    window_sums[task] = total;
  });

  // 4. Horner over windows: acc = acc * 2^c + window_sum.
  Xyzz acc = Xyzz::infinity();
  for (int w = windows - 1; w >= 0; --w) {
    for (int k = 0; k < c && w != windows - 1; ++k) acc = curve::xyzz_dbl(acc);
    for (size_t s = 0; s < slices; ++s) acc = curve::xyzz_add(acc, window_sums[w * slices + s]);
  }
  acc = curve::xyzz_add(acc, ones);
  return curve::to_jacobian(acc);
}

// Reference MSM by double-and-add, for tests.
template <class Cfg>
curve::Jacobian<Cfg> MsmNaive(const curve::Affine<Cfg>* bases, const uint8_t* scalars, size_t scalar_stride, size_t n) {
  auto acc = curve::Jacobian<Cfg>::infinity();
  for (size_t i = 0; i < n; ++i) {
    uint64_t s[4];
    msm_detail::LoadScalar(scalars + i * scalar_stride, s);
    acc = curve::add(acc, curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(bases[i]), s, 4));
  }
  return acc;
}

}  // namespace zkfleet::cpu
