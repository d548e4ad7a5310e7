// wire/public_digest.hpp: the digest of a proof's public signals that a
// client may bind its job to.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "zkfleet/wire/public_digest.hpp"

namespace zkfleet::wire {
namespace {

// The digest is SHA-256 of the decimal strings joined with ',', whatever the
// JSON's spacing; anything but an array of canonical decimal strings is refused.
TEST(PublicSignalsDigest, IsTheSha256OfTheDecimalsJoinedWithCommas) {
  // printf 33,1 | sha256sum
  EXPECT_EQ(DigestHex(PublicSignalsDigest({"33", "1"})),
            "926a5c8832ebac1909565c452722bdc510b9b9bd901bf8132e63818cc5aadff9");
  std::string why;
  EXPECT_EQ(PublicSignalsDigestOfJson("[\n \"33\",\n \"1\"\n]", &why), PublicSignalsDigest({"33", "1"}));
  for (const char* bad : {"{}", "[33]", "[\"033\"]", "[\"-1\"]", "[\"\"]", "not json"}) {
    EXPECT_FALSE(PublicSignalsDigestOfJson(bad, &why)) << bad;
  }
}

}  // namespace
}  // namespace zkfleet::wire
