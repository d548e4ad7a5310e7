/*
 * circom's tagged field elements for native_fr.c (which includes this file;
 * it is not compiled on its own): reading and writing the 40-byte elements,
 * a short into long form, and conversions into and out of Montgomery form,
 * with the shortcuts for small shorts and for bits. Uses the active field
 * (zkf_f) and its table of small Montgomery forms (zkf_small_mont).
 *
 * An element: offset 0: i32 short value; offset 4: i32 type word, whose
 * byte 7 holds the flags 0x80 (long: the limbs at offset 8 hold the value)
 * and 0x40 (Montgomery form); offsets 8..39: 4 little-endian u64 limbs.
 * Type words the wasm writes: 0 (short), 0x80000000 (long normal),
 * 0xC0000000 (long Montgomery) and 0x40000000 (a short converted in place by
 * Fr_toMontgomery: still read as short, limbs hold its Montgomery form).
 */
#define ZKF_LONG 0x80
#define ZKF_MONT 0x40
#define ZKF_T_LONG_NORMAL 0x80000000u
#define ZKF_T_LONG_MONT 0xC0000000u
#define ZKF_T_SHORT_MONT 0x40000000u

static inline unsigned zkf_flags(const uint8_t* M, uint32_t e) { return M[e + 7]; }
static inline int32_t zkf_short(const uint8_t* M, uint32_t e) { int32_t v; memcpy(&v, M + e, 4); return v; }
static inline void zkf_set_type(uint8_t* M, uint32_t e, uint32_t t) { memcpy(M + e + 4, &t, 4); }
static inline void zkf_set_short(uint8_t* M, uint32_t e, int64_t r) {
  uint32_t v = (uint32_t)r, z = 0;
  memcpy(M + e, &v, 4);
  memcpy(M + e + 4, &z, 4);
}
/* (r >> 31) is 0 or -1: r fits in an i32 */
static inline int zkf_fits32(int64_t r) { int64_t o = r >> 31; return o == 0 || o == -1; }

/* Fr_rawCopyS2L(pR, v): pR = v mod p as 4 limbs (v > 0 stored as is, else p - (-v) via F1m_neg). */
static inline void zkf_s2l(uint8_t* M, uint32_t off, int64_t v) {
  uint64_t r[4];
  if (v > 0) {
    r[0] = (uint64_t)v; r[1] = 0; r[2] = 0; r[3] = 0;
  } else {
    static const uint64_t zero[4] = {0, 0, 0, 0};
    uint64_t a[4] = {(uint64_t)0 - (uint64_t)v, 0, 0, 0};
    zkf_sub(r, zero, a, zkf_f.p);
  }
  zkf_st4(M, off, r);
}

/* Bits in and out of Montgomery form (most of a SHA-256 witness converts
 * 0s and 1s): 0 <-> 0 and 1 <-> R mod p without a product. The same
 * canonical words as the product's; 0 when `a` is neither (then the caller
 * multiplies). */
static inline int zkf_bit_to_mont(uint64_t r[4], const uint64_t a[4]) {
  if ((a[1] | a[2] | a[3]) != 0 || a[0] > 1) return 0;
  if (a[0] == 0) { r[0] = r[1] = r[2] = r[3] = 0; }
  else { r[0] = zkf_f.one[0]; r[1] = zkf_f.one[1]; r[2] = zkf_f.one[2]; r[3] = zkf_f.one[3]; }
  return 1;
}
/* a == R mod p: one in Montgomery form. */
static inline int zkf_is_mont_one(const uint64_t a[4]) {
  return a[0] == zkf_f.one[0] && a[1] == zkf_f.one[1] && a[2] == zkf_f.one[2] && a[3] == zkf_f.one[3];
}
static inline int zkf_bit_from_mont(uint64_t r[4], const uint64_t a[4]) {
  if ((a[0] | a[1] | a[2] | a[3]) == 0) { r[0] = r[1] = r[2] = r[3] = 0; return 1; }
  if (zkf_is_mont_one(a)) {
    r[0] = 1; r[1] = r[2] = r[3] = 0;
    return 1;
  }
  return 0;
}

static inline void zkf_to_mont(uint8_t* M, uint32_t e) {
  unsigned f = zkf_flags(M, e);
  if (f & ZKF_MONT) return;
  uint64_t a[4], r[4];
  if (f & ZKF_LONG) {
    zkf_set_type(M, e, ZKF_T_LONG_MONT);
    zkf_ld4(M, e + 8, a);
    if (!zkf_bit_to_mont(r, a)) zkf_mont_mul(r, a, zkf_f.r2, &zkf_f);
    zkf_st4(M, e + 8, r);
  } else {
    /* the wasm: rawCopyS2L into the limbs, then F1m_toMontgomery in place */
    int64_t v = zkf_short(M, e);
    if (v >= 0 && v < ZKF_SMALL) {
      const uint64_t* t = zkf_small_mont[0][v];
      r[0] = t[0]; r[1] = t[1]; r[2] = t[2]; r[3] = t[3];
    } else if (v >= 0 && v < ZKF_SMALL * ZKF_SMALL) {
      zkf_add(r, zkf_small_mont[0][v & (ZKF_SMALL - 1)], zkf_small_mont[1][v >> 8], zkf_f.p);
    } else if (v > 0) {
      zkf_mont_mul_1w(r, (uint64_t)v, zkf_f.r2, &zkf_f);
    } else {
      zkf_s2l(M, e + 8, v);
      zkf_ld4(M, e + 8, a);
      zkf_mont_mul(r, a, zkf_f.r2, &zkf_f);
    }
    zkf_st4(M, e + 8, r);
    zkf_set_type(M, e, ZKF_T_SHORT_MONT);
  }
}

static inline void zkf_to_normal(uint8_t* M, uint32_t e) {
  unsigned f = zkf_flags(M, e);
  if ((f & ZKF_MONT) && (f & ZKF_LONG)) {
    uint64_t a[4], r[4];
    zkf_set_type(M, e, ZKF_T_LONG_NORMAL);
    zkf_ld4(M, e + 8, a);
    if (!zkf_bit_from_mont(r, a)) zkf_mont_reduce4(r, a, &zkf_f);
    zkf_st4(M, e + 8, r);
  }
}
