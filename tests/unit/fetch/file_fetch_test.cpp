// file:// fetches: into the buffer, the size and the digest checked, and no
// way out of the allowed directory (names, encodings, symlinks).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "fetch_test_support.hpp"
#include "zkfleet/fetch/attempt.hpp"
#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"

namespace zkfleet::fetch {
namespace {

using testing::Body;
using testing::FetchAs;

class FileFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() / "allowed" / "sub");
    std::filesystem::create_directories(dir_.path() / "outside");
    body_ = Body(9u << 20 | 12345);  // more than two 4 MiB chunks, not a multiple
    zkfleet::testing::WriteFile(dir_.file("allowed/obj.bin"), body_);
    zkfleet::testing::WriteFile(dir_.file("allowed/sub/a b.bin"), body_);
    zkfleet::testing::WriteFile(dir_.file("outside/secret.bin"), body_);
    std::filesystem::create_symlink("../outside/secret.bin", dir_.path() / "allowed" / "link.bin");
    std::filesystem::create_directory_symlink("../outside", dir_.path() / "allowed" / "dirlink");
    fetcher_ = std::make_unique<Fetcher>(
        std::make_shared<FetchConfig>(testing::QuickOptions({"file://" + dir_.file("allowed")})));
  }
  std::string Url(const std::string& rest) const { return "file://" + dir_.path().string() + "/" + rest; }

  zkfleet::testing::TempDir dir_;
  std::string body_;
  std::unique_ptr<Fetcher> fetcher_;
};

TEST_F(FileFetch, ReadsAnAllowedFile) {
  auto got = FetchAs(*fetcher_, Url("allowed/obj.bin"), body_);
  EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
  EXPECT_EQ(got.result.attempts, 1u);
  EXPECT_EQ(got.result.bytes, body_.size());
  EXPECT_TRUE(got.buffer == body_);
  got = FetchAs(*fetcher_, Url("allowed/sub/a%20b.bin"), body_);
  EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
}

TEST_F(FileFetch, MissingFileIsTheJobsFault) {
  auto got = FetchAs(*fetcher_, Url("allowed/missing.bin"), body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_EQ(got.result.attempts, 1u);
  EXPECT_NE(got.result.why.find("No such file"), std::string::npos) << got.result.why;
}

TEST_F(FileFetch, WrongSizeIsTheJobsFault) {
  auto got = FetchAs(*fetcher_, Url("allowed/obj.bin"), body_ + "x");
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("wrong size"), std::string::npos) << got.result.why;
}

TEST_F(FileFetch, FifoIsRefusedWithoutHanging) {
  ASSERT_EQ(::mkfifo(dir_.file("allowed/fifo").c_str(), 0600), 0);
  auto got = FetchAs(*fetcher_, Url("allowed/fifo"), body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("not a regular file"), std::string::npos) << got.result.why;
}

TEST_F(FileFetch, DigestMismatchIsTheJobsFault) {
  std::string other = body_;
  other[other.size() / 2] ^= 1;
  auto got = FetchAs(*fetcher_, Url("allowed/obj.bin"), other);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("sha256"), std::string::npos) << got.result.why;
}

TEST_F(FileFetch, SymlinksOutOfTheDirectoryAreRefused) {
  auto got = FetchAs(*fetcher_, Url("allowed/link.bin"), body_);
  EXPECT_EQ(got.result.status, FetchStatus::kRefused) << got.result.why;
  EXPECT_NE(got.result.why.find("outside the allowed directory"), std::string::npos) << got.result.why;
  got = FetchAs(*fetcher_, Url("allowed/dirlink/secret.bin"), body_);
  EXPECT_EQ(got.result.status, FetchStatus::kRefused) << got.result.why;
  // Nothing was copied.
  EXPECT_EQ(got.buffer, std::string(body_.size(), '\xee'));
}

TEST_F(FileFetch, PathsOutsideThePrefixAreRefused) {
  for (const std::string& url : {Url("allowed/../outside/secret.bin"), Url("allowed/%2e%2e/outside/secret.bin"),
                                 Url("allowed/.%2E/outside/secret.bin"), Url("allowed%2f..%2foutside/secret.bin"),
                                 Url("outside/secret.bin"), std::string("file:///etc/passwd")}) {
    auto got = FetchAs(*fetcher_, url, body_);
    EXPECT_EQ(got.result.status, FetchStatus::kRefused) << url << ": " << got.result.why;
  }
}

// The flag the hook below sets, and the chunks it saw.
std::atomic<bool> cancel_after_first_chunk{false};
std::vector<uint64_t> chunks_read;

// Cancelled once the first chunk is in (the fetch is under way, not refused
// up front by the check before the first try): the next chunk is never read.
TEST_F(FileFetch, CancelStopsBetweenChunks) {
  constexpr uint64_t kChunk = 4u << 20;  // file_fetch.cpp's
  cancel_after_first_chunk = false;
  chunks_read.clear();
  internal::after_file_chunk_for_tests = [](uint64_t bytes_so_far) {
    chunks_read.push_back(bytes_so_far);
    cancel_after_first_chunk = true;
  };
  auto got = FetchAs(*fetcher_, Url("allowed/obj.bin"), body_, &cancel_after_first_chunk);
  internal::after_file_chunk_for_tests = nullptr;
  EXPECT_EQ(got.result.status, FetchStatus::kCancelled) << got.result.why;
  EXPECT_EQ(chunks_read, std::vector<uint64_t>{kChunk}) << "read on after the cancel";
  EXPECT_EQ(got.result.bytes, kChunk);
  EXPECT_EQ(got.result.attempts, 1u);
}

TEST_F(FileFetch, BufferOfTheWrongSizeIsTheCallersBug) {
  std::string buffer(10, '\0');
  FetchRequest request{Url("allowed/obj.bin"), body_.size(), testing::DigestOf(body_)};
  EXPECT_THROW(fetcher_->Fetch(request, {reinterpret_cast<uint8_t*>(buffer.data()), buffer.size()}), Error);
}

TEST(FetchConfig, BadOptionsAreRefused) {
  FetchOptions bad_prefix;
  bad_prefix.allow = {"ftp://x/"};
  EXPECT_THROW(FetchConfig{bad_prefix}, Error);
  FetchOptions bad_ca;
  bad_ca.ca_bundle = "/nonexistent/ca.pem";
  try {
    FetchConfig config(bad_ca);
    ADD_FAILURE() << "accepted an unreadable CA bundle";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/ca.pem"), std::string::npos) << e.what();
  }
  FetchOptions half_cert;
  half_cert.client_cert = "/etc/hostname";
  EXPECT_THROW(FetchConfig{half_cert}, Error);
  FetchOptions no_attempts;
  no_attempts.max_attempts = 0;
  EXPECT_THROW(FetchConfig{no_attempts}, Error);
}

TEST(FetchStatusName, Labels) {
  EXPECT_STREQ(FetchStatusName(FetchStatus::kOk), "ok");
  EXPECT_STREQ(FetchStatusName(FetchStatus::kRefused), "refused");
  EXPECT_STREQ(FetchStatusName(FetchStatus::kClientError), "client_error");
  EXPECT_STREQ(FetchStatusName(FetchStatus::kTransient), "transient");
  EXPECT_STREQ(FetchStatusName(FetchStatus::kCancelled), "cancelled");
}

}  // namespace
}  // namespace zkfleet::fetch
