// Curve point arithmetic for G1 and G2 of both curves: group laws, the
// special cases of every addition formula, agreement between the coordinate
// systems, the group order, and batch_to_affine.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "unit/ff/gmp_oracle.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"

namespace zkfleet {
namespace {

using curve::Affine;
using curve::Jacobian;
using curve::Xyzz;
using testing::Mpz;

template <class Cfg>
class CurveTest : public ::testing::Test {
 protected:
  using F = typename Cfg::Field;
  using Fr = typename Cfg::Scalar;
  using J = Jacobian<Cfg>;
  using A = Affine<Cfg>;
  using X = Xyzz<Cfg>;
  static constexpr int kScalarLimbs = Fr::kLimbs;

  CurveTest() : rng_(0xc0ffeeu + F::kLimbs), g_(J::from_affine(Cfg::generator())) {
    uint64_t limbs[kScalarLimbs];
    Fr::modulus_limbs(limbs);
    r_ = testing::from_limbs(limbs, kScalarLimbs);
  }

  Mpz random_scalar() { return testing::mod(testing::random_limbs(rng_, kScalarLimbs), r_); }
  J mul(const J& p, const Mpz& k) const {
    uint64_t limbs[kScalarLimbs];
    testing::to_limbs(k, limbs, kScalarLimbs);
    return curve::scalar_mul(p, limbs, kScalarLimbs);
  }
  J random_point() { return mul(g_, random_scalar()); }
  // The same point with a different Z: (l^2 X, l^3 Y, l Z).
  static J rescale(const J& p, const F& l) {
    const F l2 = l.sqr();
    return J{p.x * l2, p.y * l2 * l, p.z * l};
  }
  // A random field element (zero has negligible probability).
  F random_nonzero_field() {
    if constexpr (requires { typename F::Base; }) {
      return F{random_base<typename F::Base>(), random_base<typename F::Base>()};
    } else {
      return random_base<F>();
    }
  }
  template <class B>
  B random_base() {
    uint64_t limbs[B::kLimbs];
    for (auto& l : limbs) l = rng_();
    return B::from_canonical(limbs);  // reduces mod p
  }

  std::mt19937_64 rng_;
  J g_;
  Mpz r_;
};

using Groups = ::testing::Types<curve::Bn254G1, curve::Bn254G2, curve::Bls12_381G1, curve::Bls12_381G2>;
TYPED_TEST_SUITE(CurveTest, Groups);

TYPED_TEST(CurveTest, GeneratorIsOnCurveAndHasOrderR) {
  using J = typename TestFixture::J;
  using A = typename TestFixture::A;
  const A g = TypeParam::generator();
  EXPECT_FALSE(g.is_infinity());
  EXPECT_TRUE(curve::is_on_curve(g));
  EXPECT_TRUE(curve::is_on_curve(this->g_));
  // A point off the curve is rejected: change y.
  EXPECT_FALSE(curve::is_on_curve(A{g.x, g.y + TestFixture::F::one()}));
  EXPECT_TRUE(curve::is_on_curve(A::infinity())) << "infinity counts as on the curve";
  EXPECT_TRUE(curve::is_on_curve(J::infinity()));

  EXPECT_TRUE(this->mul(this->g_, this->r_).is_infinity()) << "r * G must be infinity";
  Mpz r_minus_1;
  mpz_sub_ui(r_minus_1.get(), this->r_.get(), 1);
  EXPECT_TRUE(curve::equal(this->mul(this->g_, r_minus_1), curve::neg(this->g_)));
  EXPECT_TRUE(curve::equal(this->mul(this->g_, Mpz(1UL)), this->g_));
  EXPECT_TRUE(this->mul(this->g_, Mpz(0UL)).is_infinity());
  EXPECT_TRUE(curve::scalar_mul(J::infinity(), nullptr, 0).is_infinity());
}

TYPED_TEST(CurveTest, DoublingThroughEveryAddition) {
  using J = typename TestFixture::J;
  using X = typename TestFixture::X;
  for (int i = 0; i < 4; ++i) {
    const J p = this->random_point();
    const J p2 = curve::dbl(p);
    ASSERT_TRUE(curve::is_on_curve(p2));
    const J p_other_z = TestFixture::rescale(p, this->random_nonzero_field());
    ASSERT_TRUE(curve::equal(p, p_other_z));
    EXPECT_TRUE(curve::equal(curve::add(p, p), p2));
    EXPECT_TRUE(curve::equal(curve::add(p, p_other_z), p2)) << "same point, different Z must double";
    EXPECT_TRUE(curve::equal(curve::add_mixed(p_other_z, curve::to_affine(p)), p2));
    const X px = curve::to_xyzz(p_other_z);
    EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_add(px, curve::to_xyzz(p))), p2));
    EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_add_mixed(px, curve::to_affine(p))), p2));
    EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_dbl(px)), p2));
    EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_dbl_affine(curve::to_affine(p))), p2));
    EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::dbl(px)), p2));  // overload
  }
}

TYPED_TEST(CurveTest, OppositePointsGiveInfinity) {
  using X = typename TestFixture::X;
  for (int i = 0; i < 4; ++i) {
    const auto p = this->random_point();
    const auto minus_p = TestFixture::rescale(curve::neg(p), this->random_nonzero_field());
    EXPECT_TRUE(curve::add(p, minus_p).is_infinity());
    EXPECT_TRUE(curve::add_mixed(p, curve::neg(curve::to_affine(p))).is_infinity());
    EXPECT_TRUE(curve::xyzz_add(curve::to_xyzz(p), curve::to_xyzz(minus_p)).is_infinity());
    EXPECT_TRUE(curve::xyzz_add_mixed(curve::to_xyzz(p), curve::to_affine(minus_p)).is_infinity());
    EXPECT_TRUE(curve::add(curve::to_xyzz(p), curve::neg(curve::to_xyzz(p))).is_infinity());
    EXPECT_TRUE(curve::to_jacobian(X::from_affine(curve::to_affine(curve::add(p, minus_p)))).is_infinity());
  }
}

TYPED_TEST(CurveTest, InfinityIsTheIdentity) {
  using J = typename TestFixture::J;
  using A = typename TestFixture::A;
  using X = typename TestFixture::X;
  const J inf = J::infinity();
  const A inf_affine = A::infinity();
  EXPECT_TRUE(inf.is_infinity());
  EXPECT_TRUE(inf_affine.is_infinity());
  EXPECT_TRUE(inf_affine.x.is_zero() && inf_affine.y.is_zero()) << "zkey encoding: all zero";
  EXPECT_TRUE(X::infinity().is_infinity());
  EXPECT_TRUE(curve::dbl(inf).is_infinity());
  EXPECT_TRUE(curve::xyzz_dbl(X::infinity()).is_infinity());
  EXPECT_TRUE(curve::xyzz_dbl_affine(inf_affine).is_infinity());
  EXPECT_TRUE(curve::add(inf, inf).is_infinity());
  EXPECT_TRUE(curve::add_mixed(inf, inf_affine).is_infinity());
  EXPECT_TRUE(curve::xyzz_add(X::infinity(), X::infinity()).is_infinity());
  EXPECT_TRUE(curve::xyzz_add_mixed(X::infinity(), inf_affine).is_infinity());
  EXPECT_TRUE(curve::to_affine(inf).is_infinity());
  EXPECT_TRUE(curve::to_affine(X::infinity()).is_infinity());
  EXPECT_TRUE(J::from_affine(inf_affine).is_infinity());
  EXPECT_TRUE(X::from_affine(inf_affine).is_infinity());
  EXPECT_TRUE(curve::to_jacobian(X::infinity()).is_infinity());
  EXPECT_TRUE(curve::to_xyzz(inf).is_infinity());
  EXPECT_TRUE(curve::neg(inf_affine).is_infinity());
  EXPECT_TRUE(curve::neg(inf).is_infinity());
  EXPECT_TRUE(curve::equal(inf, J{inf.x + inf.x, inf.y, inf.z})) << "any Z=0 point is infinity";

  const J p = this->random_point();
  const A pa = curve::to_affine(p);
  EXPECT_FALSE(curve::equal(inf, p));
  EXPECT_FALSE(curve::equal(p, inf));
  EXPECT_TRUE(curve::equal(curve::add(inf, p), p));
  EXPECT_TRUE(curve::equal(curve::add(p, inf), p));
  EXPECT_TRUE(curve::equal(curve::add_mixed(p, inf_affine), p));
  EXPECT_TRUE(curve::equal(curve::add_mixed(inf, pa), p));
  EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_add(X::infinity(), curve::to_xyzz(p))), p));
  EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_add(curve::to_xyzz(p), X::infinity())), p));
  EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_add_mixed(X::infinity(), pa)), p));
  EXPECT_TRUE(curve::equal(curve::to_jacobian(curve::xyzz_add_mixed(curve::to_xyzz(p), inf_affine)), p));
}

TYPED_TEST(CurveTest, CoordinateSystemsAgree) {
  for (int i = 0; i < 6; ++i) {
    const auto p = this->random_point();
    const auto q = TestFixture::rescale(this->random_point(), this->random_nonzero_field());
    const auto qa = curve::to_affine(q);
    ASSERT_TRUE(curve::is_on_curve(qa));
    ASSERT_FALSE(qa.is_infinity());
    const auto sum = curve::add(p, q);
    EXPECT_TRUE(curve::is_on_curve(sum));
    EXPECT_TRUE(curve::equal(sum, curve::add(q, p)));
    EXPECT_TRUE(curve::equal(sum, curve::add_mixed(p, qa)));
    EXPECT_TRUE(curve::equal(sum, curve::to_jacobian(curve::xyzz_add(curve::to_xyzz(p), curve::to_xyzz(q)))));
    EXPECT_TRUE(curve::equal(sum, curve::to_jacobian(curve::xyzz_add_mixed(curve::to_xyzz(p), qa))));
    EXPECT_TRUE(curve::equal(sum, curve::to_jacobian(curve::add_mixed(curve::to_xyzz(p), qa))));  // overload
    EXPECT_TRUE(curve::equal(q, curve::to_jacobian(curve::to_xyzz(q))));
    EXPECT_TRUE(curve::equal(q, curve::Jacobian<TypeParam>::from_affine(qa)));
    EXPECT_FALSE(curve::equal(p, q));
    EXPECT_FALSE(curve::equal(p, curve::neg(p)));
    // Affine results are the canonical representative: compare limbs directly.
    const auto sa = curve::to_affine(sum);
    const auto sa2 = curve::to_affine(curve::to_xyzz(curve::add_mixed(p, qa)));
    EXPECT_TRUE(sa.x == sa2.x && sa.y == sa2.y);
  }
}

TYPED_TEST(CurveTest, ScalarMultiplicationIsLinear) {
  for (int i = 0; i < 3; ++i) {
    const Mpz a = this->random_scalar(), b = this->random_scalar();
    const auto ag = this->mul(this->g_, a), bg = this->mul(this->g_, b);
    EXPECT_TRUE(curve::equal(this->mul(this->g_, testing::add_mod(a, b, this->r_)), curve::add(ag, bg)))
        << "(a+b)G == aG + bG";
    EXPECT_TRUE(curve::equal(this->mul(ag, b), this->mul(bg, a))) << "b(aG) == a(bG)";
  }
  // Associativity on three random points.
  const auto p = this->random_point(), q = this->random_point(), s = this->random_point();
  EXPECT_TRUE(curve::equal(curve::add(curve::add(p, q), s), curve::add(p, curve::add(q, s))));
}

TYPED_TEST(CurveTest, BatchToAffineMatchesToAffine) {
  using J = typename TestFixture::J;
  using A = typename TestFixture::A;
  std::vector<J> in;
  in.push_back(J::infinity());
  for (int i = 0; i < 12; ++i) {
    in.push_back(TestFixture::rescale(this->random_point(), this->random_nonzero_field()));
    if (i % 4 == 1) in.push_back(J::infinity());
  }
  in.push_back(J::infinity());
  std::vector<A> out(in.size(), A{TestFixture::F::one(), TestFixture::F::one()});
  curve::batch_to_affine(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const A expected = curve::to_affine(in[i]);
    EXPECT_TRUE(out[i].x == expected.x && out[i].y == expected.y) << "index " << i;
    EXPECT_EQ(out[i].is_infinity(), in[i].is_infinity());
  }
  // Only infinities, and nothing at all.
  std::vector<J> infs(3, J::infinity());
  std::vector<A> infs_out(3, A{TestFixture::F::one(), TestFixture::F::one()});
  curve::batch_to_affine(infs.data(), infs_out.data(), infs.size());
  for (const A& a : infs_out) EXPECT_TRUE(a.is_infinity());
  curve::batch_to_affine<TypeParam>(nullptr, nullptr, 0);
}

// The twist constant of BN254 G2 is b2 = 3 / (9 + u).
TEST(Bn254G2Test, TwistConstant) {
  using Fq = ff::Bn254Fq;
  using Fq2 = ff::Fp2<Fq>;
  const Fq2 nine_plus_u{Fq::from_uint(9), Fq::one()};
  EXPECT_EQ(curve::Bn254G2::b() * nine_plus_u, (Fq2{Fq::from_uint(3), Fq::zero()}));
}

TEST(CurveNames, MatchSnarkjs) {
  EXPECT_STREQ(curve::Bn254::kName, "bn128");
  EXPECT_STREQ(curve::Bls12_381::kName, "bls12381");
}

}  // namespace
}  // namespace zkfleet
