// Real data: the vk points stored in a snarkjs .zkey header (Montgomery LE,
// spec §4.2) must decode, through Fp::from_mont and to_canonical, to the
// decimal values snarkjs wrote to verification_key.json, and lie on the curve.
// This ties our Montgomery representation to snarkjs' bit for bit.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "unit/ff/gmp_oracle.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"

namespace zkfleet {
namespace {

using testing::Mpz;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Payload of section `id` in a snarkjs binary container (spec §2), or empty.
std::vector<uint8_t> find_section(const std::vector<uint8_t>& file, uint32_t id) {
  if (file.size() < 12 || std::memcmp(file.data(), "zkey", 4) != 0) return {};
  const uint64_t sections = read_le(&file[8], 4);
  size_t pos = 12;
  for (uint64_t s = 0; s < sections && pos + 12 <= file.size(); ++s) {
    const uint64_t sid = read_le(&file[pos], 4), size = read_le(&file[pos + 4], 8);
    pos += 12;
    if (pos + size > file.size()) return {};
    if (sid == id) return std::vector<uint8_t>(file.begin() + pos, file.begin() + pos + size);
    pos += size;
  }
  return {};
}

template <class Fq>
Fq decode_fq(const uint8_t* bytes) {
  uint64_t limbs[Fq::kLimbs];
  for (int i = 0; i < Fq::kLimbs; ++i) limbs[i] = read_le(bytes + 8 * i, 8);
  EXPECT_TRUE(Fq::is_below_modulus(limbs));
  return Fq::from_mont(limbs);
}

template <class Fq>
Mpz canonical(const Fq& a) {
  uint64_t limbs[Fq::kLimbs];
  a.to_canonical(limbs);
  return testing::from_limbs(limbs, Fq::kLimbs);
}

template <class Curve>
void check_fixture(const std::string& dir, int expected_alpha1_offset) {
  using Fq = typename Curve::Fq;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  const auto zkey = read_file(dir + "/circuit_final.zkey");
  ASSERT_FALSE(zkey.empty()) << "cannot read " << dir << "/circuit_final.zkey";
  const auto header = find_section(zkey, 2);
  ASSERT_GE(header.size(), 8u) << "no groth16 header (section 2)";
  const int n8q = static_cast<int>(read_le(&header[0], 4));
  ASSERT_EQ(n8q, Fq::kBytes);
  const int n8r = static_cast<int>(read_le(&header[4 + n8q], 4));
  ASSERT_EQ(n8r, 32);
  const int alpha1 = 20 + n8q + n8r;
  ASSERT_EQ(alpha1, expected_alpha1_offset);
  const int beta2 = alpha1 + 4 * n8q, gamma2 = beta2 + 4 * n8q, delta2 = alpha1 + 14 * n8q;
  ASSERT_EQ(header.size(), static_cast<size_t>(alpha1 + 18 * n8q));
  // The base-field prime in the header matches ours.
  uint64_t q[Fq::kLimbs];
  Fq::modulus_limbs(q);
  for (int i = 0; i < Fq::kLimbs; ++i) EXPECT_EQ(read_le(&header[4 + 8 * i], 8), q[i]);

  std::ifstream vk_file(dir + "/verification_key.json");
  ASSERT_TRUE(vk_file) << "cannot read verification_key.json in " << dir;
  const nlohmann::json vk = nlohmann::json::parse(vk_file);
  ASSERT_EQ(vk["curve"].get<std::string>(), Curve::kName);
  auto dec = [](const nlohmann::json& v) { return Mpz(v.get<std::string>()); };

  // alpha1 (G1).
  const curve::Affine<G1> a{decode_fq<Fq>(&header[alpha1]), decode_fq<Fq>(&header[alpha1 + n8q])};
  EXPECT_EQ(canonical(a.x), dec(vk["vk_alpha_1"][0]));
  EXPECT_EQ(canonical(a.y), dec(vk["vk_alpha_1"][1]));
  EXPECT_TRUE(curve::is_on_curve(a));
  EXPECT_FALSE(a.is_infinity());
  uint64_t r[4];
  Curve::Fr::modulus_limbs(r);
  EXPECT_TRUE(curve::scalar_mul(curve::Jacobian<G1>::from_affine(a), r, 4).is_infinity()) << "alpha1 has order r";

  // beta2, gamma2, delta2 (G2): c0 then c1 for x, then for y.
  auto decode_g2 = [&](int off) {
    using Fq2 = typename G2::Field;
    return curve::Affine<G2>{Fq2{decode_fq<Fq>(&header[off]), decode_fq<Fq>(&header[off + n8q])},
                             Fq2{decode_fq<Fq>(&header[off + 2 * n8q]), decode_fq<Fq>(&header[off + 3 * n8q])}};
  };
  const std::pair<int, const char*> g2_points[] = {{beta2, "vk_beta_2"}, {gamma2, "vk_gamma_2"}, {delta2, "vk_delta_2"}};
  for (const auto& [off, name] : g2_points) {
    SCOPED_TRACE(name);
    const auto b = decode_g2(off);
    EXPECT_EQ(canonical(b.x.c0), dec(vk[name][0][0]));
    EXPECT_EQ(canonical(b.x.c1), dec(vk[name][0][1]));
    EXPECT_EQ(canonical(b.y.c0), dec(vk[name][1][0]));
    EXPECT_EQ(canonical(b.y.c1), dec(vk[name][1][1]));
    EXPECT_TRUE(curve::is_on_curve(b));
    EXPECT_TRUE(curve::scalar_mul(curve::Jacobian<G2>::from_affine(b), r, 4).is_infinity());
  }
  // snarkjs never randomizes gamma: it is our G2 generator (spec §4.4).
  const auto gamma = decode_g2(gamma2);
  const auto gen = G2::generator();
  EXPECT_TRUE(gamma.x == gen.x && gamma.y == gen.y) << "vk_gamma_2 must equal G2::generator()";
}

TEST(FixturePoints, Bn128VerificationKeyMatchesZkeyHeader) {
  check_fixture<curve::Bn254>(std::string(ZKFLEET_FIXTURES_DIR) + "/bn128_k12", 84);
}

TEST(FixturePoints, Bls12381VerificationKeyMatchesZkeyHeader) {
  check_fixture<curve::Bls12_381>(std::string(ZKFLEET_FIXTURES_DIR) + "/bls12381_k12", 100);
}

}  // namespace
}  // namespace zkfleet
