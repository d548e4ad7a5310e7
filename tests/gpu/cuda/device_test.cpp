// The CUDA backend on a real GPU against the CPU path (which is checked
// against snarkjs elsewhere): MSM (G1, G2, both curves) and NTT on random
// inputs from 1 to 2^20 points, whole proofs bit for bit under fixed r and s,
// the allocation counter over 100 proofs, and recovery after CUDA errors.
// Every test is skipped, saying why, when no GPU is present (failed instead
// under ZKFLEET_REQUIRE_GPU=1: testutil/require_gpu.hpp).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_inputs.hpp"
#include "testutil/require_gpu.hpp"
#include "unit/pairing/curve_test_points.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/msm/cpu_msm.hpp"
#include "zkfleet/ntt/cpu_ntt.hpp"
#include "zkfleet/runtime/thread_pool.hpp"
#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/msm/cuda_msm.hpp"
#include "zkfleet/ntt/cuda_ntt.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/engine/witness_file.hpp"
#include "zkfleet/zkey/zkey.hpp"

namespace zkfleet::cuda {
namespace {

#define REQUIRE_GPU() \
  ZKFLEET_SKIP_UNLESS_GPU(DeviceCount() > 0, "no CUDA device (or driver) present: GPU tests need an NVIDIA GPU")

cpu::ThreadPool& Pool() {
  static cpu::ThreadPool pool(0);
  return pool;
}

std::string FixturesDir() {
  const char* env = std::getenv("ZKFLEET_FIXTURES_DIR");
  return env && *env ? env : ZKFLEET_FIXTURES_DIR;
}

// ---- MSM ---------------------------------------------------------------------------

const std::vector<size_t> kMsmSizes = {1, 2, 100, size_t{1} << 10, size_t{1} << 16, size_t{1} << 20};

template <class Cfg, class Fr>
void CheckMsmSizes(uint64_t seed) {
  const size_t max_n = kMsmSizes.back();
  const auto bases = testing::RandomPoints<Cfg, Fr>(max_n, seed, Pool());
  const auto scalars = testing::RandomScalars<Fr>(max_n, seed + 1);
  for (size_t n : kMsmSizes) {
    const auto want = cpu::Msm<Cfg>(bases.data(), scalars.data(), 32, n, Pool());
    DeviceMsm<Cfg> msm(bases.data(), n);
    EXPECT_TRUE(curve::equal(msm.Run(scalars.data(), n), want)) << "n = " << n;
    // Over tables of precomputed copies (msm_steps.hpp, step 0).
    DeviceMsm<Cfg> tabled(bases.data(), n, 0, 16);
    EXPECT_TRUE(curve::equal(tabled.Run(scalars.data(), n), want)) << "n = " << n << ", tables";
  }
  {
    // Tables with infinity and repeated bases, and an MSM shorter than them.
    auto awkward = std::vector<curve::Affine<Cfg>>(bases.begin(), bases.begin() + 3000);
    for (size_t i = 0; i < awkward.size(); i += 9) awkward[i] = curve::Affine<Cfg>::infinity();
    for (size_t i = 4; i < awkward.size(); i += 13) awkward[i] = awkward[1];
    DeviceMsm<Cfg> tabled(awkward.data(), awkward.size(), 0, 16);
    EXPECT_GT(tabled.copies(), 1);
    for (size_t count : {awkward.size(), size_t{1777}}) {
      const auto want = cpu::Msm<Cfg>(awkward.data(), scalars.data(), 32, count, Pool());
      EXPECT_TRUE(curve::equal(tabled.Run(scalars.data(), count), want)) << "awkward bases, count = " << count;
    }
  }
  // Skewed scalar sets at 2^16: all zero, all one, all r-1, one value repeated.
  const size_t n = size_t{1} << 16;
  DeviceMsm<Cfg> msm(bases.data(), n);
  std::vector<uint8_t> skewed(n * 32, 0);
  DeviceMsm<Cfg> tabled(bases.data(), n, 0, 16);
  auto check = [&](const char* what) {
    const auto want = cpu::Msm<Cfg>(bases.data(), skewed.data(), 32, n, Pool());
    EXPECT_TRUE(curve::equal(msm.Run(skewed.data(), n), want)) << what;
    EXPECT_TRUE(curve::equal(tabled.Run(skewed.data(), n), want)) << what << ", tables";
  };
  check("all zero");
  for (size_t i = 0; i < n; ++i) skewed[i * 32] = 1;
  check("all one");
  uint64_t r_minus_1[4];
  for (int i = 0; i < 4; ++i) r_minus_1[i] = Fr::modulus_limb(i);
  r_minus_1[0] -= 1;
  for (size_t i = 0; i < n; ++i) std::memcpy(&skewed[i * 32], r_minus_1, 32);
  check("all r-1");
  for (size_t i = 0; i < n; ++i) std::memcpy(&skewed[i * 32], &scalars[5 * 32], 32);
  check("one repeated value");
}

TEST(CudaMsm, Bn254G1) {
  REQUIRE_GPU();
  CheckMsmSizes<curve::Bn254G1, ff::Bn254Fr>(100);
}
TEST(CudaMsm, Bn254G2) {
  REQUIRE_GPU();
  CheckMsmSizes<curve::Bn254G2, ff::Bn254Fr>(200);
}
TEST(CudaMsm, Bls12_381G1) {
  REQUIRE_GPU();
  CheckMsmSizes<curve::Bls12_381G1, ff::Bls12_381Fr>(300);
}
TEST(CudaMsm, Bls12_381G2) {
  REQUIRE_GPU();
  CheckMsmSizes<curve::Bls12_381G2, ff::Bls12_381Fr>(400);
}

TEST(CudaMsm, ForcedWindowWidths) {
  REQUIRE_GPU();
  const size_t n = 5000;
  const auto bases = testing::RandomPoints<curve::Bn254G1, ff::Bn254Fr>(n, 7, Pool());
  const auto scalars = testing::RandomScalars<ff::Bn254Fr>(n, 8);
  const auto want = cpu::Msm<curve::Bn254G1>(bases.data(), scalars.data(), 32, n, Pool());
  for (int c : {2, 5, 8, 13, 16}) {
    DeviceMsm<curve::Bn254G1> msm(bases.data(), n, c);
    EXPECT_TRUE(curve::equal(msm.Run(scalars.data(), n), want)) << "c = " << c;
  }
}

// ---- NTT ---------------------------------------------------------------------------

template <class Fr>
void CheckNtt(int max_log_n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int log_n = 1; log_n <= max_log_n; ++log_n) {
    const size_t n = size_t{1} << log_n;
    std::vector<Fr> input(n);
    for (auto& x : input) x = testing::RandomElement<Fr>(rng);
    cpu::NttDomain<Fr> cpu_domain(log_n);
    DeviceNtt<Fr> gpu(log_n);
    for (NttOp op : {NttOp::kForward, NttOp::kInverse, NttOp::kToOddCoset}) {
      auto want = input, got = input;
      if (op == NttOp::kForward) cpu_domain.Forward(want.data(), Pool());
      if (op == NttOp::kInverse) cpu_domain.Inverse(want.data(), Pool());
      if (op == NttOp::kToOddCoset) cpu_domain.ToOddCoset(want.data(), Pool());
      gpu.Run(op, got.data());
      size_t mismatches = 0;
      for (size_t i = 0; i < n; ++i) mismatches += !(got[i] == want[i]);
      EXPECT_EQ(mismatches, 0u) << "log_n = " << log_n << " op = " << static_cast<int>(op);
    }
  }
}

TEST(CudaNtt, Bn254AllSizes) {
  REQUIRE_GPU();
  CheckNtt<ff::Bn254Fr>(20, 1);
}
TEST(CudaNtt, Bls12_381AllSizes) {
  REQUIRE_GPU();
  CheckNtt<ff::Bls12_381Fr>(20, 2);
}
TEST(CudaNtt, BatchOfThree) {
  REQUIRE_GPU();
  const int log_n = 12;
  const size_t n = size_t{1} << log_n;
  std::mt19937_64 rng(3);
  std::vector<ff::Bn254Fr> values(3 * n);
  for (auto& x : values) x = testing::RandomElement<ff::Bn254Fr>(rng);
  auto want = values;
  cpu::NttDomain<ff::Bn254Fr> domain(log_n);
  for (int k = 0; k < 3; ++k) domain.ToOddCoset(want.data() + k * n, Pool());
  DeviceNtt<ff::Bn254Fr> gpu(log_n, 3);
  gpu.Run(NttOp::kToOddCoset, values.data());
  for (size_t i = 0; i < 3 * n; ++i) ASSERT_TRUE(values[i] == want[i]) << i;
}

// ---- whole proofs --------------------------------------------------------------------

engine::ProveOptions FixedBlinding(uint8_t seed) {
  engine::ProveOptions o;
  std::array<uint8_t, 32> r{}, s{};
  for (int i = 0; i < 31; ++i) {  // 31 bytes: below either scalar modulus
    r[i] = static_cast<uint8_t>(seed * 31 + i * 7 + 1);
    s[i] = static_cast<uint8_t>(seed * 17 + i * 13 + 5);
  }
  o.r = r;
  o.s = s;
  return o;
}

struct Fixture {
  std::string zkey, wtns;
};
std::vector<Fixture> Fixtures() {
  const std::string dir = FixturesDir();
  return {{dir + "/bn128_k12/circuit_final.zkey", dir + "/bn128_k12/witness.wtns"},
          {dir + "/bls12381_k12/circuit_final.zkey", dir + "/bls12381_k12/witness.wtns"}};
}

std::unique_ptr<engine::ProvingKey> LoadKey(const std::string& zkey, engine::Backend backend, bool overlap = true,
                                            int msm_copies = 1, bool tables_in_background = false) {
  engine::EngineOptions options;
  options.backend = backend;
  options.cuda_overlap_msms = overlap;
  options.cuda_msm_copies = msm_copies;
  options.cuda_msm_tables_in_background = tables_in_background;
  return engine::ProvingKey::Load(zkey, options);
}

TEST(CudaProof, BitExactWithCpuProver) {
  REQUIRE_GPU();
  for (const Fixture& f : Fixtures()) {
    SCOPED_TRACE(f.zkey);
    const auto witness = engine::Witness::FromFile(f.wtns);
    const auto cpu_key = LoadKey(f.zkey, engine::Backend::kCpu);
    const auto gpu_key = LoadKey(f.zkey, engine::Backend::kCuda);
    const auto gpu_key_sequential = LoadKey(f.zkey, engine::Backend::kCuda, /*overlap=*/false);
    const auto gpu_key_tables = LoadKey(f.zkey, engine::Backend::kCuda, /*overlap=*/true, /*msm_copies=*/16);
    // Tables built in the background: proofs right after the load (most
    // likely over the plain points) and after the build are both exact.
    const auto gpu_key_tables_later =
        LoadKey(f.zkey, engine::Backend::kCuda, /*overlap=*/true, /*msm_copies=*/16, /*tables_in_background=*/true);
    EXPECT_EQ(gpu_key_tables_later->Prove(witness, FixedBlinding(1)).proof_json,
              cpu_key->Prove(witness, FixedBlinding(1)).proof_json)
        << "while the tables are built";
    // Built, not merely given time: the proofs "after the tables are built"
    // below run over them (a build that never finishes, or a key that never
    // switches to them, fails here instead of proving over the plain points).
    ASSERT_TRUE(gpu_key_tables_later->AwaitMsmTables()) << "the background key never got its tables";
    EXPECT_FALSE(gpu_key->AwaitMsmTables()) << "a key without copies";
    ASSERT_EQ(gpu_key->backend(), engine::Backend::kCuda);
    EXPECT_EQ(gpu_key->info().msm_copies, 1);
    EXPECT_GT(gpu_key_tables->info().msm_copies, 1);
    EXPECT_EQ(gpu_key->info().n_vars, cpu_key->info().n_vars);
    for (uint8_t seed : {1, 2}) {
      const auto opts = FixedBlinding(seed);
      const engine::Proof want = cpu_key->Prove(witness, opts);
      const engine::Proof got = gpu_key->Prove(witness, opts);
      EXPECT_EQ(got.proof_json, want.proof_json);
      EXPECT_EQ(got.public_json, want.public_json);
      EXPECT_GT(got.timings.msm_s, 0);
      EXPECT_GT(got.timings.total_s, 0);
      EXPECT_EQ(gpu_key_sequential->Prove(witness, opts).proof_json, want.proof_json) << "MSMs one after another";
      EXPECT_EQ(gpu_key_tables->Prove(witness, opts).proof_json, want.proof_json) << "MSMs over tables";
      EXPECT_EQ(gpu_key_tables_later->Prove(witness, opts).proof_json, want.proof_json) << "after the tables are built";
    }
    // Random blinding: different proof, same public signals.
    const engine::Proof random_proof = gpu_key->Prove(witness);
    EXPECT_EQ(random_proof.public_json, cpu_key->Prove(witness).public_json);
  }
}

std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The witness goes to the device straight from Witness::values(): a View
// into page-locked memory (true async DMA) and one into pageable memory
// (staged by the runtime) prove what the CPU proves from the file.
TEST(CudaProof, ViewWitnessFromPinnedAndPageableMemory) {
  REQUIRE_GPU();
  for (const Fixture& f : Fixtures()) {
    SCOPED_TRACE(f.zkey);
    const std::vector<uint8_t> pageable = ReadFileBytes(f.wtns);
    ASSERT_FALSE(pageable.empty());
    PinnedBuffer pinned(pageable.size(), "test witness");
    std::memcpy(pinned.get(), pageable.data(), pageable.size());
    const auto from_pinned = engine::Witness::View({pinned.as<uint8_t>(), pageable.size()}, "pinned");
    const auto from_pageable = engine::Witness::View(pageable, "pageable");
    // WitnessFile (zkprove's reader): page-locked on the CUDA backend when
    // proved more than once.
    const auto file = engine::WitnessFile::Read(f.wtns, engine::Backend::kCuda, /*proofs=*/2);
    EXPECT_TRUE(file.page_locked());
    EXPECT_FALSE(engine::WitnessFile::Read(f.wtns, engine::Backend::kCuda, /*proofs=*/1).page_locked());
    const auto cpu_key = LoadKey(f.zkey, engine::Backend::kCpu);
    const auto gpu_key = LoadKey(f.zkey, engine::Backend::kCuda);
    const auto opts = FixedBlinding(5);
    const engine::Proof want = cpu_key->Prove(engine::Witness::FromFile(f.wtns), opts);
    for (const engine::Witness* w : {&from_pinned, &from_pageable, &file.witness()}) {
      const engine::Proof got = gpu_key->Prove(*w, opts);
      EXPECT_EQ(got.proof_json, want.proof_json) << w->origin();
      EXPECT_TRUE(got.check.verified) << w->origin();
      EXPECT_GT(got.timings.witness_transfer_s, 0) << w->origin();
    }
  }
}

// Several threads proving on one CUDA key: device work is serialised, host
// combination/assembly/verification overlap; every proof is the one the key
// gives alone and verifies.
TEST(CudaProof, ConcurrentProofsOnOneKey) {
  REQUIRE_GPU();
  for (const Fixture& f : Fixtures()) {
    SCOPED_TRACE(f.zkey);
    const auto witness = engine::Witness::FromFile(f.wtns);
    const auto key = LoadKey(f.zkey, engine::Backend::kCuda);
    constexpr int kThreads = 4, kEach = 5;
    std::vector<std::string> want(kThreads);
    for (int t = 0; t < kThreads; ++t) want[t] = key->Prove(witness, FixedBlinding(static_cast<uint8_t>(t + 1))).proof_json;
    std::vector<std::vector<engine::Proof>> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          try {
            got[t].push_back(key->Prove(witness, FixedBlinding(static_cast<uint8_t>(t + 1))));
          } catch (const std::exception& e) {
            ADD_FAILURE() << "thread " << t << ": " << e.what();
            return;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_EQ(got[t].size(), size_t{kEach}) << "thread " << t;
      for (const engine::Proof& p : got[t]) {
        EXPECT_EQ(p.proof_json, want[t]) << "thread " << t;
        EXPECT_TRUE(p.check.verified) << "thread " << t;
        EXPECT_TRUE(p.check.engine_fault.empty()) << p.check.engine_fault;
      }
    }
  }
}

TEST(CudaProof, AutoBackendPicksTheGpu) {
  REQUIRE_GPU();
  EXPECT_TRUE(engine::CudaAvailable());
  EXPECT_EQ(LoadKey(Fixtures()[0].zkey, engine::Backend::kAuto)->backend(), engine::Backend::kCuda);
}

TEST(CudaProof, NoAllocationsAfterTheFirstProof) {
  REQUIRE_GPU();
  const Fixture f = Fixtures()[0];
  const auto witness = engine::Witness::FromFile(f.wtns);
  const auto before_load = AllocationStats();
  const auto key = LoadKey(f.zkey, engine::Backend::kCuda);
  const auto opts = FixedBlinding(3);
  const engine::Proof first = key->Prove(witness, opts);
  const auto after_first = AllocationStats();
  EXPECT_GT(after_first.device_allocs, before_load.device_allocs);  // the counter does count
  EXPECT_GT(after_first.pinned_allocs, before_load.pinned_allocs);
  for (int i = 0; i < 100; ++i) {
    const engine::Proof p = key->Prove(witness, opts);
    ASSERT_EQ(p.proof_json, first.proof_json) << "proof " << i;
  }
  const auto after_100 = AllocationStats();
  EXPECT_EQ(after_100.device_allocs, after_first.device_allocs);
  EXPECT_EQ(after_100.pinned_allocs, after_first.pinned_allocs);
  EXPECT_EQ(after_100.device_bytes_live, after_first.device_bytes_live);
}

TEST(CudaProof, ErrorsLeaveTheKeyUsable) {
  REQUIRE_GPU();
  const Fixture bn = Fixtures()[0], bls = Fixtures()[1];
  const auto witness = engine::Witness::FromFile(bn.wtns);
  const auto key = LoadKey(bn.zkey, engine::Backend::kCuda);
  const auto opts = FixedBlinding(4);
  const engine::Proof good = key->Prove(witness, opts);

  // A witness of another circuit: rejected before any device work.
  try {
    key->Prove(engine::Witness::FromFile(bls.wtns), opts);
    ADD_FAILURE() << "a BLS12-381 witness was accepted by a BN254 key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kMismatch) << e.what();
  }
  EXPECT_EQ(key->Prove(witness, opts).proof_json, good.proof_json);

  // A real out-of-memory failure in the middle of the device work.
  InjectFaultForTesting(InjectedFault::kOutOfMemory);
  try {
    key->Prove(witness, opts);
    ADD_FAILURE() << "injected out-of-memory did not fail the proof";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
  EXPECT_EQ(key->Prove(witness, opts).proof_json, good.proof_json);

  // A failing CUDA call (invalid copy) in the middle of the device work.
  InjectFaultForTesting(InjectedFault::kBadCopy);
  try {
    key->Prove(witness, opts);
    ADD_FAILURE() << "injected bad copy did not fail the proof";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDeviceError) << e.what();
    EXPECT_NE(std::string(e.what()).find("witness transfer"), std::string::npos) << e.what();
  }
  EXPECT_EQ(key->Prove(witness, opts).proof_json, good.proof_json);

  // Loading on a device that does not exist.
  engine::EngineOptions bad;
  bad.backend = engine::Backend::kCuda;
  bad.cuda_device = 1000;
  try {
    engine::ProvingKey::Load(bn.zkey, bad);
    ADD_FAILURE() << "device 1000 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDeviceError) << e.what();
  }
  EXPECT_EQ(key->Prove(witness, opts).proof_json, good.proof_json);
}

// ---- the key's point checks on the device -------------------------------------------

// The error loading `path` with `backend` gives, or "" when it loads.
std::string LoadError(const std::string& path, engine::Backend backend) {
  try {
    LoadKey(path, backend);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A CUDA key checks sections A, B1, B2, C and H on the device
// (cuda_point_check.cuh): it must refuse exactly what the CPU check refuses, with
// the same message: a point off the curve in each section, a coordinate not
// below q, points outside the prime-order subgroup (BN254 G2, BLS12-381 G1
// and G2).
TEST(CudaKeyCheck, RefusesWhatTheCpuCheckRefusesWithTheSameMessage) {
  REQUIRE_GPU();
  std::mt19937_64 rng(21);
  const std::string path = ::testing::TempDir() + "/zkfleet_cuda_key_check.zkey";
  for (const Fixture& f : Fixtures()) {
    std::ifstream in(f.zkey, std::ios::binary);
    const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const io::ZkeyFile view =
        io::ZkeyFile::Parse({reinterpret_cast<const uint8_t*>(good.data()), good.size()}, f.zkey);
    const bool bn254 = view.curve() == engine::Curve::kBn254;
    const auto offset = [&](const uint8_t* p) { return static_cast<size_t>(p - reinterpret_cast<const uint8_t*>(good.data())); };
    struct Case {
      std::string label;
      size_t at;
      std::string bytes;  // written at `at`; empty: flip the lowest bit there
    };
    std::vector<Case> cases;
    const struct {
      const char* name;
      io::PointArray points;
      size_t size;
    } sections[] = {{"A", view.a(), view.g1_size()}, {"B1", view.b1(), view.g1_size()},
                    {"B2", view.b2(), view.g2_size()}, {"C", view.c(), view.g1_size()},
                    {"H", view.h(), view.g1_size()}};
    for (const auto& s : sections) {  // y's lowest bit of the last point: off the curve
      cases.push_back({std::string("off curve in ") + s.name, offset(s.points.data) + (s.points.count - 1) * s.size + s.size / 2, ""});
    }
    cases.push_back({"x of A[2] = q", offset(view.a().data) + 2 * view.g1_size(),
                     std::string(reinterpret_cast<const char*>(view.q()), view.n8q())});
    auto point_bytes = [](const auto& p) { return std::string(reinterpret_cast<const char*>(&p), sizeof(p)); };
    if (bn254) {
      cases.push_back({"B2[7] outside the subgroup", offset(view.b2().data) + 7 * view.g2_size(),
                       point_bytes(zkfleet::testing::NonSubgroupPoint<curve::Bn254G2>(rng))});
    } else {
      cases.push_back({"H[100] outside the subgroup", offset(view.h().data) + 100 * view.g1_size(),
                       point_bytes(zkfleet::testing::NonSubgroupPoint<curve::Bls12_381G1>(rng))});
      cases.push_back({"B2[7] outside the subgroup", offset(view.b2().data) + 7 * view.g2_size(),
                       point_bytes(zkfleet::testing::NonSubgroupPoint<curve::Bls12_381G2>(rng))});
    }
    for (const Case& c : cases) {
      SCOPED_TRACE(f.zkey + ": " + c.label);
      std::string bad = good;
      if (c.bytes.empty()) {
        bad[c.at] ^= 1;
      } else {
        bad.replace(c.at, c.bytes.size(), c.bytes);
      }
      std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
      const std::string cpu_error = LoadError(path, engine::Backend::kCpu);
      EXPECT_NE(cpu_error, "");
      EXPECT_EQ(LoadError(path, engine::Backend::kCuda), cpu_error);
    }
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace zkfleet::cuda
