// The CUDA backend's arithmetic and kernel steps, run on the CPU: Fp32 (the
// GPU field type) against ff::Fp, the MSM and NTT pipelines driven step by
// step exactly as the kernels drive them, against cpu::Msm and
// cpu::NttDomain, and a proof's pointwise steps (A/B/C rows, H scalars)
// against the CPU prover on the bundled fixtures. Needs no GPU, so it runs in
// every CI build.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <numeric>
#include <random>
#include <vector>

#include "test_inputs.hpp"
#include "zkfleet/msm/cpu_msm.hpp"
#include "zkfleet/ntt/cpu_ntt.hpp"
#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/ff/field32.hpp"
#include "zkfleet/groth16/cuda_steps.hpp"
#include "zkfleet/msm/msm_steps.hpp"
#include "zkfleet/ntt/ntt_steps.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/groth16/assembly.hpp"
#include "zkfleet/groth16/rows.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/engine/witness.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::cuda {
namespace {

using testing::RandomElement;

engine::EngineOptions CpuOptions(int threads) {
  engine::EngineOptions options;
  options.backend = engine::Backend::kCpu;
  options.threads = threads;
  return options;
}

cpu::ThreadPool& Pool() {
  static cpu::ThreadPool pool(2);
  return pool;
}

// ---- Fp32 against ff::Fp -----------------------------------------------------

// A uniformly random element of any ff::Fp (rejection sampling).
template <class HostF>
HostF RandomFieldElement(std::mt19937_64& rng) {
  HostF x;
  for (;;) {
    for (int i = 0; i < HostF::kLimbs; ++i) x.v[i] = rng();
    x.v[HostF::kLimbs - 1] >>= 1;  // every modulus here is below 2^(64k-1)
    if (HostF::is_below_modulus(x.v)) return x;
  }
}

template <class HostF>
void CheckFieldOps(uint64_t seed) {
  using DevF = typename DeviceFieldOf<HostF>::type;
  std::mt19937_64 rng(seed);
  auto random = [&] { return RandomFieldElement<HostF>(rng); };
  std::vector<HostF> values = {HostF::zero(), HostF::one(), HostF::one().neg(), HostF::from_uint(2)};
  // The largest element (all words of p - 1: the longest carry chains) and
  // small and top-heavy ones.
  HostF largest;
  for (int k = 0; k < HostF::kLimbs; ++k) largest.v[k] = HostF::Params::modulus(k);
  largest.v[0] -= 1;
  values.push_back(largest);
  HostF top_word{};
  top_word.v[HostF::kLimbs - 1] = HostF::Params::modulus(HostF::kLimbs - 1) - 1;
  values.push_back(top_word);
  for (int i = 0; i < 200; ++i) values.push_back(random());
  for (size_t i = 0; i < values.size(); ++i) {
    const HostF& a = values[i];
    const HostF& b = values[(i * 7 + 3) % values.size()];
    const DevF da = BitCopy<DevF>(a), db = BitCopy<DevF>(b);
    ASSERT_TRUE(BitCopy<HostF>(da * db) == a * b) << "mul " << i;
    ASSERT_TRUE(BitCopy<HostF>(da + db) == a + b) << "add " << i;
    ASSERT_TRUE(BitCopy<HostF>(da - db) == a - b) << "sub " << i;
    ASSERT_TRUE(BitCopy<HostF>(da.neg()) == a.neg()) << "neg " << i;
    ASSERT_TRUE(BitCopy<HostF>(da.sqr()) == a.sqr()) << "sqr " << i;
    ASSERT_TRUE(BitCopy<HostF>(da.dbl()) == a.dbl()) << "dbl " << i;
    ASSERT_EQ(da.is_zero(), a.is_zero());
    // Raw (non-Montgomery) second operand, any 2k-word integer.
    uint64_t raw[HostF::kLimbs];
    for (int k = 0; k < HostF::kLimbs; ++k) raw[k] = i % 5 == 0 ? ~uint64_t{0} : rng();  // all ones: every carry
    uint32_t raw32[2 * HostF::kLimbs];
    std::memcpy(raw32, raw, sizeof(raw));
    ASSERT_TRUE(BitCopy<HostF>(DevF::mont_mul_raw(da, raw32)) == HostF::mont_mul_raw(a, raw)) << "mul_raw " << i;
    uint64_t canon[HostF::kLimbs];
    uint32_t canon32[2 * HostF::kLimbs];
    a.to_canonical(canon);
    da.to_canonical(canon32);
    ASSERT_EQ(0, std::memcmp(canon, canon32, sizeof(canon))) << "to_canonical " << i;
  }
  ASSERT_TRUE(BitCopy<HostF>(DevF::one()) == HostF::one());
  const HostF x = values[10];
  ASSERT_TRUE(BitCopy<HostF>(BitCopy<DevF>(x).inverse()) == x.inverse());
}

TEST(Fp32, MatchesHostFieldBn254) {
  CheckFieldOps<ff::Bn254Fq>(1);
  CheckFieldOps<ff::Bn254Fr>(2);
}
TEST(Fp32, MatchesHostFieldBls12_381) {
  CheckFieldOps<ff::Bls12_381Fq>(3);
  CheckFieldOps<ff::Bls12_381Fr>(4);
}

// The three forms of the Montgomery product (paired, carry chains,
// portable) agree on many operands, including the ones that make every
// carry: a = p - 1 and an all-ones raw b (the second operand may be any
// integer). In builds with assertions (the ASan job) carry32's host form
// also checks the paired form's bounds: no chain it ends without a carry
// out may carry out.
template <class HostF>
void CheckProductForms(uint64_t seed) {
  using DevF = typename DeviceFieldOf<HostF>::type;
  constexpr int n = DevF::kWords;
  std::mt19937_64 rng(seed);
  std::vector<std::array<uint32_t, n>> firsts, seconds;
  auto words_of = [](const HostF& x) {
    std::array<uint32_t, n> w;
    std::memcpy(w.data(), x.v, sizeof(w));
    return w;
  };
  std::array<uint32_t, n> p_minus_1, all_ones, top_only{};
  for (int i = 0; i < n; ++i) p_minus_1[i] = DevF::mod(i);
  p_minus_1[0] -= 1;
  all_ones.fill(~0u);
  top_only[n - 1] = 0x80000000u;
  firsts = {p_minus_1, words_of(HostF::zero()), words_of(HostF::one())};
  seconds = {p_minus_1, all_ones, top_only, words_of(HostF::zero())};
  for (int i = 0; i < 3000; ++i) {
    firsts.push_back(words_of(RandomFieldElement<HostF>(rng)));
    std::array<uint32_t, n> b;
    for (auto& w : b) w = static_cast<uint32_t>(rng());
    if (i % 3 == 0) b[n - 1] |= 0xffff0000u;  // near 2^(32n)
    seconds.push_back(b);
  }
  for (size_t i = 0; i < firsts.size(); ++i) {
    for (size_t k = 0; k < 4; ++k) {
      const auto& a = firsts[i];
      const auto& b = seconds[(i * 5 + k * 977) % seconds.size()];
      uint32_t paired[n], chains[n], portable[n];
      DevF::mont_mul_paired(a.data(), b.data(), paired);
      DevF::mont_mul_chains(a.data(), b.data(), chains);
      DevF::mont_mul_portable(a.data(), b.data(), portable);
      ASSERT_EQ(0, std::memcmp(paired, portable, sizeof(paired))) << "paired, operands " << i << ", " << k;
      ASSERT_EQ(0, std::memcmp(chains, portable, sizeof(chains))) << "chains, operands " << i << ", " << k;
    }
  }
}

TEST(Fp32, ProductFormsAgree) {
  CheckProductForms<ff::Bn254Fq>(11);
  CheckProductForms<ff::Bn254Fr>(12);
  CheckProductForms<ff::Bls12_381Fq>(13);
  CheckProductForms<ff::Bls12_381Fr>(14);
}

// Fp2 products and squares on the device's field against the host's, over
// random elements and the extremes: 0, 1, p - 1 in either coefficient.
template <class HostF>
void CheckFp2Ops(uint64_t seed) {
  using H = ff::Fp2<HostF>;
  using D = typename DeviceFieldOf<H>::type;
  std::mt19937_64 rng(seed);
  const HostF minus_one = HostF::one().neg();
  std::vector<H> values = {H::zero(),
                           H::one(),
                           H{HostF::zero(), HostF::one()},
                           H{minus_one, minus_one},
                           H{HostF::zero(), minus_one},
                           H{minus_one, HostF::zero()},
                           H{HostF::one(), minus_one}};
  for (int i = 0; i < 60; ++i) values.push_back(H{RandomFieldElement<HostF>(rng), RandomFieldElement<HostF>(rng)});
  for (const H& a : values) {
    for (const H& b : values) {
      ASSERT_TRUE(BitCopy<H>(BitCopy<D>(a) * BitCopy<D>(b)) == a * b);
    }
    ASSERT_TRUE(BitCopy<H>(BitCopy<D>(a).sqr()) == a.sqr());
  }
}

TEST(Fp32, Fp2MatchesHost) {
  CheckFp2Ops<ff::Bn254Fq>(5);
  CheckFp2Ops<ff::Bls12_381Fq>(6);
}

// ---- MSM pipeline, emulated ------------------------------------------------------

// Runs the kernels' steps in the order msm_kernels.cuh launches them; with
// max_copies > 1, over tables built by TableStep first.
template <class HostCfg>
curve::Jacobian<HostCfg> EmulatedMsm(const std::vector<curve::Affine<HostCfg>>& bases, const std::vector<uint8_t>& scalars,
                                     int force_c, msm::Plan* plan_out = nullptr, int max_copies = 1,
                                     bool compact = false) {
  using Cfg = DeviceCurve<HostCfg>;
  using DX = curve::Xyzz<Cfg>;
  using DA = curve::Affine<Cfg>;
  const size_t n = scalars.size() / 32;
  msm::Plan p = msm::MakePlan(n, msm::ChooseShape(n, max_copies, force_c), bases.size());
  if (plan_out) *plan_out = p;
  std::vector<DA> dbases(p.copies * bases.size());
  std::memcpy(static_cast<void*>(dbases.data()), bases.data(), bases.size() * sizeof(DA));
  for (uint64_t i = 0; i < bases.size(); ++i) msm::TableStep(i, p, dbases.data());
  std::vector<uint32_t> words(8 * n);
  std::memcpy(words.data(), scalars.data(), n * 32);

  std::vector<uint32_t> keys(p.items), values(p.items);
  if (compact) {
    // EnqueueMsmSortCompact: counts, their exclusive prefix sums, the items.
    std::vector<uint64_t> offsets(n + 1, 0);
    for (uint64_t i = 0; i < n; ++i) offsets[i + 1] = offsets[i] + msm::CountDigitsStep(i, p, words.data());
    msm::SetItems(p, offsets[n]);
    for (uint64_t i = 0; i < n; ++i) msm::CompactDigitsStep(i, p, words.data(), offsets[i], keys.data(), values.data());
    keys.resize(p.items);
    values.resize(p.items);
    if (plan_out) *plan_out = p;
  } else {
    for (uint64_t i = 0; i < n; ++i) msm::DigitsStep(i, p, words.data(), keys.data(), values.data());
  }
  std::vector<uint32_t> order(p.items);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return keys[x] < keys[y]; });
  std::vector<uint32_t> sorted_keys(p.items), sorted_values(p.items);
  for (uint64_t j = 0; j < p.items; ++j) {
    sorted_keys[j] = keys[order[j]];
    sorted_values[j] = values[order[j]];
  }

  std::vector<DX> buckets(p.sentinel, DX::infinity());
  std::vector<uint32_t> spill_keys[2] = {std::vector<uint32_t>(2 * p.threads0), std::vector<uint32_t>(2 * p.threads0)};
  std::vector<DX> spill_values[2] = {std::vector<DX>(2 * p.threads0), std::vector<DX>(2 * p.threads0)};
  for (uint64_t t = 0; t < p.threads0; ++t) {
    msm::ReduceRunsStep(t, p.items, p.chunk0, sorted_keys.data(), p.sentinel,
                        msm::AddSignedBase<Cfg>{dbases.data(), sorted_values.data()}, buckets.data(),
                        spill_keys[0].data(), spill_values[0].data());
  }
  for (int level = 1; level <= p.later_levels; ++level) {
    const int in = (level - 1) % 2, out = level % 2;
    const uint64_t count = msm::LevelInputCount(p, level), threads = msm::LevelThreads(p, level);
    for (uint64_t t = 0; t < threads; ++t) {
      msm::ReduceRunsStep(t, count, msm::kLaterChunk, spill_keys[in].data(), p.sentinel,
                          msm::AddPartial<Cfg>{spill_values[in].data()}, buckets.data(), spill_keys[out].data(),
                          spill_values[out].data());
    }
  }
  std::vector<DX> slices(static_cast<size_t>(p.groups) * p.slice_stride), runs(static_cast<size_t>(p.groups) * p.segments);
  for (uint64_t t = 0; t < static_cast<uint64_t>(p.groups) * p.segments; ++t) {
    msm::BucketSliceStep(t, p, buckets.data(), slices.data(), runs.data());
  }
  for (uint64_t t = 0; t < static_cast<uint64_t>(p.groups) * p.run_segments; ++t) msm::RunSliceStep(t, p, runs.data(), slices.data());
  std::vector<DX> partial(static_cast<size_t>(p.sums) * msm::kReduceThreads);
  std::vector<curve::Xyzz<HostCfg>> sums(p.sums);
  for (int b = 0; b < p.sums; ++b) {
    for (uint32_t tid = 0; tid < msm::kReduceThreads; ++tid) msm::WindowFoldStep(b, tid, p, slices.data(), partial.data());
    for (uint32_t half = msm::kReduceThreads / 2; half >= 1; half /= 2) {
      for (uint32_t tid = 0; tid < msm::kReduceThreads; ++tid) msm::WindowTreeStep(b, tid, half, partial.data());
    }
    sums[b] = BitCopy<curve::Xyzz<HostCfg>>(partial[static_cast<size_t>(b) * msm::kReduceThreads]);
  }
  return msm::CombineWindows(sums.data(), p);
}

template <class HostCfg, class Fr>
void CheckEmulatedMsm(size_t n, int force_c, uint64_t seed, const std::vector<uint8_t>* scalars_override = nullptr,
                      int max_copies = 1) {
  const auto bases = testing::RandomPoints<HostCfg, Fr>(n, seed, Pool());
  const auto scalars = scalars_override ? *scalars_override : testing::RandomScalars<Fr>(n, seed + 1);
  msm::Plan plan;
  const auto got = EmulatedMsm<HostCfg>(bases, scalars, force_c, &plan, max_copies);
  const auto want = cpu::Msm<HostCfg>(bases.data(), scalars.data(), 32, n, Pool());
  EXPECT_TRUE(curve::equal(got, want)) << "n=" << n << " c=" << plan.c << " copies=" << plan.copies
                                       << " groups=" << plan.groups << " levels=" << plan.later_levels;
}

TEST(MsmSteps, MatchesCpuBn254G1) {
  for (size_t n : {1, 2, 3, 100, 700}) CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(n, 0, 10 + n);
  CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(300, 3, 20);  // small windows: many levels, hot buckets
  CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(300, 16, 21);  // wide windows: mostly empty buckets
}

TEST(MsmSteps, MatchesCpuBls12_381G1AndBothG2) {
  CheckEmulatedMsm<curve::Bls12_381G1, ff::Bls12_381Fr>(200, 0, 30);
  CheckEmulatedMsm<curve::Bn254G2, ff::Bn254Fr>(64, 0, 31);
  CheckEmulatedMsm<curve::Bls12_381G2, ff::Bls12_381Fr>(40, 4, 32);
}

TEST(MsmSteps, SuffixOfSharedSortMatchesCpu) {
  // The proof's C MSM: items sorted over all n scalars, C's points for the
  // scalars from `skip` on after `skip` points at infinity, which add nothing.
  const size_t n = 300;
  for (uint32_t skip : {1u, 2u, 7u}) {
    const auto suffix = testing::RandomPoints<curve::Bn254G1, ff::Bn254Fr>(n - skip, 50 + skip, Pool());
    std::vector<curve::Affine<curve::Bn254G1>> bases(skip, curve::Affine<curve::Bn254G1>::infinity());
    bases.insert(bases.end(), suffix.begin(), suffix.end());
    const auto scalars = testing::RandomScalars<ff::Bn254Fr>(n, 60 + skip);
    const auto got = EmulatedMsm<curve::Bn254G1>(bases, scalars, 0);
    const auto want = cpu::Msm<curve::Bn254G1>(suffix.data(), scalars.data() + 32 * skip, 32, n - skip, Pool());
    EXPECT_TRUE(curve::equal(got, want)) << "skip=" << skip;
  }
}

// The compact digits (only non-zero digits become items) on what an
// assignment holds: bits, zeros, small values and some full-width scalars,
// and on uniformly random scalars; the same result as the CPU MSM, with one
// item per non-zero digit (a 0/1 scalar: at most one).
TEST(MsmSteps, CompactDigitsMatchCpuAndMakeOneItemPerBit) {
  using HostCfg = curve::Bls12_381G1;
  using Fr = ff::Bls12_381Fr;
  for (size_t n : {1, 5, 300, 1000}) {
    const auto bases = testing::RandomPoints<HostCfg, Fr>(n, 70 + n, Pool());
    std::vector<uint8_t> scalars = testing::RandomScalars<Fr>(n, 80 + n);
    size_t bits = 0;
    for (size_t i = 0; i < n; ++i) {
      uint8_t* s = scalars.data() + 32 * i;
      const int kind = static_cast<int>(i % 10);
      if (kind < 7) {  // 70 %: a bit
        std::fill(s, s + 32, 0);
        s[0] = static_cast<uint8_t>(i % 3 == 0);
        bits += s[0];
      } else if (kind == 7) {  // a small value
        std::fill(s + 2, s + 32, 0);
      }
    }
    for (int force_c : {0, 5, 16}) {
      msm::Plan plan;
      const auto got = EmulatedMsm<HostCfg>(bases, scalars, force_c, &plan, 1, /*compact=*/true);
      const auto want = cpu::Msm<HostCfg>(bases.data(), scalars.data(), 32, n, Pool());
      EXPECT_TRUE(curve::equal(got, want)) << "n=" << n << " c=" << plan.c;
      // Bits make one item each, zeros none; the other 30 % at most `windows`.
      EXPECT_LE(plan.items, bits + (n - n * 7 / 10 + 1) * plan.windows) << "n=" << n << " c=" << plan.c;
      EXPECT_GE(plan.items, bits);
    }
  }
  // Uniformly random scalars: the same result.
  const auto bases = testing::RandomPoints<curve::Bn254G1, ff::Bn254Fr>(200, 90, Pool());
  const auto scalars = testing::RandomScalars<ff::Bn254Fr>(200, 91);
  const auto got = EmulatedMsm<curve::Bn254G1>(bases, scalars, 0, nullptr, 1, true);
  EXPECT_TRUE(curve::equal(got, cpu::Msm<curve::Bn254G1>(bases.data(), scalars.data(), 32, 200, Pool())));
  // All zero: no item at all, the identity.
  const std::vector<uint8_t> zeros(32 * 50, 0);
  const auto zero_bases = testing::RandomPoints<curve::Bn254G1, ff::Bn254Fr>(50, 92, Pool());
  msm::Plan plan;
  EXPECT_TRUE(EmulatedMsm<curve::Bn254G1>(zero_bases, zeros, 0, &plan, 1, true).is_infinity());
  EXPECT_EQ(plan.items, 0u);
}

TEST(MsmSteps, SkewedScalars) {
  // All equal (every window's items in one bucket), all 1, all r-1, all 0.
  const size_t n = 500;
  std::vector<uint8_t> same(n * 32), ones(n * 32, 0), minus_one(n * 32), zeros(n * 32, 0);
  const auto random = testing::RandomScalars<ff::Bn254Fr>(1, 40, false);
  uint64_t r_minus_1[4];
  for (int i = 0; i < 4; ++i) r_minus_1[i] = ff::Bn254Fr::modulus_limb(i);
  r_minus_1[0] -= 1;
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(&same[i * 32], random.data(), 32);
    ones[i * 32] = 1;
    std::memcpy(&minus_one[i * 32], r_minus_1, 32);
  }
  CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(n, 0, 41, &same);
  CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(n, 0, 42, &ones);
  CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(n, 0, 43, &minus_one);
  CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(n, 0, 44, &zeros);
}

TEST(MsmSteps, TablesMatchCpu) {
  // Tables of every shape: all windows in one bucket set (copies = windows),
  // several sets per copy, one copy short of the windows, and wide windows.
  for (int copies : {2, 3, 7, 16}) {
    for (int c : {0, 5, 11}) CheckEmulatedMsm<curve::Bn254G1, ff::Bn254Fr>(150, c, 70 + copies + c, nullptr, copies);
  }
  CheckEmulatedMsm<curve::Bls12_381G1, ff::Bls12_381Fr>(100, 0, 80, nullptr, 16);
  CheckEmulatedMsm<curve::Bn254G2, ff::Bn254Fr>(40, 6, 81, nullptr, 16);
  CheckEmulatedMsm<curve::Bls12_381G2, ff::Bls12_381Fr>(30, 0, 82, nullptr, 5);
}

TEST(MsmSteps, TablesWithAwkwardScalarsAndBases) {
  // 0, 1, r-1, one repeated scalar; repeated bases and bases at infinity
  // (their copies stay at infinity).
  const size_t n = 200;
  auto bases = testing::RandomPoints<curve::Bn254G1, ff::Bn254Fr>(n, 90, Pool());
  for (size_t i = 0; i < n; i += 7) bases[i] = curve::Affine<curve::Bn254G1>::infinity();
  for (size_t i = 3; i < n; i += 11) bases[i] = bases[1];
  std::vector<uint8_t> scalars = testing::RandomScalars<ff::Bn254Fr>(n, 91);
  uint64_t r_minus_1[4];
  for (int i = 0; i < 4; ++i) r_minus_1[i] = ff::Bn254Fr::modulus_limb(i);
  r_minus_1[0] -= 1;
  for (size_t i = 0; i < n; i += 5) std::memset(&scalars[32 * i], 0, 32);
  for (size_t i = 1; i < n; i += 5) {
    std::memset(&scalars[32 * i], 0, 32);
    scalars[32 * i] = 1;
  }
  for (size_t i = 2; i < n; i += 5) std::memcpy(&scalars[32 * i], r_minus_1, 32);
  for (size_t i = 3; i < n; i += 5) std::memcpy(&scalars[32 * i], &scalars[32 * 4], 32);
  for (int copies : {1, 4, 16}) {
    const auto got = EmulatedMsm<curve::Bn254G1>(bases, scalars, 0, nullptr, copies);
    const auto want = cpu::Msm<curve::Bn254G1>(bases.data(), scalars.data(), 32, n, Pool());
    EXPECT_TRUE(curve::equal(got, want)) << "copies=" << copies;
  }
}

TEST(MsmSteps, TableCopiesAreTheMultiples) {
  // Copy j of base i is 2^(c·groups·j)·base i, in affine form.
  using G1 = curve::Bn254G1;
  const auto bases = testing::RandomPoints<G1, ff::Bn254Fr>(5, 95, Pool());
  const msm::Plan p = msm::MakePlan(5, msm::ChooseShape(5, 6, 9), 5);
  ASSERT_GT(p.copies, 1);
  std::vector<curve::Affine<DeviceCurve<G1>>> table(p.copies * 5);
  std::memcpy(static_cast<void*>(table.data()), bases.data(), 5 * sizeof(bases[0]));
  for (uint64_t i = 0; i < 5; ++i) msm::TableStep(i, p, table.data());
  for (uint64_t i = 0; i < 5; ++i) {
    auto want = curve::Jacobian<G1>::from_affine(bases[i]);
    for (int j = 1; j < p.copies; ++j) {
      for (int d = 0; d < p.c * p.groups; ++d) want = curve::dbl(want);
      const auto got = BitCopy<curve::Affine<G1>>(table[j * 5 + i]);
      EXPECT_TRUE(curve::equal(curve::Jacobian<G1>::from_affine(got), want)) << "base " << i << " copy " << j;
      EXPECT_TRUE(curve::is_on_curve(got));
    }
  }
}

TEST(MsmSteps, PlanShapes) {
  for (uint64_t n : {uint64_t{1}, uint64_t{100}, uint64_t{1} << 16, uint64_t{1} << 20, uint64_t{1} << 22,
                     uint64_t{1} << 24, uint64_t{1} << 27}) {
    for (int max_copies : {1, 4, 16}) {
      const msm::Plan p = msm::MakePlan(n, msm::ChooseShape(n, max_copies), n);
      EXPECT_GE(p.windows * p.c, 256);
      EXPECT_LE(p.copies, max_copies);
      EXPECT_GE(p.copies * p.groups, p.windows);  // every window has a copy and a set
      EXPECT_GT(uint64_t{1} << p.key_bits, p.sentinel);
      EXPECT_EQ(p.buckets % p.segments, 0u);
      EXPECT_LE(p.sums, msm::kMaxSums);
      EXPECT_EQ(p.segments % p.run_segments, 0u);
      // The last spill level runs on one thread.
      EXPECT_EQ(p.later_levels == 0 ? p.threads0 : msm::LevelThreads(p, p.later_levels), 1u);
    }
  }
  // Without tables, the widths the H100 measured fastest (docs/benchmarks-gpu.md).
  EXPECT_EQ(msm::MakePlan(uint64_t{1} << 22).c, 16);
  EXPECT_EQ(msm::MakePlan(uint64_t{1} << 23).c, 19);
  EXPECT_EQ(msm::MakePlan(uint64_t{1} << 24).c, 20);
  // MatchesCpuBn254G1's wide-window case sums several level-1 runs per
  // level-2 thread; the small cases one.
  EXPECT_EQ(msm::MakePlan(300, 16).run_segments * 8, msm::MakePlan(300, 16).segments);
  EXPECT_EQ(msm::MakePlan(300).run_segments, msm::MakePlan(300).segments);
  // With tables, BN254 2^22 takes 13 windows of 20 bits in one bucket set.
  const msm::Shape wide = msm::ChooseShape(uint64_t{1} << 22, 16);
  EXPECT_EQ(wide.c, 20);
  EXPECT_EQ(wide.groups, 1);
  EXPECT_EQ(wide.copies, 13);
}

// ---- NTT pipeline, emulated ---------------------------------------------------------

template <class HostFr>
std::vector<HostFr> EmulatedTransform(const std::vector<HostFr>& src, int log_n, const std::vector<HostFr>& tw,
                                      const std::vector<HostFr>* scale) {
  using Fr = typename DeviceFieldOf<HostFr>::type;
  const size_t n = src.size();
  std::vector<Fr> dsrc(n), data(n), dtw(tw.size()), dscale;
  std::memcpy(static_cast<void*>(dsrc.data()), src.data(), n * sizeof(Fr));
  std::memcpy(static_cast<void*>(dtw.data()), tw.data(), tw.size() * sizeof(Fr));
  if (scale) {
    dscale.resize(n);
    std::memcpy(static_cast<void*>(dscale.data()), scale->data(), n * sizeof(Fr));
  }
  const ntt::Passes passes = ntt::SplitPasses(log_n);
  for (int p = 0; p < passes.count; ++p) {
    const int first = passes.first_stage[p], stages = passes.stages[p];
    const uint32_t threads = 1u << (stages - 1);
    std::vector<Fr> shared(size_t{1} << stages);
    for (uint32_t block = 0; block < (n >> stages); ++block) {
      const bool gather = p == 0;
      for (uint32_t tid = 0; tid < threads; ++tid) {
        for (uint32_t m : {tid, tid + threads}) {
          ntt::LoadStep(block, m, log_n, first, stages, gather, gather ? dsrc.data() : data.data(),
                        gather && scale ? dscale.data() : nullptr, shared.data());
        }
      }
      for (int t = 0; t < stages; ++t) {
        for (uint32_t tid = 0; tid < threads; ++tid) ntt::ButterflyStep(block, tid, t, log_n, first, dtw.data(), shared.data());
      }
      for (uint32_t tid = 0; tid < threads; ++tid) {
        for (uint32_t m : {tid, tid + threads}) ntt::StoreStep(block, m, first, stages, shared.data(), data.data());
      }
    }
  }
  std::vector<HostFr> out(n);
  std::memcpy(static_cast<void*>(out.data()), data.data(), n * sizeof(Fr));
  return out;
}

template <class HostFr>
std::vector<HostFr> Powers(const HostFr& base, const HostFr& scale, size_t n) {
  using Fr = typename DeviceFieldOf<HostFr>::type;
  std::vector<Fr> out(n);
  for (uint64_t t = 0; t < (n + 63) / 64; ++t) ntt::PowersStep(t, n, BitCopy<Fr>(base), BitCopy<Fr>(scale), out.data());
  std::vector<HostFr> host(n);
  std::memcpy(static_cast<void*>(host.data()), out.data(), n * sizeof(Fr));
  return host;
}

template <class HostFr>
void CheckEmulatedNtt(int log_n) {
  const size_t n = size_t{1} << log_n;
  std::mt19937_64 rng(100 + log_n);
  std::vector<HostFr> input(n);
  for (auto& x : input) x = RandomElement<HostFr>(rng);
  const HostFr w = HostFr::root_of_unity(log_n);
  const HostFr n_inv = HostFr::from_uint(n).inverse();
  const auto tw = Powers(w, HostFr::one(), std::max<size_t>(1, n / 2));
  const auto inv_tw = Powers(w.inverse(), HostFr::one(), std::max<size_t>(1, n / 2));
  const auto coset = Powers(HostFr::root_of_unity(log_n + 1), n_inv, n);

  cpu::NttDomain<HostFr> domain(log_n);
  // Forward.
  auto want = input;
  domain.Forward(want.data(), Pool());
  auto got = EmulatedTransform<HostFr>(input, log_n, tw, nullptr);
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(got[i] == want[i]) << "forward log_n=" << log_n << " i=" << i;
  // Inverse then 1/n.
  want = input;
  domain.Inverse(want.data(), Pool());
  got = EmulatedTransform<HostFr>(input, log_n, inv_tw, nullptr);
  for (auto& x : got) x = x * n_inv;
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(got[i] == want[i]) << "inverse log_n=" << log_n << " i=" << i;
  // Odd coset: iNTT, then forward with the coset factors in the gather.
  want = input;
  domain.ToOddCoset(want.data(), Pool());
  got = EmulatedTransform<HostFr>(EmulatedTransform<HostFr>(input, log_n, inv_tw, nullptr), log_n, tw, &coset);
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(got[i] == want[i]) << "coset log_n=" << log_n << " i=" << i;
}

TEST(NttSteps, MatchesCpu) {
  for (int log_n = 1; log_n <= 12; ++log_n) {
    CheckEmulatedNtt<ff::Bn254Fr>(log_n);
    CheckEmulatedNtt<ff::Bls12_381Fr>(log_n);
  }
  // Multi-pass shapes at a size the emulation does in seconds (2^21 took
  // 100 s of CI time): two full passes of 7 stages, and three passes.
  CheckEmulatedNtt<ff::Bn254Fr>(14);
  CheckEmulatedNtt<ff::Bn254Fr>(15);
}

TEST(NttSteps, PassSplit) {
  for (int log_n = 1; log_n <= 28; ++log_n) {
    const ntt::Passes p = ntt::SplitPasses(log_n);
    int total = 0;
    for (int i = 0; i < p.count; ++i) {
      EXPECT_EQ(p.first_stage[i], total);
      EXPECT_GE(p.stages[i], 1);
      EXPECT_LE(p.stages[i], ntt::kMaxPassStages);
      total += p.stages[i];
    }
    EXPECT_EQ(total, log_n);
  }
}

// ---- pointwise steps ------------------------------------------------------------------

// EvaluateRowsStep on two hand-made rows: sums of coefficient × witness
// terms, an empty row, and C = A·B.
TEST(Groth16Steps, EvaluateRowsOnHandMadeRows) {
  using H = ff::Bn254Fr;
  using D = DeviceFieldOf<H>::type;
  std::mt19937_64 rng(7);
  // Two rows of A: {2·w0 + 3·w2}, {}; B: {w1}, {5·w2}; coefficients stored as c·R².
  std::vector<H> w = {RandomElement<H>(rng), RandomElement<H>(rng), RandomElement<H>(rng)};
  std::vector<uint32_t> witness_words(8 * 3);
  for (int i = 0; i < 3; ++i) {
    uint64_t canon[4];
    w[i].to_canonical(canon);
    std::memcpy(&witness_words[8 * i], canon, 32);
  }
  // Stored coefficient c·R² mod r: from_canonical (x -> x·R) of c's Montgomery form c·R.
  auto coef = [](uint64_t c) { return BitCopy<D>(H::from_canonical(H::from_uint(c).v)); };
  std::vector<uint32_t> a_start = {0, 2, 2}, a_sig = {0, 2}, b_start = {0, 1, 2}, b_sig = {1, 2};
  std::vector<D> a_coef = {coef(2), coef(3)}, b_coef = {coef(1), coef(5)};
  prover::DeviceRows<D> a_rows{a_start.data(), a_coef.data(), a_sig.data()};
  prover::DeviceRows<D> b_rows{b_start.data(), b_coef.data(), b_sig.data()};
  std::vector<D> a(2), b(2), c(2);
  for (uint32_t row = 0; row < 2; ++row) prover::EvaluateRowsStep(row, a_rows, b_rows, witness_words.data(), a.data(), b.data(), c.data());
  const H a0 = H::from_uint(2) * w[0] + H::from_uint(3) * w[2];
  EXPECT_TRUE(BitCopy<H>(a[0]) == a0);
  EXPECT_TRUE(BitCopy<H>(a[1]) == H::zero());
  EXPECT_TRUE(BitCopy<H>(b[0]) == w[1]);
  EXPECT_TRUE(BitCopy<H>(b[1]) == H::from_uint(5) * w[2]);
  EXPECT_TRUE(BitCopy<H>(c[0]) == a0 * w[1]);
  EXPECT_TRUE(BitCopy<H>(c[1]) == H::zero());
}

// HScalarStep on inputs where a·b ≠ c: every scalar is canonical(a·b − c).
TEST(Groth16Steps, HScalarsOfUnrelatedVectors) {
  using H = ff::Bls12_381Fr;
  using D = DeviceFieldOf<H>::type;
  std::mt19937_64 rng(8);
  const size_t n = 257;
  std::vector<H> a(n), b(n), c(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = RandomElement<H>(rng);
    b[i] = RandomElement<H>(rng);
    c[i] = i % 5 == 0 ? a[i] * b[i] : RandomElement<H>(rng);  // some rows give 0
  }
  std::vector<D> da(n), db(n), dc(n);
  std::memcpy(static_cast<void*>(da.data()), a.data(), n * sizeof(H));
  std::memcpy(static_cast<void*>(db.data()), b.data(), n * sizeof(H));
  std::memcpy(static_cast<void*>(dc.data()), c.data(), n * sizeof(H));
  std::vector<uint32_t> scalars(8 * n, 0xdeadbeef);
  for (uint64_t i = 0; i < n; ++i) prover::HScalarStep(i, da.data(), db.data(), dc.data(), scalars.data());
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t want[4];
    (a[i] * b[i] - c[i]).to_canonical(want);
    ASSERT_EQ(0, std::memcmp(&scalars[8 * i], want, 32)) << "scalar " << i;
    zeros += want[0] == 0 && want[1] == 0 && want[2] == 0 && want[3] == 0;
  }
  EXPECT_EQ(zeros, (n + 4) / 5);
}

// One proof's pointwise steps as the CUDA prover runs them
// (cuda_key.cuh): the zkey's A/B rows regrouped by row, A, B and C = A·B on
// the domain (EvaluateRowsStep), the odd coset of each (the NTT steps, with the
// coset factors and 1/n in the forward pass's gather, as EnqueueToOddCoset),
// then the H scalars (HScalarStep). On the domain a·b = c row by row; on the
// coset it is not, so the scalars are not zero: they must be exactly the
// CPU prover's, all n of them, and a proof assembled from them must equal the
// CPU prover's proof byte for byte.
template <class C>
void CheckHScalarsAgainstCpuProver(const std::string& fixture_dir) {
  using HostFr = typename C::Fr;
  using DFr = typename DeviceFieldOf<HostFr>::type;
  using G1 = typename C::G1;
  using G2 = typename C::G2;
  const std::string fixture = std::string(ZKFLEET_FIXTURES_DIR) + "/" + fixture_dir;
  const io::ZkeyFile zkey = io::ZkeyFile::Open(fixture + "/circuit_final.zkey");
  const engine::Witness witness = engine::Witness::FromFile(fixture + "/witness.wtns");
  const size_t n = zkey.domain_size(), nv = zkey.n_vars();
  int log_n = 0;
  while ((size_t{1} << log_n) < n) ++log_n;
  ASSERT_EQ(witness.count(), nv);
  std::vector<uint32_t> witness_words(8 * nv);
  std::memcpy(witness_words.data(), witness.values(), 32 * nv);

  // Rows, grouped by the provers' row builder (groth16/rows.hpp), the
  // coefficients as uploaded (coef·R²).
  std::vector<uint32_t> start[2], signal[2];
  std::vector<DFr> coef[2];
  for (uint32_t m = 0; m < 2; ++m) {
    start[m] = ::zkfleet::groth16::RowStarts(zkey, m);
    signal[m].resize(start[m].back());
    coef[m].resize(start[m].back());
    ::zkfleet::groth16::PlaceByRow(zkey, m, start[m], [&](uint32_t slot, const io::CoeffRecord& rec) {
      signal[m][slot] = rec.signal;
      std::memcpy(static_cast<void*>(&coef[m][slot]), rec.value, 32);
    });
  }
  const prover::DeviceRows<DFr> a_rows{start[0].data(), coef[0].data(), signal[0].data()};
  const prover::DeviceRows<DFr> b_rows{start[1].data(), coef[1].data(), signal[1].data()};

  // 1. A, B, C on the domain.
  std::vector<DFr> a(n), b(n), c(n);
  for (uint32_t row = 0; row < n; ++row) {
    prover::EvaluateRowsStep(row, a_rows, b_rows, witness_words.data(), a.data(), b.data(), c.data());
  }
  size_t nonzero_rows = 0;
  for (size_t i = 0; i < n; ++i) nonzero_rows += !BitCopy<HostFr>(c[i]).is_zero();
  ASSERT_GT(nonzero_rows, n / 4) << "the fixture's A·B is mostly zero: a weak test input";

  // 2. The odd coset of each, through the emulated NTT kernels.
  const HostFr w = HostFr::root_of_unity(log_n);
  const HostFr n_inv = HostFr::from_uint(n).inverse();
  const auto tw = Powers(w, HostFr::one(), n / 2);
  const auto inv_tw = Powers(w.inverse(), HostFr::one(), n / 2);
  const auto coset = Powers(HostFr::root_of_unity(log_n + 1), n_inv, n);
  auto to_odd_coset = [&](std::vector<DFr>& v) {
    std::vector<HostFr> host(n);
    std::memcpy(static_cast<void*>(host.data()), v.data(), n * sizeof(HostFr));
    host = EmulatedTransform<HostFr>(EmulatedTransform<HostFr>(host, log_n, inv_tw, nullptr), log_n, tw, &coset);
    std::memcpy(static_cast<void*>(v.data()), host.data(), n * sizeof(HostFr));
  };
  to_odd_coset(a);
  to_odd_coset(b);
  to_odd_coset(c);

  // 3. The H scalars.
  std::vector<uint32_t> scalars(8 * n, 0xdeadbeef);
  for (uint64_t i = 0; i < n; ++i) prover::HScalarStep(i, a.data(), b.data(), c.data(), scalars.data());

  // Reference: the CPU prover's H computation (cpu_prover.cpp, step 2) on
  // host field elements and cpu::NttDomain.
  std::vector<HostFr> ha(n), hb(n), hc(n);
  for (int m = 0; m < 2; ++m) {
    std::vector<HostFr>& out = m == 0 ? ha : hb;
    for (size_t row = 0; row < n; ++row) {
      HostFr acc = HostFr::zero();
      for (uint32_t t = start[m][row]; t < start[m][row + 1]; ++t) {
        uint64_t coef_limbs[4], raw[4];
        std::memcpy(coef_limbs, &coef[m][t], 32);
        std::memcpy(raw, witness.values() + size_t{signal[m][t]} * 32, 32);
        acc += HostFr::mont_mul_raw(HostFr::from_mont(coef_limbs), raw);
      }
      out[row] = acc;
    }
  }
  for (size_t i = 0; i < n; ++i) hc[i] = ha[i] * hb[i];
  cpu::NttDomain<HostFr> domain(log_n);
  domain.ToOddCoset(ha.data(), Pool());
  domain.ToOddCoset(hb.data(), Pool());
  domain.ToOddCoset(hc.data(), Pool());
  std::vector<uint64_t> want(4 * n);
  for (size_t i = 0; i < n; ++i) (ha[i] * hb[i] - hc[i]).to_canonical(&want[4 * i]);

  size_t mismatches = 0, zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool same = std::memcmp(&scalars[8 * i], &want[4 * i], 32) == 0;
    if (!same && mismatches++ < 3) ADD_FAILURE() << fixture_dir << ": H scalar " << i << " differs from the CPU prover's";
    uint32_t any = 0;
    for (int k = 0; k < 8; ++k) any |= scalars[8 * i + k];
    zeros += any == 0;
  }
  EXPECT_EQ(mismatches, 0u) << "of " << n << " H scalars";
  // a'·b' − c' on the coset is a random-looking value: a zero is a bug, or a
  // 2^-254 event.
  EXPECT_EQ(zeros, 0u) << "H scalars that are zero";

  // The CPU prover's proof, with fixed blinding, against a proof assembled
  // from the emulated H scalars (the other four MSMs from the same key).
  engine::ProveOptions options;
  options.r = std::array<uint8_t, 32>{};
  options.s = std::array<uint8_t, 32>{};
  const uint64_t r_value = 0x243f6a8885a308d3ULL, s_value = 0x13198a2e03707344ULL;
  std::memcpy(options.r->data(), &r_value, 8);
  std::memcpy(options.s->data(), &s_value, 8);
  const auto key = engine::ProvingKey::Load(fixture + "/circuit_final.zkey", CpuOptions(2));
  const engine::Proof cpu_proof = key->Prove(witness, options);

  auto points1 = [](const io::PointArray& arr) {
    std::vector<curve::Affine<G1>> out(arr.count);
    std::memcpy(static_cast<void*>(out.data()), arr.data, arr.count * sizeof(curve::Affine<G1>));
    return out;
  };
  auto point1 = [](const uint8_t* bytes) {
    curve::Affine<G1> p;
    std::memcpy(static_cast<void*>(&p), bytes, sizeof(p));
    return p;
  };
  auto point2 = [](const uint8_t* bytes) {
    curve::Affine<G2> p;
    std::memcpy(static_cast<void*>(&p), bytes, sizeof(p));
    return p;
  };
  ASSERT_EQ(zkey.g1_size(), sizeof(curve::Affine<G1>));
  groth16::Groth16HeaderPoints<C> header;
  header.alpha1 = point1(zkey.alpha1());
  header.beta1 = point1(zkey.beta1());
  header.delta1 = point1(zkey.delta1());
  header.beta2 = point2(zkey.beta2());
  header.delta2 = point2(zkey.delta2());
  const auto a_pts = points1(zkey.a()), b1_pts = points1(zkey.b1()), c_pts = points1(zkey.c()), h_pts = points1(zkey.h());
  std::vector<curve::Affine<G2>> b2_pts(zkey.b2().count);
  std::memcpy(static_cast<void*>(b2_pts.data()), zkey.b2().data, b2_pts.size() * sizeof(curve::Affine<G2>));
  const uint8_t* wv = witness.values();
  const size_t skip = zkey.n_public() + 1;
  groth16::Groth16MsmResults<C> msm;
  msm.a = cpu::Msm<G1>(a_pts.data(), wv, 32, nv, Pool());
  msm.b1 = cpu::Msm<G1>(b1_pts.data(), wv, 32, nv, Pool());
  msm.b2 = cpu::Msm<G2>(b2_pts.data(), wv, 32, nv, Pool());
  msm.c = cpu::Msm<G1>(c_pts.data(), wv + skip * 32, 32, nv - skip, Pool());
  msm.h = cpu::Msm<G1>(h_pts.data(), reinterpret_cast<const uint8_t*>(scalars.data()), 32, n, Pool());
  uint64_t r[4] = {r_value, 0, 0, 0}, s[4] = {s_value, 0, 0, 0};
  groth16::Proof emulated;
  groth16::AssembleProof<C>(header, msm, r, s, emulated);
  EXPECT_EQ(engine::ProofJson(emulated, zkey.curve()), cpu_proof.proof_json) << fixture_dir;
}

TEST(Groth16Steps, HScalarsMatchTheCpuProverBn254) {
  CheckHScalarsAgainstCpuProver<curve::Bn254>("bn128_k12");
}

TEST(Groth16Steps, HScalarsMatchTheCpuProverBls12_381) {
  CheckHScalarsAgainstCpuProver<curve::Bls12_381>("bls12381_k12");
}

}  // namespace
}  // namespace zkfleet::cuda
