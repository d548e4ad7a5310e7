// A GPU test without a CUDA device: skipped, or failed under ZKFLEET_REQUIRE_GPU.
//
// On a machine without a GPU (CI, developers' laptops) the GPU suites skip,
// saying why. On a GPU host that is wrong: a broken driver, a container
// started without the device or CUDA_VISIBLE_DEVICES set to nothing would turn
// the whole gpu label skipped, which ctest does not count as a failure. The
// runs meant to exercise a GPU set ZKFLEET_REQUIRE_GPU=1 (bench/gpu's device
// scripts, docs/testing.md), and every such skip becomes a failure instead.
//
// Header-only with no dependency beyond GoogleTest, so that the standalone GPU
// build (bench/gpu/standalone) compiles it as the main build does.
#pragma once

#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>

namespace zkfleet::testing {

// ZKFLEET_REQUIRE_GPU unset, empty or "0": a missing GPU skips. Any other
// value requires one: a misspelt "yes" must not quietly leave the run lenient.
inline bool GpuRequired() {
  const char* value = std::getenv("ZKFLEET_REQUIRE_GPU");
  return value != nullptr && std::string_view(value) != "" && std::string_view(value) != "0";
}

}  // namespace zkfleet::testing

// In a test body or a fixture's SetUp (it returns from the function, as
// GTEST_SKIP does): nothing when `has_gpu`; otherwise skips the test saying
// `why` (a std::string or C string, evaluated only then), or fails it under
// ZKFLEET_REQUIRE_GPU. The switch keeps a caller's `else` from binding to the
// macro's own `if` (GoogleTest's GTEST_AMBIGUOUS_ELSE_BLOCKER_).
#define ZKFLEET_SKIP_UNLESS_GPU(has_gpu, why)                                                    \
  switch (0)                                                                                     \
  case 0:                                                                                        \
  default:                                                                                       \
    if (has_gpu) {                                                                               \
    } else if (::zkfleet::testing::GpuRequired())                                                \
      GTEST_FAIL() << (why) << " (ZKFLEET_REQUIRE_GPU is set: a missing GPU fails this test)";   \
    else                                                                                         \
      GTEST_SKIP() << (why) << " (set ZKFLEET_REQUIRE_GPU=1 to make this a failure)"
