// 32-bit add and multiply-add with a carry flag, the building blocks of
// Fp32's multi-word arithmetic.
//
// On the device each function is one PTX instruction that reads and/or sets
// the hardware carry flag (CC.CF): a chain of them compiles to IMAD/IADD3
// with carry-in and carry-out, one instruction per 32-bit partial product or
// sum, instead of the 64-bit adds and shifts that portable C++ needs. On the
// host the flag is the explicit `cf` argument, so the same chains run (and
// are tested) on the CPU bit for bit. On the device `cf` is unused and
// compiles away.
//
// Rules for a chain (as in PTX): a `_cc` function sets the flag, a `c`
// function (madc, addc, subc) reads it; nothing else may sit between two
// links that touch the flag except plain arithmetic without a carry. Each
// device function is a separate `asm volatile`, which keeps their order.
//
// Thread-safety: pure functions.
#pragma once

#include <cassert>
#include <cstdint>

#include "zkfleet/ff/hd.hpp"

namespace zkfleet::cuda::carry32 {

#if defined(__CUDA_ARCH__)

// d = lo(a·b) + c, flag = carry out.
ZK_HD uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t&) {
  uint32_t d;
  asm volatile("mad.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// d = lo(a·b) + c + flag, flag = carry out.
ZK_HD uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t&) {
  uint32_t d;
  asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// d = hi(a·b) + c, flag = carry out.
ZK_HD uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t&) {
  uint32_t d;
  asm volatile("mad.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// d = hi(a·b) + c + flag, flag = carry out.
ZK_HD uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t&) {
  uint32_t d;
  asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// d = hi(a·b) + c + flag (the caller knows there is no carry out).
ZK_HD uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c, uint32_t&) {
  uint32_t d;
  asm volatile("madc.hi.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}
// hi(a·b), no flag. Next to a_lo = a·b, ptxas makes the pair one IMAD.WIDE.U32.
ZK_HD uint32_t mul_hi(uint32_t a, uint32_t b) { return __umulhi(a, b); }
// d = a + b, flag = carry out.
ZK_HD uint32_t add_cc(uint32_t a, uint32_t b, uint32_t&) {
  uint32_t d;
  asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// d = a + b + flag, flag = carry out.
ZK_HD uint32_t addc_cc(uint32_t a, uint32_t b, uint32_t&) {
  uint32_t d;
  asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// d = a + b + flag.
ZK_HD uint32_t addc(uint32_t a, uint32_t b, uint32_t&) {
  uint32_t d;
  asm volatile("addc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// d = a - b, flag = borrow out.
ZK_HD uint32_t sub_cc(uint32_t a, uint32_t b, uint32_t&) {
  uint32_t d;
  asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// d = a - b - flag, flag = borrow out.
ZK_HD uint32_t subc_cc(uint32_t a, uint32_t b, uint32_t&) {
  uint32_t d;
  asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
// d = a - b - flag.
ZK_HD uint32_t subc(uint32_t a, uint32_t b, uint32_t&) {
  uint32_t d;
  asm volatile("subc.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

#else  // host: the flag is `cf`

ZK_HD uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t& cf) {
  const uint64_t s = uint64_t{a * b} + c;
  cf = static_cast<uint32_t>(s >> 32);
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t& cf) {
  const uint64_t s = uint64_t{a * b} + c + cf;
  cf = static_cast<uint32_t>(s >> 32);
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t& cf) {
  const uint64_t s = ((uint64_t{a} * b) >> 32) + c;
  cf = static_cast<uint32_t>(s >> 32);
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c, uint32_t& cf) {
  const uint64_t s = ((uint64_t{a} * b) >> 32) + c + cf;
  cf = static_cast<uint32_t>(s >> 32);
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c, uint32_t& cf) {
  const uint64_t s = ((uint64_t{a} * b) >> 32) + c + cf;
  assert(s >> 32 == 0 && "madc_hi: the caller's bound was wrong, a carry was lost");
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t mul_hi(uint32_t a, uint32_t b) { return static_cast<uint32_t>((uint64_t{a} * b) >> 32); }
ZK_HD uint32_t add_cc(uint32_t a, uint32_t b, uint32_t& cf) {
  const uint64_t s = uint64_t{a} + b;
  cf = static_cast<uint32_t>(s >> 32);
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t addc_cc(uint32_t a, uint32_t b, uint32_t& cf) {
  const uint64_t s = uint64_t{a} + b + cf;
  cf = static_cast<uint32_t>(s >> 32);
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t addc(uint32_t a, uint32_t b, uint32_t& cf) {
  const uint64_t s = uint64_t{a} + b + cf;
  assert(s >> 32 == 0 && "addc: the caller's bound was wrong, a carry was lost");
  return static_cast<uint32_t>(s);
}
ZK_HD uint32_t sub_cc(uint32_t a, uint32_t b, uint32_t& cf) {
  cf = a < b ? 1u : 0u;
  return a - b;
}
ZK_HD uint32_t subc_cc(uint32_t a, uint32_t b, uint32_t& cf) {
  const uint64_t d = uint64_t{a} - b - cf;
  cf = static_cast<uint32_t>(d >> 63);
  return static_cast<uint32_t>(d);
}
ZK_HD uint32_t subc(uint32_t a, uint32_t b, uint32_t& cf) { return a - b - cf; }

#endif

}  // namespace zkfleet::cuda::carry32
