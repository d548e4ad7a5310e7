// The logger's JSON lines (--log-format json): one valid JSON object per
// event, whatever the message holds, with the ids the message names as fields.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "zkfleet/common/logging.hpp"

namespace zkfleet {
namespace {

nlohmann::json Parse(const std::string& line) {
  auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(parsed.is_object()) << line;
  return parsed;
}

TEST(JsonLog, EveryEventIsOneValidObjectWithItsIds) {
  auto line = Parse(JsonLogLine("2026-12-06T12:00:00.123Z", "info", "zkbroker",
                                "job 12 of client alice (request r-7) leased to worker gpu-host-1-gpu0"));
  EXPECT_EQ(line["time"], "2026-12-06T12:00:00.123Z");
  EXPECT_EQ(line["level"], "info");
  EXPECT_EQ(line["program"], "zkbroker");
  EXPECT_EQ(line["msg"], "job 12 of client alice (request r-7) leased to worker gpu-host-1-gpu0");
  EXPECT_EQ(line["job_seq"], 12);
  EXPECT_EQ(line["worker_id"], "gpu-host-1-gpu0");
  EXPECT_EQ(line["request_id"], "r-7");
}

TEST(JsonLog, QuotesControlCharactersAndStateWordsStayInTheirPlace) {
  // A message with quotes, backslashes, a newline and a control character
  // (a client's error text can hold anything) is still one JSON line.
  const std::string message = "bad input \"x\\y\"\nnext\x01 line";
  const std::string raw = JsonLogLine("t", "warning", "zkworker", message);
  EXPECT_EQ(raw.find('\n'), std::string::npos) << raw;
  EXPECT_EQ(Parse(raw)["msg"], message);
  // "worker FAULTED" names a state; the id is the next worker named.
  auto line = Parse(JsonLogLine("t", "error", "zkbroker", "worker FAULTED: worker 'w1' failed 3 proofs"));
  EXPECT_EQ(line["worker_id"], "w1");
  EXPECT_FALSE(Parse(JsonLogLine("t", "info", "zkworker", "worker READY")).contains("worker_id"));
  EXPECT_FALSE(Parse(JsonLogLine("t", "info", "zkworker", "no ids here")).contains("job_seq"));
}

TEST(JsonLog, FormatsAreNamed) {
  LogFormat format = LogFormat::kText;
  EXPECT_TRUE(ParseLogFormat("json", &format));
  EXPECT_EQ(format, LogFormat::kJson);
  EXPECT_TRUE(ParseLogFormat("text", &format));
  EXPECT_EQ(format, LogFormat::kText);
  EXPECT_FALSE(ParseLogFormat("xml", &format));
}

}  // namespace
}  // namespace zkfleet
