// The leader key's value (leader_address.hpp): what a standby tells clients
// and workers about the broker that leads.
#include "zkfleet/broker/leader_address.hpp"

#include <gtest/gtest.h>

namespace zkfleet::broker {
namespace {

TEST(LeaderAddress, RoundTripsAndReadsAnOldPlainNameAsAName) {
  const LeaderAddress address{"broker-a (host-1)", "tcp://host-1:7000", "tcp://host-1:7001", "host-1:7443"};
  EXPECT_EQ(LeaderAddress::Decode(address.Encode()), address);
  EXPECT_EQ(address.Describe(),
            "broker-a (host-1) (clients tcp://host-1:7000, workers tcp://host-1:7001, gRPC host-1:7443)");
  // A broker from before the endpoints were advertised wrote its name alone.
  const LeaderAddress old = LeaderAddress::Decode("tcp://0.0.0.0:5555 (host-2)");
  EXPECT_EQ(old.name, "tcp://0.0.0.0:5555 (host-2)");
  EXPECT_EQ(old.clients, "");
  EXPECT_EQ(old.Describe(), old.name);
  // JSON of another shape is a name too, never a crash.
  EXPECT_EQ(LeaderAddress::Decode("[1,2]").name, "[1,2]");
  EXPECT_EQ(LeaderAddress::Decode(R"({"name": 5, "clients": "tcp://x:1"})").clients, "tcp://x:1");
}

TEST(LeaderAddress, AWildcardHostIsAdvertisedAsThisHost) {
  EXPECT_EQ(AdvertisedEndpoint("tcp://0.0.0.0:5555", "node-7"), "tcp://node-7:5555");
  EXPECT_EQ(AdvertisedEndpoint("tcp://*:5555", "node-7"), "tcp://node-7:5555");
  EXPECT_EQ(AdvertisedEndpoint("tcp://[::]:5555", "node-7"), "tcp://node-7:5555");
  EXPECT_EQ(AdvertisedEndpoint("tcp://10.0.0.5:5555", "node-7"), "tcp://10.0.0.5:5555");
  EXPECT_EQ(AdvertisedEndpoint("ipc:///run/zk.sock", "node-7"), "ipc:///run/zk.sock");
  EXPECT_EQ(AdvertisedGrpcAddress("0.0.0.0:7443", "node-7"), "node-7:7443");
  EXPECT_EQ(AdvertisedGrpcAddress(":7443", "node-7"), "node-7:7443");
  EXPECT_EQ(AdvertisedGrpcAddress("[::]:7443", "node-7"), "node-7:7443");
  EXPECT_EQ(AdvertisedGrpcAddress("10.0.0.5:7443", "node-7"), "10.0.0.5:7443");
}

TEST(LeaderAddress, OnlyAFixedTcpPortCanBeHeldByAStandby) {
  EXPECT_TRUE(HasFixedPort("tcp://127.0.0.1:5555"));
  EXPECT_FALSE(HasFixedPort("tcp://127.0.0.1:*"));
  EXPECT_FALSE(HasFixedPort("tcp://127.0.0.1:0"));
  EXPECT_FALSE(HasFixedPort("tcp://127.0.0.1:!"));
  EXPECT_FALSE(HasFixedPort("ipc:///run/zk.sock"));
  EXPECT_FALSE(HasFixedPort("tcp://127.0.0.1:"));
  EXPECT_TRUE(HasFixedGrpcPort("0.0.0.0:7443"));
  EXPECT_FALSE(HasFixedGrpcPort("127.0.0.1:0"));
}

}  // namespace
}  // namespace zkfleet::broker
