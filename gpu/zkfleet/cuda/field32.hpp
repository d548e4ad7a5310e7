// Fp32<P>: the GPU's prime field element. Same value, same bytes as
// ff::Fp<P> (Montgomery form, R = 2^(64·kLimbs), little-endian), but stored
// and computed as 2·kLimbs 32-bit words: the GPU multiplies 32x32->64 bits in
// one instruction (IMAD.WIDE.U32) while ff::Fp's 64-bit limbs need several
// emulated instructions per product. The code is plain C++ (no inline PTX) so
// that it runs bit-identically on the host, where tests compare it with ff::Fp.
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

#include "zkfleet/ff/field.hpp"
#include "zkfleet/ff/fp2.hpp"
#include "zkfleet/ff/hd.hpp"

// A host/device function the device compiler must not inline.
#if defined(__CUDACC__)
#define ZK_HD_NOINLINE __host__ __device__ __noinline__
#else
#define ZK_HD_NOINLINE inline
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
    uint64_t carry = 0;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) {
      const uint64_t s = static_cast<uint64_t>(v[i]) + o.v[i] + carry;
      sum[i] = static_cast<uint32_t>(s);
      carry = s >> 32;
    }
    Fp32 r;
    reduce_once(sum, r.v);  // a + b < 2p < R: no carry out of the top word
    return r;
  }
  ZK_HD Fp32 operator-(const Fp32& o) const {
    Fp32 r;
    uint32_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) {
      const uint64_t d = static_cast<uint64_t>(v[i]) - o.v[i] - borrow;
      r.v[i] = static_cast<uint32_t>(d);
      borrow = static_cast<uint32_t>(d >> 63);
    }
    const uint32_t mask = 0u - borrow;  // add p back on underflow
    uint64_t carry = 0;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) {
      const uint64_t s = static_cast<uint64_t>(r.v[i]) + (mod(i) & mask) + carry;
      r.v[i] = static_cast<uint32_t>(s);
      carry = s >> 32;
    }
    return r;
  }
  ZK_HD Fp32 operator*(const Fp32& o) const {
    Fp32 r;
    if constexpr (kWords > 8) {
      mont_mul_outlined(v, o.v, r.v);
    } else {
      mont_mul(v, o.v, r.v);
    }
    return r;
  }
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
  // Per outer step: t += a·b[i], then t = (t + m·p) / 2^32 with m chosen to
  // clear the low word. t stays < 2p < R, so the top word is the sum of the
  // two carries (the "no carry" CIOS condition).
  ZK_HD static void mont_mul(const uint32_t* a, const uint32_t* b, uint32_t* out) {
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

  // The same, as a real call on the device: for 12-word (381-bit) fields the
  // inlined multiplication makes G2 kernels too large to compile in
  // reasonable time; a call costs little next to 288 multiply-adds.
  ZK_HD_NOINLINE static void mont_mul_outlined(const uint32_t* a, const uint32_t* b, uint32_t* out) {
    mont_mul(a, b, out);
  }

  // out = t < p ? t : t - p for t < 2p. out may alias t.
  ZK_HD static void reduce_once(const uint32_t* t, uint32_t* out) {
    uint32_t diff[kWords];
    uint32_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < kWords; ++i) {
      const uint64_t d = static_cast<uint64_t>(t[i]) - mod(i) - borrow;
      diff[i] = static_cast<uint32_t>(d);
      borrow = static_cast<uint32_t>(d >> 63);
    }
    const uint32_t keep_t = 0u - borrow;  // all ones when t < p
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
