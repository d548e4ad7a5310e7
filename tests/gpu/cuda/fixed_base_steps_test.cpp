// The CUDA fixed-base multiplication's steps (bellman/fixed_base_steps.hpp),
// run on the CPU over the device field types exactly as the kernels run them
// (the host-built table read as device points, MulStep per point,
// ToAffineRunStep per run), against the CPU's fixed-base multiplication
// (devtools::MulGeneratorG1/G2, an independent table) and double-and-add
// (curve::scalar_mul): the same bytes for random, zero, one, r-1 and other
// edge scalars, over G1 and G2. Needs no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "zkfleet/bellman/fixed_base_steps.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/field32.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::bellman {
namespace {

using Fr = ff::Bls12_381Fr;
using DeviceFr = cuda::DeviceFieldOf<Fr>::type;

cpu::ThreadPool& Pool() {
  static cpu::ThreadPool pool(2);
  return pool;
}

Fr FromLimbs(uint64_t l0, uint64_t l1, uint64_t l2, uint64_t l3) {
  const uint64_t limbs[4] = {l0, l1, l2, l3};
  return Fr::from_canonical(limbs);
}

// The edge scalars, every digit in every window, then `random` uniform ones with a zero every 7th, then
// a run of zeros (a whole ToAffineRunStep run of infinities).
std::vector<Fr> Scalars(size_t random, uint64_t seed) {
  const Fr one = Fr::one();
  std::vector<Fr> out = {
      Fr::zero(), one, Fr::from_uint(2), Fr::zero() - one, Fr::zero() - Fr::from_uint(2), Fr::from_uint(255),
      Fr::from_uint(256), Fr::from_uint(257), Fr::from_uint(0xffff),
      FromLimbs(~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, (uint64_t{1} << 56) - 1),  // 31 digits 0xff, the top 0
      FromLimbs(0, 0, 0, uint64_t{1} << 56),                                         // only the top digit
      FromLimbs(0x0101010101010101, 0x0101010101010101, 0x0101010101010101, 0x0101010101010101),
  };
  // 256 scalars that between them put every digit in every window, so that
  // every table entry is read (the top digit below 0x73 keeps them < r).
  for (unsigned j = 0; j < 256; ++j) {
    uint64_t limbs[4] = {0, 0, 0, 0};
    for (int w = 0; w < 32; ++w) {
      const uint64_t digit = w < 31 ? (j + 37 * w) & 0xff : j % 0x73;
      limbs[w / 8] |= digit << (8 * (w % 8));
    }
    out.push_back(Fr::from_canonical(limbs));
  }
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < random; ++i) {
    if (i % 7 == 3) {
      out.push_back(Fr::zero());
      continue;
    }
    uint64_t limbs[4];
    do {
      for (auto& l : limbs) l = rng();
      limbs[3] &= (uint64_t{1} << (Fr::kModulusBits - 192)) - 1;
    } while (!Fr::is_below_modulus(limbs));
    out.push_back(Fr::from_canonical(limbs));
  }
  for (int i = 0; i < 9; ++i) out.push_back(Fr::zero());
  out.push_back(one);
  return out;
}

// The kernels' work, step by step on the CPU: the table of the generator
// (built on the host, read as device points as the kernel reads it), one
// MulStep per scalar, one ToAffineRunStep per run of `run` points.
template <class HostCfg>
std::vector<curve::Affine<HostCfg>> EmulateKernels(const std::vector<curve::Affine<HostCfg>>& host_table,
                                                   const std::vector<Fr>& scalars, uint64_t run) {
  using Cfg = cuda::DeviceCurve<HostCfg>;
  std::vector<curve::Affine<Cfg>> table(host_table.size());
  std::memcpy(static_cast<void*>(table.data()), host_table.data(), table.size() * sizeof(table[0]));
  std::vector<curve::Xyzz<Cfg>> xyzz(scalars.size());
  for (size_t i = 0; i < scalars.size(); ++i) {
    xyzz[i] = fixed_base::MulStep<Cfg>(cuda::BitCopy<DeviceFr>(scalars[i]), table.data());
  }
  std::vector<curve::Affine<Cfg>> points(scalars.size());
  for (uint64_t t = 0; t * run < scalars.size(); ++t) {
    fixed_base::ToAffineRunStep<Cfg>(t, run, scalars.size(), xyzz.data(), points.data());
  }
  std::vector<curve::Affine<HostCfg>> out(points.size());
  std::memcpy(static_cast<void*>(out.data()), points.data(), out.size() * sizeof(out[0]));
  return out;
}

template <class Cfg>
curve::Affine<Cfg> DoubleAndAdd(const Fr& k) {
  uint64_t limbs[4];
  k.to_canonical(limbs);
  return curve::to_affine(curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(Cfg::generator()), limbs, 4));
}

template <class A>
bool SameBytes(const A& x, const A& y) {
  return std::memcmp(&x, &y, sizeof(A)) == 0;
}

template <class Cfg, class Alloc>
void ExpectEqualPoints(const std::vector<curve::Affine<Cfg>>& got, const std::vector<curve::Affine<Cfg>, Alloc>& want,
                       const std::vector<Fr>& scalars, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    if (!SameBytes(got[i], want[i])) {
      ADD_FAILURE() << what << ": point " << i << " differs" << (scalars[i].is_zero() ? " (zero scalar)" : "");
      ++reported;
    }
  }
}

template <class Cfg>
void CheckAgainstCpu(size_t random, uint64_t seed) {
  const std::vector<Fr> scalars = Scalars(random, seed);
  const std::vector<curve::Affine<Cfg>> table = fixed_base::BuildTable(Cfg::generator());
  ASSERT_EQ(table.size(), size_t{fixed_base::kTableSize});
  bellman::PointVector<curve::Affine<Cfg>> cpu;
  if constexpr (sizeof(typename Cfg::Field) == 48) {
    cpu = devtools::MulGeneratorG1(scalars, Pool());
  } else {
    cpu = devtools::MulGeneratorG2(scalars, Pool());
  }
  // Runs of the kernels' length, one that cuts the count unevenly, and one.
  for (uint64_t run : {uint64_t{fixed_base::kDefaultRun}, uint64_t{5}, uint64_t{1}}) {
    ExpectEqualPoints(EmulateKernels(table, scalars, run), cpu, scalars, "run " + std::to_string(run));
  }
  // Independent of both tables: double-and-add for the edge scalars and some.
  for (size_t i = 0; i < scalars.size(); i += (i < 12 ? 1 : 17)) {
    EXPECT_TRUE(SameBytes(cpu[i], DoubleAndAdd<Cfg>(scalars[i]))) << "scalar " << i;
  }
  EXPECT_TRUE(cpu[0].is_infinity());
  EXPECT_TRUE(SameBytes(cpu[1], Cfg::generator()));
  EXPECT_TRUE(SameBytes(cpu[3], curve::neg(Cfg::generator())));  // (r-1)·G = -G
}

TEST(FixedBaseSteps, G1MatchesTheCpu) { CheckAgainstCpu<curve::Bls12_381G1>(300, 1); }

TEST(FixedBaseSteps, G2MatchesTheCpu) { CheckAgainstCpu<curve::Bls12_381G2>(60, 2); }

// Every table entry d·256^w·G: each window's first entry against
// double-and-add, every next one as the previous plus the first (Jacobian
// addition), and a sample of digits against double-and-add too.
template <class Cfg>
void CheckTable() {
  using J = curve::Jacobian<Cfg>;
  const auto table = fixed_base::BuildTable(Cfg::generator());
  for (int w = 0; w < fixed_base::kWindows; ++w) {
    const auto* entries = table.data() + w * fixed_base::kDigits;
    for (int d = 2; d <= fixed_base::kDigits; ++d) {
      const auto want = curve::to_affine(curve::add(J::from_affine(entries[d - 2]), J::from_affine(entries[0])));
      EXPECT_TRUE(SameBytes(entries[d - 1], want)) << "window " << w << " digit " << d;
    }
  }
  for (int w = 0; w < fixed_base::kWindows; ++w) {
    for (int d : {1, 2, 3, 128, 200, 255}) {
      uint64_t limbs[4] = {0, 0, 0, 0};
      // d·256^w as a 256-bit integer (8w mod 64 <= 56: one limb holds d).
      limbs[w / 8] = static_cast<uint64_t>(d) << (8 * (w % 8));
      const auto want =
          curve::to_affine(curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(Cfg::generator()), limbs, 4));
      EXPECT_TRUE(SameBytes(table[w * fixed_base::kDigits + d - 1], want)) << "window " << w << " digit " << d;
    }
  }
}

TEST(FixedBaseSteps, TableEntriesAreTheDigitsMultiples) {
  CheckTable<curve::Bls12_381G1>();
  CheckTable<curve::Bls12_381G2>();
}

TEST(FixedBaseSteps, DigitsOfACanonicalScalar) {
  const uint32_t k[8] = {0x04030201, 0x08070605, 0, 0, 0, 0, 0, 0xff000000};
  EXPECT_EQ(fixed_base::Digit(k, 0), 1u);
  EXPECT_EQ(fixed_base::Digit(k, 3), 4u);
  EXPECT_EQ(fixed_base::Digit(k, 7), 8u);
  EXPECT_EQ(fixed_base::Digit(k, 8), 0u);
  EXPECT_EQ(fixed_base::Digit(k, 31), 0xffu);
}

}  // namespace
}  // namespace zkfleet::bellman
