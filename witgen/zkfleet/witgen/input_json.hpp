// input.json -> the generator's binary request, with snarkjs's rules.
//
// snarkjs reads input.json with JSON.parse and turns every value into a
// BigInt (circom_runtime's normalize: BigInt(v) % p, plus p when negative).
// This reproduces that exactly, so the witness is the one snarkjs computes:
//   * the top level is an object; its keys are the input signals' names (a
//     key given twice: the last value wins, as in JSON.parse);
//   * a signal's value is a value or arrays of them, nested to any depth
//     (flattened in order);
//   * a string is read as BigInt(string): surrounding white space ignored,
//     "" is 0, decimal with an optional sign, or 0x / 0o / 0b digits;
//   * a number is the JavaScript double JSON.parse makes of it (so an integer
//     above 2^53 is rounded as in JavaScript) and must be an integer;
//   * true / false are 1 / 0; null and objects inside a value are errors.
// Values are reduced mod p: negative and >= p inputs as snarkjs reduces them.
// Whether the names and sizes fit the circuit is the generator's check
// (it alone knows the circuit's signals).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::witgen {

struct InputError {
  std::string message;  // names the signal and the value ("in[2]")
};

// Parses `json` against the field of `prime` (little-endian bytes, a
// multiple of 4 long). On success returns true and fills `request` with the
// generator's request (generator/driver.c); else fills `error`. Nesting
// deeper than 64 levels is an error (no recursion on hostile input).
bool BuildGeneratorRequest(std::string_view json, std::span<const uint8_t> prime, std::vector<uint8_t>& request,
                           InputError& error);

}  // namespace zkfleet::witgen
