#include "zkfleet/common/logging.hpp"

#include <cstdio>
#include <ctime>
#include <memory>
#include <regex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace zkfleet {
namespace {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  return out + "\"";
}

// The whole event as one JSON line: spdlog's own fields are taken from the
// message, not from a pattern (a pattern cannot escape the message).
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
    const std::time_t t = seconds.count();
    std::tm tm{};
    gmtime_r(&t, &tm);
    char time[40];
    const size_t n = std::strftime(time, sizeof time, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(time + n, sizeof time - n, ".%03dZ", static_cast<int>(millis));
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string line =
        JsonLogLine(time, std::string(level.data(), level.size()),
                    std::string(msg.logger_name.data(), msg.logger_name.size()),
                    std::string(msg.payload.data(), msg.payload.size())) +
        "\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

}  // namespace

bool ParseLogFormat(const std::string& text, LogFormat* format) {
  if (text == "text") {
    *format = LogFormat::kText;
  } else if (text == "json") {
    *format = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

std::string JsonLogLine(const std::string& time, const std::string& level, const std::string& program,
                        const std::string& message) {
  std::string out = "{\"time\":" + JsonString(time) + ",\"level\":" + JsonString(level) +
                    ",\"program\":" + JsonString(program) + ",\"msg\":" + JsonString(message);
  // The ids an event names, as fields to filter on (the message keeps them too).
  // "worker FAULTED: ..." names a state, not a worker: such words are skipped.
  static const std::regex job(R"(\bjob (\d{1,19})\b)");
  static const std::regex worker(R"(\bworker '?([A-Za-z0-9_.@-]{1,128})'?)");
  static const std::regex request(R"(\brequest(?: id)? '?([A-Za-z0-9_.@/-]{1,128})'?)");
  static const std::regex state_word(
      "STARTING|LOADING|WAITING_FOR_MEMORY|READY|DRAINING|RELEASING|GONE|FAULTED|id|key|keys|ids|of|is|in|on|the");
  auto first_id = [&](const std::regex& pattern) -> std::string {
    for (std::sregex_iterator it(message.begin(), message.end(), pattern), end; it != end; ++it) {
      const std::string id = (*it)[1].str();
      if (!std::regex_match(id, state_word)) return id;
    }
    return {};
  };
  std::smatch m;
  if (std::regex_search(message, m, job)) out += ",\"job_seq\":" + m[1].str();
  if (std::string id = first_id(worker); !id.empty()) out += ",\"worker_id\":" + JsonString(id);
  if (std::string id = first_id(request); !id.empty()) out += ",\"request_id\":" + JsonString(id);
  return out + "}";
}

void InitLogging(const std::string& component, const std::string& level, LogFormat format) {
  auto logger = spdlog::stderr_color_mt(component);
  if (format == LogFormat::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace zkfleet
