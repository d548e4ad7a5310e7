// 64-bit word primitives with carries, the building blocks of multi-limb
// arithmetic. The host uses unsigned __int128 (g++ turns it into mul/adc); the
// device uses __umul64hi and explicit carry compares. Both give identical
// results, which tests/gpu/ff checks.
#pragma once

#include <cstdint>

#include "zkfleet/ff/hd.hpp"

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

}  // namespace zkfleet::ff::detail
