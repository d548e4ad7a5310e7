// The base and scalar field primes of the curves snarkjs supports, as the
// little-endian bytes that snarkjs files store, to recognise a file's curve.
// Thread-safety: immutable data, safe everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "zkfleet/io/curve.hpp"

namespace zkfleet::io {

struct CurvePrimes {
  Curve curve;
  uint32_t n8q;        // bytes of a base-field element (32 / 48)
  const uint8_t* q;    // base field prime, n8q bytes LE
  uint32_t n8r;        // bytes of a scalar (32 for both curves)
  const uint8_t* r;    // scalar field prime, n8r bytes LE
  uint32_t two_adicity;  // largest s with 2^s | r - 1 (largest NTT domain)
};

const CurvePrimes& PrimesOf(Curve curve);

// The curve whose base field prime is `q` (LE bytes, any length), if any.
std::optional<Curve> CurveFromBasePrime(std::span<const uint8_t> q);
// The curve whose scalar field prime is `r` (LE bytes, any length), if any.
std::optional<Curve> CurveFromScalarPrime(std::span<const uint8_t> r);

// "0x..." big-endian hex of a little-endian integer, for error messages.
std::string HexLe(std::span<const uint8_t> le);

}  // namespace zkfleet::io
