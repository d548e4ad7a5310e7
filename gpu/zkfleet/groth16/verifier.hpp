// The Groth16 verifier inside the engine: the public value types and
// PreparedVerifier (zkfleet/engine/verify.hpp, which documents the checks and
// thread-safety) under their groth16:: names, and what needs a loaded .zkey
// or the curve arithmetic.
#pragma once

#include <array>

#include "zkfleet/engine/verify.hpp"
#include "zkfleet/io/curve.hpp"

namespace zkfleet::io {
class ZkeyFile;
}

namespace zkfleet::groth16 {

using engine::BigInt;
using engine::G1Point;
using engine::G2Point;
using engine::VerificationKey;
using Proof = engine::ProofPoints;
using engine::VerifyStatus;
using engine::VerifyStatusName;
using engine::VerifyResult;
using engine::Verify;
using engine::PreparedVerifier;

// The key of a loaded .zkey: alpha1, beta2, gamma2, delta2 from the header,
// IC from section 3, converted out of Montgomery form. Throws zkfleet::Error
// kBadFormat when an IC coordinate is ≥ q (the header's are checked at load).
VerificationKey VerificationKeyFromZkey(const io::ZkeyFile& zkey);

// e(alpha1, beta2) as 12 canonical Fq values in snarkjs's order (the
// vk_alphabeta_12 of `snarkjs zkey export verificationkey`):
// c0.c0.a, c0.c0.b, c0.c1.a, ..., c1.c2.b. Throws zkfleet::Error kBadFormat
// when alpha1 or beta2 is not a valid point.
std::array<BigInt, 12> AlphaBeta(const VerificationKey& vk);

}  // namespace zkfleet::groth16
