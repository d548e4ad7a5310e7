// Modular addition and subtraction of 4-limb field elements on x86-64, the
// host's most frequent operations after the product (an affine point
// addition in Fq2 makes about 13 of them). Written out because g++ compiles
// the portable carry chains of field.hpp with their masks or selects between
// the adds, so it saves and restores the carry flag (setb / add $0xff) at
// every limb; here each chain runs unbroken and the result is chosen with
// cmov or one mask computed before the chain.
//
// Requires a, b < p < 2^255 (so a + b does not leave 256 bits). Results are
// canonical (< p). Compiled only where mont_mul_x86.hpp's assembly is
// (ZKFLEET_FF_X86_ADX); tests/unit/ff checks the results against GMP, and
// ff_portable_test checks the portable code path.
#pragma once

#include <cstdint>

#include "zkfleet/ff/mont_mul_x86.hpp"  // ZKFLEET_FF_X86_ADX

#if defined(ZKFLEET_FF_X86_ADX)

namespace zkfleet::ff::detail {

// r = a - b mod p: a - b, then p added back under the borrow's mask.
inline void sub_mod_x86_4(uint64_t* r, const uint64_t* a, const uint64_t* b, uint64_t p0, uint64_t p1,
                          uint64_t p2, uint64_t p3) {
  uint64_t r0 = a[0], r1 = a[1], r2 = a[2], r3 = a[3], mask;
  asm("subq 0(%[b]), %[r0]\n\t"
      "sbbq 8(%[b]), %[r1]\n\t"
      "sbbq 16(%[b]), %[r2]\n\t"
      "sbbq 24(%[b]), %[r3]\n\t"
      "sbbq %[mask], %[mask]\n\t"  // all ones after a borrow, else 0
      "andq %[mask], %[p0]\n\t"
      "andq %[mask], %[p1]\n\t"
      "andq %[mask], %[p2]\n\t"
      "andq %[mask], %[p3]\n\t"
      "addq %[p0], %[r0]\n\t"
      "adcq %[p1], %[r1]\n\t"
      "adcq %[p2], %[r2]\n\t"
      "adcq %[p3], %[r3]\n\t"
      : [r0] "+&r"(r0), [r1] "+&r"(r1), [r2] "+&r"(r2), [r3] "+&r"(r3), [mask] "=&r"(mask), [p0] "+&r"(p0),
        [p1] "+&r"(p1), [p2] "+&r"(p2), [p3] "+&r"(p3)
      : [b] "r"(b), "m"(*(const uint64_t(*)[4])b)
      : "cc");
  r[0] = r0, r[1] = r1, r[2] = r2, r[3] = r3;
}

// r = a + b mod p: a + b, then a + b - p kept unless it borrowed.
inline void add_mod_x86_4(uint64_t* r, const uint64_t* a, const uint64_t* b, uint64_t p0, uint64_t p1,
                          uint64_t p2, uint64_t p3) {
  uint64_t r0 = a[0], r1 = a[1], r2 = a[2], r3 = a[3], t0, t1, t2, t3;
  asm("addq 0(%[b]), %[r0]\n\t"
      "adcq 8(%[b]), %[r1]\n\t"
      "adcq 16(%[b]), %[r2]\n\t"
      "adcq 24(%[b]), %[r3]\n\t"
      "movq %[r0], %[t0]\n\t"
      "movq %[r1], %[t1]\n\t"
      "movq %[r2], %[t2]\n\t"
      "movq %[r3], %[t3]\n\t"
      "subq %[p0], %[t0]\n\t"
      "sbbq %[p1], %[t1]\n\t"
      "sbbq %[p2], %[t2]\n\t"
      "sbbq %[p3], %[t3]\n\t"
      "cmovncq %[t0], %[r0]\n\t"  // no borrow: a + b >= p, take a + b - p
      "cmovncq %[t1], %[r1]\n\t"
      "cmovncq %[t2], %[r2]\n\t"
      "cmovncq %[t3], %[r3]\n\t"
      : [r0] "+&r"(r0), [r1] "+&r"(r1), [r2] "+&r"(r2), [r3] "+&r"(r3), [t0] "=&r"(t0), [t1] "=&r"(t1),
        [t2] "=&r"(t2), [t3] "=&r"(t3)
      : [b] "r"(b), "m"(*(const uint64_t(*)[4])b), [p0] "rm"(p0), [p1] "rm"(p1), [p2] "rm"(p2), [p3] "rm"(p3)
      : "cc");
  r[0] = r0, r[1] = r1, r[2] = r2, r[3] = r3;
}

}  // namespace zkfleet::ff::detail

#endif  // ZKFLEET_FF_X86_ADX
