// The pairing-friendly curves snarkjs supports, as the formats name them.
// The engine's API re-exports them (engine::Curve).
#pragma once

namespace zkfleet::io {

// Names follow snarkjs.
enum class Curve { kBn254, kBls12_381 };

// "bn128" / "bls12381": the names snarkjs writes into proof.json.
const char* CurveName(Curve curve);

}  // namespace zkfleet::io
