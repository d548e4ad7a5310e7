// The parsed .wtns a prover reads: the engine API's engine::Witness
// (zkfleet/engine/witness.hpp, which documents ownership and thread-safety)
// under the format's io:: name. Its parser is wtns/witness.cpp.
#pragma once

#include "zkfleet/engine/witness.hpp"

namespace zkfleet::io {

using engine::Witness;

}  // namespace zkfleet::io
