// Wall-clock time as the protocol carries it: seconds since the Unix epoch,
// as a double (deadlines, submit and finish times in messages and the
// journal). Steady-clock intervals stay std::chrono::steady_clock.
#pragma once

#include <chrono>

namespace zkfleet::wire {

inline double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace zkfleet::wire
