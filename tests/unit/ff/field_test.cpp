// Fp<P> for all four fields against GMP: constants, every operation on edge
// values (0, 1, p-1, ...) and random values, and the FFT roots of unity.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "unit/ff/gmp_oracle.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"

namespace zkfleet {
namespace {

using testing::Mpz;

// The moduli as published (spec §1.1), independent of the limb tables.
template <class F>
const char* modulus_text();
template <>
const char* modulus_text<ff::Bn254Fq>() {
  return "21888242871839275222246405745257275088696311157297823662689037894645226208583";
}
template <>
const char* modulus_text<ff::Bn254Fr>() {
  return "21888242871839275222246405745257275088548364400416034343698204186575808495617";
}
template <>
const char* modulus_text<ff::Bls12_381Fq>() {
  return "0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab";
}
template <>
const char* modulus_text<ff::Bls12_381Fr>() {
  return "0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
}

template <class F>
class FieldTest : public ::testing::Test {
 protected:
  static constexpr int N = F::kLimbs;

  FieldTest() : p_(modulus_text<F>()), rng_(0x5eed0000u + N) {
    r_ = testing::mod(testing::pow2(64 * N), p_);
    mpz_invert(r_inv_.get(), r_.get(), p_.get());
  }

  F field(const Mpz& x) const {
    uint64_t limbs[N];
    testing::to_limbs(x, limbs, N);
    return F::from_canonical(limbs);
  }
  Mpz value(const F& a) const {
    uint64_t limbs[N];
    a.to_canonical(limbs);
    return testing::from_limbs(limbs, N);
  }
  Mpz raw(const F& a) const { return testing::from_limbs(a.v, N); }
  Mpz random_element() { return testing::mod(testing::random_limbs(rng_, N), p_); }

  // 0, 1, 2, p-1, p-2, (p-1)/2, (p+1)/2, R mod p, 2^64 - 1, 2^(64(N-1)).
  std::vector<Mpz> edge_values() const {
    std::vector<Mpz> out;
    auto push_sum = [&](long delta) {
      Mpz x;
      if (delta >= 0)
        mpz_add_ui(x.get(), p_.get(), delta);
      else
        mpz_sub_ui(x.get(), p_.get(), -delta);
      out.push_back(testing::mod(x, p_));
    };
    push_sum(0);
    push_sum(1);
    push_sum(2);
    push_sum(-1);
    push_sum(-2);
    Mpz half;
    mpz_fdiv_q_2exp(half.get(), p_.get(), 1);
    out.push_back(half);
    mpz_add_ui(half.get(), half.get(), 1);
    out.push_back(half);
    out.push_back(r_);
    Mpz word_max;
    mpz_set_ui(word_max.get(), ~0UL);
    out.push_back(word_max);
    out.push_back(testing::pow2(64 * (N - 1)));
    return out;
  }

  // Checks every operation on (x, y) against GMP.
  void check_pair(const Mpz& x, const Mpz& y) {
    const F a = field(x), b = field(y);
    SCOPED_TRACE("x = " + x.hex() + ", y = " + y.hex());
    ASSERT_EQ(raw(a), testing::mul_mod(x, r_, p_)) << "Montgomery form must be x*R mod p";
    ASSERT_EQ(value(a), x);
    EXPECT_EQ(value(a + b), testing::add_mod(x, y, p_));
    EXPECT_EQ(value(a - b), testing::sub_mod(x, y, p_));
    EXPECT_EQ(value(a * b), testing::mul_mod(x, y, p_));
    EXPECT_EQ(value(a.sqr()), testing::mul_mod(x, x, p_));
    EXPECT_EQ(value(a.dbl()), testing::add_mod(x, x, p_));
    EXPECT_EQ(value(a.neg()), testing::sub_mod(Mpz(0), x, p_));
    EXPECT_EQ(value(-a), testing::sub_mod(Mpz(0), x, p_));
    EXPECT_EQ(a.is_zero(), mpz_sgn(x.get()) == 0);
    EXPECT_EQ(a == b, x == y);
    EXPECT_EQ(a != b, x != y);
    F c = a;
    c += b;
    EXPECT_EQ(c, a + b);
    c = a;
    c -= b;
    EXPECT_EQ(c, a - b);
    c = a;
    c *= b;
    EXPECT_EQ(c, a * b);
    // Fully reduced results, so that == on limbs is equality.
    for (const F& r : {a + b, a - b, a * b, a.sqr(), a.dbl(), a.neg()}) {
      EXPECT_TRUE(F::is_below_modulus(r.v));
    }
  }

  Mpz p_, r_, r_inv_;
  std::mt19937_64 rng_;
};

using Fields = ::testing::Types<ff::Bn254Fq, ff::Bn254Fr, ff::Bls12_381Fq, ff::Bls12_381Fr>;
TYPED_TEST_SUITE(FieldTest, Fields);

TYPED_TEST(FieldTest, ConstantsMatchGmp) {
  using F = TypeParam;
  constexpr int N = F::kLimbs;
  uint64_t limbs[N];
  F::modulus_limbs(limbs);
  EXPECT_EQ(testing::from_limbs(limbs, N), this->p_);
  for (int i = 0; i < N; ++i) EXPECT_EQ(F::modulus_limb(i), limbs[i]);
  EXPECT_EQ(static_cast<size_t>(F::kModulusBits), mpz_sizeinbase(this->p_.get(), 2));
  EXPECT_EQ(F::kBytes, 8 * N);
  // Copied to the GPU and out of mmapped files as raw bytes.
  static_assert(std::is_trivially_copyable_v<F> && sizeof(F) == 8 * N);
  EXPECT_EQ(this->raw(F::one()), this->r_) << "one() must be R mod p";
  EXPECT_TRUE(F::zero().is_zero());
  // R^2 table: from_canonical(1) goes through it.
  EXPECT_EQ(F::from_uint(1), F::one());
  uint64_t r2[N];
  for (int i = 0; i < N; ++i) r2[i] = F::Params::r2_mod_p(i);
  EXPECT_EQ(testing::from_limbs(r2, N), testing::mul_mod(this->r_, this->r_, this->p_));
  // kInv * p == -1 mod 2^64.
  EXPECT_EQ(F::Params::kInv * limbs[0], ~uint64_t{0});
}

TYPED_TEST(FieldTest, EdgeValuesAllPairs) {
  const auto edges = this->edge_values();
  for (const Mpz& x : edges)
    for (const Mpz& y : edges) this->check_pair(x, y);
}

TYPED_TEST(FieldTest, RandomValues) {
  for (int i = 0; i < 2000; ++i) this->check_pair(this->random_element(), this->random_element());
}

TYPED_TEST(FieldTest, InverseMatchesGmp) {
  using F = TypeParam;
  EXPECT_TRUE(F::zero().inverse().is_zero()) << "inverse of 0 is defined as 0";
  EXPECT_EQ(F::one().inverse(), F::one());
  auto values = this->edge_values();
  for (int i = 0; i < 100; ++i) values.push_back(this->random_element());
  for (const Mpz& x : values) {
    if (mpz_sgn(x.get()) == 0) continue;
    Mpz expected;
    ASSERT_NE(mpz_invert(expected.get(), x.get(), this->p_.get()), 0);
    const F a = this->field(x);
    EXPECT_EQ(this->value(a.inverse()), expected) << x.hex();
    EXPECT_EQ(a * a.inverse(), F::one());
  }
}

TYPED_TEST(FieldTest, PowMatchesGmp) {
  using F = TypeParam;
  constexpr int N = F::kLimbs;
  const F a = this->field(this->random_element());
  // Exponent of zero limbs, and exponent 0, give 1; exponent 1 gives a.
  EXPECT_EQ(a.pow(nullptr, 0), F::one());
  const uint64_t zero_exp[1] = {0}, one_exp[1] = {1};
  EXPECT_EQ(a.pow(zero_exp, 1), F::one());
  EXPECT_EQ(a.pow(one_exp, 1), a);
  EXPECT_TRUE(F::zero().pow(one_exp, 1).is_zero());
  // Fermat: a^(p-1) == 1.
  uint64_t p_minus_1[N];
  F::modulus_limbs(p_minus_1);
  p_minus_1[0] -= 1;
  EXPECT_EQ(a.pow(p_minus_1, N), F::one());
  for (int i = 0; i < 60; ++i) {
    const Mpz x = this->random_element();
    const int exp_limbs = 1 + i % (N + 2);  // also longer than the field
    uint64_t e[8];
    for (int j = 0; j < exp_limbs; ++j) e[j] = this->rng_();
    if (i % 5 == 0) e[exp_limbs - 1] = 0;  // leading zero limb
    Mpz expected;
    const Mpz e_mpz = testing::from_limbs(e, exp_limbs);
    mpz_powm(expected.get(), x.get(), e_mpz.get(), this->p_.get());
    EXPECT_EQ(this->value(this->field(x).pow(e, exp_limbs)), expected);
  }
}

TYPED_TEST(FieldTest, MontMulRawTakesAnyWord) {
  using F = TypeParam;
  constexpr int N = F::kLimbs;
  for (int i = 0; i < 300; ++i) {
    const Mpz x = this->random_element();
    uint64_t raw[N];
    for (int j = 0; j < N; ++j) raw[j] = this->rng_();
    if (i == 0)
      for (int j = 0; j < N; ++j) raw[j] = ~uint64_t{0};  // 2^(64N) - 1 >= p
    if (i == 1)
      for (int j = 0; j < N; ++j) raw[j] = 0;
    const F a = this->field(x);
    const F r = F::mont_mul_raw(a, raw);
    // a.v * raw * R^-1 mod p, as raw limbs.
    const Mpz expected =
        testing::mul_mod(testing::mul_mod(this->raw(a), testing::from_limbs(raw, N), this->p_), this->r_inv_,
                         this->p_);
    EXPECT_EQ(this->raw(r), expected);
    EXPECT_TRUE(F::is_below_modulus(r.v));
  }
}

// The zkey coefficient trick (spec §4.3): stored value c·R² (Montgomery form
// of c·R) montmul'ed with a raw witness w gives the Montgomery form of c·w.
TYPED_TEST(FieldTest, MontMulRawDecodesZkeyCoefficients) {
  using F = TypeParam;
  constexpr int N = F::kLimbs;
  for (int i = 0; i < 100; ++i) {
    const Mpz c = this->random_element(), w = this->random_element();
    uint64_t stored[N], w_raw[N];
    testing::to_limbs(testing::mul_mod(testing::mul_mod(c, this->r_, this->p_), this->r_, this->p_), stored, N);
    testing::to_limbs(w, w_raw, N);
    EXPECT_EQ(F::mont_mul_raw(F::from_mont(stored), w_raw), this->field(c) * this->field(w));
  }
}

TYPED_TEST(FieldTest, Conversions) {
  using F = TypeParam;
  constexpr int N = F::kLimbs;
  for (int i = 0; i < 200; ++i) {
    const Mpz x = this->random_element();
    uint64_t limbs[N], back[N];
    testing::to_limbs(x, limbs, N);
    const F a = F::from_canonical(limbs);
    a.to_canonical(back);
    for (int j = 0; j < N; ++j) EXPECT_EQ(back[j], limbs[j]);
    EXPECT_EQ(F::from_mont(a.v), a);
    EXPECT_TRUE(F::is_below_modulus(limbs));
  }
  const uint64_t small = 0xfedcba9876543210ULL;
  EXPECT_EQ(this->value(F::from_uint(small)), Mpz(small));
  // p itself and 2^(64N) - 1 are not canonical; from_canonical reduces them.
  uint64_t p[N], ones[N];
  F::modulus_limbs(p);
  for (int j = 0; j < N; ++j) ones[j] = ~uint64_t{0};
  EXPECT_FALSE(F::is_below_modulus(p));
  EXPECT_FALSE(F::is_below_modulus(ones));
  EXPECT_TRUE(F::from_canonical(p).is_zero());
  EXPECT_EQ(this->value(F::from_canonical(ones)), testing::mod(testing::from_limbs(ones, N), this->p_));
}

// ---- roots of unity (scalar fields only) ------------------------------------

template <class F>
class RootOfUnityTest : public ::testing::Test {};
using ScalarFields = ::testing::Types<ff::Bn254Fr, ff::Bls12_381Fr>;
TYPED_TEST_SUITE(RootOfUnityTest, ScalarFields);

TYPED_TEST(RootOfUnityTest, MatchesGmpAndIsPrimitive) {
  using F = TypeParam;
  constexpr int N = F::kLimbs;
  constexpr int s = F::Params::kTwoAdicity;
  const Mpz r(modulus_text<F>());
  Mpz r_minus_1;
  mpz_sub_ui(r_minus_1.get(), r.get(), 1);
  // r - 1 = 2^s * odd.
  EXPECT_EQ(mpz_scan1(r_minus_1.get(), 0), static_cast<mp_bitcnt_t>(s));
  // 5 is a quadratic non-residue (Legendre symbol -1), as snarkjs assumes.
  EXPECT_EQ(mpz_legendre(Mpz(5).get(), r.get()), -1);
  for (int k = 0; k <= s; ++k) {
    Mpz e, expected;
    mpz_fdiv_q_2exp(e.get(), r_minus_1.get(), k);
    mpz_powm(expected.get(), Mpz(5).get(), e.get(), r.get());
    uint64_t limbs[N];
    F::root_of_unity(k).to_canonical(limbs);
    EXPECT_EQ(testing::from_limbs(limbs, N), expected) << "k = " << k;
  }
  // w[s] has order exactly 2^s: w^(2^(s-1)) == -1.
  F w = F::root_of_unity(s);
  for (int i = 0; i < s - 1; ++i) w = w.sqr();
  EXPECT_EQ(w, F::one().neg());
  EXPECT_EQ(F::root_of_unity(1), F::one().neg());
  EXPECT_EQ(F::root_of_unity(0), F::one());
  EXPECT_TRUE(F::root_of_unity(s + 1).is_zero()) << "out of range k gives zero";
  EXPECT_TRUE(F::root_of_unity(-1).is_zero());
}

// Selected values from spec §1.2, taken from snarkjs.
TEST(RootOfUnityTest, SpecTable) {
  auto hex = [](auto w) {
    uint64_t limbs[4];
    w.to_canonical(limbs);
    return testing::from_limbs(limbs, 4);
  };
  EXPECT_EQ(hex(ff::Bn254Fr::root_of_unity(28)),
            Mpz("0x2a3c09f0a58a7e8500e0a7eb8ef62abc402d111e41112ed49bd61b6e725b19f0"));
  EXPECT_EQ(hex(ff::Bn254Fr::root_of_unity(3)),
            Mpz("0x2b337de1c8c14f22ec9b9e2f96afef3652627366f8170a0a948dad4ac1bd5e80"));
  EXPECT_EQ(hex(ff::Bn254Fr::root_of_unity(13)),
            Mpz("0x006fab49b869ae62001deac878b2667bd31bf3e28e3a2d764aa49b8d9bbdd310"));
  EXPECT_EQ(hex(ff::Bls12_381Fr::root_of_unity(32)),
            Mpz("0x0212d79e5b416b6f0fd56dc8d168d6c0c4024ff270b3e0941b788f500b912f1f"));
  EXPECT_EQ(hex(ff::Bls12_381Fr::root_of_unity(4)),
            Mpz("0x4f2c596e753e4fcc6e92a9c460afca4a1ef4e672ebc1e1bb95df4b360411fe73"));
  EXPECT_EQ(hex(ff::Bls12_381Fr::root_of_unity(13)),
            Mpz("0x0ac00eb8b3f7f8da70491431cab3c3cc87d188ce7a02775923c9159959a0be92"));
}

}  // namespace
}  // namespace zkfleet
