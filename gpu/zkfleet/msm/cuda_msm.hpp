// A stand-alone GPU multi-scalar multiplication for tests and benchmarks
// (plain C++ API; the prover uses msm_device.hpp directly):
//
//   cuda::DeviceMsm<curve::Bn254G1> msm(bases, n);   // uploads the bases once
//   auto p = msm.Run(scalars, n);                     // == cpu::Msm(...)
//
// HostCfg is one of curve::Bn254G1, Bn254G2, Bls12_381G1, Bls12_381G2.
// Scalars are 32-byte canonical little-endian integers below the curve's
// scalar field modulus, like the CPU Msm's. Throws zkfleet::Error on CUDA
// failures.
//
// Thread-safety: one DeviceMsm must not be used by two threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::cuda {

// GPU time of an MSM's phases (msm_steps.hpp), in milliseconds.
struct MsmPhaseMs {
  float sort = 0;         // digits and radix sort
  float accumulate = 0;   // level-0 bucket accumulation
  float spills = 0;       // the spill levels
  float slices = 0;       // bucket reduction into slices
  float window_sums = 0;  // per-window tree
};

template <class HostCfg>
class DeviceMsm {
 public:
  // Uploads bases[0..n) and allocates scratch for MSMs of up to n points.
  // window_bits = 0 picks the width automatically. max_copies > 1 builds
  // tables of up to that many copies of the bases (msm_steps.hpp, step 0),
  // once, here: more device memory, faster MSMs.
  DeviceMsm(const curve::Affine<HostCfg>* bases, size_t n, int window_bits = 0, int max_copies = 1);
  ~DeviceMsm();
  DeviceMsm(const DeviceMsm&) = delete;
  DeviceMsm& operator=(const DeviceMsm&) = delete;

  // sum_{i < count} scalars[i]·bases[i], count <= n; uploads the scalars.
  curve::Jacobian<HostCfg> Run(const uint8_t* scalars, size_t count);

  // For timing: UploadScalars once, then RunUploaded as often as needed;
  // *device_ms (if not null) receives the GPU time of the MSM (CUDA events),
  // excluding the scalar upload and the host's window combination, and
  // *phases (if not null) its split by phase.
  void UploadScalars(const uint8_t* scalars, size_t count);
  curve::Jacobian<HostCfg> RunUploaded(size_t count, float* device_ms = nullptr, MsmPhaseMs* phases = nullptr);

  size_t device_bytes() const;
  int copies() const;          // table copies of the bases (1: none)
  float tables_ms() const;     // GPU time the tables took to build (0: none)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class DeviceMsm<curve::Bn254G1>;
extern template class DeviceMsm<curve::Bn254G2>;
extern template class DeviceMsm<curve::Bls12_381G1>;
extern template class DeviceMsm<curve::Bls12_381G2>;

}  // namespace zkfleet::cuda
