// A per-test scratch directory for the devtools tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace zkfleet::devtools::testing {

// A scratch directory removed with its contents when the test's variable
// goes out of scope (kept when the test failed, for the post-mortem).
struct ScratchPath : std::filesystem::path {
  explicit ScratchPath(std::filesystem::path p) : std::filesystem::path(std::move(p)) {}
  ScratchPath(const ScratchPath&) = delete;
  ~ScratchPath() {
    std::error_code ec;
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(*this, ec);
  }
};

// A fresh directory named after the running test case.
inline ScratchPath ScratchDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // The process id keeps cases apart when builds (release, asan, tsan) run
  // the same case at the same time.
  std::string name = std::string("zkfleet_devtools_") + std::to_string(getpid()) + "_" + info->test_suite_name() + "_" +
                     info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return ScratchPath(dir);
}

}  // namespace zkfleet::devtools::testing
