// Fp<P>: a prime field element in Montgomery form, for host (g++) and device
// (nvcc) code alike.
//
// Representation: v holds x·R mod p as little-endian 64-bit limbs, with
// R = 2^(64·kLimbs), always fully reduced (< p). This is exactly the "LEM"
// encoding of snarkjs files, so zkey points can be copied in with from_mont().
//
// Multiplication is CIOS Montgomery multiplication in its "no final carry"
// form, which needs one spare bit in the top limb (p < R/2); every curve we
// support has it (static_assert below). Loops run over the compile-time limb
// count and are fully unrolled, so limbs stay in registers. Three code paths
// compute the same bits (tests compare them):
//   * x86-64 host built with -mbmi2 -madx and optimization: mulx/adcx/adox
//     assembly (mont_mul_x86.hpp), as the engine is built;
//   * any other host: portable C++ on unsigned __int128 (mont_mul_inline);
//   * GPU: the same C++ on __umul64hi, one out-of-line copy per field.
//
// A parameter struct P provides (see bn254.hpp, bls12_381.hpp):
//   static constexpr int kLimbs, kModulusBits;
//   static constexpr uint64_t kInv;                     // -p^-1 mod 2^64
//   ZK_HD static constexpr uint64_t modulus(int i);     // limb i of p
//   ZK_HD static constexpr uint64_t r_mod_p(int i);     // limb i of R mod p
//   ZK_HD static constexpr uint64_t r2_mod_p(int i);    // limb i of R^2 mod p
// and, for scalar fields, kTwoAdicity and kRootOfUnityBase (see root_of_unity).
// The limb tables are accessor functions rather than static arrays because
// device code cannot index a host constexpr array; after unrolling every
// index is a constant and the tables fold into immediates.
//
// Thread-safety: Fp is a plain value type (trivially copyable, no state
// outside itself); it can be memcpy'd to and from the GPU.
#pragma once

#include <cstdint>

#include "zkfleet/ff/add_sub_x86.hpp"
#include "zkfleet/ff/hd.hpp"
#include "zkfleet/ff/mont_mul_x86.hpp"
#include "zkfleet/ff/word_ops.hpp"

namespace zkfleet::ff {

template <class P>
struct Fp {
  using Params = P;
  static constexpr int kLimbs = P::kLimbs;
  static constexpr int kBytes = 8 * kLimbs;
  static constexpr int kModulusBits = P::kModulusBits;
  static_assert(P::modulus(kLimbs - 1) < (uint64_t{1} << 63),
                "the no-carry Montgomery multiplication needs p < R/2");

  uint64_t v[kLimbs];

  // ---- the modulus ---------------------------------------------------------

  ZK_HD static constexpr uint64_t modulus_limb(int i) { return P::modulus(i); }
  ZK_HD static void modulus_limbs(uint64_t* out) {
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) out[i] = P::modulus(i);
  }
  // True when the canonical integer in limbs is < p.
  ZK_HD static bool is_below_modulus(const uint64_t* limbs) {
    uint64_t p[kLimbs], diff[kLimbs];
    modulus_limbs(p);
    return detail::sub_n<kLimbs>(diff, limbs, p) != 0;
  }

  // ---- construction and conversion -----------------------------------------

  ZK_HD static constexpr Fp zero() {
    Fp r{};
    return r;
  }
  // The Montgomery form of 1, which is R mod p.
  ZK_HD static constexpr Fp one() {
    Fp r{};
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) r.v[i] = P::r_mod_p(i);
    return r;
  }
  // Raw copy of Montgomery limbs, as stored in .zkey files. Must be < p.
  ZK_HD static constexpr Fp from_mont(const uint64_t* limbs) {
    Fp r{};
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) r.v[i] = limbs[i];
    return r;
  }
  // Canonical integer -> Montgomery form. Meant for values < p; larger values
  // (up to 2^(64·kLimbs) - 1) come out reduced mod p.
  ZK_HD static Fp from_canonical(const uint64_t* limbs) {
    uint64_t r2[kLimbs];
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) r2[i] = P::r2_mod_p(i);
    Fp r;
    mont_mul(r2, limbs, r.v);  // R^2 · x · R^-1 = x·R
    return r;
  }
  ZK_HD static Fp from_uint(uint64_t x) {
    uint64_t limbs[kLimbs] = {x};
    return from_canonical(limbs);
  }
  // Montgomery form -> canonical integer limbs (< p).
  ZK_HD void to_canonical(uint64_t* out) const {
    uint64_t one_raw[kLimbs] = {1};
    mont_mul(v, one_raw, out);  // x·R · 1 · R^-1 = x
  }
  // a · raw · R^-1 mod p where raw is any kLimbs-word integer, not in
  // Montgomery form. With a = zkey coefficient c·R² and raw = witness w this
  // yields the Montgomery form of c·w (spec §4.3).
  ZK_HD static Fp mont_mul_raw(const Fp& a, const uint64_t* raw) {
    Fp r;
    mont_mul(a.v, raw, r.v);
    return r;
  }

  // ---- comparison ----------------------------------------------------------

  ZK_HD bool is_zero() const {
    uint64_t any = 0;
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) any |= v[i];
    return any == 0;
  }
  ZK_HD bool operator==(const Fp& o) const {
    uint64_t diff = 0;
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) diff |= v[i] ^ o.v[i];
    return diff == 0;
  }
  ZK_HD bool operator!=(const Fp& o) const { return !(*this == o); }

  // ---- arithmetic ----------------------------------------------------------

  ZK_HD Fp operator+(const Fp& o) const {
#if defined(ZKFLEET_FF_X86_ADX)
    if constexpr (kLimbs == 4) {
      Fp r;
      detail::add_mod_x86_4(r.v, v, o.v, P::modulus(0), P::modulus(1), P::modulus(2), P::modulus(3));
      return r;
    }
#endif
    uint64_t sum[kLimbs];
    detail::add_n<kLimbs>(sum, v, o.v);  // no carry out: a + b < 2p < R
    Fp r;
    reduce_once(sum, r.v);
    return r;
  }
  ZK_HD Fp operator-(const Fp& o) const {
#if defined(ZKFLEET_FF_X86_ADX)
    if constexpr (kLimbs == 4) {
      Fp r;
      detail::sub_mod_x86_4(r.v, v, o.v, P::modulus(0), P::modulus(1), P::modulus(2), P::modulus(3));
      return r;
    }
#endif
    Fp r;
    const uint64_t borrow = detail::sub_n<kLimbs>(r.v, v, o.v);
    // On underflow add p back; mask instead of branch.
    const uint64_t mask = 0 - borrow;
    uint64_t p_or_zero[kLimbs];
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) p_or_zero[i] = P::modulus(i) & mask;
    detail::add_n<kLimbs>(r.v, r.v, p_or_zero);
    return r;
  }
  ZK_HD Fp operator*(const Fp& o) const {
    Fp r;
    mont_mul(v, o.v, r.v);
    return r;
  }
  ZK_HD Fp operator-() const { return neg(); }
  ZK_HD Fp& operator+=(const Fp& o) { return *this = *this + o; }
  ZK_HD Fp& operator-=(const Fp& o) { return *this = *this - o; }
  ZK_HD Fp& operator*=(const Fp& o) { return *this = *this * o; }

  ZK_HD Fp sqr() const { return *this * *this; }
  ZK_HD Fp dbl() const {
    uint64_t twice[kLimbs];
    // 2a < 2p < R, so the shifted-out top bit is always 0.
    ZK_UNROLL for (int i = kLimbs - 1; i > 0; --i) twice[i] = (v[i] << 1) | (v[i - 1] >> 63);
    twice[0] = v[0] << 1;
    Fp r;
    reduce_once(twice, r.v);
    return r;
  }
  ZK_HD Fp neg() const { return zero() - *this; }

  // x^e for the kLimbs-independent exponent e (little-endian limbs, canonical
  // integer, not Montgomery). Left-to-right square-and-multiply.
  ZK_HD Fp pow(const uint64_t* exponent, int exponent_limbs) const {
    Fp result = one();
    bool started = false;  // skip squaring 1 for the leading zero bits
    ZK_NO_UNROLL for (int i = exponent_limbs - 1; i >= 0; --i) {
      ZK_NO_UNROLL for (int bit = 63; bit >= 0; --bit) {
        if (started) result = result.sqr();
        if ((exponent[i] >> bit) & 1) {
          result = started ? result * *this : *this;
          started = true;
        }
      }
    }
    return result;
  }
  // x^(p-2) by Fermat; the inverse of 0 is 0.
  ZK_HD Fp inverse() const {
    uint64_t p_minus_2[kLimbs];
    uint64_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i)
      p_minus_2[i] = detail::sub_borrow(P::modulus(i), i == 0 ? 2 : 0, borrow);
    return pow(p_minus_2, kLimbs);
  }

  // Primitive 2^k-th root of unity w[k] = base^((p-1) >> k) with base = 5, the
  // exact roots snarkjs/ffjavascript use for its FFT (spec §1.2). Defined for
  // scalar fields only; k must be in [0, kTwoAdicity], otherwise returns zero.
  // Costs a full exponentiation: compute once, not in a loop.
  ZK_HD static Fp root_of_unity(int k)
    requires requires { P::kTwoAdicity; P::kRootOfUnityBase; }
  {
    if (k < 0 || k > P::kTwoAdicity) return zero();
    uint64_t exponent[kLimbs];
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) exponent[i] = P::modulus(i);
    exponent[0] -= 1;  // p is odd
    const int word_shift = k / 64, bit_shift = k % 64;
    for (int i = 0; i < kLimbs; ++i) {
      const int src = i + word_shift;
      uint64_t lo = src < kLimbs ? exponent[src] : 0;
      uint64_t hi = src + 1 < kLimbs ? exponent[src + 1] : 0;
      exponent[i] = bit_shift == 0 ? lo : (lo >> bit_shift) | (hi << (64 - bit_shift));
    }
    return from_uint(P::kRootOfUnityBase).pow(exponent, kLimbs);
  }

  // ---- limb-level kernels (public so that tuned code can reuse them) --------

  // out = a · b · R^-1 mod p, fully reduced. Requires a < p; b may be any
  // kLimbs-word integer. out may alias a or b.
  //
  // CIOS without the extra carry words: with a < p < R/2 the running value t
  // stays below 2p < R, so the top word is simply the sum of the two carries.
  ZK_HD static void mont_mul(const uint64_t* a, const uint64_t* b, uint64_t* out) {
#if defined(__CUDA_ARCH__) && !defined(ZKFLEET_FF_INLINE_DEVICE_MUL)
    // One out-of-line copy per field on the GPU: fully inlining every
    // multiplication makes curve kernels huge (a BLS12-381 G2 addition took
    // nvcc+ptxas 80 s instead of 5 s). Define ZKFLEET_FF_INLINE_DEVICE_MUL to
    // inline anyway, e.g. to compare speed.
    Fp x = from_mont(a), y = from_mont(b);
    Fp r = mont_mul_outlined(x, y);
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) out[i] = r.v[i];
#elif defined(ZKFLEET_FF_X86_ADX)
    if constexpr (kLimbs == 4 || kLimbs == 6) {
      mont_mul_x86(a, b, out);
    } else {
      mont_mul_inline(a, b, out);
    }
#else
    mont_mul_inline(a, b, out);
#endif
  }

#if defined(ZKFLEET_FF_X86_ADX)
  // Host only: the assembly needs the modulus in memory.
  static void mont_mul_x86(const uint64_t* a, const uint64_t* b, uint64_t* out) {
    struct Words {
      uint64_t w[kLimbs];
    };
    static constexpr Words kModulus = [] {
      Words m{};
      for (int i = 0; i < kLimbs; ++i) m.w[i] = P::modulus(i);
      return m;
    }();
    uint64_t t[kLimbs];
    if constexpr (kLimbs == 4) {
      detail::mont_mul_adx_4(a, b, kModulus.w, P::kInv, t);
    } else {
      detail::mont_mul_adx_6(a, b, kModulus.w, P::kInv, t);
    }
    reduce_once(t, out);
  }
#endif

#if defined(__CUDACC__) && !defined(ZKFLEET_FF_INLINE_DEVICE_MUL)
  // Arguments by value so they travel in registers, not through local memory.
  __device__ __noinline__ static Fp mont_mul_outlined(Fp a, Fp b) {
    Fp r;
    mont_mul_inline(a.v, b.v, r.v);
    return r;
  }
#endif

  ZK_HD static void mont_mul_inline(const uint64_t* a, const uint64_t* b, uint64_t* out) {
    uint64_t t[kLimbs];
    ZK_UNROLL for (int j = 0; j < kLimbs; ++j) t[j] = 0;
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) {
      const uint64_t bi = b[i];
      uint64_t carry_ab, carry_mp;
      const uint64_t t0 = detail::mul_add2(a[0], bi, t[0], 0, carry_ab);
      const uint64_t m = t0 * P::kInv;  // makes t + m·p divisible by 2^64
      detail::mul_add2(m, P::modulus(0), t0, 0, carry_mp);
      ZK_UNROLL for (int j = 1; j < kLimbs; ++j) {
        const uint64_t tj = detail::mul_add2(a[j], bi, t[j], carry_ab, carry_ab);
        t[j - 1] = detail::mul_add2(m, P::modulus(j), tj, carry_mp, carry_mp);
      }
      t[kLimbs - 1] = carry_ab + carry_mp;
    }
    reduce_once(t, out);
  }

  // out = t < p ? t : t - p, for t < 2p. Branch-free select. out may alias t.
  ZK_HD static void reduce_once(const uint64_t* t, uint64_t* out) {
    uint64_t p[kLimbs], diff[kLimbs];
    modulus_limbs(p);
    const uint64_t borrow = detail::sub_n<kLimbs>(diff, t, p);
    // borrow == 1 means t < p: keep t. A select per limb (cmov / selp), no branch.
    ZK_UNROLL for (int i = 0; i < kLimbs; ++i) out[i] = borrow ? t[i] : diff[i];
  }
};

}  // namespace zkfleet::ff
