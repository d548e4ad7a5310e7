// ParseByteSize: the sizes every zkfleet flag and config value takes.
#include <gtest/gtest.h>

#include "zkfleet/common/byte_size.hpp"

namespace zkfleet {
namespace {

TEST(ByteSize, UnitsArePowersOf1024AndBadTextIsRefused) {
  EXPECT_EQ(ParseByteSize("0"), 0u);
  EXPECT_EQ(ParseByteSize("4096"), 4096u);
  EXPECT_EQ(ParseByteSize("64K"), 64u << 10);
  EXPECT_EQ(ParseByteSize("512MiB"), 512u << 20);
  EXPECT_EQ(ParseByteSize("2gib"), uint64_t{2} << 30);
  EXPECT_EQ(ParseByteSize("1.5G"), uint64_t{3} << 29);
  EXPECT_EQ(ParseByteSize("1T"), uint64_t{1} << 40);
  for (const char* bad : {"", "-1", "12 parsecs", "1Q", "GiB", "nan", "1e30T"}) {
    EXPECT_FALSE(ParseByteSize(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace zkfleet
