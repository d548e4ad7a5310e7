// Process-wide logging setup (spdlog). The logger is one of the two allowed
// globals (the other is the metrics registry).
#pragma once

#include <string>

#include <spdlog/spdlog.h>

namespace zkfleet {

// Configures the default spdlog logger: "<component> " prefix, level from
// `level` ("trace".."off"), stderr sink, flushed on every info+ message so
// logs survive a SIGKILL.
void InitLogging(const std::string& component, const std::string& level = "info");

}  // namespace zkfleet
