// The host-side ends of a Groth16 proof shared by the CPU and CUDA backends:
// drawing the blinding scalars r and s, and assembling the proof from the
// five MSM results (spec §8.5) into the proof's canonical affine points
// (engine::ProvingKey verifies them and formats proof.json from them).
// Header-only templates on a curve C (curve::Bn254, curve::Bls12_381);
// pure functions apart from the kernel CSPRNG.
#pragma once

#include <sys/random.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>

#include "zkfleet/common/error.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/groth16/key.hpp"
#include "zkfleet/groth16/verifier.hpp"

namespace zkfleet::groth16 {

// A uniformly random scalar < r from the kernel's CSPRNG (rejection sampling).
template <class Fr>
void RandomScalar(uint64_t out[4]) {
  static_assert(Fr::kLimbs == 4);
  for (;;) {
    uint8_t buf[32];
    size_t got = 0;
    while (got < sizeof(buf)) {
      const ssize_t n = getrandom(buf + got, sizeof(buf) - got, 0);
      if (n < 0) throw Error(ErrorCode::kInternal, "getrandom failed while drawing proof blinding");
      got += static_cast<size_t>(n);
    }
    std::memcpy(out, buf, 32);
    const int top_bits = Fr::kModulusBits - 192;
    if (top_bits < 64) out[3] &= (uint64_t{1} << top_bits) - 1;
    if (Fr::is_below_modulus(out)) return;
  }
}

// r and s from `options` (tests) or fresh random ones (production).
template <class Fr>
void DrawBlinding(const ProveOptions& options, uint64_t r[4], uint64_t s[4]) {
  if (options.r) std::memcpy(r, options.r->data(), 32); else RandomScalar<Fr>(r);
  if (options.s) std::memcpy(s, options.s->data(), 32); else RandomScalar<Fr>(s);
  if (!Fr::is_below_modulus(r) || !Fr::is_below_modulus(s)) {
    throw Error(ErrorCode::kInvalidArgument, "blinding scalars r and s must be below the scalar field modulus");
  }
}

// x as a canonical integer (Montgomery form undone).
template <class F>
BigInt Canonical(const F& x) {
  static_assert(F::kLimbs <= std::tuple_size_v<BigInt>);
  BigInt out{};
  x.to_canonical(out.data());
  return out;
}

// The proving key's header points (affine, Montgomery).
template <class C>
struct Groth16HeaderPoints {
  curve::Affine<typename C::G1> alpha1, beta1, delta1;
  curve::Affine<typename C::G2> beta2, delta2;
};

// The five MSM results of one proof.
template <class C>
struct Groth16MsmResults {
  curve::Jacobian<typename C::G1> a, b1, c, h;
  curve::Jacobian<typename C::G2> b2;
};

// Blinding and assembly (spec §8.5):
//   πA = α1 + A·w + r·δ1,  πB = β2 + B2·w + s·δ2,  B1 = β1 + B1·w + s·δ1,
//   πC = C·w + H·p + s·πA + r·B1 − rs·δ1,
// as canonical affine points (proof.curve is left for the caller). (A point at infinity, of negligible
// probability, comes out as (0, 0) and fails verification.)
// `inject_fault` (test-only, ZKFLEET_FAULT_INJECT): pi_a's MSM result is
// corrupted (alpha1 added twice), as a faulty device would return it; the
// proof then fails verification.
template <class C>
void AssembleProof(const Groth16HeaderPoints<C>& key, Groth16MsmResults<C> msm, const uint64_t r[4],
                   const uint64_t s[4], Proof& proof, bool inject_fault = false) {
  using Fr = typename C::Fr;
  using J1 = curve::Jacobian<typename C::G1>;
  using J2 = curve::Jacobian<typename C::G2>;
  if (inject_fault) msm.a = curve::add_mixed(msm.a, key.alpha1);
  uint64_t rs[4];
  (Fr::from_canonical(r) * Fr::from_canonical(s)).to_canonical(rs);
  const J1 delta1 = J1::from_affine(key.delta1);
  const J1 pi_a = curve::add(curve::add_mixed(msm.a, key.alpha1), curve::scalar_mul(delta1, r, 4));
  const J2 pi_b = curve::add(curve::add_mixed(msm.b2, key.beta2), curve::scalar_mul(J2::from_affine(key.delta2), s, 4));
  const J1 b1 = curve::add(curve::add_mixed(msm.b1, key.beta1), curve::scalar_mul(delta1, s, 4));
  J1 pi_c = curve::add(msm.c, msm.h);
  pi_c = curve::add(pi_c, curve::scalar_mul(pi_a, s, 4));
  pi_c = curve::add(pi_c, curve::scalar_mul(b1, r, 4));
  pi_c = curve::add(pi_c, curve::neg(curve::scalar_mul(delta1, rs, 4)));

  const auto a_aff = curve::to_affine(pi_a);
  const auto c_aff = curve::to_affine(pi_c);
  const auto b_aff = curve::to_affine(pi_b);
  proof = Proof{};
  proof.a.x = Canonical(a_aff.x);
  proof.a.y = Canonical(a_aff.y);
  proof.b.x0 = Canonical(b_aff.x.c0);
  proof.b.x1 = Canonical(b_aff.x.c1);
  proof.b.y0 = Canonical(b_aff.y.c0);
  proof.b.y1 = Canonical(b_aff.y.c1);
  proof.c.x = Canonical(c_aff.x);
  proof.c.y = Canonical(c_aff.y);
}

}  // namespace zkfleet::groth16
