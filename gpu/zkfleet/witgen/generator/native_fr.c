/* zkfleet-native: Fr_F1m_mul Fr_F1m_square Fr_F1m_add Fr_F1m_sub Fr_F1m_neg Fr_F1m_mReduct Fr_F1m_toMontgomery Fr_F1m_fromMontgomery */
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
 */
#include <stdint.h>
#include <string.h>

typedef struct {
  uint64_t p[4];    /* the prime, little-endian words */
  uint64_t inv;     /* -p^-1 mod 2^64 */
  uint64_t r2[4];   /* R^2 mod p, R = 2^256 */
  uint64_t one[4];  /* R mod p (Montgomery one) */
} zkf_field_t;

static const zkf_field_t zkf_bn254 = {
    {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL, 0xb85045b68181585dULL, 0x30644e72e131a029ULL},
    0xc2e1f593efffffffULL,
    {0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL, 0x8c49833d53bb8085ULL, 0x0216d0b17f4e44a5ULL},
    {0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL, 0x666ea36f7879462eULL, 0x0e0a77c19a07df2fULL}};

/* BLS12-381 scalar field r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
 * = 52435875175126190479447740508185965837690552500527637822603658699938581184513
 * (what circom 2.2.3 --prime bls12381 writes into the wasm). */
static const zkf_field_t zkf_bls12_381 = {
    {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL},
    0xfffffffeffffffffULL,
    {0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL, 0x05d314967254398fULL, 0x0748d9d99f59ff11ULL},
    {0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL}};

static int zkf_on = 0;     /* 1: native code active */
static zkf_field_t zkf_f;  /* the active field's constants */

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
      zkf_on = 1;
      return 1;
    }
  }
  return 0;
}

/* ---- memory access: offsets into the wasm linear memory ---- */
#define ZKF_MEM(inst) ((inst)->w2c_memory.data)
static inline uint64_t zkf_ld64(const uint8_t* m, uint32_t off) { uint64_t v; memcpy(&v, m + off, 8); return v; }
static inline void zkf_st64(uint8_t* m, uint32_t off, uint64_t v) { memcpy(m + off, &v, 8); }
static inline void zkf_ld4(const uint8_t* m, uint32_t off, uint64_t a[4]) { memcpy(a, m + off, 32); }
static inline void zkf_st4(uint8_t* m, uint32_t off, const uint64_t a[4]) { memcpy(m + off, a, 32); }

/* ---- 256-bit helpers ---- */
typedef unsigned __int128 zkf_u128;

/* r = a - p if a >= p (a < 2p), canonical result. */
static inline void zkf_reduce_once(uint64_t r[4], const uint64_t a[4], const uint64_t p[4]) {
  uint64_t t[4];
  unsigned char b = 0;
  for (int i = 0; i < 4; i++) {
    zkf_u128 d = (zkf_u128)a[i] - p[i] - b;
    t[i] = (uint64_t)d;
    b = (unsigned char)((d >> 64) & 1);
  }
  if (b) { r[0] = a[0]; r[1] = a[1]; r[2] = a[2]; r[3] = a[3]; }
  else { r[0] = t[0]; r[1] = t[1]; r[2] = t[2]; r[3] = t[3]; }
}

/* Fr_F1m_add semantics: s = x + y (mod 2^256, carry c); if c or s >= p: s -= p (mod 2^256). */
static inline void zkf_add(uint64_t r[4], const uint64_t x[4], const uint64_t y[4], const uint64_t p[4]) {
  uint64_t s[4], t[4];
  zkf_u128 acc = 0;
  for (int i = 0; i < 4; i++) { acc = (zkf_u128)x[i] + y[i] + (uint64_t)(acc >> 64); s[i] = (uint64_t)acc; }
  unsigned carry = (unsigned)(acc >> 64);
  unsigned char b = 0;
  for (int i = 0; i < 4; i++) {
    zkf_u128 d = (zkf_u128)s[i] - p[i] - b;
    t[i] = (uint64_t)d;
    b = (unsigned char)((d >> 64) & 1);
  }
  /* s >= p  <=>  no borrow */
  if (carry | (b ^ 1)) { r[0] = t[0]; r[1] = t[1]; r[2] = t[2]; r[3] = t[3]; }
  else { r[0] = s[0]; r[1] = s[1]; r[2] = s[2]; r[3] = s[3]; }
}

/* Fr_F1m_sub semantics: s = x - y (mod 2^256, borrow b); if b: s += p (mod 2^256). */
static inline void zkf_sub(uint64_t r[4], const uint64_t x[4], const uint64_t y[4], const uint64_t p[4]) {
  uint64_t s[4];
  unsigned char b = 0;
  for (int i = 0; i < 4; i++) {
    zkf_u128 d = (zkf_u128)x[i] - y[i] - b;
    s[i] = (uint64_t)d;
    b = (unsigned char)((d >> 64) & 1);
  }
  uint64_t mask = (uint64_t)0 - (uint64_t)b;
  zkf_u128 acc = 0;
  for (int i = 0; i < 4; i++) { acc = (zkf_u128)s[i] + (p[i] & mask) + (uint64_t)(acc >> 64); r[i] = (uint64_t)acc; }
}

/* Montgomery product a*b*2^-256 mod p, canonical; needs a, b < p. */
#if defined(__x86_64__) && defined(__BMI2__) && defined(__ADX__)
/* The asm is gpu/zkfleet/ff/mont_mul_x86.hpp's mont_mul_adx_4 (generated by
 * gen_mont_mul_x86.py there), copied into C; its result is < 2p and is then
 * reduced once. */
static inline void zkf_mont_mul(uint64_t* out, const uint64_t* a, const uint64_t* b, const zkf_field_t* F) {
  uint64_t r0, r1, r2, r3, r4, lo, hi;
  const uint64_t* p = F->p;
  uint64_t inv = F->inv;
  asm("xorl %k[r0], %k[r0]\n\t"
      "xorl %k[r1], %k[r1]\n\t"
      "xorl %k[r2], %k[r2]\n\t"
      "xorl %k[r3], %k[r3]\n\t"
      "xorl %k[r4], %k[r4]\n\t"
      "movq 0(%[b]), %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "adoxq %[hi], %[r1]\n\t"
      "mulxq 8(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "adoxq %[hi], %[r2]\n\t"
      "mulxq 16(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      "adoxq %[hi], %[r3]\n\t"
      "mulxq 24(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "movq %[r0], %%rdx\n\t"
      "imulq %[inv], %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "adoxq %[hi], %[r1]\n\t"
      "mulxq 8(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "adoxq %[hi], %[r2]\n\t"
      "mulxq 16(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      "adoxq %[hi], %[r3]\n\t"
      "mulxq 24(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "movq 8(%[b]), %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "adoxq %[hi], %[r2]\n\t"
      "mulxq 8(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      "adoxq %[hi], %[r3]\n\t"
      "mulxq 16(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "mulxq 24(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "adoxq %[hi], %[r0]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "movq %[r1], %%rdx\n\t"
      "imulq %[inv], %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "adoxq %[hi], %[r2]\n\t"
      "mulxq 8(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      "adoxq %[hi], %[r3]\n\t"
      "mulxq 16(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "mulxq 24(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "adoxq %[hi], %[r0]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "movq 16(%[b]), %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      "adoxq %[hi], %[r3]\n\t"
      "mulxq 8(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "mulxq 16(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "adoxq %[hi], %[r0]\n\t"
      "mulxq 24(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "adoxq %[hi], %[r1]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "movq %[r2], %%rdx\n\t"
      "imulq %[inv], %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      "adoxq %[hi], %[r3]\n\t"
      "mulxq 8(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "mulxq 16(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "adoxq %[hi], %[r0]\n\t"
      "mulxq 24(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "adoxq %[hi], %[r1]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "movq 24(%[b]), %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "mulxq 8(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "adoxq %[hi], %[r0]\n\t"
      "mulxq 16(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "adoxq %[hi], %[r1]\n\t"
      "mulxq 24(%[a]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "adoxq %[hi], %[r2]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      "movq %[r3], %%rdx\n\t"
      "imulq %[inv], %%rdx\n\t"
      "xorl %k[lo], %k[lo]\n\t"
      "mulxq 0(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r3]\n\t"
      "adoxq %[hi], %[r4]\n\t"
      "mulxq 8(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r4]\n\t"
      "adoxq %[hi], %[r0]\n\t"
      "mulxq 16(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r0]\n\t"
      "adoxq %[hi], %[r1]\n\t"
      "mulxq 24(%[p]), %[lo], %[hi]\n\t"
      "adcxq %[lo], %[r1]\n\t"
      "adoxq %[hi], %[r2]\n\t"
      "movl $0, %k[lo]\n\t"
      "adcxq %[lo], %[r2]\n\t"
      : [r0] "=&r"(r0), [r1] "=&r"(r1), [r2] "=&r"(r2), [r3] "=&r"(r3), [r4] "=&r"(r4), [lo] "=&r"(lo), [hi] "=&r"(hi)
      : [a] "r"(a), [b] "r"(b), [p] "r"(p), [inv] "m"(inv),
        "m"(*(const uint64_t(*)[4])a), "m"(*(const uint64_t(*)[4])b), "m"(*(const uint64_t(*)[4])p)
      : "rdx", "cc");
  uint64_t t[4] = {r4, r0, r1, r2};
  zkf_reduce_once(out, t, p);
}
#else
/* Portable CIOS with unsigned __int128 (same algorithm, result < 2p, then reduced once). */
static inline void zkf_mont_mul(uint64_t* out, const uint64_t* a, const uint64_t* b, const zkf_field_t* F) {
  const uint64_t* p = F->p;
  uint64_t t[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 4; i++) {
    zkf_u128 c = 0;
    for (int j = 0; j < 4; j++) {
      c = (zkf_u128)a[j] * b[i] + t[j] + (uint64_t)(c >> 64);
      t[j] = (uint64_t)c;
    }
    c = (zkf_u128)t[4] + (uint64_t)(c >> 64);
    t[4] = (uint64_t)c;
    t[5] = (uint64_t)(c >> 64);
    uint64_t m = t[0] * F->inv;
    c = (zkf_u128)m * p[0] + t[0];
    for (int j = 1; j < 4; j++) {
      c = (zkf_u128)m * p[j] + t[j] + (uint64_t)(c >> 64);
      t[j - 1] = (uint64_t)c;
    }
    c = (zkf_u128)t[4] + (uint64_t)(c >> 64);
    t[3] = (uint64_t)c;
    t[4] = t[5] + (uint64_t)(c >> 64);
  }
  zkf_reduce_once(out, t, p);
}
#endif

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
  zkf_mont_mul(r, a, zkf_f.r2, &zkf_f);
  zkf_st4(M, w2c_r, r);
}

/* The wasm copies x to a scratch area, zero-extends it to 512 bits and
 * calls mReduct: r = x * 2^-256 mod p. Here: the Montgomery product with 1. */
static void w2c_Fr_F1m_fromMontgomery(Z_circuit_instance_t* instance, u32 w2c_x, u32 w2c_r) {
  if (__builtin_expect(!zkf_on, 0)) { w2c_Fr_F1m_fromMontgomery_wasm(instance, w2c_x, w2c_r); return; }
  uint8_t* M = ZKF_MEM(instance);
  static const uint64_t one[4] = {1, 0, 0, 0};
  uint64_t a[4], r[4];
  zkf_ld4(M, w2c_x, a);
  zkf_mont_mul(r, a, one, &zkf_f);
  zkf_st4(M, w2c_r, r);
}
