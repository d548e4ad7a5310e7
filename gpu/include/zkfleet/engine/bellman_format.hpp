// bellperson's verifying key (.vk) and 192-byte proofs, as the engine's value
// types: for the parts of the fleet that check proofs without proving (the
// broker verifies every bellman result). One owner of the format: these call
// the engine's readers and writers (gpu/zkfleet/bellman/parameters.hpp), which
// check every point (flags, coordinates < q, on the curve, in the subgroup).
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/engine/verify.hpp"

namespace zkfleet::engine {

inline constexpr size_t kBellmanProofBytes = 192;

// A .vk file's bytes as a verification key (curve BLS12-381, n_public =
// IC points - 1). Throws zkfleet::Error kBadFormat naming `origin`, the
// field and the point.
VerificationKey ParseBellmanVerifyingKey(std::span<const uint8_t> bytes, const std::string& origin);

// bellperson's 192-byte encoding of canonical affine points (A, B, C).
std::array<uint8_t, kBellmanProofBytes> EncodeBellmanProof(const ProofPoints& proof);

// A proof file: a non-empty multiple of 192 bytes, one proof per partition.
// Throws kBadFormat naming `origin` and the partition.
std::vector<ProofPoints> DecodeBellmanProofs(std::span<const uint8_t> bytes, const std::string& origin);

}  // namespace zkfleet::engine
