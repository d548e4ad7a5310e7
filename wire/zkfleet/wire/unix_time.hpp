// Wall-clock time as the protocol carries it: seconds since the Unix epoch,
// as a double (deadlines, submit and finish times in messages and the
// journal). Steady-clock intervals stay std::chrono::steady_clock.
#pragma once

#include <chrono>
#include <ctime>
#include <string>

namespace zkfleet::wire {

inline double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A steady-clock interval in seconds (durations in logs and metrics).
inline double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// "2024-05-01T12:34:56Z" (UTC, whole seconds), or "-" for 0 (not yet).
inline std::string IsoUtcTime(double unix_s) {
  if (unix_s <= 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace zkfleet::wire
