// Optimal ate pairings on BN254 (snarkjs "bn128") and BLS12-381, host code.
//
//   Gt<C> Pairing<C>(P, Q)                 e(P, Q) for P in G1, Q in G2 (affine)
//   bool  PairingProductIsOne<C>(pairs)    e(P1,Q1)·…·e(Pn,Qn) == 1, one shared
//                                          Miller loop and final exponentiation
//   MillerLoop<C>(pairs), FinalExponentiation<C>(f)   the two halves
//
// C is curve::Bn254 or curve::Bls12_381. Points are not validated here: the
// caller checks that they are on the curve and in the prime-order subgroups
// (zkfleet/groth16/verifier.hpp does). A point at infinity contributes 1.
//
// Algorithms (as in arkworks, gnark and ffjavascript/wasmcurves):
//   * the G2 point walks in homogeneous projective coordinates; doubling and
//     addition steps produce line coefficients (Costello-Lange-Naehrig,
//     eprint 2009/615 / Aranha et al. 2013/722), evaluated at P and
//     multiplied into f as a sparse Fq12 element (BN254 has a D-type twist:
//     mul_by_034; BLS12-381 an M-type twist: mul_by_014);
//   * BN254 loops over the NAF of 6x+2 and ends with two additions of
//     pi(Q) and -pi^2(Q); BLS12-381 loops over |x| and conjugates (x < 0);
//   * final exponentiation: easy part f^((p^6-1)(p^2+1)), then the hard part
//     with cyclotomic squarings: Fuentes-Castaneda et al. for BN254 and
//     Hayashida-Hayasaka-Teruya (as in zkcrypto/bls12_381) for BLS12-381.
//     Both hard parts raise to a fixed multiple of (p^4-p^2+1)/r (coprime to
//     r), exactly the ones snarkjs uses, so Pairing(alpha, beta) equals
//     snarkjs's vk_alphabeta_12 coefficient for coefficient.
//
// Thread-safety: pure functions on values; the only shared state is the
// tower's Frobenius table, initialised once thread-safely.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/fp12.hpp"
#include "zkfleet/ff/tower.hpp"

namespace zkfleet::pairing {

enum class TwistType { kD, kM };

template <class C>
struct PairingParams;

template <>
struct PairingParams<curve::Bn254> {
  using Tower = ff::Bn254Tower;
  static constexpr TwistType kTwist = TwistType::kD;
  static constexpr uint64_t kX = 4965661367192848881ULL;  // BN parameter x > 0
  static constexpr bool kXNegative = false;
};

template <>
struct PairingParams<curve::Bls12_381> {
  using Tower = ff::Bls12_381Tower;
  static constexpr TwistType kTwist = TwistType::kM;
  static constexpr uint64_t kX = 0xd201000000010000ULL;  // |x|, x < 0
  static constexpr bool kXNegative = true;
};

template <class C>
using Gt = ff::Fp12<typename PairingParams<C>::Tower>;
template <class C>
using G1Affine = curve::Affine<typename C::G1>;
template <class C>
using G2Affine = curve::Affine<typename C::G2>;

template <class C>
struct G1G2Pair {
  G1Affine<C> p;
  G2Affine<C> q;
};

namespace detail {

// Signed digits of the Miller loop scalar, most significant first (the
// leading 1 included).
template <class C>
const std::vector<int8_t>& LoopDigits() {
  static const std::vector<int8_t> digits = [] {
    std::vector<int8_t> le;
    if constexpr (std::is_same_v<C, curve::Bn254>) {
      // NAF of 6x + 2 (65 bits).
      unsigned __int128 n = static_cast<unsigned __int128>(PairingParams<C>::kX) * 6 + 2;
      while (n != 0) {
        int8_t d = 0;
        if (n & 1) {
          d = static_cast<int8_t>(2 - static_cast<int>(n & 3));
          if (d > 0) n -= 1; else n += 1;
        }
        le.push_back(d);
        n >>= 1;
      }
    } else {
      uint64_t n = PairingParams<C>::kX;
      while (n != 0) {
        le.push_back(static_cast<int8_t>(n & 1));
        n >>= 1;
      }
    }
    return std::vector<int8_t>(le.rbegin(), le.rend());
  }();
  return digits;
}

template <class Fq2>
struct LineCoeffs {
  Fq2 c0, c1, c2;
};

// The G2 point of the Miller loop in homogeneous projective coordinates
// (x = X/Z, y = Y/Z) on the twist.
template <class C>
struct G2Walker {
  using Fq = typename C::Fq;
  using Fq2 = typename C::Fq2;
  using Line = LineCoeffs<Fq2>;
  Fq2 x, y, z;

  // R <- 2R; returns the tangent line's coefficients.
  Line Double(const Fq& two_inv) {
    const Fq2 a = (x * y).mul_by_base(two_inv);
    const Fq2 b = y.sqr();
    const Fq2 c = z.sqr();
    const Fq2 e = C::G2::b() * (c.dbl() + c);
    const Fq2 f = e.dbl() + e;
    const Fq2 g = (b + f).mul_by_base(two_inv);
    const Fq2 h = (y + z).sqr() - (b + c);
    const Fq2 i = e - b;
    const Fq2 j = x.sqr();
    const Fq2 e2 = e.sqr();
    x = a * (b - f);
    y = g.sqr() - (e2.dbl() + e2);
    z = b * h;
    if constexpr (PairingParams<C>::kTwist == TwistType::kM) {
      return Line{i, j.dbl() + j, h.neg()};
    } else {
      return Line{h.neg(), j.dbl() + j, i};
    }
  }

  // R <- R + Q (Q affine, Q != ±R); returns the chord's coefficients.
  Line Add(const G2Affine<C>& q) {
    const Fq2 theta = y - q.y * z;
    const Fq2 lambda = x - q.x * z;
    const Fq2 c = theta.sqr();
    const Fq2 d = lambda.sqr();
    const Fq2 e = lambda * d;
    const Fq2 f = z * c;
    const Fq2 g = x * d;
    const Fq2 h = e + f - g.dbl();
    x = lambda * h;
    y = theta * (g - h) - e * y;
    z = z * e;
    const Fq2 j = theta * q.x - lambda * q.y;
    if constexpr (PairingParams<C>::kTwist == TwistType::kM) {
      return Line{j, theta.neg(), lambda};
    } else {
      return Line{lambda, theta.neg(), j};
    }
  }
};

// Multiplies the line value at P into f.
template <class C>
inline void MulLine(Gt<C>& f, const LineCoeffs<typename C::Fq2>& l, const G1Affine<C>& p) {
  if constexpr (PairingParams<C>::kTwist == TwistType::kM) {
    f = f.mul_by_014(l.c0, l.c1.mul_by_base(p.x), l.c2.mul_by_base(p.y));
  } else {
    f = f.mul_by_034(l.c0.mul_by_base(p.y), l.c1.mul_by_base(p.x), l.c2);
  }
}

// pi(Q) on the twist: (conj(x)·xi^((p-1)/3), conj(y)·xi^((p-1)/2)).
template <class C>
G2Affine<C> Frobenius(const G2Affine<C>& q) {
  const auto& g = PairingParams<C>::Tower::frobenius().gamma[1];
  return G2Affine<C>{q.x.conjugate() * g[2], q.y.conjugate() * g[3]};
}

template <class C>
typename C::Fq TwoInverse() {
  static const typename C::Fq v = C::Fq::one().dbl().inverse();
  return v;
}

}  // namespace detail

// The line coefficients of the whole Miller loop for one G2 point, in loop
// order: precompute once for a fixed Q (e.g. the verification key's beta,
// gamma, delta) and reuse with any number of G1 points.
template <class C>
struct G2Prepared {
  std::vector<detail::LineCoeffs<typename C::Fq2>> lines;
  bool infinity = true;

  G2Prepared() = default;
  explicit G2Prepared(const G2Affine<C>& q) {
    if (q.is_infinity()) return;
    infinity = false;
    const auto two_inv = detail::TwoInverse<C>();
    const auto& digits = detail::LoopDigits<C>();
    detail::G2Walker<C> r{q.x, q.y, C::Fq2::one()};
    const G2Affine<C> neg_q = curve::neg(q);
    lines.reserve(2 * digits.size() + 2);
    for (size_t i = 1; i < digits.size(); ++i) {
      lines.push_back(r.Double(two_inv));
      if (digits[i] == 1) lines.push_back(r.Add(q));
      if (digits[i] == -1) lines.push_back(r.Add(neg_q));
    }
    if constexpr (std::is_same_v<C, curve::Bn254>) {
      const G2Affine<C> q1 = detail::Frobenius<C>(q);
      G2Affine<C> q2 = detail::Frobenius<C>(q1);
      q2.y = q2.y.neg();
      lines.push_back(r.Add(q1));
      lines.push_back(r.Add(q2));
    }
  }
};

template <class C>
struct PreparedPair {
  G1Affine<C> p;
  const G2Prepared<C>* q;
};

// The Miller loop f = prod_i f_{loop, Q_i}(P_i), sharing the squarings.
template <class C>
Gt<C> MillerLoop(std::span<const PreparedPair<C>> pairs) {
  std::vector<PreparedPair<C>> live;
  live.reserve(pairs.size());
  for (const auto& pq : pairs) {
    if (!pq.p.is_infinity() && !pq.q->infinity) live.push_back(pq);
  }
  Gt<C> f = Gt<C>::one();
  if (live.empty()) return f;
  const auto& digits = detail::LoopDigits<C>();
  size_t k = 0;  // index into each prepared line list
  for (size_t i = 1; i < digits.size(); ++i) {
    if (i != 1) f = f.sqr();
    for (const auto& pq : live) detail::MulLine<C>(f, pq.q->lines[k], pq.p);
    ++k;
    if (digits[i] != 0) {
      for (const auto& pq : live) detail::MulLine<C>(f, pq.q->lines[k], pq.p);
      ++k;
    }
  }
  if constexpr (PairingParams<C>::kXNegative) f = f.conjugate();
  if constexpr (std::is_same_v<C, curve::Bn254>) {
    for (int extra = 0; extra < 2; ++extra, ++k) {
      for (const auto& pq : live) detail::MulLine<C>(f, pq.q->lines[k], pq.p);
    }
  }
  return f;
}

template <class C>
Gt<C> MillerLoop(std::span<const G1G2Pair<C>> pairs) {
  std::vector<G2Prepared<C>> prepared;
  prepared.reserve(pairs.size());
  std::vector<PreparedPair<C>> pp;
  pp.reserve(pairs.size());
  for (const auto& pq : pairs) prepared.emplace_back(pq.q);
  for (size_t i = 0; i < pairs.size(); ++i) pp.push_back({pairs[i].p, &prepared[i]});
  return MillerLoop<C>(std::span<const PreparedPair<C>>(pp));
}

namespace detail {

// f^-x (BN254, x > 0) or f^x (BLS12-381, x < 0) on the cyclotomic subgroup:
// the conjugate of f^|x| either way.
template <class C>
Gt<C> CyclotomicExpByX(const Gt<C>& f) {
  return f.cyclotomic_pow(PairingParams<C>::kX).conjugate();
}

}  // namespace detail

// f^(k·(p^12-1)/r) for the curve's fixed k (see above). 0 maps to 0.
template <class C>
Gt<C> FinalExponentiation(const Gt<C>& f) {
  using F = Gt<C>;
  // Easy part: f^((p^6-1)(p^2+1)).
  F r = f.conjugate() * f.inverse();
  r = r.frobenius(2) * r;
  if constexpr (std::is_same_v<C, curve::Bn254>) {
    // result = r^(p^3(12x^3+6x^2+4x-1) + p^2(12x^3+6x^2+6x) + p(12x^3+6x^2+4x)
    //          + (12x^3+12x^2+6x+1)) = r^(2x(6x^2+3x+1)(p^4-p^2+1)/r)
    const F y0 = detail::CyclotomicExpByX<C>(r);  // r^-x
    const F y1 = y0.cyclotomic_sqr();
    const F y2 = y1.cyclotomic_sqr();
    F y3 = y2 * y1;
    const F y4 = detail::CyclotomicExpByX<C>(y3);
    const F y5 = y4.cyclotomic_sqr();
    F y6 = detail::CyclotomicExpByX<C>(y5);
    y3 = y3.conjugate();
    y6 = y6.conjugate();
    const F y7 = y6 * y4;
    F y8 = y7 * y3;
    const F y9 = y8 * y1;
    const F y10 = y8 * y4;
    const F y11 = y10 * r;
    const F y13 = y9.frobenius(1) * y11;
    y8 = y8.frobenius(2);
    const F y14 = y8 * y13;
    const F y15 = (r.conjugate() * y9).frobenius(3);
    return y15 * y14;
  } else {
    // Hayashida-Hayasaka-Teruya: r^(3(p^4-p^2+1)/r) via
    // (x-1)^2 (x+p) (x^2+p^2-1) + 3.
    const F t2 = r;
    F t1 = t2.cyclotomic_sqr().conjugate();
    F t3 = detail::CyclotomicExpByX<C>(t2);
    F t4 = t3.cyclotomic_sqr();
    F t5 = t1 * t3;
    t1 = detail::CyclotomicExpByX<C>(t5);
    F t0 = detail::CyclotomicExpByX<C>(t1);
    F t6 = detail::CyclotomicExpByX<C>(t0);
    t6 = t6 * t4;
    t4 = detail::CyclotomicExpByX<C>(t6);
    t5 = t5.conjugate();
    t4 = t4 * t5 * t2;
    t5 = t2.conjugate();
    t1 = (t1 * t2).frobenius(3);
    t6 = (t6 * t5).frobenius(1);
    t3 = (t3 * t0).frobenius(2);
    t3 = t3 * t1;
    t3 = t3 * t6;
    return t3 * t4;
  }
}

// e(P, Q).
template <class C>
Gt<C> Pairing(const G1Affine<C>& p, const G2Affine<C>& q) {
  const G1G2Pair<C> pair{p, q};
  return FinalExponentiation<C>(MillerLoop<C>(std::span<const G1G2Pair<C>>(&pair, 1)));
}

// e(P1, Q1)·…·e(Pn, Qn) == 1 with one final exponentiation.
template <class C>
bool PairingProductIsOne(std::span<const G1G2Pair<C>> pairs) {
  return FinalExponentiation<C>(MillerLoop<C>(pairs)).is_one();
}
template <class C>
bool PairingProductIsOne(std::span<const PreparedPair<C>> pairs) {
  return FinalExponentiation<C>(MillerLoop<C>(pairs)).is_one();
}

}  // namespace zkfleet::pairing
