// Fp2<F> = F[u]/(u^2 + 1) for both base fields: products against a GMP
// schoolbook product, and algebraic identities.
#include <gtest/gtest.h>

#include <random>

#include "unit/ff/gmp_oracle.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"
#include "zkfleet/ff/fp2.hpp"

namespace zkfleet {
namespace {

using testing::Mpz;

template <class E>
class Fp2Test : public ::testing::Test {
 protected:
  using F = typename E::Base;
  static constexpr int N = F::kLimbs;

  Fp2Test() : rng_(0xf2f2u + N) {
    uint64_t limbs[N];
    F::modulus_limbs(limbs);
    p_ = testing::from_limbs(limbs, N);
  }

  Mpz random_coeff() { return testing::mod(testing::random_limbs(rng_, N), p_); }
  F base(const Mpz& x) const {
    uint64_t limbs[N];
    testing::to_limbs(x, limbs, N);
    return F::from_canonical(limbs);
  }
  Mpz value(const F& a) const {
    uint64_t limbs[N];
    a.to_canonical(limbs);
    return testing::from_limbs(limbs, N);
  }
  E random_element() { return E{base(random_coeff()), base(random_coeff())}; }

  Mpz p_;
  std::mt19937_64 rng_;
};

using Extensions = ::testing::Types<ff::Fp2<ff::Bn254Fq>, ff::Fp2<ff::Bls12_381Fq>>;
TYPED_TEST_SUITE(Fp2Test, Extensions);

TYPED_TEST(Fp2Test, MulMatchesSchoolbookProduct) {
  using E = TypeParam;
  const Mpz& p = this->p_;
  Mpz p_minus_1;
  mpz_sub_ui(p_minus_1.get(), p.get(), 1);
  for (int i = 0; i < 500; ++i) {
    Mpz a0 = this->random_coeff(), a1 = this->random_coeff();
    Mpz b0 = this->random_coeff(), b1 = this->random_coeff();
    if (i == 0) a0 = a1 = b0 = b1 = p_minus_1;  // largest coefficients
    if (i == 1) a1 = b1 = Mpz(0UL);
    const E a{this->base(a0), this->base(a1)}, b{this->base(b0), this->base(b1)};
    // (a0 + a1 u)(b0 + b1 u) = a0 b0 - a1 b1 + (a0 b1 + a1 b0) u
    const Mpz c0 = testing::sub_mod(testing::mul_mod(a0, b0, p), testing::mul_mod(a1, b1, p), p);
    const Mpz c1 = testing::add_mod(testing::mul_mod(a0, b1, p), testing::mul_mod(a1, b0, p), p);
    const E c = a * b;
    EXPECT_EQ(this->value(c.c0), c0);
    EXPECT_EQ(this->value(c.c1), c1);
    EXPECT_EQ(a.sqr(), a * a);
    EXPECT_EQ(this->value((a + b).c0), testing::add_mod(a0, b0, p));
    EXPECT_EQ(this->value((a - b).c1), testing::sub_mod(a1, b1, p));
    EXPECT_EQ(a.dbl(), a + a);
    EXPECT_EQ(a + a.neg(), E::zero());
    EXPECT_EQ(-a, a.neg());
    EXPECT_TRUE((a.conjugate() * a).c1.is_zero()) << "a times its conjugate is real";
    EXPECT_EQ(a.mul_by_base(b.c0), a * (E{b.c0, E::Base::zero()}));
    E d = a;
    d *= b;
    d += a;
    d -= b;
    EXPECT_EQ(d, a * b + a - b);
  }
}

TYPED_TEST(Fp2Test, InverseAndIdentities) {
  using E = TypeParam;
  using F = typename E::Base;
  const E u{F::zero(), F::one()};
  EXPECT_EQ(u * u, E::one().neg()) << "u^2 must be -1";
  EXPECT_TRUE(E::zero().is_zero());
  EXPECT_FALSE(E::one().is_zero());
  EXPECT_FALSE(u.is_zero());
  EXPECT_TRUE(E::zero().inverse().is_zero()) << "inverse of 0 is defined as 0";
  EXPECT_EQ(u.inverse(), u.neg());
  EXPECT_EQ(E::one().inverse(), E::one());
  for (int i = 0; i < 100; ++i) {
    const E a = this->random_element(), b = this->random_element(), c = this->random_element();
    EXPECT_EQ(a * a.inverse(), E::one());
    EXPECT_EQ(a * (b + c), a * b + a * c);
    EXPECT_EQ((a * b) * c, a * (b * c));
    EXPECT_NE(a, a + E::one());
    // A purely real or purely imaginary element also inverts.
    const E real{a.c0, F::zero()}, imag{F::zero(), a.c1};
    EXPECT_EQ(real * real.inverse(), E::one());
    EXPECT_EQ(imag * imag.inverse(), E::one());
  }
}

}  // namespace
}  // namespace zkfleet
