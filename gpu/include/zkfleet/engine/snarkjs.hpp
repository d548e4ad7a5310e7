// snarkjs's Groth16 JSON files, read and written: part of the engine's public
// API.
//
//   verification_key.json  ReadVerificationKeyJson / ParseVerificationKeyJson,
//                          VerificationKeyJson, ExportVerificationKeyJson (.zkey)
//   proof.json             ReadProofJson / ParseProofJson, ProofJson
//   public.json            ReadPublicSignalsJson / ParsePublicSignalsJson, PublicJson
//
// Readers accept what `snarkjs groth16 verify` accepts: numbers as decimal
// strings, "0x…" hex strings or JSON unsigned integers; G1 points as [x, y]
// or [x, y, z], G2 as [[x0, x1], [y0, y1]] or with a third pair; the curve
// named by any spelling snarkjs knows (bn128, bn254, altbn128, bls12381,
// bls12-381, any case); proof.json's "protocol" and "curve" keys optional. A
// third coordinate must be 1 (affine) or 0 (infinity). They check the shape,
// that every number fits in 384 bits and, for a key, that nPublic (when
// present) matches IC; ranges, curve membership and the signal count are
// Verify's job (engine/verify.hpp).
//
// Errors: malformed input throws zkfleet::Error kBadFormat whose message
// names the file (the `name` argument, or the path) and the field;
// kUnsupported for an unknown curve or a protocol other than groth16;
// kNotFound / kIo when a file cannot be read. Nothing crashes.
//
// Writers produce the bytes snarkjs writes (JSON.stringify with 1-space
// indentation, every array element on its own line, no trailing newline).
//
// Ownership: every function returns values it owns; nothing is retained.
// Thread-safety: pure functions, callable from any number of threads.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "zkfleet/engine/curve.hpp"
#include "zkfleet/engine/verify.hpp"

namespace zkfleet::engine {

// The curve a snarkjs curve name denotes, if any.
std::optional<Curve> CurveFromSnarkjsName(std::string_view name);

// "123" or "0x7b" (at most 384 bits). `what` names the value in messages.
BigInt ParseBigInt(std::string_view text, std::string_view what);
// The decimal text of `value` ("0" for zero), as snarkjs writes numbers.
std::string DecimalString(const BigInt& value);

// `name` names the text (a file name, "proof.json") in error messages.
VerificationKey ParseVerificationKeyJson(std::string_view text, const std::string& name);
ProofPoints ParseProofJson(std::string_view text, const std::string& name);
std::vector<BigInt> ParsePublicSignalsJson(std::string_view text, const std::string& name);

VerificationKey ReadVerificationKeyJson(const std::string& path);
ProofPoints ReadProofJson(const std::string& path);
std::vector<BigInt> ReadPublicSignalsJson(const std::string& path);

// verification_key.json exactly as `snarkjs zkey export verificationkey`
// writes it (keys in its order, vk_alphabeta_12 computed here). Throws
// kBadFormat when alpha1 or beta2 is not a valid point.
std::string VerificationKeyJson(const VerificationKey& vk);
// The same for the key inside a .zkey (`zkprove export-vk`): maps the file,
// checks its structure, reads the header points and IC. Throws
// zkfleet::Error naming the file on bad input.
std::string ExportVerificationKeyJson(const std::string& zkey_path);

// proof.json of `proof`'s affine points on `curve` (proof.curve is not
// consulted), as `snarkjs groth16 prove` writes it.
std::string ProofJson(const ProofPoints& proof, Curve curve);
// public.json: the signals as decimal strings.
std::string PublicJson(std::span<const BigInt> signals);

}  // namespace zkfleet::engine
