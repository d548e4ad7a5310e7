// Random inputs for the GPU benchmarks (zkfleet_bench_gpu and
// bench/gpu/variants): scalars below r, and MSM bases made on the GPU: two
// tables of k = 2^ceil(log2(n)/2) random multiples of the generator
// (scalar_mul), then base[i] = Ta[i mod k] + Tb[i div k], in affine form: n
// distinct points (with overwhelming probability) at the cost of 2k scalar
// multiplications. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/runtime/cuda_device.hpp"

namespace zkfleet::bench {

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

// count field elements below the modulus, in Montgomery form.
template <class Fr>
std::vector<Fr> RandomFieldElements(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Fr> out(count);
  for (auto& x : out) {
    uint64_t l[Fr::kLimbs];
    do {
      for (auto& w : l) w = rng();
      l[Fr::kLimbs - 1] &= (uint64_t{1} << (Fr::kModulusBits - 64 * (Fr::kLimbs - 1))) - 1;
    } while (!Fr::is_below_modulus(l));
    x = Fr::from_mont(l);
  }
  return out;
}

// The generator comes from the host: it is computed by the host field code.
template <class HostCfg>
__global__ void MakeTable(zkfleet::curve::Affine<zkfleet::cuda::DeviceCurve<HostCfg>> generator, const uint64_t* multipliers,
                          uint32_t count, zkfleet::curve::Affine<zkfleet::cuda::DeviceCurve<HostCfg>>* out) {
  using Cfg = zkfleet::cuda::DeviceCurve<HostCfg>;
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const auto g = zkfleet::curve::Jacobian<Cfg>::from_affine(generator);
  out[i] = zkfleet::curve::to_affine(zkfleet::curve::scalar_mul(g, multipliers + 4 * i, 4));
}

template <class HostCfg>
__global__ void MakeBases(const zkfleet::curve::Affine<zkfleet::cuda::DeviceCurve<HostCfg>>* table, uint32_t k, uint64_t n,
                          zkfleet::curve::Affine<zkfleet::cuda::DeviceCurve<HostCfg>>* out) {
  using Cfg = zkfleet::cuda::DeviceCurve<HostCfg>;
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i >= n) return;
  const auto sum = zkfleet::curve::add_mixed(zkfleet::curve::Jacobian<Cfg>::from_affine(table[i % k]), table[k + i / k]);
  out[i] = zkfleet::curve::to_affine(sum);
}

template <class HostCfg, class Fr>
std::vector<zkfleet::curve::Affine<HostCfg>> RandomBases(size_t n, uint64_t seed) {
  using DA = zkfleet::curve::Affine<zkfleet::cuda::DeviceCurve<HostCfg>>;
  uint32_t k = 1;
  while (uint64_t{k} * k < n) k *= 2;
  const auto mult_bytes = RandomScalars<Fr>(2 * k, seed);
  zkfleet::cuda::DeviceBuffer mult(mult_bytes.size(), "bench"), table(2 * k * sizeof(DA), "bench"),
      bases(n * sizeof(DA), "bench");
  zkfleet::cuda::CopyToDevice(mult.get(), mult_bytes.data(), mult_bytes.size(), "bench");
  MakeTable<HostCfg><<<(2 * k + 63) / 64, 64>>>(zkfleet::cuda::BitCopy<DA>(HostCfg::generator()), mult.as<uint64_t>(),
                                                2 * k, table.as<DA>());
  ZK_CUDA_CHECK_LAUNCH("bench bases");
  MakeBases<HostCfg><<<static_cast<unsigned>((n + 127) / 128), 128>>>(table.as<DA>(), k, n, bases.as<DA>());
  ZK_CUDA_CHECK_LAUNCH("bench bases");
  std::vector<zkfleet::curve::Affine<HostCfg>> out(n);
  zkfleet::cuda::CopyToHost(out.data(), bases.get(), n * sizeof(DA), "bench");
  return out;
}

}  // namespace zkfleet::bench
