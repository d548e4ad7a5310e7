// wire/input_json.hpp: the shape check of an input.json, what every receiver
// (broker, worker, clients) runs before anything else.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "zkfleet/wire/input_json.hpp"

namespace zkfleet::wire {
namespace {

TEST(InputJson, AcceptsJsonObjectsOfBoundedDepthOnly) {
  EXPECT_EQ(InputJsonProblem("{}"), std::nullopt);
  EXPECT_EQ(InputJsonProblem(" \n{\"a\": [\"1\", [\"2\", 3]], \"b\": {\"c\": null, \"d\": true}}\n"),
            std::nullopt);
  EXPECT_EQ(InputJsonProblem("{\"caf\xc3\xa9\": \"\\u00e9\"}"), std::nullopt);
  EXPECT_EQ(InputJsonProblem("{\"a\": [[[1]]]}", 4), std::nullopt);
  auto says = [](std::string_view input, const std::string& words, size_t depth = kMaxInputJsonDepth) {
    auto problem = InputJsonProblem(input, depth);
    if (!problem) return ::testing::AssertionFailure() << "accepted";
    if (problem->find(words) == std::string::npos) return ::testing::AssertionFailure() << *problem;
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(says("{\"a\": [[[1]]]}", "deeper than 3", 3));
  EXPECT_TRUE(says("", "empty"));
  EXPECT_TRUE(says("[]", "array"));
  EXPECT_TRUE(says("1", "not an object"));
  EXPECT_TRUE(says("\"{}\"", "not an object"));
  EXPECT_TRUE(says("null", "not an object"));
  EXPECT_TRUE(says("{", "not valid JSON"));
  EXPECT_TRUE(says("{} {}", "not valid JSON"));
  EXPECT_TRUE(says("{}x", "not valid JSON"));
  EXPECT_TRUE(says(std::string_view("{}\0", 3), "NUL"));
  EXPECT_TRUE(says(std::string_view("{\"a\":\"\0\"}", 9), "NUL"));
  EXPECT_TRUE(says("{\"a\": 01}", "not valid JSON"));
  EXPECT_TRUE(says("{\"a\": NaN}", "not valid JSON"));
  EXPECT_TRUE(says("{'a': 1}", "not valid JSON"));
  EXPECT_TRUE(says("{\"a\": 1,}", "not valid JSON"));
  EXPECT_TRUE(says("{\"a\": \"\xc3\"}", "not valid JSON"));  // truncated UTF-8
  EXPECT_TRUE(says("{\"a\": \"\x01\"}", "not valid JSON"));  // a raw control character
  EXPECT_TRUE(says("{/* c */}", "not valid JSON"));          // no comments
  EXPECT_TRUE(says(std::string(10'000'000, '['), "array"));
  EXPECT_TRUE(says("{\"a\":" + std::string(10'000'000, '['), "deeper than 32"));
}

}  // namespace
}  // namespace zkfleet::wire
