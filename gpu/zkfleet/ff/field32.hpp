// Fp32<P>: the GPU's prime field element. Same value, same bytes as
// ff::Fp<P> (Montgomery form, R = 2^(64·kLimbs), little-endian), but stored
// and computed as 2·kLimbs 32-bit words, the GPU's native multiply width
// (ff::Fp's 64-bit limbs need several emulated instructions per product).
// Products are carry chains of carry32.hpp in which each 32x32-bit partial
// product is one low/high pair (mont_mul_paired: one IMAD.WIDE each on the
// GPU); sums are carry chains too. On the
// device each link is one PTX instruction with the hardware carry flag; on
// the host the same chains run with an explicit flag, and tests compare
// them with ff::Fp.
//
// Montgomery multiplication is CIOS in its "no final carry" form, valid
// because every supported modulus has a spare top bit (p < R/2, checked in
// ff::Fp). Inputs must be fully reduced (< p), except that mont_mul's second
// operand may be any 2·kLimbs-word integer (used for raw witness values).
//
// Thread-safety: plain value type.
#pragma once

#include <cstdint>
#include <cstring>

#include "zkfleet/ff/carry32.hpp"
#include "zkfleet/ff/field.hpp"
#include "zkfleet/ff/fp2.hpp"
#include "zkfleet/ff/hd.hpp"

// The widest field whose products use the paired form (mont_mul_paired):
// 12 = every field; a build flag, for same-run comparisons with the older
// forms (bench/gpu/variants).
#ifndef ZK_PAIRED_PRODUCT_MAX_WORDS
#define ZK_PAIRED_PRODUCT_MAX_WORDS 12
#endif

namespace zkfleet::cuda {

template <class P>
struct alignas(16) Fp32 {
  static constexpr int kWords = 2 * P::kLimbs;  // 32-bit words
  static constexpr int kLimbs = P::kLimbs;      // 64-bit limbs (as ff::Fp)
  static constexpr int kBytes = 8 * P::kLimbs;
  using Params = P;

  uint32_t v[kWords];

  // Word i of the modulus, of R mod p, of -p^-1 mod 2^32.
  ZK_HD static constexpr uint32_t mod(int i) { return static_cast<uint32_t>(P::modulus(i >> 1) >> ((i & 1) * 32)); }
  ZK_HD static constexpr uint32_t one_word(int i) {
    return static_cast<uint32_t>(P::r_mod_p(i >> 1) >> ((i & 1) * 32));
  }
  static constexpr uint32_t kInv32 = static_cast<uint32_t>(P::kInv);  // -p^-1 mod 2^64 reduced mod 2^32

  // Sums are carry chains (carry32.hpp) for every field. BLS12-381 (12
  // words) had kept portable 64-bit sums while its products were unpaired
  // (with chains its G2 MSM had run 32 % slower); with paired products,
  // chains made its MSMs 1.45x (G1 2^24: 94.8 vs 137.6 ms) and 1.16x (G2
  // 2^22: 131.3 vs 152.4 ms) faster, in the same run (docs/benchmarks-gpu.md).

  ZK_HD static Fp32 zero() {
    Fp32 r;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) r.v[i] = 0;
    return r;
  }
  ZK_HD static Fp32 one() {
    Fp32 r;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) r.v[i] = one_word(i);
    return r;
  }
  ZK_HD bool is_zero() const {
    uint32_t any = 0;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) any |= v[i];
    return any == 0;
  }
  ZK_HD bool operator==(const Fp32& o) const {
    uint32_t diff = 0;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) diff |= v[i] ^ o.v[i];
    return diff == 0;
  }
  ZK_HD bool operator!=(const Fp32& o) const { return !(*this == o); }

  ZK_HD Fp32 operator+(const Fp32& o) const {
    uint32_t sum[kWords];
    add_words(v, o.v, sum);
    Fp32 r;
    reduce_once(sum, r.v);  // a + b < 2p < R: no carry out of the top word
    return r;
  }
  ZK_HD Fp32 operator-(const Fp32& o) const {
    Fp32 r;
    uint32_t cf = 0;
    r.v[0] = carry32::sub_cc(v[0], o.v[0], cf);
    ZK_UNROLL for (int i = 1; i < kWords; ++i) r.v[i] = carry32::subc_cc(v[i], o.v[i], cf);
    add_modulus(r.v, carry32::subc(0, 0, cf));  // all ones on underflow: add p back
    return r;
  }
  ZK_HD Fp32 operator*(const Fp32& o) const { return product(*this, o); }
  ZK_HD Fp32 operator-() const { return neg(); }
  ZK_HD Fp32& operator+=(const Fp32& o) { return *this = *this + o; }
  ZK_HD Fp32& operator-=(const Fp32& o) { return *this = *this - o; }
  ZK_HD Fp32& operator*=(const Fp32& o) { return *this = *this * o; }
  ZK_HD Fp32 sqr() const { return *this * *this; }
  ZK_HD Fp32 dbl() const { return *this + *this; }
  ZK_HD Fp32 neg() const { return zero() - *this; }

  // a · raw · R^-1 for a raw (non-Montgomery) integer: with a = coef·R² this
  // is the Montgomery form of coef·raw (spec §4.3).
  ZK_HD static Fp32 mont_mul_raw(const Fp32& a, const uint32_t* raw) {
    Fp32 r;
    mont_mul(a.v, raw, r.v);
    return r;
  }
  // Montgomery form -> canonical integer words.
  ZK_HD void to_canonical(uint32_t* out) const {
    uint32_t one_raw[kWords];
    ZK_UNROLL for (int i = 0; i < kWords; ++i) one_raw[i] = i == 0 ? 1 : 0;
    mont_mul(v, one_raw, out);
  }
  ZK_HD Fp32 pow(const uint64_t* exponent, int exponent_limbs) const {
    Fp32 result = one();
    for (int i = exponent_limbs - 1; i >= 0; --i) {
      for (int bit = 63; bit >= 0; --bit) {
        result = result.sqr();
        if ((exponent[i] >> bit) & 1) result = result * *this;
      }
    }
    return result;
  }
  // x^(p-2); the inverse of 0 is 0. Slow: host-side conversions only.
  ZK_HD Fp32 inverse() const {
    uint64_t e[kLimbs];
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) e[i] = P::modulus(i);
    e[0] -= 2;  // p is odd and > 2, so no borrow
    return pow(e, kLimbs);
  }

  // out = a·b·R^-1 mod p, fully reduced; a < p, b any kWords-word integer.
  ZK_HD static void mont_mul(const uint32_t* a, const uint32_t* b, uint32_t* out) {
    if constexpr (kPairedProducts) {
      mont_mul_paired(a, b, out);
    } else {
      mont_mul_chains(a, b, out);
    }
  }

  // CIOS with each 32x32-bit partial product added as one 64-bit unit: its
  // low half into word k and its high half into word k+1, as two adjacent
  // links of one carry chain, which ptxas fuses into a single IMAD.WIDE.U32
  // (with carry in and out). mont_mul_chains adds all low halves of a row
  // first and then all high halves, two instructions per product plus
  // carry fix-ups.
  //
  // Two neighbouring products of a row overlap by a word, so one chain can
  // only take every other one. The running value is therefore kept in two
  // n-word arrays, T = E + O·2^32: the products a[j]·x for even j go into
  // E (word-aligned), those for odd j into O (one word up).
  //
  // After a row's reduction E's word 0 is zero, and dividing by 2^32 swaps
  // the roles: the old O becomes the new word-aligned array, and the old E,
  // now one word too low, becomes the new O after a two-word shift, with its
  // word 1 added into the new word 0 (row_paired). The rows therefore
  // alternate between (E, O) = (x, y) and (y, x).
  //
  // Bounds (p < 2^(32n-1), n even): before each division T < 2p + 2^33·p <
  // 2^(32(n+1)), so O < 2^(32n) and no chain on O carries out of its top
  // word (carry32's host form asserts it in tests); E's top carry is worth
  // 2^(32n), O's top word, and is added there. As in mont_mul_chains the
  // result is below 2p: one conditional subtraction.
  static constexpr bool kPairedProducts = kWords % 2 == 0 && kWords <= ZK_PAIRED_PRODUCT_MAX_WORDS;

  ZK_HD static void mont_mul_paired(const uint32_t* a, const uint32_t* b, uint32_t* out) {
    static_assert(kWords % 2 == 0, "paired products need an even word count");
    constexpr int n = kWords;
    uint32_t x[n], y[n];
    // Row 0 starts from nothing: plain products, no chains.
    ZK_UNROLL for (int k = 0; k < n; k += 2) {
      x[k] = a[k] * b[0];
      x[k + 1] = carry32::mul_hi(a[k], b[0]);
      y[k] = a[k + 1] * b[0];
      y[k + 1] = carry32::mul_hi(a[k + 1], b[0]);
    }
    reduce_row_paired(x, y);
    row_paired(y, x, a, b[1]);
    reduce_row_paired(y, x);
    ZK_UNROLL for (int i = 2; i < n; i += 2) {
      row_paired(x, y, a, b[i]);
      reduce_row_paired(x, y);
      row_paired(y, x, a, b[i + 1]);
      reduce_row_paired(y, x);
    }
    // The last row left (E, O) = (y, x): the result is (y + x·2^32) / 2^32
    // = x + y/2^32, word k being x[k] + y[k+1].
    uint32_t cf = 0;
    uint32_t r[n];
    r[0] = carry32::add_cc(x[0], y[1], cf);
    ZK_UNROLL for (int k = 1; k < n - 1; ++k) r[k] = carry32::addc_cc(x[k], y[k + 1], cf);
    r[n - 1] = carry32::addc(x[n - 1], 0, cf);
    reduce_once(r, out);
  }

  // The division by 2^32 and then T += a·bi, on the arrays of the previous
  // row: `e` held O (it becomes the word-aligned array as it is), `o` held
  // E, whose word 0 is zero, word 1 goes to the new word 0 and words 2..
  // shift down by two into the new O.
  ZK_HD static void row_paired(uint32_t* e, uint32_t* o, const uint32_t* a, uint32_t bi) {
    constexpr int n = kWords;
    uint32_t cf = 0;
    e[0] = carry32::add_cc(e[0], o[1], cf);  // its carry is worth word 1: o's word 0
    ZK_UNROLL for (int k = 0; k < n - 2; k += 2) {
      o[k] = carry32::madc_lo_cc(a[k + 1], bi, o[k + 2], cf);
      o[k + 1] = carry32::madc_hi_cc(a[k + 1], bi, o[k + 3], cf);
    }
    o[n - 2] = carry32::madc_lo_cc(a[n - 1], bi, 0, cf);
    o[n - 1] = carry32::madc_hi(a[n - 1], bi, 0, cf);
    e[0] = carry32::mad_lo_cc(a[0], bi, e[0], cf);
    e[1] = carry32::madc_hi_cc(a[0], bi, e[1], cf);
    ZK_UNROLL for (int k = 2; k < n; k += 2) {
      e[k] = carry32::madc_lo_cc(a[k], bi, e[k], cf);
      e[k + 1] = carry32::madc_hi_cc(a[k], bi, e[k + 1], cf);
    }
    o[n - 1] = carry32::addc(o[n - 1], 0, cf);
  }

  // T += m·p with m chosen to clear word 0 (e[0] becomes 0 mod 2^32).
  ZK_HD static void reduce_row_paired(uint32_t* e, uint32_t* o) {
    constexpr int n = kWords;
    const uint32_t m = e[0] * kInv32;
    uint32_t cf = 0;
    o[0] = carry32::mad_lo_cc(m, mod(1), o[0], cf);
    o[1] = carry32::madc_hi_cc(m, mod(1), o[1], cf);
    ZK_UNROLL for (int k = 2; k < n - 2; k += 2) {
      o[k] = carry32::madc_lo_cc(m, mod(k + 1), o[k], cf);
      o[k + 1] = carry32::madc_hi_cc(m, mod(k + 1), o[k + 1], cf);
    }
    o[n - 2] = carry32::madc_lo_cc(m, mod(n - 1), o[n - 2], cf);
    o[n - 1] = carry32::madc_hi(m, mod(n - 1), o[n - 1], cf);
    e[0] = carry32::mad_lo_cc(m, mod(0), e[0], cf);
    e[1] = carry32::madc_hi_cc(m, mod(0), e[1], cf);
    ZK_UNROLL for (int k = 2; k < n; k += 2) {
      e[k] = carry32::madc_lo_cc(m, mod(k), e[k], cf);
      e[k + 1] = carry32::madc_hi_cc(m, mod(k), e[k + 1], cf);
    }
    o[n - 1] = carry32::addc(o[n - 1], 0, cf);
  }

  // CIOS: per word b[i], T += a·b[i], then T = (T + m·p) / 2^32 with m chosen
  // to clear the low word. Each product is added as two carry chains, its
  // low halves into words j and its high halves into words j+1
  // (carry32.hpp). T stays below 2^(32·(kWords+1)) because p < R/2 (checked
  // in ff::Fp), so the top word t[kWords] never carries out, and T < 2p after
  // each step (the "no final carry" CIOS condition): one conditional
  // subtraction at the end.
  ZK_HD static void mont_mul_chains(const uint32_t* a, const uint32_t* b, uint32_t* out) {
    constexpr int n = kWords;
    uint32_t t[n + 1];
    ZK_UNROLL for (int j = 0; j <= n; ++j) t[j] = 0;
    uint32_t cf = 0;
    ZK_UNROLL for (int i = 0; i < n; ++i) {
      const uint32_t bi = b[i];
      // T += a·b[i]
      t[0] = carry32::mad_lo_cc(a[0], bi, t[0], cf);
      ZK_UNROLL for (int j = 1; j < n; ++j) t[j] = carry32::madc_lo_cc(a[j], bi, t[j], cf);
      t[n] = carry32::addc(t[n], 0, cf);
      t[1] = carry32::mad_hi_cc(a[0], bi, t[1], cf);
      ZK_UNROLL for (int j = 1; j < n - 1; ++j) t[j + 1] = carry32::madc_hi_cc(a[j], bi, t[j + 1], cf);
      t[n] = carry32::madc_hi(a[n - 1], bi, t[n], cf);
      montgomery_step(t);  // T = (T + m·p) / 2^32
    }
    reduce_once(t, out);
  }

  // One Montgomery step on the kWords+1-word window t of a carry-chain CIOS:
  // t += m·p with m chosen to clear the low word, then t /= 2^32 (the top
  // word becomes 0). Each product is added as two chains, its low halves
  // into words j and its high halves into words j+1.
  ZK_HD static void montgomery_step(uint32_t* t) {
    constexpr int n = kWords;
    uint32_t cf = 0;
    const uint32_t m = t[0] * kInv32;
    (void)carry32::mad_lo_cc(m, mod(0), t[0], cf);
    ZK_UNROLL for (int j = 1; j < n; ++j) t[j] = carry32::madc_lo_cc(m, mod(j), t[j], cf);
    t[n] = carry32::addc(t[n], 0, cf);
    t[1] = carry32::mad_hi_cc(m, mod(0), t[1], cf);
    ZK_UNROLL for (int j = 1; j < n - 1; ++j) t[j + 1] = carry32::madc_hi_cc(m, mod(j), t[j + 1], cf);
    t[n] = carry32::madc_hi(m, mod(n - 1), t[n], cf);
    ZK_UNROLL for (int j = 0; j < n; ++j) t[j] = t[j + 1];
    t[n] = 0;
  }

  // The same CIOS in portable C++ (64-bit sums, no carry flag): the
  // reference the tests hold the other forms to.
  ZK_HD static void mont_mul_portable(const uint32_t* a, const uint32_t* b, uint32_t* out) {
    uint32_t t[kWords];
    ZK_UNROLL for (int j = 0; j < kWords; ++j) t[j] = 0;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) {
      const uint32_t bi = b[i];
      uint64_t s = static_cast<uint64_t>(a[0]) * bi + t[0];
      const uint32_t t0 = static_cast<uint32_t>(s);
      uint32_t carry_ab = static_cast<uint32_t>(s >> 32);
      const uint32_t m = t0 * kInv32;
      s = static_cast<uint64_t>(m) * mod(0) + t0;
      uint32_t carry_mp = static_cast<uint32_t>(s >> 32);
      ZK_UNROLL for (int j = 1; j < kWords; ++j) {
        s = static_cast<uint64_t>(a[j]) * bi + t[j] + carry_ab;
        const uint32_t tj = static_cast<uint32_t>(s);
        carry_ab = static_cast<uint32_t>(s >> 32);
        s = static_cast<uint64_t>(m) * mod(j) + tj + carry_mp;
        t[j - 1] = static_cast<uint32_t>(s);
        carry_mp = static_cast<uint32_t>(s >> 32);
      }
      t[kWords - 1] = carry_ab + carry_mp;
    }
    reduce_once(t, out);
  }

  // a·b as a real call on the GPU, operands and result passed in registers.
  // A curve addition is a dozen products; inlined, each kernel held a dozen
  // copies of the multiplication's ~550 instructions (8 words), more than
  // the SM's instruction cache holds (Nsight Compute: half of the G1
  // accumulation's stalls were instruction fetch). One copy, called, made
  // BN254's G1 and G2 MSMs 1.21-1.35x faster on the H200, in the same run
  // (docs/benchmarks-gpu.md). ff::Fp2 multiplies by
  // Karatsuba over these calls: with paired products that beat the lazy
  // Fp2 product (double-width products, two reductions instead of three) by
  // 1.12x for BN254's G2 MSM and 1.47x for BLS12-381's (2^22: 40.5 vs 45.5
  // and 89.1 vs 131.3 ms, docs/benchmarks-gpu.md), and the lazy form was removed.
  ZK_HD_NOINLINE static Fp32 product(Fp32 a, Fp32 b) {
    Fp32 r;
    mont_mul(a.v, b.v, r.v);
    return r;
  }

  // out = a + b over kWords words (no carry out: the caller's bound). out may alias.
  ZK_HD static void add_words(const uint32_t* a, const uint32_t* b, uint32_t* out) {
    uint32_t cf = 0;
    out[0] = carry32::add_cc(a[0], b[0], cf);
    ZK_UNROLL for (int i = 1; i < kWords; ++i) out[i] = carry32::addc_cc(a[i], b[i], cf);
  }

  // x += p & mask over kWords words, modulo 2^(32·kWords) (mask: 0 or all
  // ones; no branch, so the threads of a warp stay together).
  ZK_HD static void add_modulus(uint32_t* x, uint32_t mask) {
    uint32_t cf = 0;
    x[0] = carry32::add_cc(x[0], mod(0) & mask, cf);
    ZK_UNROLL for (int i = 1; i < kWords; ++i) x[i] = carry32::addc_cc(x[i], mod(i) & mask, cf);
  }

  // out = t < p ? t : t - p for t < 2p. out may alias t.
  ZK_HD static void reduce_once(const uint32_t* t, uint32_t* out) {
    uint32_t diff[kWords];
    uint32_t cf = 0;
    diff[0] = carry32::sub_cc(t[0], mod(0), cf);
    ZK_UNROLL for (int i = 1; i < kWords; ++i) diff[i] = carry32::subc_cc(t[i], mod(i), cf);
    const uint32_t keep_t = carry32::subc(0, 0, cf);  // all ones when t < p
    ZK_UNROLL for (int i = 0; i < kWords; ++i) out[i] = (t[i] & keep_t) | (diff[i] & ~keep_t);
  }
};

// The device twin of a host field type: ff::Fp<P> -> Fp32<P>, and
// ff::Fp2<ff::Fp<P>> -> ff::Fp2<Fp32<P>>. Both have the host type's bytes.
template <class HostField>
struct DeviceFieldOf;
template <class P>
struct DeviceFieldOf<ff::Fp<P>> {
  using type = Fp32<P>;
};
template <class P>
struct DeviceFieldOf<ff::Fp2<ff::Fp<P>>> {
  using type = ff::Fp2<Fp32<P>>;
};

// Reinterprets a value of one layout-compatible type as another (host and
// device): used between a host type and its device twin.
template <class To, class From>
ZK_HD To BitCopy(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "types are not layout-compatible");
  To to;
  memcpy(static_cast<void*>(&to), static_cast<const void*>(&from), sizeof(To));
  return to;
}

}  // namespace zkfleet::cuda
