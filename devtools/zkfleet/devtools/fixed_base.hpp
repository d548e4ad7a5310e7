// Fixed-base scalar multiplication on the CPU: k·P for many scalars k and one
// point P (a curve generator, when writing a zkey).
//
// The scalar is cut into `windows` signed digits of w bits,
//   k = sum_j d_j · 2^(w·j),   d_j in (-2^(w-1), 2^(w-1)],
// and the table holds d · 2^(w·j) · P in affine form for every window j and
// every d in 1..2^(w-1). One multiplication is then at most `windows`
// additions (negating an affine point is free) and no doublings; many
// multiplications run side by side as batched affine additions. With w = 16
// a 254-bit scalar costs 16 additions, against ~380 for double-and-add.
//
// Ownership: the table owns its points.
// Thread-safety: immutable after construction; Multiply/MultiplyMany may run
// concurrently.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/devtools/batch_affine.hpp"

namespace zkfleet::devtools {

// Window width minimising (table building + multiplications) for `count`
// scalars of `scalar_bits` bits, capped at 16 bits (a 16-bit G2 table of
// BLS12-381 is ~100 MB).
inline int ChooseFixedBaseWindow(size_t count, int scalar_bits) {
  int best = 2;
  double best_cost = 1e300;
  for (int w = 2; w <= 16; ++w) {
    const double windows = (scalar_bits + w) / w;  // ceil((bits + 1) / w)
    const double cost = windows * (static_cast<double>(count) + static_cast<double>(size_t{1} << (w - 1)));
    if (cost < best_cost) {
      best_cost = cost;
      best = w;
    }
  }
  return best;
}

template <class Cfg>
class FixedBaseTable {
 public:
  using Affine = curve::Affine<Cfg>;
  using Jacobian = curve::Jacobian<Cfg>;
  using Scalar = typename Cfg::Scalar;  // the scalar field Fr (Montgomery form)

  // Precomputes the table of `base` for window width `window_bits` (2..24).
  FixedBaseTable(const Affine& base, int window_bits, cpu::ThreadPool& pool)
      : w_(window_bits),
        half_(size_t{1} << (window_bits - 1)),
        // One window more than bits / w, so that the carry of the top digit
        // always has room (scalars are < r < 2^kModulusBits).
        windows_((Scalar::kModulusBits + window_bits) / window_bits),
        table_(windows_ * half_) {
    // Window bases 2^(w·j)·P by repeated doubling, one inversion each.
    std::vector<Affine> window_base(windows_);
    Jacobian p = Jacobian::from_affine(base);
    for (int j = 0; j < windows_; ++j) {
      window_base[j] = curve::to_affine(p);
      for (int i = 0; i < w_; ++i) p = curve::dbl(p);
    }
    // Each window's multiples 1..half of its base, then one batch inversion.
    pool.RunTasks(windows_, [&](size_t j) {
      std::vector<Jacobian> multiples(half_);
      Jacobian acc = Jacobian::from_affine(window_base[j]);
      multiples[0] = acc;
      for (size_t d = 1; d < half_; ++d) {
        acc = curve::add_mixed(acc, window_base[j]);
        multiples[d] = acc;
      }
      curve::batch_to_affine(multiples.data(), table_.data() + j * half_, half_);
    });
  }

  int window_bits() const { return w_; }
  int windows() const { return windows_; }
  size_t table_bytes() const { return table_.size() * sizeof(Affine); }

  // k·P for one scalar k (any Fr value, Montgomery form); 0 gives infinity.
  // Mixed Jacobian additions: for a handful of points (the zkey header).
  Jacobian Multiply(const Scalar& k) const {
    std::vector<int32_t> digits(windows_);
    SignedDigits(k, digits.data());
    Jacobian acc = Jacobian::infinity();
    for (int j = 0; j < windows_; ++j) {
      if (digits[j] != 0) acc = curve::add_mixed(acc, Entry(j, digits[j]));
    }
    return acc;
  }

  // out[i] = scalars[i]·P in affine form (all-zero for infinity). Blocks of
  // scalars are spread over the pool; within a block, window after window,
  // every scalar's running sum takes one affine addition and the block
  // shares one inversion per window (BatchAddAffine).
  void MultiplyMany(std::span<const Scalar> scalars, Affine* out, cpu::ThreadPool& pool) const {
    constexpr size_t kBlock = 2048;
    const size_t blocks = (scalars.size() + kBlock - 1) / kBlock;
    pool.RunTasks(blocks, [&](size_t b) {
      const size_t begin = b * kBlock, n = std::min(scalars.size(), begin + kBlock) - begin;
      std::vector<int32_t> digits(n * windows_);
      for (size_t i = 0; i < n; ++i) SignedDigits(scalars[begin + i], digits.data() + i * windows_);
      Affine* acc = out + begin;
      std::fill(acc, acc + n, Affine::infinity());
      std::vector<Affine> add(n);
      std::vector<typename Cfg::Field> scratch(n);
      for (int j = 0; j < windows_; ++j) {
        for (size_t i = 0; i < n; ++i) {
          const int32_t d = digits[i * windows_ + j];
          add[i] = d == 0 ? Affine::infinity() : Entry(j, d);
        }
        BatchAddAffine(acc, add.data(), n, scratch.data());
      }
    });
  }

 private:
  // d · 2^(w·j) · P for a digit d != 0 in [-half, half].
  Affine Entry(int j, int32_t d) const {
    const Affine& p = table_[j * half_ + static_cast<size_t>(d > 0 ? d : -d) - 1];
    return d > 0 ? p : curve::neg(p);
  }

  // Signed-window recoding: k = sum_j out[j] · 2^(w·j) with every out[j] in
  // (-2^(w-1), 2^(w-1)]. A raw window value above half becomes
  // value - 2^w and carries 1 into the next window; the extra top window
  // absorbs the last carry.
  void SignedDigits(const Scalar& k, int32_t* out) const {
    uint64_t limbs[Scalar::kLimbs];
    k.to_canonical(limbs);
    uint64_t carry = 0;
    for (int j = 0; j < windows_; ++j) {
      const uint64_t v = Bits(limbs, j * w_) + carry;
      carry = v > half_ ? 1 : 0;
      out[j] = static_cast<int32_t>(static_cast<int64_t>(v) - static_cast<int64_t>(carry << w_));
    }
  }

  // The w bits of the little-endian integer `limbs` starting at bit `pos`
  // (bits past the top read as 0).
  uint64_t Bits(const uint64_t* limbs, int pos) const {
    const int limb = pos / 64, off = pos % 64;
    if (limb >= Scalar::kLimbs) return 0;
    uint64_t v = limbs[limb] >> off;
    if (off + w_ > 64 && limb + 1 < Scalar::kLimbs) v |= limbs[limb + 1] << (64 - off);
    return v & ((uint64_t{1} << w_) - 1);
  }

  int w_;
  size_t half_;
  int windows_;
  std::vector<Affine> table_;  // table_[j * half_ + d - 1] = d · 2^(w·j) · P
};

}  // namespace zkfleet::devtools
