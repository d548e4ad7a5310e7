#include <gtest/gtest.h>

#include "fetch_test_support.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/public_digest.hpp"

namespace zkfleet::fetch {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(Sha256, KnownVectors) {
  Sha256 sha;
  EXPECT_EQ(wire::DigestHex(sha.Finish()), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  sha.Update(Bytes("abc"));
  EXPECT_EQ(wire::DigestHex(sha.Finish()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // FIPS 180-2's two-block message, fed in uneven pieces.
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha.Update(Bytes(std::string_view(two_blocks).substr(0, 5)));
  sha.Update(Bytes(std::string_view(two_blocks).substr(5)));
  EXPECT_EQ(wire::DigestHex(sha.Finish()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MillionAs) {
  Sha256 sha;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) sha.Update(Bytes(chunk));
  EXPECT_EQ(wire::DigestHex(sha.Finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace zkfleet::fetch
