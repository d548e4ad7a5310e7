// The field and curve templates compiled by nvcc for the GPU: kernels run the
// same operations as the host (one ZK_HD function used on both sides) and
// the results must agree bit for bit. The host side is checked against GMP in
// tests/unit/ff, so this closes the loop for the device code path
// (__umul64hi arithmetic instead of unsigned __int128).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "testutil/require_gpu.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/ff/fp2.hpp"

namespace zkfleet {
namespace {

// Skips (not passes) the test on a machine without a usable GPU; fails it
// instead under ZKFLEET_REQUIRE_GPU=1.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKFLEET_SKIP_UNLESS_GPU(cuda::DeviceCount() > 0, "no CUDA device (the runtime reports none)");
  }
};

// Byte equality: both sides hold fully reduced limbs, so equal values have
// equal bytes, and structs of limbs have no padding.
template <class T>
bool same_bytes(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Runs kernel<<<blocks, 64>>> on copies of the inputs and fetches the
// outputs (through the engine's runtime layer; a failure throws, which
// fails the test).
template <class In, class Out, class Kernel>
void run_on_device(Kernel kernel, const std::vector<In>& in, std::vector<Out>& out) {
  const int n = static_cast<int>(in.size());
  cuda::DeviceBuffer d_in(sizeof(In) * n, "test inputs"), d_out(sizeof(Out) * n, "test outputs");
  cuda::CopyToDevice(d_in.get(), in.data(), sizeof(In) * n, "test inputs");
  kernel<<<(n + 63) / 64, 64>>>(d_in.as<In>(), d_out.as<Out>(), n);
  ZK_CUDA_CHECK_LAUNCH("test kernel");
  cuda::SynchronizeDevice("test kernel");
  out.resize(n);
  cuda::CopyToHost(out.data(), d_out.get(), sizeof(Out) * n, "test outputs");
}

// ---- prime fields -------------------------------------------------------------

template <class F>
struct FieldIn {
  F a, b;
};
template <class F>
struct FieldOut {
  F mul, sqr, add, sub, neg, dbl, inv, mul_raw, canonical_round_trip, pow;
  uint64_t canonical[F::kLimbs];
};

template <class F>
ZK_HD FieldOut<F> field_ops(const FieldIn<F>& in) {
  FieldOut<F> o;
  o.mul = in.a * in.b;
  o.sqr = in.a.sqr();
  o.add = in.a + in.b;
  o.sub = in.a - in.b;
  o.neg = in.a.neg();
  o.dbl = in.a.dbl();
  o.inv = in.a.inverse();
  o.mul_raw = F::mont_mul_raw(in.a, in.b.v);
  in.a.to_canonical(o.canonical);
  o.canonical_round_trip = F::from_canonical(o.canonical);
  o.pow = in.a.pow(in.b.v, 2);
  return o;
}

template <class F>
__global__ void field_kernel(const FieldIn<F>* in, FieldOut<F>* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = field_ops(in[i]);
}

template <class F>
F random_field(std::mt19937_64& rng) {
  uint64_t limbs[F::kLimbs];
  for (auto& l : limbs) l = rng();
  return F::from_canonical(limbs);
}

template <class F>
class GpuFieldTest : public GpuTest {};
using Fields = ::testing::Types<ff::Bn254Fq, ff::Bn254Fr, ff::Bls12_381Fq, ff::Bls12_381Fr>;
TYPED_TEST_SUITE(GpuFieldTest, Fields);

TYPED_TEST(GpuFieldTest, MatchesHost) {
  using F = TypeParam;
  std::mt19937_64 rng(1234 + F::kLimbs);
  std::vector<FieldIn<F>> in;
  // Edge values: 0, 1, p-1 against each other.
  const F edges[] = {F::zero(), F::one(), F::one().neg()};
  for (const F& a : edges)
    for (const F& b : edges) in.push_back({a, b});
  while (in.size() < 256) in.push_back({random_field<F>(rng), random_field<F>(rng)});

  std::vector<FieldOut<F>> device;
  run_on_device<FieldIn<F>, FieldOut<F>>(field_kernel<F>, in, device);
  if (this->HasFatalFailure()) return;
  for (size_t i = 0; i < in.size(); ++i) {
    const FieldOut<F> host = field_ops(in[i]);
    ASSERT_TRUE(same_bytes(host, device[i])) << "element " << i;
  }
  // Spot-check the device values themselves, not only agreement.
  EXPECT_EQ(device[0].inv, F::zero());
  for (size_t i = 9; i < in.size(); ++i) EXPECT_EQ(in[i].a * device[i].inv, F::one());
}

// ---- quadratic extensions --------------------------------------------------

template <class E>
struct Fp2Out {
  E mul, sqr, add, sub, inv;
};
template <class E>
ZK_HD Fp2Out<E> fp2_ops(const FieldIn<E>& in) {
  return Fp2Out<E>{in.a * in.b, in.a.sqr(), in.a + in.b, in.a - in.b, in.a.inverse()};
}
template <class E>
__global__ void fp2_kernel(const FieldIn<E>* in, Fp2Out<E>* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fp2_ops(in[i]);
}

template <class E>
class GpuFp2Test : public GpuTest {};
using Extensions = ::testing::Types<ff::Fp2<ff::Bn254Fq>, ff::Fp2<ff::Bls12_381Fq>>;
TYPED_TEST_SUITE(GpuFp2Test, Extensions);

TYPED_TEST(GpuFp2Test, MatchesHost) {
  using E = TypeParam;
  using F = typename E::Base;
  std::mt19937_64 rng(99);
  std::vector<FieldIn<E>> in;
  in.push_back({E::zero(), E::one()});
  while (in.size() < 128) {
    in.push_back({E{random_field<F>(rng), random_field<F>(rng)}, E{random_field<F>(rng), random_field<F>(rng)}});
  }
  std::vector<Fp2Out<E>> device;
  run_on_device<FieldIn<E>, Fp2Out<E>>(fp2_kernel<E>, in, device);
  if (this->HasFatalFailure()) return;
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(same_bytes(fp2_ops(in[i]), device[i])) << "element " << i;
    if (i > 0) EXPECT_EQ(in[i].a * device[i].inv, E::one());
  }
}

// ---- roots of unity on the device -----------------------------------------------

template <class F>
__global__ void roots_kernel(const int* k, F* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = F::root_of_unity(k[i]);
}

template <class F>
class GpuRootTest : public GpuTest {};
using ScalarFields = ::testing::Types<ff::Bn254Fr, ff::Bls12_381Fr>;
TYPED_TEST_SUITE(GpuRootTest, ScalarFields);

TYPED_TEST(GpuRootTest, MatchesHost) {
  using F = TypeParam;
  std::vector<int> ks;
  for (int k = 0; k <= F::Params::kTwoAdicity; ++k) ks.push_back(k);
  std::vector<F> device;
  run_on_device<int, F>(roots_kernel<F>, ks, device);
  if (this->HasFatalFailure()) return;
  for (size_t i = 0; i < ks.size(); ++i) EXPECT_EQ(device[i], F::root_of_unity(ks[i])) << "k = " << ks[i];
}

// ---- curves ------------------------------------------------------------------------

template <class Cfg>
struct CurveIn {
  curve::Jacobian<Cfg> p, q;
  curve::Affine<Cfg> q_affine;
  uint64_t scalar[4];
};
template <class Cfg>
struct CurveOut {
  curve::Jacobian<Cfg> add, add_self, dbl, add_neg, add_mixed, add_mixed_self, xyzz_add, xyzz_add_mixed,
      xyzz_dbl, scalar_mul;
  curve::Affine<Cfg> p_affine, generator;
  bool on_curve, equal_self, equal_other;
};

template <class Cfg>
ZK_HD CurveOut<Cfg> curve_ops(const CurveIn<Cfg>& in) {
  using curve::to_jacobian;
  using curve::to_xyzz;
  CurveOut<Cfg> o;
  o.add = curve::add(in.p, in.q);
  o.add_self = curve::add(in.p, in.p);
  o.dbl = curve::dbl(in.p);
  o.add_neg = curve::add(in.p, curve::neg(in.p));
  o.add_mixed = curve::add_mixed(in.p, in.q_affine);
  o.add_mixed_self = curve::add_mixed(in.q, in.q_affine);
  o.xyzz_add = to_jacobian(curve::xyzz_add(to_xyzz(in.p), to_xyzz(in.q)));
  o.xyzz_add_mixed = to_jacobian(curve::xyzz_add_mixed(to_xyzz(in.p), in.q_affine));
  o.xyzz_dbl = to_jacobian(curve::xyzz_dbl(to_xyzz(in.p)));
  o.scalar_mul = curve::scalar_mul(in.p, in.scalar, 4);
  o.p_affine = curve::to_affine(in.p);
  o.generator = Cfg::generator();
  o.on_curve = curve::is_on_curve(in.q_affine) && curve::is_on_curve(in.p);
  o.equal_self = curve::equal(o.add_self, o.dbl);
  o.equal_other = curve::equal(o.add, o.add_mixed) && curve::equal(o.add, o.xyzz_add_mixed);
  return o;
}

template <class Cfg>
__global__ void curve_kernel(const CurveIn<Cfg>* in, CurveOut<Cfg>* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = curve_ops(in[i]);
}

template <class Cfg>
class GpuCurveTest : public GpuTest {};
using Groups = ::testing::Types<curve::Bn254G1, curve::Bn254G2, curve::Bls12_381G1, curve::Bls12_381G2>;
TYPED_TEST_SUITE(GpuCurveTest, Groups);

TYPED_TEST(GpuCurveTest, MatchesHost) {
  using Cfg = TypeParam;
  using J = curve::Jacobian<Cfg>;
  std::mt19937_64 rng(7);
  const J g = J::from_affine(Cfg::generator());
  auto random_point = [&] {
    uint64_t k[4] = {rng(), rng(), rng(), rng() >> 4};
    return curve::scalar_mul(g, k, 4);
  };
  std::vector<CurveIn<Cfg>> in;
  // First input: infinity operands.
  in.push_back({J::infinity(), J::infinity(), curve::Affine<Cfg>::infinity(), {0, 0, 0, 0}});
  while (in.size() < 32) {
    const J p = random_point(), q = random_point();
    in.push_back({p, q, curve::to_affine(q), {rng(), rng(), rng(), rng() >> 4}});
  }
  std::vector<CurveOut<Cfg>> device;
  run_on_device<CurveIn<Cfg>, CurveOut<Cfg>>(curve_kernel<Cfg>, in, device);
  if (this->HasFatalFailure()) return;
  for (size_t i = 0; i < in.size(); ++i) {
    const CurveOut<Cfg> host = curve_ops(in[i]);
    const CurveOut<Cfg>& dev = device[i];
    SCOPED_TRACE("input " + std::to_string(i));
    EXPECT_TRUE(same_bytes(host.add, dev.add));
    EXPECT_TRUE(same_bytes(host.add_self, dev.add_self));
    EXPECT_TRUE(same_bytes(host.dbl, dev.dbl));
    EXPECT_TRUE(same_bytes(host.add_neg, dev.add_neg));
    EXPECT_TRUE(same_bytes(host.add_mixed, dev.add_mixed));
    EXPECT_TRUE(same_bytes(host.add_mixed_self, dev.add_mixed_self));
    EXPECT_TRUE(same_bytes(host.xyzz_add, dev.xyzz_add));
    EXPECT_TRUE(same_bytes(host.xyzz_add_mixed, dev.xyzz_add_mixed));
    EXPECT_TRUE(same_bytes(host.xyzz_dbl, dev.xyzz_dbl));
    EXPECT_TRUE(same_bytes(host.scalar_mul, dev.scalar_mul));
    EXPECT_TRUE(same_bytes(host.p_affine, dev.p_affine));
    EXPECT_TRUE(same_bytes(host.generator, dev.generator));
    // The device's own verdicts.
    EXPECT_TRUE(dev.on_curve);
    EXPECT_TRUE(dev.equal_self);
    EXPECT_TRUE(dev.equal_other);
    EXPECT_TRUE(dev.add_neg.is_infinity());
  }
}

}  // namespace
}  // namespace zkfleet
