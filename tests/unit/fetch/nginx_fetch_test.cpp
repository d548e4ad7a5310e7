// http(s):// fetches from nginx: plain HTTP, HTTPS with the test CA, HTTPS
// with only the system's CAs (refused: verification is always on), and HTTPS
// with a required client certificate. The CA and certificates are made at
// test time with the openssl CLI (make_test_pki.sh); nginx runs as the
// current user from a generated configuration (nginx_conf.sh).
//
// TLS decision (see fetcher.hpp): a verification failure is kTransient (the
// operator's configuration, not the job), not retried, its reason in `why`.
#include <gtest/gtest.h>

#include <filesystem>

#include "fetch_test_support.hpp"
#include "testutil/child_process.hpp"
#include "testutil/test_support.hpp"

namespace zkfleet::fetch {
namespace {

using testing::Body;
using testing::FetchAs;

std::string NginxPath() {
  const char* env = std::getenv("NGINX");
  return env != nullptr && *env != '\0' ? env : "/usr/sbin/nginx";
}

class NginxFetch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access(NginxPath().c_str(), X_OK) != 0 || zkfleet::testing::FindOnPath("openssl").empty()) return;
    dir_ = new zkfleet::testing::TempDir();
    const std::string dir = dir_->path().string();
    const std::string scripts = ZKFLEET_FETCH_TEST_DIR;
    std::filesystem::create_directories(dir_->path() / "root" / "w");
    zkfleet::testing::WriteFile(dir_->file("root/w/obj.bin"), Body(1u << 20));
    const auto pki = zkfleet::testing::RunCommand("sh " + scripts + "/make_test_pki.sh " + dir);
    if (pki.exit_code != 0) {
      setup_error_ = "make_test_pki.sh failed: " + pki.output;
      return;
    }
    http_ = zkfleet::testing::FreePort();
    https_ = zkfleet::testing::FreePort();
    mtls_ = zkfleet::testing::FreePort();
    const auto conf = zkfleet::testing::RunCommand("sh " + scripts + "/nginx_conf.sh " + dir + " " + dir + "/root " +
                                                   std::to_string(http_) + " " + std::to_string(https_) + " " +
                                                   std::to_string(mtls_));
    if (conf.exit_code != 0) {
      setup_error_ = "nginx_conf.sh failed: " + conf.output;
      return;
    }
    nginx_ = new zkfleet::testing::ChildProcess(
        {NginxPath(), "-p", dir, "-c", dir + "/nginx.conf", "-e", dir + "/error.log"}, dir + "/nginx.out");
    const auto wait = zkfleet::testing::Scaled(std::chrono::seconds(10));
    if (!testing::WaitListening(http_, wait) || !testing::WaitListening(https_, wait) ||
        !testing::WaitListening(mtls_, wait)) {
      setup_error_ = "nginx did not start: " + nginx_->Log() + zkfleet::testing::ReadFile(dir + "/error.log");
    }
  }
  static void TearDownTestSuite() {
    delete nginx_;
    delete dir_;
    nginx_ = nullptr;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(zkfleet::testing::RequireExecutable("nginx (set NGINX to its path)", NginxPath()));
    ASSERT_TRUE(zkfleet::testing::RequireOnPath("openssl"));
    ASSERT_EQ(setup_error_, "");
  }
  static std::string Url(int port, bool tls) {
    return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port) + "/w/";
  }
  static std::string File(const std::string& name) { return dir_->file(name); }

  static inline zkfleet::testing::TempDir* dir_ = nullptr;
  static inline zkfleet::testing::ChildProcess* nginx_ = nullptr;
  static inline std::string setup_error_;
  static inline int http_ = 0, https_ = 0, mtls_ = 0;
  const std::string body_ = Body(1u << 20);
};

TEST_F(NginxFetch, Http) {
  Fetcher fetcher(std::make_shared<FetchConfig>(testing::QuickOptions({Url(http_, false)})));
  auto got = FetchAs(fetcher, Url(http_, false) + "obj.bin", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
  EXPECT_TRUE(got.buffer == body_);
  got = FetchAs(fetcher, Url(http_, false) + "missing.bin", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("HTTP 404"), std::string::npos) << got.result.why;
}

TEST_F(NginxFetch, HttpsWithTheTestCa) {
  FetchOptions options = testing::QuickOptions({Url(https_, true)});
  options.ca_bundle = File("ca.crt");
  Fetcher fetcher(std::make_shared<FetchConfig>(options));
  for (int i = 0; i < 2; ++i) {
    auto got = FetchAs(fetcher, Url(https_, true) + "obj.bin", body_);
    EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
    EXPECT_TRUE(got.buffer == body_);
  }
  // The certificate names 127.0.0.1 and localhost, and nothing else.
  FetchOptions by_name = testing::QuickOptions({"https://localhost:" + std::to_string(https_) + "/w/"});
  by_name.ca_bundle = File("ca.crt");
  Fetcher named(std::make_shared<FetchConfig>(by_name));
  auto got = FetchAs(named, "https://localhost:" + std::to_string(https_) + "/w/obj.bin", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
}

TEST_F(NginxFetch, HttpsWithTheSystemCasOnlyIsRefused) {
  Fetcher fetcher(std::make_shared<FetchConfig>(testing::QuickOptions({Url(https_, true)})));
  auto got = FetchAs(fetcher, Url(https_, true) + "obj.bin", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kTransient) << got.result.why;
  EXPECT_EQ(got.result.attempts, 1u);  // not retried: it does not heal in seconds
  EXPECT_NE(got.result.why.find("TLS verification failed"), std::string::npos) << got.result.why;
  EXPECT_NE(got.result.why.find("certificate"), std::string::npos) << got.result.why;
  EXPECT_EQ(got.result.bytes, 0u);
}

TEST_F(NginxFetch, ClientCertificateRequiredWorksWithOne) {
  FetchOptions options = testing::QuickOptions({Url(mtls_, true)});
  options.ca_bundle = File("ca.crt");
  options.client_cert = File("client.crt");
  options.client_key = File("client.key");
  Fetcher fetcher(std::make_shared<FetchConfig>(options));
  auto got = FetchAs(fetcher, Url(mtls_, true) + "obj.bin", body_);
  EXPECT_EQ(got.result.status, FetchStatus::kOk) << got.result.why;
  EXPECT_TRUE(got.buffer == body_);
}

TEST_F(NginxFetch, ClientCertificateRequiredFailsWithoutOne) {
  FetchOptions options = testing::QuickOptions({Url(mtls_, true)});
  options.ca_bundle = File("ca.crt");
  Fetcher fetcher(std::make_shared<FetchConfig>(options));
  auto got = FetchAs(fetcher, Url(mtls_, true) + "obj.bin", body_);
  // nginx answers "400 No required SSL certificate was sent" (fetcher.hpp's caveat).
  EXPECT_EQ(got.result.status, FetchStatus::kClientError) << got.result.why;
  EXPECT_NE(got.result.why.find("HTTP 400"), std::string::npos) << got.result.why;
  EXPECT_EQ(got.result.bytes, 0u);
  EXPECT_NE(got.buffer, body_);
}

}  // namespace
}  // namespace zkfleet::fetch
