// Seconds elapsed on the steady clock since `start`: the engine's load and
// proof timings. Header-only, no state.
#pragma once

#include <chrono>

namespace zkfleet {

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace zkfleet
