// main() for every zkfleet GoogleTest binary (replaces gtest_main).
//
// ctest runs one test case per process (cmake/ZkfleetGtest.cmake) and reads
// only the exit status: 0 passed, 77 skipped, anything else failed. GoogleTest
// itself returns 0 for a skipped case, so this main turns "every selected case
// skipped, none failed" into 77. A case that records a failure and then skips
// is a failure (RUN_ALL_TESTS returns 1), and selecting no case at all is an
// error, so a typo in a filter cannot pass.
#include <cstdio>

#include <gtest/gtest.h>

namespace {
constexpr int kSkippedExitCode = 77;  // SKIP_RETURN_CODE in ZkfleetGtestDiscover.cmake
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (RUN_ALL_TESTS() != 0) return 1;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (unit.test_to_run_count() == 0) {
    std::fprintf(stderr, "zkfleet_gtest_main: no test case matched the selection\n");
    return 1;
  }
  if (unit.successful_test_count() == 0 && unit.skipped_test_count() > 0) {
    std::fprintf(stderr, "zkfleet_gtest_main: every selected case skipped (exit %d)\n", kSkippedExitCode);
    return kSkippedExitCode;
  }
  return 0;
}
