// The pairing-friendly curves snarkjs supports, as its files name them.
// Part of the engine's public API (every header under include/zkfleet/engine
// is; nothing else in gpu/ is). The engine's internal layers share these
// value types (zkfleet/io/curve.hpp re-exports them as io::Curve).
//
// Thread-safety: a value type and a pure function.
#pragma once

namespace zkfleet::engine {

// Names follow snarkjs.
enum class Curve { kBn254, kBls12_381 };

// "bn128" / "bls12381": the names snarkjs writes into proof.json.
const char* CurveName(Curve curve);

}  // namespace zkfleet::engine
