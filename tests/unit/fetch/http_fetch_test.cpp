// http:// fetches against misbehaving_server.py: what each failure maps to,
// retries, redirects under the allow-list, slow and cancelled transfers.
#include <gtest/gtest.h>

#include <regex>
#include <thread>

#include "fetch_test_support.hpp"
#include "testutil/child_process.hpp"
#include "testutil/test_support.hpp"

namespace zkfleet::fetch {
namespace {

using testing::Body;
using testing::FetchAs;

constexpr const char* kPython = "/usr/bin/python3";

// One server for the whole suite (it keeps per-key state for /w/flaky).
class HttpFetch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access(kPython, X_OK) != 0) return;
    log_ = new zkfleet::testing::TempDir();
    server_ = new zkfleet::testing::ChildProcess(
        {kPython, std::string(ZKFLEET_FETCH_TEST_DIR) + "/misbehaving_server.py"}, log_->file("server.log"));
    if (server_->WaitForLog("PORT [0-9]+", zkfleet::testing::Scaled(std::chrono::seconds(10)))) {
      std::smatch m;
      const std::string log = server_->Log();
      if (std::regex_search(log, m, std::regex("PORT ([0-9]+)"))) port_ = std::stoi(m[1]);
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    delete log_;
    server_ = nullptr;
    log_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(zkfleet::testing::RequireExecutable("python3", kPython));
    ASSERT_GT(port_, 0) << "misbehaving_server.py did not start: " << (server_ ? server_->Log() : "");
    fetcher_ = std::make_unique<Fetcher>(std::make_shared<FetchConfig>(testing::QuickOptions({Base() + "/w/"})));
  }
  static std::string Base() { return "http://127.0.0.1:" + std::to_string(port_); }
  // A counter the server keeps, read with a fresh Fetcher (one connection).
  int Counter(const std::string& path) {
    Fetcher plain(std::make_shared<FetchConfig>(testing::QuickOptions({Base() + "/"})));
    std::string buffer(8, '\0');
    FetchRequest request{Base() + path, 8, std::string(32, '\0')};  // a digest that cannot match
    const auto result = plain.Fetch(request, {reinterpret_cast<uint8_t*>(buffer.data()), buffer.size()});
    if (result.why.find("sha256") == std::string::npos) return -1;
    return std::stoi(buffer);
  }
  // How many requests reached /outside/ so far.
  int OutsideCount() { return Counter("/count"); }

  static inline zkfleet::testing::TempDir* log_ = nullptr;
  static inline zkfleet::testing::ChildProcess* server_ = nullptr;
  static inline int port_ = 0;
  std::unique_ptr<Fetcher> fetcher_;
  const std::string body_ = Body();
};

TEST_F(HttpFetch, Ok) {
  for (int i = 0; i < 3; ++i) {  // the same handle again: the connection is reused
    auto got = FetchAs(*fetcher_, Base() + "/w/ok", body_);
    ASSERT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
    EXPECT_EQ(got.result.attempts, 1u);
    EXPECT_EQ(got.result.bytes, body_.size());
    EXPECT_TRUE(got.buffer == body_);
    EXPECT_EQ(got.result.why, "");
  }
}

TEST_F(HttpFetch, OneFetcherKeepsItsConnection) {
  const int before = Counter("/connections");
  ASSERT_GE(before, 0);
  for (int i = 0; i < 4; ++i) {
    auto got = FetchAs(*fetcher_, Base() + (i % 2 ? "/w/redirect-ok" : "/w/ok"), body_);
    ASSERT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
  }
  // fetcher_'s one connection, and the one that reads the counter.
  EXPECT_EQ(Counter("/connections"), before + 2);
}

TEST_F(HttpFetch, NotFoundIsTheJobsFault) {
  auto got = FetchAs(*fetcher_, Base() + "/w/404?X-Amz-Signature=topsecret", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_EQ(got.result.attempts, 1u);
  EXPECT_NE(got.result.why.find("HTTP 404"), std::string::npos) << got.result.why;
  EXPECT_EQ(got.result.why.find("topsecret"), std::string::npos) << got.result.why;
}

TEST_F(HttpFetch, ServerErrorIsRetriedThenTransient) {
  auto got = FetchAs(*fetcher_, Base() + "/w/500", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kTransient) << got.result.why;
  EXPECT_EQ(got.result.attempts, 3u);
  EXPECT_NE(got.result.why.find("HTTP 500"), std::string::npos) << got.result.why;
}

TEST_F(HttpFetch, ServerErrorThenOkSucceedsOnRetry) {
  auto got = FetchAs(*fetcher_, Base() + "/w/flaky?k=retry&n=2", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
  EXPECT_EQ(got.result.attempts, 3u);
  EXPECT_TRUE(got.buffer == body_);
}

TEST_F(HttpFetch, TruncatedBodyIsTransient) {
  auto got = FetchAs(*fetcher_, Base() + "/w/truncated", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kTransient) << got.result.why;
  EXPECT_EQ(got.result.attempts, 3u);
  EXPECT_LT(got.result.bytes, body_.size());
}

TEST_F(HttpFetch, TooSlowIsTransient) {
  FetchOptions options = testing::QuickOptions({Base() + "/w/"});
  options.max_attempts = 1;
  Fetcher fetcher(std::make_shared<FetchConfig>(options));
  const auto start = std::chrono::steady_clock::now();
  auto got = FetchAs(fetcher, Base() + "/w/slow", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kTransient) << got.result.why;
  EXPECT_NE(got.result.why.find("too slow"), std::string::npos) << got.result.why;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(HttpFetch, CancelStopsATransfer) {
  std::atomic<bool> cancel{false};
  FetchOptions options = testing::QuickOptions({Base() + "/w/"});
  options.low_speed_time = std::chrono::seconds(30);
  Fetcher fetcher(std::make_shared<FetchConfig>(options));
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto got = FetchAs(fetcher, Base() + "/w/slow", body_, &cancel);
  canceller.join();
  EXPECT_EQ(got.result.status, FetchStatus::kCancelled) << got.result.why;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST_F(HttpFetch, DifferentBodyOfTheSameSizeIsADigestMismatch) {
  auto got = FetchAs(*fetcher_, Base() + "/w/other", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_EQ(got.result.attempts, 1u);
  EXPECT_NE(got.result.why.find("sha256"), std::string::npos) << got.result.why;
}

TEST_F(HttpFetch, WrongContentLengthIsRefusedBeforeTheBody) {
  auto got = FetchAs(*fetcher_, Base() + "/w/wrong-length", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("Content-Length"), std::string::npos) << got.result.why;
  // The object's real size is not told to the client.
  EXPECT_EQ(got.result.why.find(std::to_string(body_.size() + 10)), std::string::npos) << got.result.why;
  EXPECT_EQ(got.result.bytes, 0u);
}

TEST_F(HttpFetch, BodyLongerThanItsSizeIsTheJobsFault) {
  auto got = FetchAs(*fetcher_, Base() + "/w/longer", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("larger than its size"), std::string::npos) << got.result.why;
}

TEST_F(HttpFetch, RedirectWithinTheAllowListIsFollowed) {
  auto got = FetchAs(*fetcher_, Base() + "/w/redirect-ok", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
  EXPECT_EQ(got.result.attempts, 1u);
  EXPECT_TRUE(got.buffer == body_);
}

TEST_F(HttpFetch, RedirectOffTheAllowListIsRefused) {
  const int before = OutsideCount();
  ASSERT_GE(before, 0);
  auto got = FetchAs(*fetcher_, Base() + "/w/redirect-off", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kRefused) << got.result.why;
  EXPECT_NE(got.result.why.find("redirect to " + Base() + "/outside/ok leaves the allowed prefixes"),
            std::string::npos)
      << got.result.why;
  EXPECT_EQ(OutsideCount(), before);  // never requested
}

TEST_F(HttpFetch, RedirectToTheMetadataEndpointIsRefused) {
  const auto start = std::chrono::steady_clock::now();
  auto got = FetchAs(*fetcher_, Base() + "/w/redirect-metadata", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kRefused) << got.result.why;
  EXPECT_NE(got.result.why.find("http://169.254.169.254/latest/meta-data/"), std::string::npos) << got.result.why;
  // Refused at once: no connection attempt (which would hang or time out here).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST_F(HttpFetch, RedirectLoopStops) {
  auto got = FetchAs(*fetcher_, Base() + "/w/redirect-loop", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("redirects"), std::string::npos) << got.result.why;
}

TEST_F(HttpFetch, UrlOutsideTheAllowListIsRefusedWithoutAsking) {
  const int before = OutsideCount();
  auto got = FetchAs(*fetcher_, Base() + "/outside/ok", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kRefused) << got.result.why;
  EXPECT_EQ(got.result.attempts, 0u);
  EXPECT_EQ(OutsideCount(), before);
}

TEST_F(HttpFetch, ConnectionRefusedIsTransient) {
  const int port = zkfleet::testing::FreePort();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  Fetcher fetcher(std::make_shared<FetchConfig>(testing::QuickOptions({base + "/"})));
  auto got = FetchAs(fetcher, base + "/w/ok", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kTransient) << got.result.why;
  EXPECT_EQ(got.result.attempts, 3u);
}

}  // namespace
}  // namespace zkfleet::fetch
