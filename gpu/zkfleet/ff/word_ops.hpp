// 64-bit word primitives with carries, the building blocks of multi-limb
// arithmetic. The host uses unsigned __int128 (g++ turns it into mul/adc); the
// device uses __umul64hi and explicit carry compares. Both give identical
// results, which tests/gpu/ff checks.
#pragma once

#include <cstdint>

#include "zkfleet/ff/hd.hpp"

#if !defined(__CUDA_ARCH__) && (defined(__x86_64__) || defined(_M_X64))
#include <x86intrin.h>  // _addcarry_u64 / _subborrow_u64: g++ emits adc/sbb chains
#define ZKFLEET_FF_X86_CARRY 1
#endif

namespace zkfleet::ff::detail {

#if !defined(__CUDA_ARCH__)
__extension__ typedef unsigned __int128 uint128_t;
#endif

// Returns the low word of a + b + carry; carry (0 or 1) becomes the carry out.
ZK_HD uint64_t add_carry(uint64_t a, uint64_t b, uint64_t& carry) {
#if defined(__CUDA_ARCH__)
  uint64_t sum = a + b;
  uint64_t carry_out = sum < a;
  sum += carry;
  carry_out |= sum < carry;
  carry = carry_out;
  return sum;
#elif defined(ZKFLEET_FF_X86_CARRY)
  unsigned long long sum;
  carry = _addcarry_u64(static_cast<unsigned char>(carry), a, b, &sum);
  return sum;
#else
  uint128_t sum = static_cast<uint128_t>(a) + b + carry;
  carry = static_cast<uint64_t>(sum >> 64);
  return static_cast<uint64_t>(sum);
#endif
}

// Returns the low word of a - b - borrow; borrow (0 or 1) becomes the borrow out.
ZK_HD uint64_t sub_borrow(uint64_t a, uint64_t b, uint64_t& borrow) {
#if defined(__CUDA_ARCH__)
  uint64_t diff = a - b;
  uint64_t borrow_out = a < b;
  borrow_out |= diff < borrow;
  diff -= borrow;
  borrow = borrow_out;
  return diff;
#elif defined(ZKFLEET_FF_X86_CARRY)
  unsigned long long diff;
  borrow = _subborrow_u64(static_cast<unsigned char>(borrow), a, b, &diff);
  return diff;
#else
  uint128_t diff = static_cast<uint128_t>(a) - b - borrow;
  borrow = static_cast<uint64_t>(diff >> 64) & 1;
  return static_cast<uint64_t>(diff);
#endif
}

// Returns the low word of a * b + c + d and stores the high word in hi.
// Cannot overflow: (2^64-1)^2 + 2(2^64-1) = 2^128 - 1.
ZK_HD uint64_t mul_add2(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t& hi) {
#if defined(__CUDA_ARCH__)
  uint64_t lo = a * b;
  uint64_t high = __umul64hi(a, b);
  lo += c;
  high += lo < c;
  lo += d;
  high += lo < d;
  hi = high;
  return lo;
#else
  uint128_t t = static_cast<uint128_t>(a) * b + c + d;
  hi = static_cast<uint64_t>(t >> 64);
  return static_cast<uint64_t>(t);
#endif
}

// r = a + b over N limbs; returns the carry out (0 or 1). r may alias a or b.
// On the GPU, for the limb counts we use, one PTX carry chain (add with carry-out, then addc)
// replaces the compare-based carries: about a quarter of the instructions.
template <int N>
ZK_HD uint64_t add_n(uint64_t* r, const uint64_t* a, const uint64_t* b) {
#if defined(__CUDA_ARCH__)
  if constexpr (N == 4) {
    uint64_t carry;
    asm("add.cc.u64 %0, %5, %9;\n\t"
        "addc.cc.u64 %1, %6, %10;\n\t"
        "addc.cc.u64 %2, %7, %11;\n\t"
        "addc.cc.u64 %3, %8, %12;\n\t"
        "addc.u64 %4, 0, 0;"
        : "=l"(r[0]), "=l"(r[1]), "=l"(r[2]), "=l"(r[3]), "=l"(carry)
        : "l"(a[0]), "l"(a[1]), "l"(a[2]), "l"(a[3]), "l"(b[0]), "l"(b[1]), "l"(b[2]), "l"(b[3]));
    return carry;
  } else if constexpr (N == 6) {
    uint64_t carry;
    asm("add.cc.u64 %0, %7, %13;\n\t"
        "addc.cc.u64 %1, %8, %14;\n\t"
        "addc.cc.u64 %2, %9, %15;\n\t"
        "addc.cc.u64 %3, %10, %16;\n\t"
        "addc.cc.u64 %4, %11, %17;\n\t"
        "addc.cc.u64 %5, %12, %18;\n\t"
        "addc.u64 %6, 0, 0;"
        : "=l"(r[0]), "=l"(r[1]), "=l"(r[2]), "=l"(r[3]), "=l"(r[4]), "=l"(r[5]), "=l"(carry)
        : "l"(a[0]), "l"(a[1]), "l"(a[2]), "l"(a[3]), "l"(a[4]), "l"(a[5]),
          "l"(b[0]), "l"(b[1]), "l"(b[2]), "l"(b[3]), "l"(b[4]), "l"(b[5]));
    return carry;
  } else
#endif
  {
    uint64_t carry = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) r[i] = add_carry(a[i], b[i], carry);
    return carry;
  }
}

// r = a - b over N limbs; returns the borrow out (0 or 1). r may alias a or b.
template <int N>
ZK_HD uint64_t sub_n(uint64_t* r, const uint64_t* a, const uint64_t* b) {
#if defined(__CUDA_ARCH__)
  if constexpr (N == 4) {
    uint64_t borrow;
    asm("sub.cc.u64 %0, %5, %9;\n\t"
        "subc.cc.u64 %1, %6, %10;\n\t"
        "subc.cc.u64 %2, %7, %11;\n\t"
        "subc.cc.u64 %3, %8, %12;\n\t"
        "subc.u64 %4, 0, 0;"
        : "=l"(r[0]), "=l"(r[1]), "=l"(r[2]), "=l"(r[3]), "=l"(borrow)
        : "l"(a[0]), "l"(a[1]), "l"(a[2]), "l"(a[3]), "l"(b[0]), "l"(b[1]), "l"(b[2]), "l"(b[3]));
    return borrow & 1;  // 0 - 0 - borrow is 0 or all ones
  } else if constexpr (N == 6) {
    uint64_t borrow;
    asm("sub.cc.u64 %0, %7, %13;\n\t"
        "subc.cc.u64 %1, %8, %14;\n\t"
        "subc.cc.u64 %2, %9, %15;\n\t"
        "subc.cc.u64 %3, %10, %16;\n\t"
        "subc.cc.u64 %4, %11, %17;\n\t"
        "subc.cc.u64 %5, %12, %18;\n\t"
        "subc.u64 %6, 0, 0;"
        : "=l"(r[0]), "=l"(r[1]), "=l"(r[2]), "=l"(r[3]), "=l"(r[4]), "=l"(r[5]), "=l"(borrow)
        : "l"(a[0]), "l"(a[1]), "l"(a[2]), "l"(a[3]), "l"(a[4]), "l"(a[5]),
          "l"(b[0]), "l"(b[1]), "l"(b[2]), "l"(b[3]), "l"(b[4]), "l"(b[5]));
    return borrow & 1;
  } else
#endif
  {
    uint64_t borrow = 0;
    ZK_UNROLL for (int i = 0; i < N; ++i) r[i] = sub_borrow(a[i], b[i], borrow);
    return borrow;
  }
}

}  // namespace zkfleet::ff::detail
