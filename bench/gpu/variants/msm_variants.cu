// zkfleet_msm_variants: the large MSMs and NTTs of one build of the engine's
// sources, for comparing builds in one run on the GPU machine (see
// build_variant.sh). It builds in about a minute from any checkout, without
// CMake, and several builds fit one carry.
//
//   zkfleet_msm_variants bn  [reps]   BN254 G1 2^22, 2^24 and G2 2^22, plain and over tables
//   zkfleet_msm_variants bls [reps]   BLS12-381 G1 2^22, 2^24 and G2 2^22, over tables
//   zkfleet_msm_variants ntt [reps]   forward and odd-coset x3 NTTs 2^22, both curves
//
// Prints the median and minimum GPU time of `reps` runs (CUDA events, after
// one warm-up), the phase split, and a fingerprint of the result: every
// build must print the same fingerprint for the same row. The random bases
// and scalars are the benchmark's (random_inputs.cuh).
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
#include "random_inputs.cuh"

namespace zk = zkfleet;
using Clock = std::chrono::steady_clock;

using zkfleet::bench::RandomBases;
using zkfleet::bench::RandomScalars;

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
  const auto values = zkfleet::bench::RandomFieldElements<Fr>(3 * (size_t{1} << log_n), log_n);
  for (int batch : {1, 3}) {  // forward; the prover's odd coset x3
    zk::cuda::DeviceNtt<Fr> ntt(log_n, batch);
    ntt.Upload(values.data());
    const auto kind = batch == 1 ? zk::cuda::NttOp::kForward : zk::cuda::NttOp::kToOddCoset;
    ntt.RunUploaded(kind);
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) t.push_back(ntt.RunUploaded(kind));
    std::sort(t.begin(), t.end());
    std::printf("NTT %s 2^%d %s median %8.3f ms min %8.3f\n", name, log_n, batch == 1 ? "forward" : "coset x3",
                t[t.size() / 2], t[0]);
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
