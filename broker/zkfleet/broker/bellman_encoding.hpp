// bellperson's encodings as the broker reads and checks them (docs/bellman.md),
// without the engine's field arithmetic: the uncompressed points of a .vk file
// (coordinates as they lie, no square roots), and the 192-byte proof of points
// the broker verified (compression only drops y, keeping which root it is).
//
//   .vk    alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2, a
//          big-endian u32 count, that many ic points; all uncompressed (G1 96
//          bytes x ‖ y, G2 192 bytes x.c1 ‖ x.c0 ‖ y.c1 ‖ y.c0, 48-byte
//          big-endian coordinates; byte 0's top bits: 0x80 compressed, 0x40
//          infinity, 0x20 sort)
//   proof  A (G1), B (G2), C (G1), compressed: 48 + 96 + 48 bytes
//
// A worker sends a bellman proof twice: its points (proof.json, verified by
// engine::PreparedVerifier against the .vk) and its 192 bytes, which must be
// exactly EncodeBellmanProof of those points. Encoding is injective on valid
// points, so bytes that pass are the decoding of a verified proof.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "zkfleet/engine/verify.hpp"

namespace zkfleet::broker {

inline constexpr size_t kBellmanProofBytes = 192;

// The verification key of a .vk file (curve BLS12-381, n_public = ic - 1).
// nullopt with *why (one line) for a wrong length, a compressed or sorted
// point, a bad infinity encoding. Coordinates < q, curve and subgroup are
// engine::PreparedVerifier's checks.
std::optional<engine::VerificationKey> ParseBellmanVerifyingKey(std::span<const uint8_t> bytes, std::string* why);

// bellperson's 192-byte encoding of `proof`'s points (BLS12-381 coordinates,
// each below q).
std::array<uint8_t, kBellmanProofBytes> EncodeBellmanProof(const engine::ProofPoints& proof);

// Lower-case hex of `bytes` (zkctl prints proofs so).
std::string HexOf(std::span<const uint8_t> bytes);

}  // namespace zkfleet::broker
