// TRANSITIONAL, for broker_core.cpp only (broker/CMakeLists.txt): it still
// includes the engine's former internal zkfleet/io/json.hpp and names
// groth16::BigInt and io::LimbsToDecimal. Delete this file and its
// set_source_files_properties line once broker_core.cpp includes
// "zkfleet/engine/snarkjs.hpp" and spells them engine::BigInt and
// engine::DecimalString(value).
#pragma once

#include <string>

#include "zkfleet/engine/snarkjs.hpp"

namespace zkfleet::groth16 {
using engine::BigInt;
}  // namespace zkfleet::groth16

namespace zkfleet::io {
inline std::string LimbsToDecimal(const uint64_t* limbs, int n) {
  engine::BigInt value{};
  for (int i = 0; i < n && i < static_cast<int>(value.size()); ++i) value[static_cast<size_t>(i)] = limbs[i];
  return engine::DecimalString(value);
}
}  // namespace zkfleet::io
