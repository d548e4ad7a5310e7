// The CUDA backend's arithmetic and kernel steps, run on the CPU: Fp32 (the
// GPU field type) against ff::Fp, and the MSM and NTT pipelines driven step
// by step exactly as the kernels drive them, against cpu::Msm and
// cpu::NttDomain. Needs no GPU, so it runs in every CI build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "test_inputs.hpp"
#include "zkfleet/cpu/msm.hpp"
#include "zkfleet/cpu/ntt.hpp"
#include "zkfleet/cpu/thread_pool.hpp"
#include "zkfleet/cuda/device_curve.hpp"
#include "zkfleet/cuda/field32.hpp"
#include "zkfleet/cuda/groth16_steps.hpp"
#include "zkfleet/cuda/msm_steps.hpp"
#include "zkfleet/cuda/ntt_steps.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"

namespace zkfleet::cuda {
namespace {

using testing::RandomElement;

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
    for (int k = 0; k < HostF::kLimbs; ++k) raw[k] = rng();
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

TEST(Fp32, Fp2MatchesHost) {
  using H = ff::Fp2<ff::Bls12_381Fq>;
  using D = DeviceFieldOf<H>::type;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 50; ++i) {
    H a{RandomFieldElement<ff::Bls12_381Fq>(rng), RandomFieldElement<ff::Bls12_381Fq>(rng)};
    H b{RandomFieldElement<ff::Bls12_381Fq>(rng), RandomFieldElement<ff::Bls12_381Fq>(rng)};
    ASSERT_TRUE(BitCopy<H>(BitCopy<D>(a) * BitCopy<D>(b)) == a * b);
    ASSERT_TRUE(BitCopy<H>(BitCopy<D>(a).sqr()) == a.sqr());
  }
}

// ---- MSM pipeline, emulated ------------------------------------------------------

// Runs the kernels' steps in the order msm_device.cuh launches them.
template <class HostCfg>
curve::Jacobian<HostCfg> EmulatedMsm(const std::vector<curve::Affine<HostCfg>>& bases, const std::vector<uint8_t>& scalars,
                                     int force_c, msm::Plan* plan_out = nullptr) {
  using Cfg = DeviceCurve<HostCfg>;
  using DX = curve::Xyzz<Cfg>;
  using DA = curve::Affine<Cfg>;
  const size_t n = bases.size();
  const msm::Plan p = msm::MakePlan(n, force_c);
  if (plan_out) *plan_out = p;
  std::vector<DA> dbases(n);
  std::memcpy(static_cast<void*>(dbases.data()), bases.data(), n * sizeof(DA));
  std::vector<uint32_t> words(8 * n);
  std::memcpy(words.data(), scalars.data(), n * 32);

  std::vector<uint32_t> keys(p.items), values(p.items);
  for (uint64_t i = 0; i < n; ++i) msm::DigitsStep(i, p, words.data(), keys.data(), values.data());
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
  std::vector<DX> slices(static_cast<size_t>(p.windows) * p.segments);
  for (uint64_t t = 0; t < slices.size(); ++t) msm::BucketSliceStep(t, p, buckets.data(), slices.data());
  std::vector<DX> partial(static_cast<size_t>(p.windows) * msm::kReduceThreads);
  std::vector<curve::Xyzz<HostCfg>> sums(p.windows);
  for (int w = 0; w < p.windows; ++w) {
    for (uint32_t tid = 0; tid < msm::kReduceThreads; ++tid) msm::WindowFoldStep(w, tid, p, slices.data(), partial.data());
    for (uint32_t half = msm::kReduceThreads / 2; half >= 1; half /= 2) {
      for (uint32_t tid = 0; tid < msm::kReduceThreads; ++tid) msm::WindowTreeStep(w, tid, half, partial.data());
    }
    sums[w] = BitCopy<curve::Xyzz<HostCfg>>(partial[static_cast<size_t>(w) * msm::kReduceThreads]);
  }
  return msm::CombineWindows(sums.data(), p);
}

template <class HostCfg, class Fr>
void CheckEmulatedMsm(size_t n, int force_c, uint64_t seed, const std::vector<uint8_t>* scalars_override = nullptr) {
  const auto bases = testing::RandomPoints<HostCfg, Fr>(n, seed, Pool());
  const auto scalars = scalars_override ? *scalars_override : testing::RandomScalars<Fr>(n, seed + 1);
  msm::Plan plan;
  const auto got = EmulatedMsm<HostCfg>(bases, scalars, force_c, &plan);
  const auto want = cpu::Msm<HostCfg>(bases.data(), scalars.data(), 32, n, Pool());
  EXPECT_TRUE(curve::equal(got, want)) << "n=" << n << " c=" << plan.c << " levels=" << plan.later_levels;
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

TEST(MsmSteps, PlanShapes) {
  for (uint64_t n : {uint64_t{1}, uint64_t{100}, uint64_t{1} << 16, uint64_t{1} << 20, uint64_t{1} << 22}) {
    const msm::Plan p = msm::MakePlan(n);
    EXPECT_GE(p.windows * p.c, 256);
    EXPECT_GT(uint64_t{1} << p.key_bits, p.sentinel);
    EXPECT_EQ(p.buckets % p.segments, 0u);
    // The last spill level runs on one thread.
    EXPECT_EQ(p.later_levels == 0 ? p.threads0 : msm::LevelThreads(p, p.later_levels), 1u);
  }
  EXPECT_EQ(msm::MakePlan(uint64_t{1} << 22).c, 16);
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
  CheckEmulatedNtt<ff::Bn254Fr>(21);  // three passes of 7 stages
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

TEST(Groth16Steps, RowsAndHScalars) {
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
  groth16::DeviceRows<D> a_rows{a_start.data(), a_coef.data(), a_sig.data()};
  groth16::DeviceRows<D> b_rows{b_start.data(), b_coef.data(), b_sig.data()};
  std::vector<D> a(2), b(2), c(2);
  for (uint32_t row = 0; row < 2; ++row) groth16::EvaluateRowsStep(row, a_rows, b_rows, witness_words.data(), a.data(), b.data(), c.data());
  const H a0 = H::from_uint(2) * w[0] + H::from_uint(3) * w[2];
  EXPECT_TRUE(BitCopy<H>(a[0]) == a0);
  EXPECT_TRUE(BitCopy<H>(a[1]) == H::zero());
  EXPECT_TRUE(BitCopy<H>(b[0]) == w[1]);
  EXPECT_TRUE(BitCopy<H>(b[1]) == H::from_uint(5) * w[2]);
  EXPECT_TRUE(BitCopy<H>(c[0]) == a0 * w[1]);
  std::vector<uint32_t> scalars(16);
  for (uint64_t i = 0; i < 2; ++i) groth16::HScalarStep(i, a.data(), b.data(), c.data(), scalars.data());
  uint64_t zero[4] = {};
  EXPECT_EQ(0, std::memcmp(scalars.data(), zero, 32));  // a·b - c = 0 where c = a·b
}

}  // namespace
}  // namespace zkfleet::cuda
