// Jobs from inputs (SubmitRequest.inputs, Job.input_json): the check made on
// a circom input.json before it is journaled or sent -- the broker at SUBMIT,
// the clients before they send. A worker reads it with the witness
// generator's own parser (witgen/witness_generator.hpp: snarkjs's reading of
// every value, mod p), not with this one.
// A streaming (SAX) parse: no document is built, nesting is bounded before it
// can cost a deep recursion, and nothing a peer sends can throw out of it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace zkfleet::wire {

// Deepest nesting (objects and arrays, the top-level object counts as 1) an
// input.json may have. circom inputs are signals and arrays of signals (a
// matrix is depth 3); 32 leaves room and bounds hostile bytes.
inline constexpr size_t kMaxInputJsonDepth = 32;
// The broker's default --max-input-bytes.
inline constexpr size_t kDefaultMaxInputBytes = 1 << 20;

// Why `input` cannot be taken as an input.json (one line, no input bytes
// quoted), or nullopt: it must be strict JSON (RFC 8259, UTF-8, nothing after
// the value) whose top-level value is an object, nested at most `max_depth`.
std::optional<std::string> InputJsonProblem(std::string_view input, size_t max_depth = kMaxInputJsonDepth);

}  // namespace zkfleet::wire
