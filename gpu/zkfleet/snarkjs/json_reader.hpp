// Readers for snarkjs's Groth16 JSON files, and the writer of
// verification_key.json (as `snarkjs zkey export verificationkey`).
//
//   verification_key.json  ReadVerificationKeyJson / ParseVerificationKeyJson
//   proof.json             ReadProofJson / ParseProofJson
//   public.json            ReadPublicSignalsJson / ParsePublicSignalsJson
//
// Accepted like `snarkjs groth16 verify` accepts them (spec §9): numbers as
// decimal strings, "0x…" hex strings or JSON unsigned integers; G1 points as
// [x, y] or [x, y, z], G2 as [[x0, x1], [y0, y1]] or with a third pair; the
// curve named by any spelling snarkjs knows (bn128, bn254, altbn128,
// bls12381, bls12-381, any case); proof.json's "protocol" and "curve" keys
// optional. One restriction: a third coordinate must be 1 (affine, what
// snarkjs writes) or 0 (infinity): other values would be Jacobian
// coordinates, which snarkjs never writes.
//
// Readers check the shape, that every number fits in 384 bits and, for a
// key, that nPublic (when present) matches IC; ranges (< q, < r), curve
// membership and the signal count are groth16::Verify's job. Malformed input
// throws zkfleet::Error kBadFormat naming the file and the field
// (kUnsupported for an unknown curve or a protocol other than groth16;
// kNotFound / kIo when the file cannot be read); nothing crashes.
//
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkfleet/io/curve.hpp"
#include "zkfleet/groth16/verifier.hpp"

namespace zkfleet::io {

// The curve a snarkjs curve name denotes, if any.
std::optional<Curve> CurveFromSnarkjsName(std::string_view name);

// "123" or "0x7b" (at most 384 bits). `what` names the value in messages.
groth16::BigInt ParseBigIntString(std::string_view text, std::string_view what);

// `name` is the file name used in messages.
groth16::VerificationKey ParseVerificationKeyJson(std::string_view text, const std::string& name);
groth16::Proof ParseProofJson(std::string_view text, const std::string& name);
std::vector<groth16::BigInt> ParsePublicSignalsJson(std::string_view text, const std::string& name);

groth16::VerificationKey ReadVerificationKeyJson(const std::string& path);
groth16::Proof ReadProofJson(const std::string& path);
std::vector<groth16::BigInt> ReadPublicSignalsJson(const std::string& path);

// verification_key.json exactly as `snarkjs zkey export verificationkey`
// writes it (keys in its order, 1-space indentation, no trailing newline).
// `alphabeta` is groth16::AlphaBeta(vk).
std::string VerificationKeyJson(const groth16::VerificationKey& vk,
                                const std::array<groth16::BigInt, 12>& alphabeta);

}  // namespace zkfleet::io
