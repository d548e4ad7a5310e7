// The public Montgomery-form conversions (engine/bellman.hpp) that
// clients/supraseal-c2 speaks its ABI with, against values computed outside
// the engine (Python integers: x·2^256 mod r, x·2^384 mod q). Only public
// headers: what a client sees.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <optional>

#include "zkfleet/engine/bellman.hpp"

namespace zkfleet::engine {
namespace {

std::array<uint8_t, 32> Bytes(const std::array<uint64_t, 4>& limbs) {
  std::array<uint8_t, 32> out;
  for (int i = 0; i < 32; ++i) out[i] = static_cast<uint8_t>(limbs[i / 8] >> (8 * (i % 8)));
  return out;
}

constexpr FrMont kR = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL, 0x73eda753299d7d48ULL};
constexpr BigInt kQ = {0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL, 0x6730d2a0f6b0f624ULL,
                       0x64774b84f38512bfULL, 0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL};
// 2^256 mod r and 2^384 mod q: the Montgomery form of 1.
constexpr FrMont kFrOne = {0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL, 0x1824b159acc5056fULL};
constexpr FqMont kFqOne = {0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL,
                           0x77ce585370525745ULL, 0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL};

TEST(MontgomeryForm, FrMontgomeryLimbsToCanonicalBytes) {
  EXPECT_EQ(FrMontToCanonical(FrMont{}), Bytes({0, 0, 0, 0}));
  EXPECT_EQ(FrMontToCanonical(kFrOne), Bytes({1, 0, 0, 0}));
  // x·2^256 mod r -> x, little-endian bytes.
  const FrMont x_mont = {0x0ca129319a6ac485ULL, 0x497cb1c0f9d7068aULL, 0xa98223b754c05ff3ULL, 0x2409e5621aed7162ULL};
  EXPECT_EQ(FrMontToCanonical(x_mont),
            Bytes({0xdb0eda407f5e8e61ULL, 0x5d357ffe4423f60dULL, 0xe40c58c9a32d60b1ULL, 0x58a540da3e13272eULL}));
  // r - 1, the largest reduced limbs: (r - 1)·2^-256 mod r.
  FrMont r_minus_one = kR;
  r_minus_one[0] -= 1;
  EXPECT_EQ(FrMontToCanonical(r_minus_one),
            Bytes({0xec08a495018a3fc1ULL, 0xa84dd973f621eb9fULL, 0xc135d07dba2ab19aULL, 0x582f20bff99cdff0ULL}));
}

TEST(MontgomeryForm, FrLimbsNotBelowRAreRefused) {
  EXPECT_EQ(FrMontToCanonical(kR), std::nullopt);
  FrMont r_plus_one = kR;
  r_plus_one[0] += 1;
  EXPECT_EQ(FrMontToCanonical(r_plus_one), std::nullopt);
  EXPECT_EQ(FrMontToCanonical(FrMont{~0ULL, ~0ULL, ~0ULL, ~0ULL}), std::nullopt);
}

TEST(MontgomeryForm, FqCanonicalToMontgomeryLimbs) {
  EXPECT_EQ(FqCanonicalToMont(BigInt{}), FqMont{});
  EXPECT_EQ(FqCanonicalToMont(BigInt{1}), kFqOne);
  // y -> y·2^384 mod q.
  const BigInt y = {0xfcf5f11454340c5eULL, 0xe4a78cf19a919f4eULL, 0x6dca3d159b84bd80ULL,
                    0x16c5deada28e9f8bULL, 0xed6042a1ea5723e8ULL, 0x020c543af663558eULL};
  const FqMont y_mont = {0x90ee2722bf6be63fULL, 0xd7fb8f0ef1de4bfeULL, 0x7e62dd59dc1e5697ULL,
                         0x30e19fa45cc73131ULL, 0x82998b4937ba7376ULL, 0x14e32bc8f11189baULL};
  EXPECT_EQ(FqCanonicalToMont(y), y_mont);
  // Values from q up come out reduced mod q: q -> 0, q + 1 -> 1, 2^384 - 1.
  EXPECT_EQ(FqCanonicalToMont(kQ), FqMont{});
  BigInt q_plus_one = kQ;
  q_plus_one[0] += 1;
  EXPECT_EQ(FqCanonicalToMont(q_plus_one), kFqOne);
  const FqMont top_mont = {0x38d51f341c30c1f4ULL, 0x3d2ee698f71904efULL, 0x95cd81b5ef7f543eULL,
                           0x54947bdb16d03f3aULL, 0x898dcba4560e5597ULL, 0x15a3430bd1c9e5b1ULL};
  EXPECT_EQ(FqCanonicalToMont(BigInt{~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL}), top_mont);
}

}  // namespace
}  // namespace zkfleet::engine
