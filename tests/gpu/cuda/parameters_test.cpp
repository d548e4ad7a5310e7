// Seeded bellperson parameters with the fixed-base multiplications on CUDA
// (devtools::SynthesizeParametersCuda, bellman::CudaFixedBase) against the
// CPU's: every point of every section and of the verifying key, byte for
// byte, for synthetic circuits of 2^6, 2^10 and 2^14 rows, in one chunk and
// in many. Skipped without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "testutil/require_gpu.hpp"
#include "zkfleet/bellman/constraint_system.hpp"
#include "zkfleet/bellman/fixed_base_cuda.hpp"
#include "zkfleet/bellman/parameters.hpp"
#include "zkfleet/devtools/seeded_parameters.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::bellman {
namespace {

cpu::ThreadPool& Pool() {
  static cpu::ThreadPool pool(0);
  return pool;
}

class CudaParameters : public ::testing::Test {
 protected:
  void SetUp() override {
    ZKFLEET_SKIP_UNLESS_GPU(engine::CudaAvailable(), "no CUDA device (or driver) present: GPU tests need an NVIDIA GPU");
  }
};

template <class A, class AllocGot, class AllocWant>
void ExpectSameSection(const std::vector<A, AllocGot>& got, const std::vector<A, AllocWant>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size() && reported < 5; ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(A)) != 0) {
      ADD_FAILURE() << what << ": point " << i << " of " << got.size() << " differs";
      ++reported;
    }
  }
}

template <class A>
void ExpectSamePoint(const A& got, const A& want, const std::string& what) {
  EXPECT_EQ(std::memcmp(&got, &want, sizeof(A)), 0) << what;
}

void ExpectSameParameters(const Parameters& got, const Parameters& want) {
  ExpectSamePoint(got.vk.alpha_g1, want.vk.alpha_g1, "vk.alpha_g1");
  ExpectSamePoint(got.vk.beta_g1, want.vk.beta_g1, "vk.beta_g1");
  ExpectSamePoint(got.vk.beta_g2, want.vk.beta_g2, "vk.beta_g2");
  ExpectSamePoint(got.vk.gamma_g2, want.vk.gamma_g2, "vk.gamma_g2");
  ExpectSamePoint(got.vk.delta_g1, want.vk.delta_g1, "vk.delta_g1");
  ExpectSamePoint(got.vk.delta_g2, want.vk.delta_g2, "vk.delta_g2");
  ExpectSameSection(got.vk.ic, want.vk.ic, "vk.ic");
  ExpectSameSection(got.h, want.h, "h");
  ExpectSameSection(got.l, want.l, "l");
  ExpectSameSection(got.a, want.a, "a");
  ExpectSameSection(got.b_g1, want.b_g1, "b_g1");
  ExpectSameSection(got.b_g2, want.b_g2, "b_g2");
  // The serialized verifying key, as a reader would see it.
  EXPECT_EQ(SerializeVerifyingKey(got.vk), SerializeVerifyingKey(want.vk));
}

TEST_F(CudaParameters, SameBytesAsTheCpuAtTwoToThe6_10_14) {
  for (int log_rows : {6, 10, 14}) {
    SCOPED_TRACE("2^" + std::to_string(log_rows));
    const uint32_t n_public = log_rows == 6 ? 3 : kPoRepPublicInputs;
    const SyntheticCircuit circuit = MakeSyntheticCircuit(log_rows, n_public, 40 + log_rows);
    const uint64_t seed = 7 + log_rows;
    const Parameters cpu = devtools::SynthesizeParameters(circuit.cs, seed, Pool());
    const Parameters gpu = devtools::SynthesizeParametersCuda(circuit.cs, seed, Pool(), 0);
    ASSERT_EQ(gpu.h.size(), (size_t{1} << log_rows) - 1);
    ExpectSameParameters(gpu, cpu);
  }
}

// Small chunks: many in flight on both slots, the last one partial, the
// two-step API with the constraint system dropped in between.
TEST_F(CudaParameters, ManySmallChunksSameBytesAsTheCpu) {
  devtools::ParameterScalars scalars;
  Parameters cpu;
  {
    const SyntheticCircuit circuit = MakeSyntheticCircuit(12, 20, 3);
    cpu = devtools::SynthesizeParameters(circuit.cs, 5, Pool());
    scalars = devtools::ComputeParameterScalars(circuit.cs, 5, Pool());
  }
  const Parameters gpu = devtools::ParametersFromScalarsCuda(std::move(scalars), Pool(), 0, 333);
  ExpectSameParameters(gpu, cpu);
}

// The multiplier alone on edge scalars: 0 (infinity), 1, 2, r-1, r-2, and
// random ones, in chunks of 7 and in one.
TEST_F(CudaParameters, FixedBaseEdgeScalarsSameBytesAsTheCpu) {
  std::vector<Fr> scalars = {Fr::zero(), Fr::one(), Fr::from_uint(2), Fr::zero() - Fr::one(),
                             Fr::zero() - Fr::from_uint(2), Fr::zero(), Fr::zero()};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 1000; ++i) {
    uint64_t limbs[4];
    do {
      for (auto& l : limbs) l = rng();
      limbs[3] &= (uint64_t{1} << (Fr::kModulusBits - 192)) - 1;
    } while (!Fr::is_below_modulus(limbs));
    scalars.push_back(i % 100 == 0 ? Fr::zero() : Fr::from_canonical(limbs));
  }
  const auto cpu1 = devtools::MulGeneratorG1(scalars, Pool());
  const auto cpu2 = devtools::MulGeneratorG2(scalars, Pool());
  for (size_t chunk : {size_t{7}, size_t{0}}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    CudaFixedBase<curve::Bls12_381G1> g1(curve::Bls12_381G1::generator(), 0, chunk);
    std::vector<G1Affine> got1(scalars.size());
    g1.Mul(scalars, got1.data(), Pool());
    ExpectSameSection(got1, cpu1, "G1");
    CudaFixedBase<curve::Bls12_381G2> g2(curve::Bls12_381G2::generator(), 0, chunk);
    std::vector<G2Affine> got2(scalars.size());
    g2.Mul(scalars, got2.data(), Pool());
    ExpectSameSection(got2, cpu2, "G2");
  }
  EXPECT_TRUE(cpu1[0].is_infinity());
}

// Timings for the 2^27 estimate (not a check; run with
// --gtest_also_run_disabled_tests): the multiplier's rate over G1 and G2,
// and the two steps of ParametersFromScalarsCuda at 2^22 rows.
TEST_F(CudaParameters, DISABLED_Timings) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::vector<Fr> scalars(size_t{1} << 24);
  Pool().ParallelFor(scalars.size(), [&](size_t lo, size_t hi) {
    std::mt19937_64 rng(lo);
    for (size_t i = lo; i < hi; ++i) {
      uint64_t limbs[4];
      do {
        for (auto& l : limbs) l = rng();
        limbs[3] &= (uint64_t{1} << (Fr::kModulusBits - 192)) - 1;
      } while (!Fr::is_below_modulus(limbs));
      scalars[i] = Fr::from_canonical(limbs);
    }
  });
  {
    CudaFixedBase<curve::Bls12_381G1> g1(curve::Bls12_381G1::generator(), 0);
    std::vector<G1Affine> out(scalars.size());
    g1.Mul(std::vector<Fr>(scalars.begin(), scalars.begin() + (1 << 20)), out.data(), Pool());  // warm-up
    auto t0 = Clock::now();
    g1.Mul(scalars, out.data(), Pool());
    const double s = seconds(t0);
    std::printf("G1: 2^24 points in %.3f s (%.1f M points/s)\n", s, scalars.size() / s / 1e6);
  }
  {
    scalars.resize(size_t{1} << 22);
    CudaFixedBase<curve::Bls12_381G2> g2(curve::Bls12_381G2::generator(), 0);
    std::vector<G2Affine> out(scalars.size());
    g2.Mul(std::vector<Fr>(scalars.begin(), scalars.begin() + (1 << 18)), out.data(), Pool());  // warm-up
    auto t0 = Clock::now();
    g2.Mul(scalars, out.data(), Pool());
    const double s = seconds(t0);
    std::printf("G2: 2^22 points in %.3f s (%.1f M points/s)\n", s, scalars.size() / s / 1e6);
  }
  auto t0 = Clock::now();
  devtools::ParameterScalars ps;
  {
    const SyntheticCircuit circuit = MakeSyntheticCircuit(22, kPoRepPublicInputs, 1);
    std::printf("2^22 synthetic circuit: %.3f s\n", seconds(t0));
    t0 = Clock::now();
    ps = devtools::ComputeParameterScalars(circuit.cs, 1, Pool());
    std::printf("2^22 scalars: %.3f s (%d threads)\n", seconds(t0), Pool().size());
  }
  t0 = Clock::now();
  const Parameters params = devtools::ParametersFromScalarsCuda(std::move(ps), Pool(), 0);
  std::printf("2^22 points: %.3f s (h %zu, l %zu, a %zu, b %zu)\n", seconds(t0), params.h.size(), params.l.size(),
              params.a.size(), params.b_g1.size());
}

}  // namespace
}  // namespace zkfleet::bellman
