// pairing_bench: the cost of the two halves of a Groth16 verification's
// pairing product on the host, for BN254 and BLS12-381 (zkfleet/pairing/pairing.hpp):
//
//   pairing_bench [--runs 20] [--pairs 4]
//
// Prints, per curve, the median and the fastest over --runs of one Miller loop
// over --pairs random subgroup pairs (a Groth16 verification has 4) and of one
// final exponentiation. It was PairingTest.Timings, a benchmark registered as
// a unit test (issue 46, item 9). Exits 1 if a result is zero (never, for
// subgroup points: the loop did not run as meant).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/pairing/pairing.hpp"

namespace {

namespace curve = zkfleet::curve;
namespace pairing = zkfleet::pairing;
using Clock = std::chrono::steady_clock;

// s·generator for a random s: a point of the prime-order subgroup.
template <class Cfg>
curve::Affine<Cfg> RandomSubgroupPoint(std::mt19937_64& rng) {
  using Fr = typename Cfg::Scalar;
  uint64_t limbs[Fr::kLimbs];
  for (auto& limb : limbs) limb = rng();
  Fr::from_canonical(limbs).to_canonical(limbs);  // reduced below r
  return curve::to_affine(curve::scalar_mul(curve::Jacobian<Cfg>::from_affine(Cfg::generator()), limbs, Fr::kLimbs));
}

struct Summary {
  double median_ms, fastest_ms;
};

Summary Summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

template <class C>
bool Run(const char* name, int runs, int n_pairs) {
  std::mt19937_64 rng(18);
  std::vector<pairing::G1G2Pair<C>> pairs;
  for (int i = 0; i < n_pairs; ++i) {
    pairs.push_back({RandomSubgroupPoint<typename C::G1>(rng), RandomSubgroupPoint<typename C::G2>(rng)});
  }
  const auto span = std::span<const pairing::G1G2Pair<C>>(pairs);
  std::vector<double> miller_ms, final_ms;
  bool nonzero = true;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    const pairing::Gt<C> f = pairing::MillerLoop<C>(span);
    const auto t1 = Clock::now();
    const pairing::Gt<C> e = pairing::FinalExponentiation<C>(f);
    const auto t2 = Clock::now();
    miller_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    final_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    nonzero = nonzero && !f.is_zero() && !e.is_zero();  // also keeps the work from being optimized away
  }
  const Summary miller = Summarize(miller_ms), final_exp = Summarize(final_ms);
  const std::string loop = std::to_string(n_pairs) + "-pair Miller loop";
  std::printf("%-9s  %-22s  median %8.3f ms  fastest %8.3f ms\n", name, loop.c_str(), miller.median_ms,
              miller.fastest_ms);
  std::printf("%-9s  %-22s  median %8.3f ms  fastest %8.3f ms\n", name, "final exponentiation", final_exp.median_ms,
              final_exp.fastest_ms);
  if (!nonzero) std::fprintf(stderr, "pairing_bench: %s: a zero result\n", name);
  return nonzero;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pairing_bench: Miller loop and final exponentiation timings, BN254 and BLS12-381"};
  int runs = 20;
  int n_pairs = 4;
  app.add_option("--runs", runs, "timed runs per curve")->check(CLI::Range(1, 100000));
  app.add_option("--pairs", n_pairs, "pairs in the Miller loop (a Groth16 verification has 4)")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  bool ok = Run<curve::Bn254>("bn254", runs, n_pairs);
  ok = Run<curve::Bls12_381>("bls12-381", runs, n_pairs) && ok;
  return ok ? 0 : 1;
}
