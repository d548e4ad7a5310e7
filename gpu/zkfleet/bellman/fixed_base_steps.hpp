// Fixed-base multiplication k_i·G for many scalars and one base G (the
// generator of G1 or G2), as the per-thread bodies of the CUDA kernels in
// fixed_base_cuda.cu, written as host/device functions so that tests run the
// same steps on the CPU (tests/gpu/cuda/fixed_base_steps_test.cpp).
//
// Method: 32 windows of 8 bits. The table holds every non-zero digit's
// multiple in every window, entry w·255 + d - 1 = d·256^w·G (8160 affine
// points: 783 KB for G1, 1.5 MB for G2, resident in the GPU's L2), built once
// on the host (BuildTable). A product is the sum of one entry per non-zero
// digit: at most 32 mixed XYZZ additions (MulStep; r < 2^255, so the top
// digit is at most 0x73). The XYZZ results go to affine form in runs
// (ToAffineRunStep): Montgomery's trick over the run's ZZZ, one inversion per
// run, the prefix products kept in the outputs' x until the backward pass
// overwrites them.
//
// The results are the canonical affine points ((0, 0) for a zero scalar), so
// they equal any other correct computation's bytes, the CPU's
// (devtools::MulGeneratorG1/G2) in particular.
//
// Scalars come as the host holds them (Montgomery Fr, 8 words) and are made
// canonical per thread.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::bellman::fixed_base {

inline constexpr int kWindowBits = 8;
inline constexpr int kWindows = 32;                       // 256 / 8
inline constexpr int kDigits = (1 << kWindowBits) - 1;    // non-zero digits per window
inline constexpr int kTableSize = kWindows * kDigits;     // 8160 points
inline constexpr uint32_t kDefaultRun = 64;               // points per inversion in ToAffineRunStep

// Digit w (8 bits) of a canonical scalar in 8 little-endian 32-bit words.
ZK_HD unsigned Digit(const uint32_t* k, int w) { return (k[w / 4] >> (kWindowBits * (w % 4))) & 0xffu; }

// k·G as XYZZ, k given in Montgomery form (Fr: the device field type, or any
// type with to_canonical(uint32_t[8])); table as BuildTable makes it (in the
// same curve's point type).
template <class Cfg, class Fr>
ZK_HD curve::Xyzz<Cfg> MulStep(const Fr& scalar_mont, const curve::Affine<Cfg>* table) {
  uint32_t k[8];
  scalar_mont.to_canonical(k);
  curve::Xyzz<Cfg> acc = curve::Xyzz<Cfg>::infinity();
  ZK_NO_UNROLL for (int w = 0; w < kWindows; ++w) {
    const unsigned d = Digit(k, w);
    if (d != 0) acc = curve::xyzz_add_mixed(acc, table[w * kDigits + d - 1]);
  }
  return acc;
}

// Thread t's run of the affine conversion: out[i] = in[i] in affine form for
// i in [t·run, min(count, (t+1)·run)). in and out must not overlap.
template <class Cfg>
ZK_HD void ToAffineRunStep(uint64_t t, uint64_t run, uint64_t count, const curve::Xyzz<Cfg>* in,
                           curve::Affine<Cfg>* out) {
  using F = typename Cfg::Field;
  const uint64_t lo = t * run;
  if (lo >= count) return;
  const uint64_t hi = count - lo < run ? count : lo + run;
  // Forward: out[i].x = the product of the finite points' ZZZ in [lo, i].
  F acc = F::one();
  for (uint64_t i = lo; i < hi; ++i) {
    if (!in[i].is_infinity()) acc = acc * in[i].zzz;
    out[i].x = acc;
  }
  // Backward: inv = 1 / (product up to i), peeled one point at a time.
  F inv = acc.inverse();
  for (uint64_t i = hi; i-- > lo;) {
    const curve::Xyzz<Cfg> p = in[i];
    if (p.is_infinity()) {
      out[i] = curve::Affine<Cfg>::infinity();
      continue;
    }
    const F before = i > lo ? out[i - 1].x : F::one();
    const F zzz_inv = inv * before;  // 1 / ZZZ
    inv = inv * p.zzz;
    const F zz_inv = (p.zz * zzz_inv).sqr();  // (ZZ / ZZZ)^2 = 1 / ZZ, since ZZ^3 = ZZZ^2
    out[i].x = p.x * zz_inv;
    out[i].y = p.y * zzz_inv;
  }
}

// ---- host only --------------------------------------------------------------

// The table of `base`: entry w·255 + d - 1 = d·256^w·base (see the top).
// Host curve types (64-bit limbs); the device reads the same bytes.
template <class Cfg>
std::vector<curve::Affine<Cfg>> BuildTable(const curve::Affine<Cfg>& base) {
  using J = curve::Jacobian<Cfg>;
  std::vector<J> jac(kTableSize);
  J window_base = J::from_affine(base);  // 256^w · base
  for (int w = 0; w < kWindows; ++w) {
    J multiple = window_base;
    for (int d = 1; d <= kDigits; ++d) {
      jac[w * kDigits + d - 1] = multiple;
      multiple = curve::add(multiple, window_base);
    }
    window_base = multiple;  // 256 · 256^w · base
  }
  std::vector<curve::Affine<Cfg>> table(kTableSize);
  curve::batch_to_affine(jac.data(), table.data(), table.size());
  return table;
}

}  // namespace zkfleet::bellman::fixed_base
