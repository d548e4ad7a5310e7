// snarkjs-compatible JSON output: proof.json and public.json, byte for byte
// as `snarkjs groth16 prove` writes them (JSON.stringify with 1-space indent,
// every array element on its own line, no trailing newline; spec §9).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::io {

// Decimal text of the little-endian 64-bit limbs limbs[0..n) ("0" for zero).
std::string LimbsToDecimal(const uint64_t* limbs, int n);

// proof.json for affine points πA = (a_x, a_y), πB = (b_x, b_y) with
// b_x = b_x_c0 + b_x_c1·u (c0 first, as snarkjs), πC = (c_x, c_y); every
// argument is a canonical decimal string. Points at infinity cannot be
// expressed (they occur with negligible probability). `curve_name` is
// "bn128" or "bls12381". Throws zkfleet::Error kInvalidArgument when an
// argument is not a non-empty string of decimal digits.
std::string ProofJson(std::string_view curve_name, std::string_view a_x, std::string_view a_y,
                      std::string_view b_x_c0, std::string_view b_x_c1, std::string_view b_y_c0,
                      std::string_view b_y_c1, std::string_view c_x, std::string_view c_y);

// public.json: the array of decimal strings (w[1..nPublic]). Same checks.
std::string PublicJson(const std::vector<std::string>& signals);

}  // namespace zkfleet::io
