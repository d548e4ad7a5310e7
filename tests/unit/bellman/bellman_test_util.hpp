// Points and keys for the bellman format tests: scalar multiples of the
// generators (so every point is in the subgroup), points on the curve but
// outside the subgroup, and small random Parameters.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/curve/subgroup.hpp"
#include "zkfleet/ff/sqrt.hpp"

namespace zkfleet::bellman::testing {

using Fq = ff::Bls12_381Fq;
using Fq2 = ff::Fp2<Fq>;
using Fr = ff::Bls12_381Fr;

inline Fr RandomFr(std::mt19937_64& rng) {
  uint64_t limbs[4] = {rng(), rng(), rng(), rng() >> 2};  // < 2^254 < r
  return Fr::from_canonical(limbs);
}

template <class Cfg>
curve::Affine<Cfg> Mul(const curve::Affine<Cfg>& base, const Fr& k) {
  uint64_t limbs[4];
  k.to_canonical(limbs);
  return curve::to_affine(curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(base), limbs, 4));
}
inline G1Affine G1Mul(const Fr& k) { return Mul(curve::Bls12_381G1::generator(), k); }
inline G2Affine G2Mul(const Fr& k) { return Mul(curve::Bls12_381G2::generator(), k); }
inline G1Affine RandomG1(std::mt19937_64& rng) { return G1Mul(RandomFr(rng)); }
inline G2Affine RandomG2(std::mt19937_64& rng) { return G2Mul(RandomFr(rng)); }

// The first point (x, y) with x = 1, 2, ... (G2: x = k + u) on the curve but
// outside the prime-order subgroup.
inline G1Affine G1OutsideSubgroup() {
  for (uint64_t k = 1;; ++k) {
    const Fq x = Fq::from_uint(k);
    Fq y;
    if (!ff::Sqrt(x.sqr() * x + curve::Bls12_381G1::b(), &y)) continue;
    const G1Affine p{x, y};
    if (!curve::InPrimeOrderSubgroup(p)) return p;
  }
}
inline G2Affine G2OutsideSubgroup() {
  for (uint64_t k = 1;; ++k) {
    const Fq2 x{Fq::from_uint(k), Fq::one()};
    Fq2 y;
    if (!ff::Sqrt(x.sqr() * x + curve::Bls12_381G2::b(), &y)) continue;
    const G2Affine p{x, y};
    if (!curve::InPrimeOrderSubgroup(p)) return p;
  }
}

template <class Cfg>
bool SamePoint(const curve::Affine<Cfg>& p, const curve::Affine<Cfg>& q) {
  return p.x == q.x && p.y == q.y;
}
template <class Cfg, class AllocP, class AllocQ>
bool SamePoints(const std::vector<curve::Affine<Cfg>, AllocP>& p, const std::vector<curve::Affine<Cfg>, AllocQ>& q) {
  if (p.size() != q.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (!SamePoint(p[i], q[i])) return false;
  }
  return true;
}
inline bool SameKey(const VerifyingKey& a, const VerifyingKey& b) {
  return SamePoint(a.alpha_g1, b.alpha_g1) && SamePoint(a.beta_g1, b.beta_g1) && SamePoint(a.beta_g2, b.beta_g2) &&
         SamePoint(a.gamma_g2, b.gamma_g2) && SamePoint(a.delta_g1, b.delta_g1) &&
         SamePoint(a.delta_g2, b.delta_g2) && SamePoints(a.ic, b.ic);
}
inline bool SameParameters(const Parameters& a, const Parameters& b) {
  return SameKey(a.vk, b.vk) && SamePoints(a.h, b.h) && SamePoints(a.l, b.l) && SamePoints(a.a, b.a) &&
         SamePoints(a.b_g1, b.b_g1) && SamePoints(a.b_g2, b.b_g2);
}

// Random points in every field; one point at infinity in a (bellperson's
// own files have none, but the format can say it).
inline Parameters SmallParameters(std::mt19937_64& rng, size_t n_ic = 3, size_t n_h = 7, size_t n_l = 5,
                                  size_t n_a = 6, size_t n_b = 4) {
  Parameters p;
  p.vk.alpha_g1 = RandomG1(rng);
  p.vk.beta_g1 = RandomG1(rng);
  p.vk.beta_g2 = RandomG2(rng);
  p.vk.gamma_g2 = RandomG2(rng);
  p.vk.delta_g1 = RandomG1(rng);
  p.vk.delta_g2 = RandomG2(rng);
  for (size_t i = 0; i < n_ic; ++i) p.vk.ic.push_back(RandomG1(rng));
  for (size_t i = 0; i < n_h; ++i) p.h.push_back(RandomG1(rng));
  for (size_t i = 0; i < n_l; ++i) p.l.push_back(RandomG1(rng));
  for (size_t i = 0; i < n_a; ++i) p.a.push_back(i == 1 ? G1Affine::infinity() : RandomG1(rng));
  for (size_t i = 0; i < n_b; ++i) p.b_g1.push_back(RandomG1(rng));
  for (size_t i = 0; i < n_b; ++i) p.b_g2.push_back(RandomG2(rng));
  return p;
}

// Standard base64 (RFC 4648, with padding), for embedded vectors.
inline std::vector<uint8_t> Base64(const std::string& text) {
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : text) {
    int v;
    if (ch >= 'A' && ch <= 'Z') v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z') v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9') v = ch - '0' + 52;
    else if (ch == '+') v = 62;
    else if (ch == '/') v = 63;
    else continue;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

inline std::vector<uint8_t> Hex(const std::string& text) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < text.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(text.substr(i, 2), nullptr, 16)));
  return out;
}

}  // namespace zkfleet::bellman::testing

namespace zkfleet::bellman::testing {

inline engine::BigInt ToBigInt(const Fq& a) {
  engine::BigInt out{};
  a.to_canonical(out.data());
  return out;
}
inline engine::G1Point ToEngineG1(const G1Affine& p) {
  if (p.is_infinity()) return engine::G1Point{.infinity = true};
  return engine::G1Point{ToBigInt(p.x), ToBigInt(p.y), false};
}
inline engine::G2Point ToEngineG2(const G2Affine& p) {
  if (p.is_infinity()) return engine::G2Point{.infinity = true};
  return engine::G2Point{ToBigInt(p.x.c0), ToBigInt(p.x.c1), ToBigInt(p.y.c0), ToBigInt(p.y.c1), false};
}
inline bool SameG1(const engine::G1Point& a, const engine::G1Point& b) {
  return a.infinity == b.infinity && (a.infinity || (a.x == b.x && a.y == b.y));
}
inline bool SameG2(const engine::G2Point& a, const engine::G2Point& b) {
  return a.infinity == b.infinity && (a.infinity || (a.x0 == b.x0 && a.x1 == b.x1 && a.y0 == b.y0 && a.y1 == b.y1));
}

}  // namespace zkfleet::bellman::testing
