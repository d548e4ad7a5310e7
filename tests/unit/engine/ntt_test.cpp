// NTT conventions against the definition (O(n^2) DFT), inverse round trips
// and the odd-coset evaluation snarkjs uses.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "zkfleet/ntt/cpu_ntt.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"

namespace zkfleet::cpu {
namespace {

template <class Fr>
std::vector<Fr> RandomVector(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Fr> v(n);
  for (auto& x : v) {
    uint64_t raw[4] = {rng(), rng(), rng(), rng() >> 3};
    x = Fr::from_mont(raw);
  }
  return v;
}

template <class Fr>
Fr Eval(const std::vector<Fr>& coeffs, const Fr& x) {
  Fr acc = Fr::zero();
  for (size_t j = coeffs.size(); j-- > 0;) acc = acc * x + coeffs[j];
  return acc;
}

template <class Fr>
void CheckDomain(int log_n) {
  ThreadPool pool(2);
  NttDomain<Fr> domain(log_n);
  const size_t n = size_t{1} << log_n;
  const Fr w = Fr::root_of_unity(log_n);
  auto coeffs = RandomVector<Fr>(n, log_n);

  // Forward = evaluation at w^i.
  auto evals = coeffs;
  domain.Forward(evals.data(), pool);
  Fr x = Fr::one();
  for (size_t i = 0; i < n; ++i, x = x * w) ASSERT_EQ(evals[i], Eval(coeffs, x)) << "log_n=" << log_n << " i=" << i;

  // Inverse undoes Forward.
  auto back = evals;
  domain.Inverse(back.data(), pool);
  EXPECT_EQ(back, coeffs);

  // ToOddCoset: evaluations on the domain -> evaluations at w_2n^(2i+1).
  auto coset = evals;
  domain.ToOddCoset(coset.data(), pool);
  const Fr w2n = Fr::root_of_unity(log_n + 1);
  Fr xi = w2n;
  for (size_t i = 0; i < n; ++i, xi = xi * w) ASSERT_EQ(coset[i], Eval(coeffs, xi)) << "coset i=" << i;
}

TEST(CpuNtt, Bn254MatchesDefinition) {
  // 12: two blocks of the cache-blocked stages, one stage over the whole array, in parallel.
  for (int k : {0, 1, 2, 3, 5, 8, 10, 12}) CheckDomain<ff::Bn254Fr>(k);
}

TEST(CpuNtt, Bls12_381MatchesDefinition) {
  for (int k : {1, 4, 9}) CheckDomain<ff::Bls12_381Fr>(k);
}

// The parallel path (n >= 2^12) agrees with the definition at a few points.
TEST(CpuNtt, LargeDomainSpotChecks) {
  using Fr = ff::Bn254Fr;
  ThreadPool pool(3);
  const int log_n = 13;
  NttDomain<Fr> domain(log_n);
  auto coeffs = RandomVector<Fr>(size_t{1} << log_n, 99);
  auto evals = coeffs;
  domain.Forward(evals.data(), pool);
  const Fr w = Fr::root_of_unity(log_n);
  for (uint64_t i : {0ull, 1ull, 77ull, 4095ull, 8191ull}) {
    uint64_t e[1] = {i};
    EXPECT_EQ(evals[i], Eval(coeffs, w.pow(e, 1)));
  }
  domain.Inverse(evals.data(), pool);
  EXPECT_EQ(evals, coeffs);
}

// Tables filled in parallel (a key load passes its pool) transform as the
// definition does: checked at a few points, forward, inverse and odd coset.
TEST(CpuNtt, TablesFilledInParallelMatchDefinition) {
  using Fr = ff::Bls12_381Fr;
  ThreadPool pool(3);
  const int log_n = 14;
  const size_t n = size_t{1} << log_n;
  NttDomain<Fr> domain(log_n, &pool);
  auto coeffs = RandomVector<Fr>(n, 7);
  auto evals = coeffs;
  domain.Forward(evals.data(), pool);
  const Fr w = Fr::root_of_unity(log_n);
  const Fr w2n = Fr::root_of_unity(log_n + 1);
  auto coset = evals;
  domain.ToOddCoset(coset.data(), pool);
  for (uint64_t i : {0ull, 1ull, 4097ull, 8191ull, 8192ull, 16383ull}) {
    uint64_t e[1] = {i};
    EXPECT_EQ(evals[i], Eval(coeffs, w.pow(e, 1))) << "i=" << i;
    EXPECT_EQ(coset[i], Eval(coeffs, w2n * w.pow(e, 1))) << "coset i=" << i;
  }
  domain.Inverse(evals.data(), pool);
  EXPECT_EQ(evals, coeffs);
}

// The roots snarkjs uses (spec §1.2): w[2] is a primitive 4th root of unity.
TEST(CpuNtt, RootsAreTheSnarkjsOnes) {
  using Fr = ff::Bn254Fr;
  uint64_t canon[4];
  Fr::root_of_unity(2).to_canonical(canon);
  // 0x30644e72e131a029048b6e193fd841045cea24f6fd736bec231204708f703636
  EXPECT_EQ(canon[3], 0x30644e72e131a029ull);
  EXPECT_EQ(canon[0], 0x231204708f703636ull);
}

}  // namespace
}  // namespace zkfleet::cpu
