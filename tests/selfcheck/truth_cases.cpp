// Deliberately bad test cases for the ctest self-check (check_ctest_truth.cmake).
// They are never registered in the project's own ctest run: the self-check
// registers them in a scratch ctest tree with the same machinery as every
// other suite and asserts how ctest reports each one.
#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

TEST(Truth, Passes) { EXPECT_EQ(1 + 1, 2); }

TEST(Truth, Fails) { EXPECT_EQ(1 + 1, 3) << "deliberate failure"; }

TEST(Truth, Skips) { GTEST_SKIP() << "deliberate skip"; }

// The case issue 11 is about: output contains "[  SKIPPED ]", exit code is 1.
TEST(Truth, FailsThenSkips) {
  ADD_FAILURE() << "deliberate failure before a skip";
  GTEST_SKIP() << "deliberate skip after a failure";
}

TEST(Truth, Crashes) { std::abort(); }

// A failing case whose output contains GoogleTest's skip marker (as when a
// test echoes a child process's output): matching output text would call it
// skipped; only the exit code tells the truth.
TEST(Truth, FailsAndPrintsSkipMarker) {
  std::printf("[  SKIPPED ] 1 test, listed below:\n");
  ADD_FAILURE() << "deliberate failure in a case whose output looks like a skip";
}

// Skips in the body, then fails in TearDown.
class TruthFixture : public ::testing::Test {
 protected:
  void TearDown() override { ADD_FAILURE() << "deliberate failure in TearDown after a skip"; }
};
TEST_F(TruthFixture, SkipsThenFailsInTearDown) { GTEST_SKIP() << "deliberate skip before a failing TearDown"; }
