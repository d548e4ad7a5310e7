// Groth16 verification for BN254 ("bn128") and BLS12-381 ("bls12381"), on the
// CPU, with snarkjs's semantics plus the checks snarkjs leaves out. Part of
// the engine's public API.
//
//   VerificationKey vk = ReadVerificationKeyJson(path);   // engine/snarkjs.hpp
//   VerifyResult res = Verify(vk, public_signals, proof);
//   if (!res.ok()) log(res.reason);
//
// Verify() checks, in this order, and stops at the first failure:
//   1. the key: IC has nPublic + 1 points; every coordinate < q; every point on
//      its curve and in the prime-order subgroup; alpha, beta, gamma, delta
//      not at infinity (kBadKey);
//   2. the public signals: exactly nPublic of them, each < r (kBadPublicSignals);
//   3. the proof: the curve it names (if any) is the key's (kCurveMismatch);
//      every coordinate < q, A and C on G1, B on G2, all three in the
//      prime-order subgroups (kBadProofPoint);
//   4. e(A, B) == e(alpha, beta) · e(vk_x, gamma) · e(C, delta) with
//      vk_x = IC[0] + sum_i s_i·IC[i+1] (kInvalidProof).
// snarkjs's `groth16 verify` does 2 (< r), the on-curve part of 3 and 4; it
// reduces coordinates ≥ q instead of rejecting them and does no subgroup
// check.
//
// Values are plain canonical integers (no curve types), so the structs can be
// filled from JSON, a .zkey or code without knowing the curve at compile time.
//
// Thread-safety: everything here is a pure function of its arguments, and a
// PreparedVerifier is immutable after construction: Verify() may be called
// from many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/engine/curve.hpp"

namespace zkfleet::engine {

// A canonical (not Montgomery) non-negative integer below 2^384, little-endian
// 64-bit limbs: wide enough for every coordinate and scalar of both curves.
using BigInt = std::array<uint64_t, 6>;

struct G1Point {
  BigInt x{}, y{};
  bool infinity = false;  // x, y are ignored when set
};

// x = x0 + x1·u, y = y0 + y1·u (snarkjs's [c0, c1] order).
struct G2Point {
  BigInt x0{}, x1{}, y0{}, y1{};
  bool infinity = false;
};

struct VerificationKey {
  Curve curve = Curve::kBn254;
  uint32_t n_public = 0;
  G1Point alpha1;
  G2Point beta2, gamma2, delta2;
  std::vector<G1Point> ic;  // n_public + 1 points
};

struct ProofPoints {
  G1Point a;
  G2Point b;
  G1Point c;
  // The curve proof.json names ("curve" key), when it names one.
  std::optional<Curve> curve;
};

enum class VerifyStatus {
  kValid,
  kInvalidProof,       // well-formed, but the pairing equation does not hold
  kBadProofPoint,      // coordinate ≥ q, off the curve, or not in the subgroup
  kBadPublicSignals,   // wrong count or a value ≥ r
  kBadKey,             // the verification key itself is malformed
  kCurveMismatch,      // proof and key name different curves
};

const char* VerifyStatusName(VerifyStatus status);

struct VerifyResult {
  VerifyStatus status = VerifyStatus::kValid;
  std::string reason;  // one line, empty when valid
  bool ok() const { return status == VerifyStatus::kValid; }
};

// Verifies one proof (see above). Never throws on bad values; only on
// allocation failure.
VerifyResult Verify(const VerificationKey& vk, std::span<const BigInt> public_signals, const ProofPoints& proof);

// The same, for many proofs against one key: checks the key and precomputes
// its pairing data once (the G2 line coefficients of beta, gamma, delta and
// the Miller loop of alpha, beta), so each Verify() costs three Miller loops,
// one final exponentiation, the checks of the proof points and one MSM.
class PreparedVerifier {
 public:
  // Throws zkfleet::Error kBadFormat when the key fails check 1 above.
  explicit PreparedVerifier(const VerificationKey& vk);
  ~PreparedVerifier();
  PreparedVerifier(PreparedVerifier&&) noexcept;
  PreparedVerifier& operator=(PreparedVerifier&&) noexcept;

  const VerificationKey& key() const;
  VerifyResult Verify(std::span<const BigInt> public_signals, const ProofPoints& proof) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkfleet::engine
