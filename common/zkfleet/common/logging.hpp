// Process-wide logging setup (spdlog). The logger is one of the two allowed
// globals (the other is the metrics registry).
#pragma once

#include <string>

#include <spdlog/spdlog.h>

namespace zkfleet {

enum class LogFormat {
  kText,  // "2026-12-06T12:00:00.123 info [zkbroker] message"
  kJson,  // one JSON object per line: time, level, program, msg, and the ids the message names
};

// "text" / "json"; false for anything else.
bool ParseLogFormat(const std::string& text, LogFormat* format);

// Configures the default spdlog logger: named `component`, level from
// `level` ("trace".."off"), stderr sink, flushed on every info+ message so
// logs survive a SIGKILL. kJson writes each event as one line
// {"time":"...","level":"info","program":"zkbroker","msg":"...", "job_seq":12,
// "worker_id":"...","request_id":"..."} (JsonLogLine: the ids where the
// message names them: "job 12", "worker gpu1", "request r-7").
void InitLogging(const std::string& component, const std::string& level = "info",
                 LogFormat format = LogFormat::kText);

// The JSON object (without the line break) of one event, as kJson writes it.
// `time` is ISO 8601 UTC with milliseconds. Exposed for tests.
std::string JsonLogLine(const std::string& time, const std::string& level, const std::string& program,
                        const std::string& message);

}  // namespace zkfleet
