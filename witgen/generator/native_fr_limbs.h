/*
 * native_fr.c's arithmetic on 4 x 64-bit limbs (native_fr.c includes this
 * file; it is not compiled on its own): loads and stores in the wasm's linear
 * memory, add/sub with the wasm's carry rules, the Montgomery product and
 * reduction (the x86-64 BMI2/ADX assembly of native_fr_mont_x86.h where the
 * compiler may use those instructions, a portable CIOS elsewhere), and the
 * products by one word. Every result is canonical (< p), as the wasm's are.
 */
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__BMI2__) && defined(__ADX__)
#define ZKF_X86_ADX 1
#endif

typedef struct {
  uint64_t p[4];    /* the prime, little-endian words */
  uint64_t inv;     /* -p^-1 mod 2^64 */
  uint64_t r2[4];   /* R^2 mod p, R = 2^256 */
  uint64_t one[4];  /* R mod p (Montgomery one) */
  uint64_t r3[4];   /* R^3 mod p */
  uint64_t half[4]; /* (p - 1) / 2 */
} zkf_field_t;

/* ---- memory access: offsets into the wasm linear memory ---- */
static inline uint64_t zkf_ld64(const uint8_t* m, uint32_t off) { uint64_t v; memcpy(&v, m + off, 8); return v; }
static inline void zkf_st64(uint8_t* m, uint32_t off, uint64_t v) { memcpy(m + off, &v, 8); }
/* Word by word, not as one 32-byte memcpy: gcc turns that into a 256-bit
 * vector load/store, and a vector load of limbs just written by 64-bit
 * stores (or the reverse) stalls on store forwarding, which cost a third
 * of the time of Fr_add. */
static inline void zkf_ld4(const uint8_t* m, uint32_t off, uint64_t a[4]) {
  a[0] = zkf_ld64(m, off); a[1] = zkf_ld64(m, off + 8); a[2] = zkf_ld64(m, off + 16); a[3] = zkf_ld64(m, off + 24);
}
static inline void zkf_st4(uint8_t* m, uint32_t off, const uint64_t a[4]) {
  zkf_st64(m, off, a[0]); zkf_st64(m, off + 8, a[1]); zkf_st64(m, off + 16, a[2]); zkf_st64(m, off + 24, a[3]);
}

/* ---- 256-bit helpers ---- */
typedef unsigned __int128 zkf_u128;

/* add/subtract with carry: adc/sbb through the x86 intrinsics, else __int128 */
#if defined(__x86_64__)
#include <x86intrin.h>
static inline unsigned char zkf_adc(unsigned char c, uint64_t a, uint64_t b, uint64_t* r) {
  unsigned long long t;
  c = _addcarry_u64(c, a, b, &t);
  *r = t;
  return c;
}
static inline unsigned char zkf_sbb(unsigned char c, uint64_t a, uint64_t b, uint64_t* r) {
  unsigned long long t;
  c = _subborrow_u64(c, a, b, &t);
  *r = t;
  return c;
}
#else
static inline unsigned char zkf_adc(unsigned char c, uint64_t a, uint64_t b, uint64_t* r) {
  zkf_u128 t = (zkf_u128)a + b + c;
  *r = (uint64_t)t;
  return (unsigned char)(t >> 64);
}
static inline unsigned char zkf_sbb(unsigned char c, uint64_t a, uint64_t b, uint64_t* r) {
  zkf_u128 t = (zkf_u128)a - b - c;
  *r = (uint64_t)t;
  return (unsigned char)((t >> 64) & 1);
}
#endif

/* r = (take ? t : s), without a branch (the condition is data-dependent) */
static inline void zkf_select(uint64_t r[4], uint64_t take, const uint64_t t[4], const uint64_t s[4]) {
  if (take) { r[0] = t[0]; r[1] = t[1]; r[2] = t[2]; r[3] = t[3]; }
  else { r[0] = s[0]; r[1] = s[1]; r[2] = s[2]; r[3] = s[3]; }
}

/* r = a - p if a >= p (a < 2p), canonical result. */
static inline void zkf_reduce_once(uint64_t r[4], const uint64_t a[4], const uint64_t p[4]) {
  uint64_t t[4];
  unsigned char b = 0;
  b = zkf_sbb(b, a[0], p[0], &t[0]);
  b = zkf_sbb(b, a[1], p[1], &t[1]);
  b = zkf_sbb(b, a[2], p[2], &t[2]);
  b = zkf_sbb(b, a[3], p[3], &t[3]);
  zkf_select(r, b ^ 1, t, a);
}

/* Fr_F1m_add semantics: s = x + y (mod 2^256, carry c); if c or s >= p: s -= p (mod 2^256). */
static inline void zkf_add(uint64_t r[4], const uint64_t x[4], const uint64_t y[4], const uint64_t p[4]) {
  uint64_t s[4], t[4];
  unsigned char c = 0, b = 0;
  c = zkf_adc(c, x[0], y[0], &s[0]);
  c = zkf_adc(c, x[1], y[1], &s[1]);
  c = zkf_adc(c, x[2], y[2], &s[2]);
  c = zkf_adc(c, x[3], y[3], &s[3]);
  b = zkf_sbb(b, s[0], p[0], &t[0]);
  b = zkf_sbb(b, s[1], p[1], &t[1]);
  b = zkf_sbb(b, s[2], p[2], &t[2]);
  b = zkf_sbb(b, s[3], p[3], &t[3]);
  /* s >= p  <=>  no borrow */
  zkf_select(r, (uint64_t)(c | (b ^ 1)), t, s);
}

/* Fr_F1m_sub semantics: s = x - y (mod 2^256, borrow b); if b: s += p (mod 2^256). */
static inline void zkf_sub(uint64_t r[4], const uint64_t x[4], const uint64_t y[4], const uint64_t p[4]) {
  uint64_t s[4];
  unsigned char b = 0, c = 0;
  b = zkf_sbb(b, x[0], y[0], &s[0]);
  b = zkf_sbb(b, x[1], y[1], &s[1]);
  b = zkf_sbb(b, x[2], y[2], &s[2]);
  b = zkf_sbb(b, x[3], y[3], &s[3]);
  uint64_t mask = (uint64_t)0 - (uint64_t)b;
  c = zkf_adc(c, s[0], p[0] & mask, &r[0]);
  c = zkf_adc(c, s[1], p[1] & mask, &r[1]);
  c = zkf_adc(c, s[2], p[2] & mask, &r[2]);
  c = zkf_adc(c, s[3], p[3] & mask, &r[3]);
}

/* Montgomery product a*b*2^-256 mod p, canonical; needs a, b < p. */
#ifdef ZKF_X86_ADX
#include "native_fr_mont_x86.h" /* zkf_mont_mul and zkf_mont_reduce4 */
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

/* v * B * 2^-256 mod p for a one-word v (B < p): t = v*B (5 words), then 4
 * Montgomery reduction rounds; (t + m p) / 2^256 < 2p, reduced once. Used for
 * fromMontgomery (v = 1) and toMontgomery of positive shorts (B = R^2): a
 * quarter of the products of a full Montgomery product, same canonical result. */
static inline void zkf_mont_mul_1w(uint64_t* out, uint64_t v, const uint64_t* B, const zkf_field_t* F) {
  const uint64_t* p = F->p;
  uint64_t t[5];
  zkf_u128 c = 0;
  for (int j = 0; j < 4; j++) { c = (zkf_u128)B[j] * v + (uint64_t)(c >> 64); t[j] = (uint64_t)c; }
  t[4] = (uint64_t)(c >> 64);
  for (int i = 0; i < 4; i++) {
    uint64_t m = t[0] * F->inv;
    c = (zkf_u128)m * p[0] + t[0];
    for (int j = 1; j < 4; j++) { c = (zkf_u128)m * p[j] + t[j] + (uint64_t)(c >> 64); t[j - 1] = (uint64_t)c; }
    c = (zkf_u128)t[4] + (uint64_t)(c >> 64);
    t[3] = (uint64_t)c;
    t[4] = (uint64_t)(c >> 64);
  }
  zkf_reduce_once(out, t, p);
}

/* Montgomery reduction of a 4-word a: a * 2^-256 mod p, canonical (any a < 2^256:
 * (a + m p) / 2^256 <= p, reduced once). fromMontgomery and toNormal. */
#ifndef ZKF_X86_ADX
static inline void zkf_mont_reduce4(uint64_t* out, const uint64_t* a, const zkf_field_t* F) {
  zkf_mont_mul_1w(out, 1, a, F);
}
#endif

/* v * b mod p for 0 <= v < 2^31 and b < p, canonical. This is what the wasm's
 * Fr_mul computes when one operand is a non-negative short: it converts the
 * short in place to v*R mod p and takes the Montgomery product
 * (v R) b R^-1 = v b mod p. Here: t = v*b (5 words), a quotient estimate
 * q = floor(t / 2^192) / (p3 + 1) <= floor(t / p) that is at most 2 short
 * (t < 2^31 p and p3 >= 2^61), t - q p, and at most two subtractions of p. */
static inline void zkf_mul_small(uint64_t r[4], uint64_t v, const uint64_t b[4], const zkf_field_t* F) {
  const uint64_t* p = F->p;
  uint64_t t[5], s[5];
  zkf_u128 c = 0;
  for (int j = 0; j < 4; j++) { c = (zkf_u128)b[j] * v + (uint64_t)(c >> 64); t[j] = (uint64_t)c; }
  t[4] = (uint64_t)(c >> 64);
  uint64_t d = p[3] + 1, q;
#if defined(__x86_64__)
  { uint64_t rem; asm("divq %[d]" : "=a"(q), "=d"(rem) : "a"(t[3]), "d"(t[4]), [d] "r"(d) : "cc"); }
#else
  q = (uint64_t)((((zkf_u128)t[4] << 64) | t[3]) / d);
#endif
  c = 0;
  for (int j = 0; j < 4; j++) { c = (zkf_u128)p[j] * q + (uint64_t)(c >> 64); s[j] = (uint64_t)c; }
  s[4] = (uint64_t)(c >> 64);
  unsigned char bw = 0;
  for (int j = 0; j < 5; j++) bw = zkf_sbb(bw, t[j], s[j], &t[j]);
  for (int k = 0; k < 2; k++) {
    /* t >= p ? (t[4] != 0 or the 4-word compare) */
    uint64_t u[4];
    unsigned char b2 = 0;
    for (int j = 0; j < 4; j++) b2 = zkf_sbb(b2, t[j], p[j], &u[j]);
    if (t[4] == 0 && b2) break;
    t[4] -= b2;
    t[0] = u[0]; t[1] = u[1]; t[2] = u[2]; t[3] = u[3];
  }
  r[0] = t[0]; r[1] = t[1]; r[2] = t[2]; r[3] = t[3];
}

/* x > y, unsigned 256-bit (Fr_int_gt) */
static inline int zkf_gt4(const uint64_t x[4], const uint64_t y[4]) {
  for (int i = 3; i > 0; i--) { if (x[i] < y[i]) return 0; if (x[i] > y[i]) return 1; }
  return x[0] > y[0];
}
