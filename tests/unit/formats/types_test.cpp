// Names of the engine's enums.
#include "zkfleet/engine/types.hpp"

#include <gtest/gtest.h>

#include "formats_test_util.hpp"

namespace zkfleet::engine {
namespace {

TEST(TypesTest, CurveNamesAreSnarkjsNames) {
  EXPECT_STREQ(CurveName(Curve::kBn254), "bn128");
  EXPECT_STREQ(CurveName(Curve::kBls12_381), "bls12381");
}

TEST(TypesTest, BackendNamesRoundTrip) {
  for (Backend b : {Backend::kCpu, Backend::kCuda, Backend::kAuto}) EXPECT_EQ(ParseBackend(BackendName(b)), b);
  EXPECT_STREQ(BackendName(Backend::kCuda), "cuda");
}

TEST(TypesTest, UnknownBackendListsValidNames) {
  io::testing::ExpectError([] { ParseBackend("gpu"); }, ErrorCode::kInvalidArgument,
                           {"\"gpu\"", "cpu", "cuda", "auto"});
  io::testing::ExpectError([] { ParseBackend(""); }, ErrorCode::kInvalidArgument, {"cpu, cuda, auto"});
}

}  // namespace
}  // namespace zkfleet::engine
