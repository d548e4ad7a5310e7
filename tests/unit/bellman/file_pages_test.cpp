// bellman::AtomicFile (the .params, .vk and decoded-image writer): a file
// replaced whole or not at all, no temporary left behind, the mode asked for.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "zkfleet/bellman/file_pages.hpp"
#include "zkfleet/common/error.hpp"
#include "testutil/test_support.hpp"

namespace zkfleet {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Entries(const std::filesystem::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(BellmanAtomicFile, AnUncommittedFileLeavesTheOldOneAndNoTemporary) {
  testing::TempDir dir;
  const std::string path = dir.file("x.params");
  { std::ofstream(path) << "old"; }
  {
    bellman::AtomicFile file(path, "parameters", 0644);
    file.Write("new bytes", 9);
    file.WriteAt("N", 1, 0);
  }  // no Commit: an exception on the way, a full disk
  EXPECT_EQ(Slurp(path), "old");
  EXPECT_EQ(Entries(dir.path()), 1u) << "the temporary is removed";
}

TEST(BellmanAtomicFile, ACommittedFileReplacesTheOldOneWholeWithTheModeAskedFor) {
  testing::TempDir dir;
  const std::string path = dir.file("x.points");
  { std::ofstream(path) << "old contents, longer than the new"; }
  for (mode_t mode : {mode_t{0600}, mode_t{0644}}) {
    bellman::AtomicFile file(path, "decoded image", mode);
    file.Truncate(12);
    file.WriteAt("world", 5, 7);
    file.WriteAt("hello, ", 7, 0);
    file.Commit();
    EXPECT_EQ(Slurp(path), "hello, world");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, mode);
    EXPECT_EQ(Entries(dir.path()), 1u);
  }
}

TEST(BellmanAtomicFile, ErrorsNameWhatAndWhere) {
  testing::TempDir dir;
  const std::string path = dir.file("missing-dir/x.vk");
  try {
    bellman::AtomicFile file(path, "verifying key", 0644);
    ADD_FAILURE() << "created a file in a missing directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("cannot write verifying key " + path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace zkfleet
