#include "zkfleet/fetch/url_allow_list.hpp"

#include <gtest/gtest.h>

#include "zkfleet/common/error.hpp"

namespace zkfleet::fetch {
namespace {

bool Allowed(const UrlAllowList& list, const std::string& url) { return !list.Refusal(url).has_value(); }

TEST(UrlAllowList, AllowsUnderThePrefixOnly) {
  UrlAllowList list({"https://store.internal/witnesses/", "file:///mnt/witnesses"});
  EXPECT_TRUE(Allowed(list, "https://store.internal/witnesses/a.wtns"));
  EXPECT_TRUE(Allowed(list, "https://store.internal/witnesses/deep/er/a.wtns?X-Amz-Signature=abc"));
  EXPECT_TRUE(Allowed(list, "file:///mnt/witnesses/a.wtns"));
  EXPECT_TRUE(Allowed(list, "file://localhost/mnt/witnesses/a.wtns"));
  EXPECT_FALSE(Allowed(list, "https://store.internal/other/a.wtns"));
  EXPECT_FALSE(Allowed(list, "https://store.internal/witnesses"));   // the directory itself
  EXPECT_FALSE(Allowed(list, "https://store.internal/witnessesX/a"));  // a sibling sharing the prefix's text
  EXPECT_FALSE(Allowed(list, "file:///mnt/witnesses-other/a.wtns"));   // "file:///mnt/witnesses" is a directory
  EXPECT_FALSE(Allowed(list, "http://store.internal/witnesses/a.wtns"));  // scheme
  EXPECT_FALSE(Allowed(list, "file:///etc/passwd"));
  EXPECT_FALSE(Allowed(list, "http://169.254.169.254/latest/meta-data/"));
  EXPECT_FALSE(Allowed(list, "ftp://store.internal/witnesses/a.wtns"));
  EXPECT_FALSE(Allowed(list, "not a url"));
}

TEST(UrlAllowList, ComparesTheParsedHostNotTheText) {
  UrlAllowList list({"https://store.internal/"});
  EXPECT_FALSE(Allowed(list, "https://store.internal@evil/a.wtns"));
  EXPECT_FALSE(Allowed(list, "https://store.internal:443@evil/a.wtns"));
  EXPECT_FALSE(Allowed(list, "https://store.internal.evil.com/a.wtns"));
  EXPECT_FALSE(Allowed(list, "https://evil/store.internal/a.wtns"));
  EXPECT_TRUE(Allowed(list, "https://STORE.Internal/a.wtns"));  // host case
  EXPECT_TRUE(Allowed(list, "HTTPS://store.internal/a.wtns"));  // scheme case
}

TEST(UrlAllowList, PortsWithDefaults) {
  UrlAllowList list({"https://store.internal/", "http://store.internal:8080/w/"});
  EXPECT_TRUE(Allowed(list, "https://store.internal:443/a"));
  EXPECT_FALSE(Allowed(list, "https://store.internal:8443/a"));
  EXPECT_TRUE(Allowed(list, "http://store.internal:8080/w/a"));
  EXPECT_FALSE(Allowed(list, "http://store.internal/w/a"));
  EXPECT_FALSE(Allowed(list, "http://store.internal:80/w/a"));
  UrlAllowList plain({"http://store.internal/"});
  EXPECT_TRUE(Allowed(plain, "http://store.internal:80/a"));
}

TEST(UrlAllowList, RefusesDotSegmentsAndEncodings) {
  UrlAllowList list({"https://store.internal/w/", "file:///mnt/w/"});
  for (const char* url : {"https://store.internal/w/../secret", "https://store.internal/w/%2e%2e/secret",
                          "https://store.internal/w/%2E%2e/secret", "https://store.internal/w/./a",
                          "https://store.internal/w/.%2e", "https://store.internal/w/a%2f..%2fb",
                          "https://store.internal/w/a%2Fb", "https://store.internal/w/..%5c..%5csecret",
                          "https://store.internal/w/a%00b", "https://store.internal/w/a%zz",
                          "file:///mnt/w/../../etc/passwd", "file:///mnt/w/%2e%2e/%2e%2e/etc/passwd",
                          "file://otherhost/mnt/w/a", "https://store.internal/w/%252e%252e/secret",
                          "https://store.internal/w/..;/secret"}) {
    const auto refusal = list.Refusal(url);
    EXPECT_TRUE(refusal.has_value()) << url;
  }
  // Dots inside a name are fine.
  EXPECT_TRUE(Allowed(list, "https://store.internal/w/a..b/.c/d."));
  EXPECT_EQ(list.Refusal("https://store.internal/w/%2e%2e/x").value_or(""),
            "https://store.internal/w/%2e%2e/x is refused: a '.' or '..' segment in its path");
}

TEST(UrlAllowList, RefusalRedactsTheUrl) {
  UrlAllowList list({"https://store.internal/w/"});
  const auto refusal = list.Refusal("https://key:secret@elsewhere/w/a?X-Amz-Signature=topsecret");
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->find("secret"), std::string::npos) << *refusal;
  EXPECT_NE(refusal->find("https://elsewhere/w/a"), std::string::npos) << *refusal;
  EXPECT_EQ(refusal->find('\n'), std::string::npos);
}

TEST(UrlAllowList, BadPrefixesAreRefusedAtConstruction) {
  for (const char* bad : {"ftp://store.internal/", "store.internal/w/", "https:///w/", "https://u:p@store.internal/",
                          "https://store.internal/w/?x=1", "https://store.internal/w/../", "file://host/mnt/w/",
                          "gopher://store.internal/", ""}) {
    try {
      UrlAllowList list({bad});
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("--fetch-allow"), std::string::npos) << e.what();
    }
  }
}

TEST(UrlAllowList, LocalPathIsDecoded) {
  UrlAllowList list({"file:///mnt/w", "https://store.internal/"});
  const auto local = list.Local("file:///mnt/w/a%20b.wtns");
  ASSERT_TRUE(local.has_value());
  EXPECT_EQ(local->path, "/mnt/w/a b.wtns");
  EXPECT_EQ(local->root, "/mnt/w/");
  EXPECT_FALSE(list.Local("file:///etc/passwd").has_value());
  EXPECT_FALSE(list.Local("https://store.internal/a").has_value());
  EXPECT_TRUE(UrlAllowList({}).Refusal("https://store.internal/a").has_value());  // empty list: nothing
}

}  // namespace
}  // namespace zkfleet::fetch
