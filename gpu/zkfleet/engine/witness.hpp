// The API's name for a witness: io::Witness (zkfleet/io/witness.hpp), the
// parsed .wtns a ProvingKey proves.
#pragma once

#include "zkfleet/io/witness.hpp"

namespace zkfleet::engine {

using Witness = io::Witness;

}  // namespace zkfleet::engine
