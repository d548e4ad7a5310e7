// zkfleet_msm_variants: the large MSMs and NTTs of one build of the engine's
// sources, for comparing builds in one run on the GPU machine (see
// build_variant.sh): the full benchmark binary is ~25 MB, this one ~6 MB, so
// several builds fit one carry.
//
//   zkfleet_msm_variants bn  [reps]   BN254 G1 2^22, 2^24 and G2 2^22, plain and over tables
//   zkfleet_msm_variants bls [reps]   BLS12-381 G1 2^22, 2^24 and G2 2^22, over tables
//   zkfleet_msm_variants ntt [reps]   forward and odd-coset x3 NTTs 2^22, both curves
//
// Prints the median and minimum GPU time of `reps` runs (CUDA events, after
// one warm-up), the phase split, and a fingerprint of the result: every
// build must print the same fingerprint for the same row. The random bases
// and scalars are the benchmark's (bench_gpu.cu).
#include "zkfleet/runtime/hd_host_inline.hpp"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"
#include "zkfleet/msm/cuda_msm.hpp"
#include "zkfleet/ntt/cuda_ntt.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_device.hpp"

namespace zk = zkfleet;
using Clock = std::chrono::steady_clock;

template <class Fr>
std::vector<uint8_t> RandomScalars(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n * 32);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    uint64_t s[4];
    do {
      for (auto& x : s) x = rng();
      s[3] &= (uint64_t{1} << (Fr::kModulusBits - 192)) - 1;
    } while (!Fr::is_below_modulus(s));
    std::memcpy(&out[i * 32], s, 32);
  }
  return out;
}

// Bases: k random multiples a_i·G and b_j·G (k = sqrt n), base = A[i%k] + B[i/k], affine.
template <class HostCfg>
__global__ void MakeTable(zk::curve::Affine<zk::cuda::DeviceCurve<HostCfg>> g, const uint64_t* mult, uint32_t count,
                          zk::curve::Affine<zk::cuda::DeviceCurve<HostCfg>>* out) {
  using Cfg = zk::cuda::DeviceCurve<HostCfg>;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  out[i] = zk::curve::to_affine(zk::curve::scalar_mul(zk::curve::Jacobian<Cfg>::from_affine(g), mult + 4 * i, 4));
}
template <class HostCfg>
__global__ void MakeBases(const zk::curve::Affine<zk::cuda::DeviceCurve<HostCfg>>* table, uint32_t k, uint64_t n,
                          zk::curve::Affine<zk::cuda::DeviceCurve<HostCfg>>* out) {
  using Cfg = zk::cuda::DeviceCurve<HostCfg>;
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  out[i] = zk::curve::to_affine(zk::curve::add_mixed(zk::curve::Jacobian<Cfg>::from_affine(table[i % k]), table[k + i / k]));
}

template <class HostCfg, class Fr>
std::vector<zk::curve::Affine<HostCfg>> RandomBases(size_t n, uint64_t seed) {
  using DA = zk::curve::Affine<zk::cuda::DeviceCurve<HostCfg>>;
  uint32_t k = 1;
  while (uint64_t{k} * k < n) k *= 2;
  const auto mb = RandomScalars<Fr>(2 * k, seed);
  zk::cuda::DeviceBuffer mult(mb.size(), "b"), table(2 * k * sizeof(DA), "b"), bases(n * sizeof(DA), "b");
  cudaMemcpy(mult.get(), mb.data(), mb.size(), cudaMemcpyHostToDevice);
  MakeTable<HostCfg><<<(2 * k + 63) / 64, 64>>>(zk::cuda::BitCopy<DA>(HostCfg::generator()), mult.as<uint64_t>(), 2 * k, table.as<DA>());
  MakeBases<HostCfg><<<static_cast<unsigned>((n + 127) / 128), 128>>>(table.as<DA>(), k, n, bases.as<DA>());
  std::vector<zk::curve::Affine<HostCfg>> out(n);
  ZK_CUDA_CHECK(cudaMemcpy(out.data(), bases.get(), n * sizeof(DA), cudaMemcpyDeviceToHost), "bases");
  return out;
}

template <class HostCfg, class Fr>
void Run(const char* name, int log_n, int reps, int tables) {
  const size_t n = size_t{1} << log_n;
  const auto bases = RandomBases<HostCfg, Fr>(n, 1000 + log_n);
  const auto scalars = RandomScalars<Fr>(n, 2000 + log_n);
  zk::cuda::DeviceMsm<HostCfg> msm(bases.data(), n, 0, tables);
  msm.UploadScalars(scalars.data(), n);
  const auto r = msm.RunUploaded(n);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    msm.RunUploaded(n, &ms);
    t.push_back(ms);
  }
  zk::cuda::MsmPhaseMs ph;
  float dev = 0;
  msm.RunUploaded(n, &dev, &ph);
  std::sort(t.begin(), t.end());
  const auto a = zk::curve::to_affine(r);
  uint64_t fp = 0;
  const auto* w = reinterpret_cast<const uint64_t*>(&a);
  for (size_t i = 0; i < sizeof(a) / 8; ++i) fp = fp * 1000003 ^ w[i];
  std::printf("%-3s 2^%d %-6s median %8.2f ms  min %8.2f  (accumulate %.2f spills %.2f slices %.2f sums %.2f)  fp %016llx\n",
              name, log_n, tables > 1 ? "tables" : "plain", t[t.size() / 2], t[0], ph.accumulate, ph.spills, ph.slices,
              ph.window_sums, static_cast<unsigned long long>(fp));
  std::fflush(stdout);
}

template <class Fr>
void RunNtt(const char* name, int log_n, int reps) {
  const size_t n = size_t{1} << log_n;
  std::mt19937_64 rng(log_n);
  std::vector<Fr> values(3 * n);
  for (auto& x : values) {
    uint64_t l[Fr::kLimbs];
    do {
      for (auto& w : l) w = rng();
      l[Fr::kLimbs - 1] &= (uint64_t{1} << (Fr::kModulusBits - 64 * (Fr::kLimbs - 1))) - 1;
    } while (!Fr::is_below_modulus(l));
    x = Fr::from_mont(l);
  }
  zk::cuda::DeviceNtt<Fr> single(log_n, 1), batch(log_n, 3);
  single.Upload(values.data());
  batch.Upload(values.data());
  for (int op = 0; op < 2; ++op) {
    auto& ntt = op == 0 ? single : batch;
    const auto kind = op == 0 ? zk::cuda::NttOp::kForward : zk::cuda::NttOp::kToOddCoset;
    ntt.RunUploaded(kind);
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) t.push_back(ntt.RunUploaded(kind));
    std::sort(t.begin(), t.end());
    std::printf("NTT %s 2^%d %s median %8.3f ms min %8.3f\n", name, log_n, op == 0 ? "forward" : "coset x3", t[t.size() / 2], t[0]);
  }
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "bn";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  if (mode == "bn") {
    for (int log_n : {22, 24}) {
      Run<zk::curve::Bn254G1, zk::ff::Bn254Fr>("G1", log_n, reps, 1);
      Run<zk::curve::Bn254G1, zk::ff::Bn254Fr>("G1", log_n, reps, 16);
    }
    Run<zk::curve::Bn254G2, zk::ff::Bn254Fr>("G2", 22, reps, 1);
    Run<zk::curve::Bn254G2, zk::ff::Bn254Fr>("G2", 22, reps, 16);
  } else if (mode == "bls") {
    for (int log_n : {22, 24}) Run<zk::curve::Bls12_381G1, zk::ff::Bls12_381Fr>("bG1", log_n, reps, 16);
    Run<zk::curve::Bls12_381G2, zk::ff::Bls12_381Fr>("bG2", 22, reps, 16);
  } else if (mode == "ntt") {
    RunNtt<zk::ff::Bn254Fr>("bn254", 22, reps);
    RunNtt<zk::ff::Bls12_381Fr>("bls", 22, reps);
  }
  return 0;
}
