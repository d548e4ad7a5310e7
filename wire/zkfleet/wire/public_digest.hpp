// The digest of a job's expected public signals, which a client may send with
// a SUBMIT (SubmitRequest.public_signals_sha256, one per partition) so the
// broker checks the public signals itself rather than trusting whoever made
// the witness or the proof: SHA-256 of the partition's public signals as
// decimal strings, in order, joined with ',' (snarkjs' public.json
// ["33", "1"] is sha256("33,1")). 32 raw bytes.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::wire {

inline constexpr size_t kPublicDigestBytes = 32;

std::string PublicSignalsDigest(const std::vector<std::string>& decimal_signals);

// From a public.json text: a JSON array of decimal strings (as snarkjs and
// zkprove write it). nullopt, with why in `why`, for anything else.
std::optional<std::string> PublicSignalsDigestOfJson(std::string_view public_json, std::string* why);

// Lower-case hex, for messages.
std::string DigestHex(std::string_view digest);

}  // namespace zkfleet::wire
