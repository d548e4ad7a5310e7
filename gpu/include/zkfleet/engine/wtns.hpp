// .wtns witness files (spec §5) for callers that do not prove: reading only
// the public signals from bytes that arrive in pieces.
// Part of the engine's public API. (To prove a witness, parse it with
// engine::Witness, engine/witness.hpp.)
//
// Ownership: every function returns values it owns; the input bytes are only
// read during the call.
// Thread-safety: pure functions, callable from any number of threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/engine/verify.hpp"

namespace zkfleet::engine {

// The public signals w[1..n_public] of the .wtns whose bytes are the
// concatenation of `chunks` (e.g. the frames of a network message; empty
// chunks allowed), without copying the rest of the witness. Checks the
// container (magic, version, section table, sizes), n8 (a multiple of 8 in
// [8, 48]), that nWitness covers w[0..n_public], w[0] == 1 and every signal
// read < prime. Returns nullopt when the bytes are not such a witness, with
// the reason in *why (when `why` is not null), starting "witness: ".
std::optional<std::vector<BigInt>> PublicSignalsOfWtns(std::span<const std::span<const uint8_t>> chunks,
                                                       uint32_t n_public, std::string* why);

}  // namespace zkfleet::engine
