// What a peer's error text may say about the host it came from: a worker's
// or the broker's absolute file paths (a key file, a cache, the data
// directory) tell a client how the operator's machines are laid out, so the
// text a client reads has each one cut to its last component
// ("/srv/keys/alpha/circuit_final.zkey" -> "circuit_final.zkey"). URLs
// ("file:///...", "https://host/...") are the client's own fields and stay.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace zkfleet::wire {

std::string WithoutLocalPaths(std::string_view text);

}  // namespace zkfleet::wire
