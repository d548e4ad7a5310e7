// Points of a short Weierstrass curve y^2 = x^3 + b (a = 0), in three
// coordinate systems, with complete group operations for host and device.
//
//   Affine<Cfg>   (x, y). (0, 0) is the point at infinity: that is how snarkjs
//                 encodes infinity in .zkey files (spec §3). (0, 0) is never
//                 on these curves since b != 0.
//   Jacobian<Cfg> (X, Y, Z) with x = X/Z^2, y = Y/Z^3; Z == 0 is infinity.
//   Xyzz<Cfg>     (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ and ZZ^3 = ZZZ^2;
//                 ZZ == 0 is infinity. Cheapest for MSM bucket accumulation.
//
// Cfg provides `using Field = ...;` (Fp or Fp2) and `ZK_HD static Field b();`.
//
// "Complete" here means every addition handles the special cases: either
// operand infinity, P + P (doubles) and P + (-P) (gives infinity). The cases
// are detected with branches; on the GPU these diverge rarely in an MSM.
// Formulas: hyperelliptic.org EFD, "shortw-jacobian-0" and "shortw-xyzz".
//
// Thread-safety: value types and pure functions, nothing shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zkfleet/ff/batch_inverse.hpp"
#include "zkfleet/ff/hd.hpp"

namespace zkfleet::curve {

template <class Cfg>
struct Affine {
  using Field = typename Cfg::Field;
  Field x, y;

  ZK_HD static Affine infinity() { return Affine{Field::zero(), Field::zero()}; }
  ZK_HD bool is_infinity() const { return x.is_zero() && y.is_zero(); }
};

template <class Cfg>
struct Jacobian {
  using Field = typename Cfg::Field;
  Field x, y, z;

  ZK_HD static Jacobian infinity() { return Jacobian{Field::one(), Field::one(), Field::zero()}; }
  ZK_HD bool is_infinity() const { return z.is_zero(); }
  ZK_HD static Jacobian from_affine(const Affine<Cfg>& p) {
    if (p.is_infinity()) return infinity();
    return Jacobian{p.x, p.y, Field::one()};
  }
};

template <class Cfg>
struct Xyzz {
  using Field = typename Cfg::Field;
  Field x, y, zz, zzz;

  ZK_HD static Xyzz infinity() { return Xyzz{Field::one(), Field::one(), Field::zero(), Field::zero()}; }
  ZK_HD bool is_infinity() const { return zz.is_zero(); }
  ZK_HD static Xyzz from_affine(const Affine<Cfg>& p) {
    if (p.is_infinity()) return infinity();
    return Xyzz{p.x, p.y, Field::one(), Field::one()};
  }
};

// ---- negation ---------------------------------------------------------------

template <class Cfg>
ZK_HD Affine<Cfg> neg(const Affine<Cfg>& p) {
  return Affine<Cfg>{p.x, p.y.neg()};  // infinity (0, 0) stays (0, 0)
}
template <class Cfg>
ZK_HD Jacobian<Cfg> neg(const Jacobian<Cfg>& p) {
  return Jacobian<Cfg>{p.x, p.y.neg(), p.z};
}
template <class Cfg>
ZK_HD Xyzz<Cfg> neg(const Xyzz<Cfg>& p) {
  return Xyzz<Cfg>{p.x, p.y.neg(), p.zz, p.zzz};
}

// ---- Jacobian ---------------------------------------------------------------

// dbl-2009-l: 2M + 5S. Infinity and 2-torsion points (Y = 0) give Z3 = 0.
template <class Cfg>
ZK_HD Jacobian<Cfg> dbl(const Jacobian<Cfg>& p) {
  using F = typename Cfg::Field;
  const F a = p.x.sqr();
  const F b = p.y.sqr();
  const F c = b.sqr();
  const F d = ((p.x + b).sqr() - a - c).dbl();
  const F e = a.dbl() + a;
  const F f = e.sqr();
  Jacobian<Cfg> r;
  r.x = f - d.dbl();
  r.y = e * (d - r.x) - c.dbl().dbl().dbl();
  r.z = (p.y * p.z).dbl();
  return r;
}

// add-2007-bl: 11M + 5S, plus the special cases.
template <class Cfg>
ZK_HD Jacobian<Cfg> add(const Jacobian<Cfg>& p, const Jacobian<Cfg>& q) {
  using F = typename Cfg::Field;
  if (p.is_infinity()) return q;
  if (q.is_infinity()) return p;
  const F z1z1 = p.z.sqr();
  const F z2z2 = q.z.sqr();
  const F u1 = p.x * z2z2;
  const F u2 = q.x * z1z1;
  const F s1 = p.y * q.z * z2z2;
  const F s2 = q.y * p.z * z1z1;
  const F h = u2 - u1;
  const F r = (s2 - s1).dbl();
  if (h.is_zero()) {
    // Same x: either the same point (double) or opposite points (infinity).
    return r.is_zero() ? dbl(p) : Jacobian<Cfg>::infinity();
  }
  const F i = h.dbl().sqr();
  const F j = h * i;
  const F v = u1 * i;
  Jacobian<Cfg> out;
  out.x = r.sqr() - j - v.dbl();
  out.y = r * (v - out.x) - (s1 * j).dbl();
  out.z = ((p.z + q.z).sqr() - z1z1 - z2z2) * h;
  return out;
}

// madd-2007-bl: 7M + 4S, plus the special cases. q in affine form.
template <class Cfg>
ZK_HD Jacobian<Cfg> add_mixed(const Jacobian<Cfg>& p, const Affine<Cfg>& q) {
  using F = typename Cfg::Field;
  if (q.is_infinity()) return p;
  if (p.is_infinity()) return Jacobian<Cfg>{q.x, q.y, F::one()};
  const F z1z1 = p.z.sqr();
  const F u2 = q.x * z1z1;
  const F s2 = q.y * p.z * z1z1;
  const F h = u2 - p.x;
  const F r = (s2 - p.y).dbl();
  if (h.is_zero()) return r.is_zero() ? dbl(p) : Jacobian<Cfg>::infinity();
  const F hh = h.sqr();
  const F i = hh.dbl().dbl();
  const F j = h * i;
  const F v = p.x * i;
  Jacobian<Cfg> out;
  out.x = r.sqr() - j - v.dbl();
  out.y = r * (v - out.x) - (p.y * j).dbl();
  out.z = (p.z + h).sqr() - z1z1 - hh;
  return out;
}

// ---- XYZZ -------------------------------------------------------------------

// dbl-2008-s-1: 6M + 3S (a = 0). Y = 0 gives ZZ3 = 0 (infinity).
template <class Cfg>
ZK_HD Xyzz<Cfg> xyzz_dbl(const Xyzz<Cfg>& p) {
  using F = typename Cfg::Field;
  const F u = p.y.dbl();
  const F v = u.sqr();
  const F w = u * v;
  const F s = p.x * v;
  const F x2 = p.x.sqr();
  const F m = x2.dbl() + x2;
  Xyzz<Cfg> r;
  r.x = m.sqr() - s.dbl();
  r.y = m * (s - r.x) - w * p.y;
  r.zz = v * p.zz;
  r.zzz = w * p.zzz;
  return r;
}

// Doubling of an affine point into XYZZ (mdbl-2008-s-1): 4M + 2S.
template <class Cfg>
ZK_HD Xyzz<Cfg> xyzz_dbl_affine(const Affine<Cfg>& p) {
  using F = typename Cfg::Field;
  if (p.is_infinity()) return Xyzz<Cfg>::infinity();
  const F u = p.y.dbl();
  const F v = u.sqr();
  const F w = u * v;
  const F s = p.x * v;
  const F x2 = p.x.sqr();
  const F m = x2.dbl() + x2;
  Xyzz<Cfg> r;
  r.x = m.sqr() - s.dbl();
  r.y = m * (s - r.x) - w * p.y;
  r.zz = v;
  r.zzz = w;
  return r;
}

// The doublings an addition falls back to when its operands are equal, as
// real calls on the GPU: equal operands are rare, and an inlined doubling
// made the MSM kernels' code larger than the instruction cache for nothing.
template <class Cfg>
ZK_HD_NOINLINE Xyzz<Cfg> xyzz_dbl_outlined(Xyzz<Cfg> p) {
  return xyzz_dbl(p);
}
template <class Cfg>
ZK_HD_NOINLINE Xyzz<Cfg> xyzz_dbl_affine_outlined(Affine<Cfg> p) {
  return xyzz_dbl_affine(p);
}

// add-2008-s: 12M + 2S, plus the special cases.
template <class Cfg>
ZK_HD Xyzz<Cfg> xyzz_add(const Xyzz<Cfg>& p, const Xyzz<Cfg>& q) {
  using F = typename Cfg::Field;
  if (p.is_infinity()) return q;
  if (q.is_infinity()) return p;
  const F u1 = p.x * q.zz;
  const F u2 = q.x * p.zz;
  const F s1 = p.y * q.zzz;
  const F s2 = q.y * p.zzz;
  const F pd = u2 - u1;
  const F r = s2 - s1;
  if (pd.is_zero()) return r.is_zero() ? xyzz_dbl_outlined(p) : Xyzz<Cfg>::infinity();
  const F pp = pd.sqr();
  const F ppp = pd * pp;
  const F qv = u1 * pp;
  Xyzz<Cfg> out;
  out.x = r.sqr() - ppp - qv.dbl();
  out.y = r * (qv - out.x) - s1 * ppp;
  out.zz = p.zz * q.zz * pp;
  out.zzz = p.zzz * q.zzz * ppp;
  return out;
}

// madd-2008-s: 8M + 2S, plus the special cases. q in affine form.
template <class Cfg>
ZK_HD Xyzz<Cfg> xyzz_add_mixed(const Xyzz<Cfg>& p, const Affine<Cfg>& q) {
  using F = typename Cfg::Field;
  if (q.is_infinity()) return p;
  if (p.is_infinity()) return Xyzz<Cfg>{q.x, q.y, F::one(), F::one()};
  const F u2 = q.x * p.zz;
  const F s2 = q.y * p.zzz;
  const F pd = u2 - p.x;
  const F r = s2 - p.y;
  if (pd.is_zero()) return r.is_zero() ? xyzz_dbl_affine_outlined(q) : Xyzz<Cfg>::infinity();
  const F pp = pd.sqr();
  const F ppp = pd * pp;
  const F qv = p.x * pp;
  Xyzz<Cfg> out;
  out.x = r.sqr() - ppp - qv.dbl();
  out.y = r * (qv - out.x) - p.y * ppp;
  out.zz = p.zz * pp;
  out.zzz = p.zzz * ppp;
  return out;
}

// Overloads so generic code can say add/add_mixed/dbl for either system.
template <class Cfg>
ZK_HD Xyzz<Cfg> add(const Xyzz<Cfg>& p, const Xyzz<Cfg>& q) { return xyzz_add(p, q); }
template <class Cfg>
ZK_HD Xyzz<Cfg> add_mixed(const Xyzz<Cfg>& p, const Affine<Cfg>& q) { return xyzz_add_mixed(p, q); }
template <class Cfg>
ZK_HD Xyzz<Cfg> dbl(const Xyzz<Cfg>& p) { return xyzz_dbl(p); }

// (X, Y, ZZ, ZZZ) -> Jacobian (X·ZZ^2, Y·ZZ^3, ZZZ): with Z = ZZZ,
// Z^2 = ZZZ^2 = ZZ^3 and Z^3 = ZZZ·ZZ^3, using the invariant ZZ^3 = ZZZ^2.
template <class Cfg>
ZK_HD Jacobian<Cfg> to_jacobian(const Xyzz<Cfg>& p) {
  if (p.is_infinity()) return Jacobian<Cfg>::infinity();
  const auto zz2 = p.zz.sqr();
  Jacobian<Cfg> r;
  r.x = p.x * zz2;
  r.y = p.y * zz2 * p.zz;
  r.z = p.zzz;
  return r;
}

// Jacobian (X, Y, Z) -> XYZZ (X, Y, Z^2, Z^3).
template <class Cfg>
ZK_HD Xyzz<Cfg> to_xyzz(const Jacobian<Cfg>& p) {
  if (p.is_infinity()) return Xyzz<Cfg>::infinity();
  const auto zz = p.z.sqr();
  return Xyzz<Cfg>{p.x, p.y, zz, zz * p.z};
}

// ---- conversions and predicates --------------------------------------------

// One field inversion; infinity becomes the all-zero Affine.
template <class Cfg>
ZK_HD Affine<Cfg> to_affine(const Jacobian<Cfg>& p) {
  if (p.is_infinity()) return Affine<Cfg>::infinity();
  const auto z_inv = p.z.inverse();
  const auto z_inv2 = z_inv.sqr();
  return Affine<Cfg>{p.x * z_inv2, p.y * z_inv2 * z_inv};
}
template <class Cfg>
ZK_HD Affine<Cfg> to_affine(const Xyzz<Cfg>& p) {
  return to_affine(to_jacobian(p));
}

// y^2 == x^3 + b; infinity counts as on the curve. No subgroup check.
template <class Cfg>
ZK_HD bool is_on_curve(const Affine<Cfg>& p) {
  if (p.is_infinity()) return true;
  return p.y.sqr() == p.x.sqr() * p.x + Cfg::b();
}
// Y^2 == X^3 + b·Z^6.
template <class Cfg>
ZK_HD bool is_on_curve(const Jacobian<Cfg>& p) {
  if (p.is_infinity()) return true;
  const auto z2 = p.z.sqr();
  const auto z6 = z2.sqr() * z2;
  return p.y.sqr() == p.x.sqr() * p.x + Cfg::b() * z6;
}

// Whether two Jacobian points are the same group element.
template <class Cfg>
ZK_HD bool equal(const Jacobian<Cfg>& p, const Jacobian<Cfg>& q) {
  if (p.is_infinity() || q.is_infinity()) return p.is_infinity() && q.is_infinity();
  const auto z1z1 = p.z.sqr();
  const auto z2z2 = q.z.sqr();
  if (p.x * z2z2 != q.x * z1z1) return false;
  return p.y * q.z * z2z2 == q.y * p.z * z1z1;
}

// scalar · p by left-to-right double-and-add; scalar is a canonical integer
// in little-endian 64-bit limbs. Simple and not constant-time: for tests,
// setup and small jobs, not the MSM.
template <class Cfg>
ZK_HD Jacobian<Cfg> scalar_mul(const Jacobian<Cfg>& p, const uint64_t* scalar_limbs, int nlimbs) {
  Jacobian<Cfg> acc = Jacobian<Cfg>::infinity();
  ZK_NO_UNROLL for (int i = nlimbs - 1; i >= 0; --i) {
    ZK_NO_UNROLL for (int bit = 63; bit >= 0; --bit) {
      acc = dbl(acc);
      if ((scalar_limbs[i] >> bit) & 1) acc = add(acc, p);
    }
  }
  return acc;
}

// ---- host only --------------------------------------------------------------

// out[i] = to_affine(in[i]) for i < n with a single field inversion
// (ff::BatchInverse). Infinities become all-zero Affine points. in and out
// must not overlap.
template <class Cfg>
void batch_to_affine(const Jacobian<Cfg>* in, Affine<Cfg>* out, size_t n) {
  using F = typename Cfg::Field;
  std::vector<F> z_inv(n), scratch(n);
  for (size_t i = 0; i < n; ++i) z_inv[i] = in[i].z;  // infinity: Z = 0, left alone
  ff::BatchInverse(z_inv.data(), scratch.data(), n);
  for (size_t i = 0; i < n; ++i) {
    if (in[i].is_infinity()) {
      out[i] = Affine<Cfg>::infinity();
      continue;
    }
    const F z_inv2 = z_inv[i].sqr();
    out[i].x = in[i].x * z_inv2;
    out[i].y = in[i].y * z_inv2 * z_inv[i];
  }
}

}  // namespace zkfleet::curve
