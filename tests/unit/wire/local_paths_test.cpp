// wire::WithoutLocalPaths: a host's absolute paths cut to their last
// component in the error text a client reads (issue 47, item 10); URLs and
// relative names stay.
#include <gtest/gtest.h>

#include "zkfleet/wire/local_paths.hpp"

namespace zkfleet::wire {
namespace {

TEST(LocalPaths, AbsolutePathsKeepOnlyTheirLastComponent) {
  EXPECT_EQ(WithoutLocalPaths("cannot read /srv/keys/alpha/circuit_final.zkey: truncated"),
            "cannot read circuit_final.zkey: truncated");
  EXPECT_EQ(WithoutLocalPaths("the disk holding /var/lib/zkfleet/broker is full (ENOSPC)"),
            "the disk holding broker is full (ENOSPC)");
  EXPECT_EQ(WithoutLocalPaths("key '/a/b/c.zkey' (at /a/b/)."), "key 'c.zkey' (at b).");
  EXPECT_EQ(WithoutLocalPaths("zkey=/home/op/k.zkey"), "zkey=k.zkey");
  EXPECT_EQ(WithoutLocalPaths("/only/this"), "this");
}

TEST(LocalPaths, UrlsRelativeNamesAndFractionsStay) {
  for (const char* same : {"file:///srv/w/p0.wtns: no object of 10 bytes", "https://store.example/w/p0.wtns",
                           "circuit_final.zkey is 12 bytes", "3/4 of the partitions", "a // comment", "/",
                           "cannot open : (nothing)"}) {
    EXPECT_EQ(WithoutLocalPaths(same), same);
  }
}

}  // namespace
}  // namespace zkfleet::wire
