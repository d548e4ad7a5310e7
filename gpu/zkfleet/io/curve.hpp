// The curves snarkjs supports, for the format readers: the engine API's
// value type (zkfleet/engine/curve.hpp) under the io:: name.
#pragma once

#include "zkfleet/engine/curve.hpp"

namespace zkfleet::io {

using engine::Curve;
using engine::CurveName;

}  // namespace zkfleet::io
