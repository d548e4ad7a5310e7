// Multi-threaded Pippenger multi-scalar multiplication on the CPU:
//   result = sum_i scalars[i] * bases[i]
// for G1 or G2 of either curve (Cfg is a curve config from zkfleet/curve).
//
// Scalars are canonical little-endian integers of 32 bytes (the scalar field
// of both curves has < 256 bits), read straight from .wtns data or from the
// H vector. Circom witnesses are mostly 0 and 1: zero scalars (and infinity
// bases) are skipped, one-valued scalars are summed directly, and only the
// rest goes through the bucket method with signed windows.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "zkfleet/cpu/thread_pool.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::cpu {

namespace msm_detail {

inline void LoadScalar(const uint8_t* p, uint64_t out[4]) { std::memcpy(out, p, 32); }

// Window width minimising (points + buckets) * windows.
inline int ChooseWindowBits(size_t points) {
  int best = 2;
  double best_cost = 1e300;
  for (int c = 2; c <= 16; ++c) {
    double windows = (256 + c - 1) / c;
    double cost = windows * (static_cast<double>(points) + 2.0 * (1u << (c - 1)));
    if (cost < best_cost) { best_cost = cost; best = c; }
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

}  // namespace msm_detail

template <class Cfg>
curve::Jacobian<Cfg> Msm(const curve::Affine<Cfg>* bases, const uint8_t* scalars, size_t scalar_stride,
                         size_t n, ThreadPool& pool) {
  using Affine = curve::Affine<Cfg>;
  using Xyzz = curve::Xyzz<Cfg>;
  using Jacobian = curve::Jacobian<Cfg>;
  if (n == 0) return Jacobian::infinity();

  // 1. Classify: skip 0 (and infinity bases), sum the 1s, keep the rest.
  const size_t nchunks = std::min<size_t>(n, static_cast<size_t>(pool.size()) * 4);
  const size_t step = (n + nchunks - 1) / nchunks;
  std::vector<std::vector<uint32_t>> big_per_chunk(nchunks);
  std::vector<Xyzz> ones_per_chunk(nchunks, Xyzz::infinity());
  pool.RunTasks(nchunks, [&](size_t chunk) {
    size_t begin = chunk * step, end = std::min(n, begin + step);
    auto& big = big_per_chunk[chunk];
    Xyzz ones = Xyzz::infinity();
    for (size_t i = begin; i < end; ++i) {
      uint64_t s[4];
      msm_detail::LoadScalar(scalars + i * scalar_stride, s);
      if ((s[0] | s[1] | s[2] | s[3]) == 0 || bases[i].is_infinity()) continue;
      if (s[0] == 1 && (s[1] | s[2] | s[3]) == 0) {
        ones = curve::xyzz_add_mixed(ones, bases[i]);
      } else {
        big.push_back(static_cast<uint32_t>(i));
      }
    }
    ones_per_chunk[chunk] = ones;
  });
  std::vector<uint32_t> big;
  for (auto& v : big_per_chunk) big.insert(big.end(), v.begin(), v.end());
  big_per_chunk.clear();
  Xyzz ones = Xyzz::infinity();
  for (auto& p : ones_per_chunk) ones = curve::xyzz_add(ones, p);

  const size_t m = big.size();
  if (m == 0) return curve::to_jacobian(ones);

  // 2. Signed digits for every remaining scalar, window-major.
  const int c = msm_detail::ChooseWindowBits(m);
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
    std::vector<Xyzz> buckets(nbuckets, Xyzz::infinity());
    const int32_t* d = &digits[w * m];
    for (size_t j = begin; j < end; ++j) {
      int32_t digit = d[j];
      if (digit > 0) {
        buckets[digit - 1] = curve::xyzz_add_mixed(buckets[digit - 1], bases[big[j]]);
      } else if (digit < 0) {
        buckets[-digit - 1] = curve::xyzz_add_mixed(buckets[-digit - 1], curve::neg(bases[big[j]]));
      }
    }
    // sum_k (k+1) * bucket[k] by a running sum from the top.
    Xyzz running = Xyzz::infinity(), total = Xyzz::infinity();
    for (size_t k = nbuckets; k-- > 0;) {
      running = curve::xyzz_add(running, buckets[k]);
      total = curve::xyzz_add(total, running);
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
