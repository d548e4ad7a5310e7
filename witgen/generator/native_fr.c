/* zkfleet-native: Fr_F1m_mul Fr_F1m_square Fr_F1m_add Fr_F1m_sub Fr_F1m_neg Fr_F1m_mReduct Fr_F1m_toMontgomery Fr_F1m_fromMontgomery Fr_copy Fr_rawCopyS2L Fr_toMontgomery Fr_toNormal Fr_add Fr_sub Fr_mul Fr_eqR Fr_isNegative Fr_neg Fr_getLsb32 Fr_toInt Fr_toLongNormal Fr_gtR Fr_isTrue Fr_int_inverseMod Fr_lt Fr_mod */
/*
 * Native field arithmetic for circom's circuit.wasm, translated by wasm2c
 * (issue 31, docs/design/witgen-native-fr.md).
 *
 * This file is not compiled on its own: the witness-generator build appends
 * `#include "native_fr.c"` to wasm2c's circuit.c after renaming the
 * definitions of the functions listed on the first line to w2c_<NAME>_wasm.
 * It defines those functions again, with the same signatures, as native code
 * on 4 x 64-bit limbs. zkfleet_native_fr_select() switches the native code on
 * for the BN254 and BLS12-381 scalar fields; for any other prime every
 * function forwards to its wasm original.
 *
 * The results are bit-identical to circom's wasm code for every input the
 * wasm itself produces (canonical field elements, < p):
 *  - both use the Montgomery radix R = 2^256 (8 x 32 or 4 x 64 bits), and the
 *    Montgomery quotient m = -t p^-1 mod R does not depend on the word size;
 *  - every result is reduced to the canonical value, as the wasm does
 *    (it compares Montgomery words directly);
 *  - add/sub/neg follow the wasm's exact carry rules for any 256-bit input.
 *
 * The limb arithmetic is native_fr_limbs.h (its x86-64 assembly
 * native_fr_mont_x86.h, written at build time by gpu/zkfleet/ff/gen_mont_mul_x86.py,
 * which writes the host's mont_mul_x86.hpp), circom's tagged elements native_fr_tagged.h;
 * the build writes them next to this file. Here: the fields, the functions
 * that replace the wasm's, and the one-pass witness readout.
 */
#include <gmp.h>
#include <stdint.h>
#include <string.h>

/* The fast paths below are forced inline into the circuit's code (10% of a
 * 2^20 witness). A circuit with giant functions (generator_build.cpp's
 * MarkGiantFunctions then defines ZKF_NO_FORCED_INLINE) leaves it to the
 * compiler: forced into circomlib's 130,000-line constant-table functions
 * they kept cc1 busy for many minutes even at -O1. */
#ifdef ZKF_NO_FORCED_INLINE
#define ZKF_FAST_PATH static inline
#else
#define ZKF_FAST_PATH __attribute__((always_inline)) static inline
#endif

#include "native_fr_limbs.h"

static const zkf_field_t zkf_bn254 = {
    {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL},
    0xc2e1f593efffffffULL,
    {0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL, 0x8c49833d53bb8085ULL, 0x0216d0b17f4e44a5ULL},
    {0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL, 0x666ea36f7879462eULL, 0x0e0a77c19a07df2fULL},
    {0x5e94d8e1b4bf0040ULL, 0x2a489cbe1cfbb6b8ULL, 0x893cc664a19fcfedULL, 0x0cf8594b7fcc657cULL},
    {0xa1f0fac9f8000000ULL, 0x9419f4243cdcb848ULL, 0xdc2822db40c0ac2eULL, 0x183227397098d014ULL}};

/* BLS12-381 scalar field r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
 * = 52435875175126190479447740508185965837690552500527637822603658699938581184513
 * (what circom 2.2.3 --prime bls12381 writes into the wasm). */
static const zkf_field_t zkf_bls12_381 = {
    {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL},
    0xfffffffeffffffffULL,
    {0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL, 0x05d314967254398fULL, 0x0748d9d99f59ff11ULL},
    {0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL},
    {0xc62c1807439b73afULL, 0x1b3e0d188cf06990ULL, 0x73d13c71c7b5f418ULL, 0x6e2a5bb9c8db33e9ULL},
    {0x7fffffff80000000ULL, 0xa9ded2017fff2dffULL, 0x199cec0404d0ec02ULL, 0x39f6d3a994cebea4ULL}};

static int zkf_on = 0;     /* 1: native code active */
static zkf_field_t zkf_f;  /* the active field's constants */
/* Montgomery forms of small shorts, filled by zkfleet_native_fr_select:
 * zkf_small_mont[0][b] = b * R mod p and zkf_small_mont[1][b] = b * 256 * R
 * mod p, so v * R mod p for 0 <= v < 65536 is one table entry (v < 256) or
 * the modular sum of two. Most shorts that the benchmark circuits convert
 * (constants, loop-dependent coefficients) are below 65536. */
#define ZKF_SMALL 256
static uint64_t zkf_small_mont[2][ZKF_SMALL][4];

static void zkf_fill_small(void) {
  for (uint64_t v = 0; v < ZKF_SMALL; v++) {
    zkf_mont_mul_1w(zkf_small_mont[0][v], v, zkf_f.r2, &zkf_f);
    zkf_mont_mul_1w(zkf_small_mont[1][v], v * ZKF_SMALL, zkf_f.r2, &zkf_f);
  }
}

int zkfleet_native_fr_select(const uint32_t* prime_words, uint32_t n32) {
  const zkf_field_t* fields[2] = {&zkf_bn254, &zkf_bls12_381};
  zkf_on = 0;
  if (n32 != 8) return 0;
  for (int k = 0; k < 2; k++) {
    int same = 1;
    for (uint32_t j = 0; j < 8; j++) {
      uint32_t w = (uint32_t)(fields[k]->p[j / 2] >> (32 * (j % 2)));
      if (prime_words[j] != w) same = 0;
    }
    if (same) {
      zkf_f = *fields[k];
      zkf_fill_small();
      zkf_on = 1;
      return 1;
    }
  }
  return 0;
}

/* The wasm's linear memory, where the functions' offsets point. */
#define ZKF_MEM(inst) ((inst)->w2c_memory.data)

#include "native_fr_tagged.h"

/* ---- F1m level: raw 4-limb operands at wasm offsets ---- */

static void w2c_Fr_F1m_mul(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_y, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_mul_wasm(instance, w2c_x, w2c_y, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint64_t a[4], b[4], r[4];
  zkf_ld4(M, w2c_x, a); zkf_ld4(M, w2c_y, b);
  zkf_mont_mul(r, a, b, &zkf_f);
  zkf_st4(M, w2c_r, r);
}

static void w2c_Fr_F1m_square(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_square_wasm(instance, w2c_x, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint64_t a[4], r[4];
  zkf_ld4(M, w2c_x, a);
  zkf_mont_mul(r, a, a, &zkf_f);
  zkf_st4(M, w2c_r, r);
}

static void w2c_Fr_F1m_add(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_y, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_add_wasm(instance, w2c_x, w2c_y, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint64_t a[4], b[4], r[4];
  zkf_ld4(M, w2c_x, a); zkf_ld4(M, w2c_y, b);
  zkf_add(r, a, b, zkf_f.p);
  zkf_st4(M, w2c_r, r);
}

static void w2c_Fr_F1m_sub(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_y, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_sub_wasm(instance, w2c_x, w2c_y, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint64_t a[4], b[4], r[4];
  zkf_ld4(M, w2c_x, a); zkf_ld4(M, w2c_y, b);
  zkf_sub(r, a, b, zkf_f.p);
  zkf_st4(M, w2c_r, r);
}

/* Fr_F1m_neg(x, r) is Fr_F1m_sub(zero, x, r) in the wasm. */
static void w2c_Fr_F1m_neg(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_neg_wasm(instance, w2c_x, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  static const uint64_t zero[4] = {0, 0, 0, 0};
  uint64_t a[4], r[4];
  zkf_ld4(M, w2c_x, a);
  zkf_sub(r, zero, a, zkf_f.p);
  zkf_st4(M, w2c_r, r);
}

/* Fr_F1m_mReduct(t, r): t is 512 bits (8 words at t), r = t * 2^-256 mod p.
 * The wasm ends with Fr_F1m_add(carry words, high half), i.e. one conditional
 * subtraction; for t < p * 2^256 the result is canonical either way. */
static void w2c_Fr_F1m_mReduct(Z_circuit_instance_t* instance, u32 w2c_t, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_mReduct_wasm(instance, w2c_t, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  const uint64_t* p = zkf_f.p;
  uint64_t t[9];
  memcpy(t, M + w2c_t, 64);
  t[8] = 0;
  for (int i = 0; i < 4; i++) {
    uint64_t m = t[i] * zkf_f.inv;
    zkf_u128 c = 0;
    for (int j = 0; j < 4; j++) {
      c = (zkf_u128)m * p[j] + t[i + j] + (uint64_t)(c >> 64);
      t[i + j] = (uint64_t)c;
    }
    for (int k = i + 4; k < 9; k++) {
      c = (zkf_u128)t[k] + (uint64_t)(c >> 64);
      t[k] = (uint64_t)c;
    }
  }
  /* high half t[4..8] < 2p here for t < p*2^256 */
  uint64_t r[4];
  if (t[8]) {
    unsigned char b = 0;
    for (int i = 0; i < 4; i++) { zkf_u128 d = (zkf_u128)t[4 + i] - p[i] - b; r[i] = (uint64_t)d; b = (unsigned char)((d >> 64) & 1); }
  } else {
    zkf_reduce_once(r, t + 4, p);
  }
  zkf_st4(M, w2c_r, r);
}

static void w2c_Fr_F1m_toMontgomery(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_toMontgomery_wasm(instance, w2c_x, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint64_t a[4], r[4];
  zkf_ld4(M, w2c_x, a);
  if (!zkf_bit_to_mont(r, a)) zkf_mont_mul(r, a, zkf_f.r2, &zkf_f);
  zkf_st4(M, w2c_r, r);
}

/* The wasm copies x to a scratch area, zero-extends it to 512 bits and
 * calls mReduct: r = x * 2^-256 mod p. Here: a 4-word Montgomery reduction. */
static void w2c_Fr_F1m_fromMontgomery(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_fromMontgomery_wasm(instance, w2c_x, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint64_t a[4], r[4];
  zkf_ld4(M, w2c_x, a);
  if (!zkf_bit_from_mont(r, a)) zkf_mont_reduce4(r, a, &zkf_f);
  zkf_st4(M, w2c_r, r);
}

/* ---- tagged level: circom's 40-byte elements (native_fr_tagged.h) ----
 * Every function below follows the wasm's branch structure and writes the
 * same words of the element(s) in the same order, including the in-place
 * conversions of the operands. Only the wasm's private scratch areas (the
 * temporaries at addresses 8..48 and 1504..1600 of the field library, always
 * written before they are read) are not written. */

ZKF_FAST_PATH void w2c_Fr_copy(Z_circuit_instance_t* instance, u32 w2c_pr, u32 w2c_px) {
  /* The wasm's word order (load/store word 0, then 1, ...). The element
   * size depends on the field (40 bytes for 4 limbs, 16 for goldilocks), so
   * this needs the selector as well. */
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_copy_wasm(instance, w2c_pr, w2c_px); return; }
  uint8_t* M = ZKF_MEM(instance);
  zkf_st64(M, w2c_pr, zkf_ld64(M, w2c_px));
  zkf_st64(M, w2c_pr + 8, zkf_ld64(M, w2c_px + 8));
  zkf_st64(M, w2c_pr + 16, zkf_ld64(M, w2c_px + 16));
  zkf_st64(M, w2c_pr + 24, zkf_ld64(M, w2c_px + 24));
  zkf_st64(M, w2c_pr + 32, zkf_ld64(M, w2c_px + 32));
}

static void w2c_Fr_rawCopyS2L(Z_circuit_instance_t* instance, u32 w2c_pR, u64 w2c_v) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_rawCopyS2L_wasm(instance, w2c_pR, w2c_v); return; }
  zkf_s2l(ZKF_MEM(instance), w2c_pR, (int64_t)w2c_v);
}

static void w2c_Fr_toMontgomery(Z_circuit_instance_t* instance, u32 w2c_pR) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_toMontgomery_wasm(instance, w2c_pR); return; }
  zkf_to_mont(ZKF_MEM(instance), w2c_pR);
}

static void w2c_Fr_toNormal(Z_circuit_instance_t* instance, u32 w2c_pR) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_toNormal_wasm(instance, w2c_pR); return; }
  zkf_to_normal(ZKF_MEM(instance), w2c_pR);
}

/* Fr_add (is_sub = 0) and Fr_sub (is_sub = 1): identical branch structure. */
static inline void zkf_addsub(uint8_t* M, uint32_t pR, uint32_t pA, uint32_t pB, int is_sub) {
  unsigned fa = zkf_flags(M, pA), fb = zkf_flags(M, pB);
  uint64_t a[4], b[4], r[4];
  if (fa & ZKF_LONG) {
    if (fb & ZKF_LONG) {
      if (fa & ZKF_MONT) {
        if (!(fb & ZKF_MONT)) zkf_to_mont(M, pB);
        zkf_set_type(M, pR, ZKF_T_LONG_MONT);
      } else if (fb & ZKF_MONT) {
        zkf_to_mont(M, pA);
        zkf_set_type(M, pR, ZKF_T_LONG_MONT);
      } else {
        zkf_set_type(M, pR, ZKF_T_LONG_NORMAL);
      }
      zkf_ld4(M, pA + 8, a); zkf_ld4(M, pB + 8, b);
    } else {
      if (fa & ZKF_MONT) {
        zkf_to_mont(M, pB);
        zkf_set_type(M, pR, ZKF_T_LONG_MONT);
        zkf_ld4(M, pA + 8, a); zkf_ld4(M, pB + 8, b);
      } else {
        zkf_set_type(M, pR, ZKF_T_LONG_NORMAL);
        int64_t v = zkf_short(M, pB);
        zkf_ld4(M, pA + 8, a);
        if (v > 0) { b[0] = (uint64_t)v; b[1] = b[2] = b[3] = 0; }
        else { static const uint64_t zero[4] = {0, 0, 0, 0}; uint64_t n[4] = {(uint64_t)0 - (uint64_t)v, 0, 0, 0}; zkf_sub(b, zero, n, zkf_f.p); }
      }
    }
  } else if (fb & ZKF_LONG) {
    if (fb & ZKF_MONT) {
      zkf_to_mont(M, pA);
      zkf_set_type(M, pR, ZKF_T_LONG_MONT);
      zkf_ld4(M, pA + 8, a); zkf_ld4(M, pB + 8, b);
    } else {
      zkf_set_type(M, pR, ZKF_T_LONG_NORMAL);
      int64_t v = zkf_short(M, pA);
      zkf_ld4(M, pB + 8, b);
      if (v > 0) { a[0] = (uint64_t)v; a[1] = a[2] = a[3] = 0; }
      else { static const uint64_t zero[4] = {0, 0, 0, 0}; uint64_t n[4] = {(uint64_t)0 - (uint64_t)v, 0, 0, 0}; zkf_sub(a, zero, n, zkf_f.p); }
    }
  } else {
    int64_t x = zkf_short(M, pA), y = zkf_short(M, pB);
    int64_t s = is_sub ? x - y : x + y;
    if (zkf_fits32(s)) zkf_set_short(M, pR, s);
    else { zkf_set_type(M, pR, ZKF_T_LONG_NORMAL); zkf_s2l(M, pR + 8, s); }
    return;
  }
  if (is_sub) zkf_sub(r, a, b, zkf_f.p); else zkf_add(r, a, b, zkf_f.p);
  zkf_st4(M, pR + 8, r);
}

__attribute__((noinline)) static void zkf_Fr_add_full(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_add_wasm(instance, w2c_pR, w2c_pA, w2c_pB); return; }
  zkf_addsub(ZKF_MEM(instance), w2c_pR, w2c_pA, w2c_pB, 0);
}

__attribute__((noinline)) static void zkf_Fr_sub_full(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_sub_wasm(instance, w2c_pR, w2c_pA, w2c_pB); return; }
  zkf_addsub(ZKF_MEM(instance), w2c_pR, w2c_pA, w2c_pB, 1);
}

__attribute__((noinline)) static void zkf_Fr_mul_full(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_mul_wasm(instance, w2c_pR, w2c_pA, w2c_pB); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint32_t pR = w2c_pR, pA = w2c_pA, pB = w2c_pB;
  unsigned fa = zkf_flags(M, pA), fb = zkf_flags(M, pB);
  uint64_t a[4], b[4], r[4];
  int normal_normal = 0;
  if (fa & ZKF_LONG) {
    if (fb & ZKF_LONG) {
      if ((fa & ZKF_MONT) && (fb & ZKF_MONT)) zkf_set_type(M, pR, ZKF_T_LONG_MONT);
      else if ((fa & ZKF_MONT) || (fb & ZKF_MONT)) zkf_set_type(M, pR, ZKF_T_LONG_NORMAL);
      else { zkf_set_type(M, pR, ZKF_T_LONG_MONT); normal_normal = 1; }
    } else {
      int32_t v = zkf_short(M, pB);
      zkf_to_mont(M, pB);
      zkf_set_type(M, pR, (fa & ZKF_MONT) ? ZKF_T_LONG_MONT : ZKF_T_LONG_NORMAL);
      if (!(fb & ZKF_MONT) && v >= 0) {
        zkf_ld4(M, pA + 8, a);
        zkf_mul_small(r, (uint64_t)v, a, &zkf_f);
        zkf_st4(M, pR + 8, r);
        return;
      }
    }
  } else if (fb & ZKF_LONG) {
    int32_t v = zkf_short(M, pA);
    zkf_to_mont(M, pA);
    zkf_set_type(M, pR, (fb & ZKF_MONT) ? ZKF_T_LONG_MONT : ZKF_T_LONG_NORMAL);
    if (!(fa & ZKF_MONT) && v >= 0) {
      zkf_ld4(M, pB + 8, b);
      zkf_mul_small(r, (uint64_t)v, b, &zkf_f);
      zkf_st4(M, pR + 8, r);
      return;
    }
  } else {
    int64_t s = (int64_t)zkf_short(M, pA) * (int64_t)zkf_short(M, pB);
    if (zkf_fits32(s)) zkf_set_short(M, pR, s);
    else { zkf_set_type(M, pR, ZKF_T_LONG_NORMAL); zkf_s2l(M, pR + 8, s); }
    return;
  }
  zkf_ld4(M, pA + 8, a); zkf_ld4(M, pB + 8, b);
  /* Bit-valued signals (99% of a SHA-256 witness: XOR is a + b - 2ab, sums
   * of bits times powers of two): a factor 0, or 1 (R mod p in Montgomery
   * form), needs no full product. The same canonical words as the
   * product's: 0, the other factor, or (normal x normal, whose product is
   * in Montgomery form) the other factor into Montgomery form. */
  if ((a[0] | a[1] | a[2] | a[3]) == 0 || (b[0] | b[1] | b[2] | b[3]) == 0) {
    r[0] = r[1] = r[2] = r[3] = 0;
    zkf_st4(M, pR + 8, r);
    return;
  }
  if (normal_normal) {
    const int a_one = a[0] == 1 && (a[1] | a[2] | a[3]) == 0, b_one = b[0] == 1 && (b[1] | b[2] | b[3]) == 0;
    if (a_one || b_one) {
      zkf_mont_mul(r, a_one ? b : a, zkf_f.r2, &zkf_f);
      zkf_st4(M, pR + 8, r);
      return;
    }
  } else {
    const uint64_t* other = 0;
    if ((fa & ZKF_MONT) && zkf_is_mont_one(a)) {
      other = b;
    } else if ((fb & ZKF_MONT) && zkf_is_mont_one(b)) {
      other = a;
    }
    if (other) {
      zkf_st4(M, pR + 8, other);
      return;
    }
  }
  zkf_mont_mul(r, a, b, &zkf_f);
  if (normal_normal) { uint64_t t[4] = {r[0], r[1], r[2], r[3]}; zkf_mont_mul(r, t, zkf_f.r3, &zkf_f); }
  zkf_st4(M, pR + 8, r);
}

static inline int zkf_eq4(const uint8_t* M, uint32_t x, uint32_t y) { return memcmp(M + x, M + y, 32) == 0; }

__attribute__((noinline)) static u32 zkf_Fr_eqR_full(Z_circuit_instance_t* instance, u32 w2c_pA, u32 w2c_pB) {
  if (__builtin_expect(!zkf_on, 0)) return w2c_Fr_eqR_wasm(instance, w2c_pA, w2c_pB);
  uint8_t* M = ZKF_MEM(instance);
  uint32_t pA = w2c_pA, pB = w2c_pB;
  if (zkf_flags(M, pA) & ZKF_LONG) {
    if (!(zkf_flags(M, pB) & ZKF_LONG)) { zkf_s2l(M, pB + 8, zkf_short(M, pB)); zkf_set_type(M, pB, ZKF_T_LONG_NORMAL); }
  } else if (zkf_flags(M, pB) & ZKF_LONG) {
    zkf_s2l(M, pA + 8, zkf_short(M, pA)); zkf_set_type(M, pA, ZKF_T_LONG_NORMAL);
  } else {
    return zkf_short(M, pA) == zkf_short(M, pB);
  }
  if (zkf_flags(M, pA) & ZKF_MONT) {
    if (!(zkf_flags(M, pB) & ZKF_MONT)) zkf_to_normal(M, pA);
  } else if (zkf_flags(M, pB) & ZKF_MONT) {
    zkf_to_normal(M, pB);
  }
  return zkf_eq4(M, pA + 8, pB + 8);
}

/* ---- Modular inverse ----
 * Fr_inv, Fr_div and the F1m inverse all call int_inverseMod(x, m, r). The
 * wasm's version (an extended Euclid on 32-bit words through int_div) was
 * 85% of an 8 x EdDSA-Poseidon witness: BabyJubJub's point additions
 * divide. GMP's mpz_invert gives the same value (0 <= r < p, the inverse
 * for any x coprime to p). Zero, a value not below p, or another modulus go
 * to the wasm's own code, as everything does when the native code is off. */
static mpz_t zkf_inverse;
static int zkf_inverse_ready = 0;

static void w2c_Fr_int_inverseMod(Z_circuit_instance_t* instance, u32 w2c_px, u32 w2c_pm, u32 w2c_pr) {
  if (zkf_on) {
    uint8_t* M = ZKF_MEM(instance);
    uint64_t x[4], m[4];
    zkf_ld4(M, w2c_px, x);
    zkf_ld4(M, w2c_pm, m);
    if (memcmp(m, zkf_f.p, sizeof(m)) == 0 && (x[0] | x[1] | x[2] | x[3]) != 0 && zkf_gt4(m, x)) {
      if (!zkf_inverse_ready) {
        mpz_init2(zkf_inverse, 256);
        zkf_inverse_ready = 1;
      }
      mpz_t xz, mz;
      mp_limb_t xl[4] = {x[0], x[1], x[2], x[3]}, ml[4] = {m[0], m[1], m[2], m[3]};
      mpz_roinit_n(xz, xl, 4);
      mpz_roinit_n(mz, ml, 4);
      if (mpz_invert(zkf_inverse, xz, mz)) {
        uint64_t r[4] = {0, 0, 0, 0};
        const size_t n = mpz_size(zkf_inverse);
        for (size_t i = 0; i < n && i < 4; i++) r[i] = mpz_getlimbn(zkf_inverse, i);
        zkf_st4(M, w2c_pr, r);
        return;
      }
    }
  }
  w2c_Fr_int_inverseMod_wasm(instance, w2c_px, w2c_pm, w2c_pr);
}


static inline u32 zkf_is_negative(uint8_t* M, uint32_t pA) {
  if (zkf_flags(M, pA) & ZKF_LONG) {
    uint64_t a[4];
    zkf_to_normal(M, pA);
    zkf_ld4(M, pA + 8, a);
    return zkf_gt4(a, zkf_f.half);
  }
  return zkf_short(M, pA) < 0;
}

static u32 w2c_Fr_isNegative(Z_circuit_instance_t* instance, u32 w2c_pA) {
  if (__builtin_expect(!zkf_on, 0)) return w2c_Fr_isNegative_wasm(instance, w2c_pA);
  return zkf_is_negative(ZKF_MEM(instance), w2c_pA);
}

static void w2c_Fr_neg(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_neg_wasm(instance, w2c_pR, w2c_pA); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint32_t pR = w2c_pR, pA = w2c_pA;
  unsigned fa = zkf_flags(M, pA);
  if (fa & ZKF_LONG) {
    static const uint64_t zero[4] = {0, 0, 0, 0};
    uint64_t a[4], r[4];
    zkf_set_type(M, pR, (fa & ZKF_MONT) ? ZKF_T_LONG_MONT : ZKF_T_LONG_NORMAL);
    zkf_ld4(M, pA + 8, a);
    zkf_sub(r, zero, a, zkf_f.p);
    zkf_st4(M, pR + 8, r);
  } else {
    int64_t s = 0 - (int64_t)zkf_short(M, pA);
    if (zkf_fits32(s)) zkf_set_short(M, pR, s);
    else { zkf_set_type(M, pR, ZKF_T_LONG_NORMAL); zkf_s2l(M, pR + 8, s); }
  }
}

static inline u32 zkf_lsb32(uint8_t* M, uint32_t pA) {
  uint32_t v;
  if (zkf_flags(M, pA) & ZKF_LONG) { zkf_to_normal(M, pA); memcpy(&v, M + pA + 8, 4); }
  else memcpy(&v, M + pA, 4);
  return v;
}

static u32 w2c_Fr_getLsb32(Z_circuit_instance_t* instance, u32 w2c_pA) {
  if (__builtin_expect(!zkf_on, 0)) return w2c_Fr_getLsb32_wasm(instance, w2c_pA);
  return zkf_lsb32(ZKF_MEM(instance), w2c_pA);
}

/* Fr_toInt: if negative, the wasm negates into its scratch element at
 * address 8 and returns 0 - getLsb32(scratch); computed here directly:
 * a long (now normal) a > (p-1)/2 gives 0 - low32(p - a); a negative short s
 * gives 0 - low32(-s) = s (also for s = INT32_MIN, via the long path). */
__attribute__((noinline)) static u32 zkf_Fr_toInt_full(Z_circuit_instance_t* instance, u32 w2c_pA) {
  if (__builtin_expect(!zkf_on, 0)) return w2c_Fr_toInt_wasm(instance, w2c_pA);
  uint8_t* M = ZKF_MEM(instance);
  uint32_t pA = w2c_pA;
  if (zkf_is_negative(M, pA)) {
    if (zkf_flags(M, pA) & ZKF_LONG) {
      static const uint64_t zero[4] = {0, 0, 0, 0};
      uint64_t a[4], r[4];
      zkf_ld4(M, pA + 8, a);
      zkf_sub(r, zero, a, zkf_f.p);
      return 0u - (uint32_t)r[0];
    }
    return (uint32_t)zkf_short(M, pA);
  }
  return zkf_lsb32(M, pA);
}

static void w2c_Fr_toLongNormal(Z_circuit_instance_t* instance, u32 w2c_pR) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_toLongNormal_wasm(instance, w2c_pR); return; }
  uint8_t* M = ZKF_MEM(instance);
  uint32_t e = w2c_pR;
  unsigned f = zkf_flags(M, e);
  if (f & ZKF_LONG) {
    zkf_to_normal(M, e); /* only when Montgomery: type 0x80000000, then the reduction */
  } else {
    zkf_s2l(M, e + 8, zkf_short(M, e));
    zkf_set_type(M, e, ZKF_T_LONG_NORMAL);
  }
}

__attribute__((noinline)) static u32 zkf_Fr_gtR_full(Z_circuit_instance_t* instance, u32 w2c_pA, u32 w2c_pB) {
  if (__builtin_expect(!zkf_on, 0)) return w2c_Fr_gtR_wasm(instance, w2c_pA, w2c_pB);
  uint8_t* M = ZKF_MEM(instance);
  uint32_t pA = w2c_pA, pB = w2c_pB;
  if (zkf_flags(M, pA) & ZKF_LONG) {
    if (!(zkf_flags(M, pB) & ZKF_LONG)) { zkf_s2l(M, pB + 8, zkf_short(M, pB)); zkf_set_type(M, pB, ZKF_T_LONG_NORMAL); }
  } else if (zkf_flags(M, pB) & ZKF_LONG) {
    zkf_s2l(M, pA + 8, zkf_short(M, pA)); zkf_set_type(M, pA, ZKF_T_LONG_NORMAL);
  } else {
    return zkf_short(M, pA) > zkf_short(M, pB);
  }
  zkf_to_normal(M, pA);
  zkf_to_normal(M, pB);
  uint64_t a[4], b[4];
  zkf_ld4(M, pA + 8, a); zkf_ld4(M, pB + 8, b);
  int na = zkf_gt4(a, zkf_f.half), nb = zkf_gt4(b, zkf_f.half);
  if (na) return nb ? (u32)zkf_gt4(a, b) : 0u;
  return nb ? 1u : (u32)zkf_gt4(a, b);
}

__attribute__((noinline)) static u32 zkf_Fr_isTrue_full(Z_circuit_instance_t* instance, u32 w2c_px) {
  if (__builtin_expect(!zkf_on, 0)) return w2c_Fr_isTrue_wasm(instance, w2c_px);
  const uint8_t* M = ZKF_MEM(instance);
  uint32_t e = w2c_px;
  if (zkf_flags(M, e) & ZKF_LONG)
    return (zkf_ld64(M, e + 8) | zkf_ld64(M, e + 16) | zkf_ld64(M, e + 24) | zkf_ld64(M, e + 32)) != 0;
  return zkf_short(M, e) != 0;
}

/* ---- fast paths inlined at the call sites ----
 * circom keeps its vars (indices, loop counters, small constants) as short
 * elements, and the template code does most of its calls on them: a 2^20
 * Poseidon chain makes 1.6M of its 4.3M Fr_mul calls on two shorts. Those
 * are done here, in the caller, exactly as the *_full bodies above would do
 * them (same result, same words written); anything else calls those bodies.
 * 10% of a 2^20 witness. */
#define ZKF_BOTH_SHORT(M, a, b) (__builtin_expect(zkf_on, 1) && !(((M)[(a) + 7] | (M)[(b) + 7]) & ZKF_LONG))
#define ZKF_IS_SHORT(M, a) (__builtin_expect(zkf_on, 1) && !((M)[(a) + 7] & ZKF_LONG))
/* A long element in normal form whose value is below 2^64 (limbs 1..3
 * zero): circom's vars once a % or a constant made them long (SHA-256's
 * rotation indices). Such values are far below (p-1)/2: never negative,
 * and a sum of two below 2^64 is its own residue. */
#define ZKF_IS_SMALL_LONG_NORMAL(M, a) \
  ((M)[(a) + 7] == 0x80 && (zkf_ld64(M, (a) + 16) | zkf_ld64(M, (a) + 24) | zkf_ld64(M, (a) + 32)) == 0)
#define ZKF_BOTH_SMALL_LONG_NORMAL(M, a, b) \
  (__builtin_expect(zkf_on, 1) && ZKF_IS_SMALL_LONG_NORMAL(M, a) && ZKF_IS_SMALL_LONG_NORMAL(M, b))
/* The limbs of element e set to a value below 2^64 (the type word is the caller's). */
static inline void zkf_st_small_limbs(uint8_t* M, uint32_t e, uint64_t v) {
  zkf_st64(M, e + 8, v);
  zkf_st64(M, e + 16, 0);
  zkf_st64(M, e + 24, 0);
  zkf_st64(M, e + 32, 0);
}
/* The long normal sum or difference of two small long normal elements when
 * it stays below 2^64 (no carry, no borrow): what zkf_addsub writes for two
 * long normal operands, the type word and the limbs. 0: not taken. */
ZKF_FAST_PATH int zkf_small_long_addsub(uint8_t* M, uint32_t pR, uint32_t pA, uint32_t pB, int is_sub) {
  const uint64_t a = zkf_ld64(M, pA + 8), b = zkf_ld64(M, pB + 8);
  uint64_t r;
  if (is_sub ? __builtin_sub_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r)) return 0;
  zkf_set_type(M, pR, ZKF_T_LONG_NORMAL);
  zkf_st_small_limbs(M, pR, r);
  return 1;
}

ZKF_FAST_PATH void w2c_Fr_mul(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  uint8_t* M = ZKF_MEM(instance);
  if (ZKF_BOTH_SHORT(M, w2c_pA, w2c_pB)) {
    int64_t s = (int64_t)zkf_short(M, w2c_pA) * (int64_t)zkf_short(M, w2c_pB);
    if (zkf_fits32(s)) { zkf_set_short(M, w2c_pR, s); return; }
  }
  zkf_Fr_mul_full(instance, w2c_pR, w2c_pA, w2c_pB);
}

ZKF_FAST_PATH void w2c_Fr_add(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  uint8_t* M = ZKF_MEM(instance);
  if (ZKF_BOTH_SHORT(M, w2c_pA, w2c_pB)) {
    int64_t s = (int64_t)zkf_short(M, w2c_pA) + (int64_t)zkf_short(M, w2c_pB);
    if (zkf_fits32(s)) { zkf_set_short(M, w2c_pR, s); return; }
  } else if (ZKF_BOTH_SMALL_LONG_NORMAL(M, w2c_pA, w2c_pB) && zkf_small_long_addsub(M, w2c_pR, w2c_pA, w2c_pB, 0)) {
    return;
  }
  zkf_Fr_add_full(instance, w2c_pR, w2c_pA, w2c_pB);
}

ZKF_FAST_PATH void w2c_Fr_sub(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  uint8_t* M = ZKF_MEM(instance);
  if (ZKF_BOTH_SHORT(M, w2c_pA, w2c_pB)) {
    int64_t s = (int64_t)zkf_short(M, w2c_pA) - (int64_t)zkf_short(M, w2c_pB);
    if (zkf_fits32(s)) { zkf_set_short(M, w2c_pR, s); return; }
  } else if (ZKF_BOTH_SMALL_LONG_NORMAL(M, w2c_pA, w2c_pB) && zkf_small_long_addsub(M, w2c_pR, w2c_pA, w2c_pB, 1)) {
    return;
  }
  zkf_Fr_sub_full(instance, w2c_pR, w2c_pA, w2c_pB);
}

ZKF_FAST_PATH u32 w2c_Fr_isTrue(Z_circuit_instance_t* instance, u32 w2c_px) {
  const uint8_t* M = ZKF_MEM(instance);
  if (ZKF_IS_SHORT(M, w2c_px)) return zkf_short(M, w2c_px) != 0;
  return zkf_Fr_isTrue_full(instance, w2c_px);
}

/* a short is its own integer (zkf_is_negative, then the sign or zkf_lsb32) */
ZKF_FAST_PATH u32 w2c_Fr_toInt(Z_circuit_instance_t* instance, u32 w2c_pA) {
  const uint8_t* M = ZKF_MEM(instance);
  if (ZKF_IS_SHORT(M, w2c_pA)) return (u32)zkf_short(M, w2c_pA);
  if (__builtin_expect(zkf_on, 1) && ZKF_IS_SMALL_LONG_NORMAL(M, w2c_pA)) return (u32)zkf_ld64(M, w2c_pA + 8);
  return zkf_Fr_toInt_full(instance, w2c_pA);
}

ZKF_FAST_PATH u32 w2c_Fr_eqR(Z_circuit_instance_t* instance, u32 w2c_pA, u32 w2c_pB) {
  const uint8_t* M = ZKF_MEM(instance);
  if (ZKF_BOTH_SHORT(M, w2c_pA, w2c_pB)) return zkf_short(M, w2c_pA) == zkf_short(M, w2c_pB);
  if (ZKF_BOTH_SMALL_LONG_NORMAL(M, w2c_pA, w2c_pB)) return zkf_ld64(M, w2c_pA + 8) == zkf_ld64(M, w2c_pB + 8);
  return zkf_Fr_eqR_full(instance, w2c_pA, w2c_pB);
}

ZKF_FAST_PATH u32 w2c_Fr_gtR(Z_circuit_instance_t* instance, u32 w2c_pA, u32 w2c_pB) {
  const uint8_t* M = ZKF_MEM(instance);
  if (ZKF_BOTH_SHORT(M, w2c_pA, w2c_pB)) return zkf_short(M, w2c_pA) > zkf_short(M, w2c_pB);
  if (ZKF_BOTH_SMALL_LONG_NORMAL(M, w2c_pA, w2c_pB)) return zkf_ld64(M, w2c_pA + 8) > zkf_ld64(M, w2c_pB + 8);
  return zkf_Fr_gtR_full(instance, w2c_pA, w2c_pB);
}

/* Fr_lt(r, a, b): the wasm's own composition, eqR then gtR (each converts
 * its operands in place, in that order), r = a < b as a short 0 or 1 (one
 * 64-bit store: value and type word). */
static void w2c_Fr_lt(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_lt_wasm(instance, w2c_pR, w2c_pA, w2c_pB); return; }
  uint64_t r = 0;
  if (!w2c_Fr_eqR(instance, w2c_pA, w2c_pB)) r = w2c_Fr_gtR(instance, w2c_pA, w2c_pB) ? 0 : 1;
  zkf_st64(ZKF_MEM(instance), w2c_pR, r);
}

/* Fr_mod(r, a, b): the wasm turns a short operand long normal in place
 * (rawCopyS2L into the limbs, type word 0x80000000; the short word stays),
 * converts each operand to normal form in place, sets r's type word long
 * normal and divides the 256-bit integers with Fr_int_div (quotient into its
 * scratch area at 16, remainder into r's limbs). Here the division of values
 * below 2^64 is done natively (SHA-256's (i + r) % 32); larger ones, a zero
 * divisor and an r that is also an operand go to the wasm's own code. */
static void w2c_Fr_mod(Z_circuit_instance_t* instance, u32 w2c_pR, u32 w2c_pA, u32 w2c_pB) {
  if (__builtin_expect(!zkf_on, 0) || w2c_pR == w2c_pA || w2c_pR == w2c_pB) {
    w2c_Fr_mod_wasm(instance, w2c_pR, w2c_pA, w2c_pB);
    return;
  }
  uint8_t* M = ZKF_MEM(instance);
  const uint32_t operands[2] = {w2c_pA, w2c_pB};
  for (int i = 0; i < 2; i++) {
    const uint32_t e = operands[i];
    if (!(zkf_flags(M, e) & ZKF_LONG)) {
      zkf_s2l(M, e + 8, zkf_short(M, e));
      zkf_set_type(M, e, ZKF_T_LONG_NORMAL);
    }
    zkf_to_normal(M, e);
  }
  zkf_set_type(M, w2c_pR, ZKF_T_LONG_NORMAL);
  /* both operands are long normal now */
  const uint64_t b = zkf_ld64(M, w2c_pB + 8);
  if (!ZKF_IS_SMALL_LONG_NORMAL(M, w2c_pA) || !ZKF_IS_SMALL_LONG_NORMAL(M, w2c_pB) || b == 0) {
    w2c_Fr_int_div(instance, w2c_pA + 8, w2c_pB + 8, 16, w2c_pR + 8);
    return;
  }
  zkf_st_small_limbs(M, w2c_pR, zkf_ld64(M, w2c_pA + 8) % b);
}

/* ---- runs of constant copies ----
 * The build rolls circom's straight-line Fr_copy runs into tables of
 * segments (witgen/zkfleet/witgen/copy_runs.hpp); its zkf_copy_run, appended
 * after this file, asks here first. A segment of n elements is copied
 * without a call per element, the same bytes as n Fr_copy calls of 40 bytes
 * in order, when both ranges lie inside the memory without u32 wrap-around
 * and do not overlap; otherwise (0) the caller makes the Fr_copy calls. */
#define ZKF_NATIVE_COPY_SEGMENT 1
static int zkf_copy_segment(Z_circuit_instance_t* instance, u32 first, u32 source, u32 n, u32 size, u32 base) {
  if (!zkf_on || size != 40) return 0;
  const uint64_t dst = (uint64_t)first * 40 + base, src = source, bytes = (uint64_t)n * 40;
  const uint64_t memory = instance->w2c_memory.size;
  if ((uint64_t)first + n > 0xffffffffULL || dst + bytes > 0x100000000ULL || src + bytes > 0x100000000ULL) return 0;
  if (dst + bytes > memory || src + bytes > memory) return 0;
  if (dst < src + bytes && src < dst + bytes) return 0;
  /* element by element, each a fixed 40-byte copy the compiler inlines: the
   * segments are short (Poseidon's: ~4 elements), where a library call per
   * segment cost more than the copy */
  uint8_t* to = ZKF_MEM(instance) + dst;
  const uint8_t* from = ZKF_MEM(instance) + src;
  for (u32 k = 0; k < n; k++) memcpy(to + 40 * (size_t)k, from + 40 * (size_t)k, 40);
  return 1;
}

/* ---- the witness read out in one pass ----
 * circom's getWitness(i) looks the signal up in its witness table, copies
 * the element to its shared scratch area and converts it there to long
 * normal form; the driver then copies the 32 bytes out: one call and one
 * cache miss per signal, 18% of a 2^20 witness. When the patch recognised
 * getWitness's code it defines where the table, the signals and the scratch
 * area are (ZKF_GETWITNESS_*), and this does the same for `count` signals
 * from `first` into `out` (32 bytes each), fetching ahead, without writing
 * the wasm's memory. Returns 0 (nothing done) when not available. The
 * driver checks it against getWitness before using it. */
int zkfleet_native_read_witness(Z_circuit_instance_t* instance, uint32_t first, uint32_t count, uint8_t* out) {
#ifdef ZKF_GETWITNESS_TABLE
  if (!zkf_on) return 0;
  const uint8_t* M = ZKF_MEM(instance);
  const uint64_t size = instance->w2c_memory.size;
  const uint64_t end = (uint64_t)first + count;
  if ((uint64_t)ZKF_GETWITNESS_TABLE + 4 * end > size) return 0;
  enum { kAhead = 16 };
  for (uint64_t i = first; i < end; ++i) {
    if (i + kAhead < end) {
      uint32_t ahead;
      memcpy(&ahead, M + ZKF_GETWITNESS_TABLE + 4 * (i + kAhead), 4);
      uint64_t at = (uint64_t)(uint32_t)(ahead * (uint32_t)ZKF_GETWITNESS_SIZE + (uint32_t)ZKF_GETWITNESS_SIGNALS);
      if (at + 40 <= size) __builtin_prefetch(M + at);
    }
    uint32_t idx;
    memcpy(&idx, M + ZKF_GETWITNESS_TABLE + 4 * i, 4);
    /* i32 arithmetic, as the wasm does it */
    uint32_t e = idx * (uint32_t)ZKF_GETWITNESS_SIZE + (uint32_t)ZKF_GETWITNESS_SIGNALS;
    if ((uint64_t)e + 40 > size) return 0;
    uint64_t r[4];
    unsigned f = zkf_flags(M, e);
    if (f & ZKF_LONG) {
      zkf_ld4(M, e + 8, r);
      if (f & ZKF_MONT) {
        uint64_t a[4] = {r[0], r[1], r[2], r[3]};
        zkf_mont_reduce4(r, a, &zkf_f);
      }
    } else {
      int64_t v = zkf_short(M, e);
      if (v > 0) {
        r[0] = (uint64_t)v; r[1] = 0; r[2] = 0; r[3] = 0;
      } else {
        static const uint64_t zero[4] = {0, 0, 0, 0};
        uint64_t n[4] = {(uint64_t)0 - (uint64_t)v, 0, 0, 0};
        zkf_sub(r, zero, n, zkf_f.p);
      }
    }
    uint8_t* o = out + 32 * (i - first);
    memcpy(o, &r[0], 8); memcpy(o + 8, &r[1], 8); memcpy(o + 16, &r[2], 8); memcpy(o + 24, &r[3], 8);
  }
  return 1;
#else
  (void)instance; (void)first; (void)count; (void)out;
  return 0;
#endif
}
