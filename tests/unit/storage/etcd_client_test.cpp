// The etcd client without a cluster: the --journal URL's parsing (a clear
// error with an example for every malformed one) and what a call says when
// no member answers (every member tried, in turn, round after round).
#include <gtest/gtest.h>

#include "testutil/child_process.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/etcd_client.hpp"

namespace zkfleet::storage {
namespace {

using namespace std::chrono_literals;

TEST(EtcdUrlTest, MembersAndPrefix) {
  EtcdUrl url = ParseEtcdUrl("etcd://10.0.0.1:2379,10.0.0.2:2379,etcd-3.local:2379/fleet-a");
  EXPECT_EQ(url.endpoints, (std::vector<std::string>{"10.0.0.1:2379", "10.0.0.2:2379", "etcd-3.local:2379"}));
  EXPECT_EQ(url.prefix, "fleet-a/");
  EXPECT_EQ(ParseEtcdUrl("etcd://127.0.0.1:2379").prefix, "zkfleet/");
  EXPECT_EQ(ParseEtcdUrl("etcd://127.0.0.1:2379/a/b/").prefix, "a/b/");
}

TEST(EtcdUrlTest, MalformedUrlsAreRefusedWithAnExample) {
  for (const char* bad : {"http://127.0.0.1:2379", "etcd://", "etcd://127.0.0.1", "etcd://127.0.0.1:", "etcd://:2379",
                          "etcd://127.0.0.1:2379,", "etcd://127.0.0.1:23x9", "etcd://127.0.0.1:2379/"}) {
    try {
      ParseEtcdUrl(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("etcd://10.0.0.1:2379,10.0.0.2:2379"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

// Nothing listens on these ports: each call tries every member, and goes on
// trying them round after round (the member it starts with moves on), until
// its time is up; then it names each member and what it answered.
TEST(EtcdClientTest, NoMemberAnsweringNamesEveryMemberRoundAfterRound) {
  EtcdClientOptions options;
  for (int i = 0; i < 3; ++i) options.endpoints.push_back("127.0.0.1:" + std::to_string(testing::FreePort()));
  options.call_timeout = 100ms;
  options.retry_for = 800ms;
  EtcdClient client(options);
  for (int call = 0; call < 3; ++call) {
    etcdserverpb::RangeRequest request;
    request.set_key("k");
    try {
      client.Range(request, "reading k");
      FAIL() << "a Range with no member up succeeded";
    } catch (const Error& e) {
      const std::string text = e.what();
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(text.find("no member answered reading k"), std::string::npos) << text;
      EXPECT_NE(text.find("is a quorum of members up?"), std::string::npos) << text;
      for (const std::string& endpoint : options.endpoints) {
        EXPECT_NE(text.find(endpoint + ": "), std::string::npos) << text;
      }
      EXPECT_EQ(text.find("not tried"), std::string::npos) << "a member was never tried: " << text;
    }
  }
}

}  // namespace
}  // namespace zkfleet::storage
