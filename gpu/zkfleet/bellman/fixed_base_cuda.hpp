// Fixed-base multiplication on a CUDA device: k_i·G for many scalars and one
// base G of BLS12-381 (G1 or G2), the points in the engine's affine type
// (Montgomery, (0, 0) for a zero scalar), equal to the CPU's
// (devtools::MulGeneratorG1/G2) byte for byte. The per-thread steps and the
// method are in fixed_base_steps.hpp; this is their host driver
// (fixed_base_cuda.cu), behind devtools::ParametersFromScalarsCuda
// (devtools/zkfleet/devtools/seeded_parameters.hpp).
//
// Pipeline: the scalars are handled in chunks of chunk_points, two chunks in
// flight on two streams; per chunk the host fills a pinned buffer with its
// scalars (in parallel on the pool), which goes up; the multiplication
// kernel writes XYZZ points, the conversion kernel affine ones (one inversion
// per 64 points), which come down to pinned memory and are copied (in
// parallel) into the caller's array while the next chunks compute.
//
// Memory, whatever the count: device, the table (783 KB G1, 1.5 MB G2) and
// per slot (two) chunk × (32 B scalar + XYZZ + affine): at the defaults
// (2^22 G1 points a chunk, 2^21 G2) 2.5 GiB for G1, 2.4 GiB for G2; pinned
// host, per slot chunk × (32 B + affine): 1.0 GiB G1, 0.9 GiB G2.
//
// This header compiles without the CUDA toolkit; only CUDA builds
// (ZKFLEET_HAVE_CUDA) define the class.
//
// Ownership: the object owns its device and pinned memory and two streams.
// Thread-safety: one Mul at a time per object.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/point.hpp"
#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/runtime/thread_pool.hpp"

namespace zkfleet::bellman {

// Writes the Montgomery scalars of points [lo, hi) to out[0, hi - lo). Called
// from the pool's threads on disjoint ranges: must be thread-safe.
using ScalarFill = std::function<void(size_t lo, size_t hi, ff::Bls12_381Fr* out)>;

template <class Cfg>  // curve::Bls12_381G1 or curve::Bls12_381G2
class CudaFixedBase {
 public:
  using Affine = curve::Affine<Cfg>;
  // Default points per chunk.
  static constexpr size_t kDefaultChunk = sizeof(typename Cfg::Field) > 48 ? size_t{1} << 21 : size_t{1} << 22;

  // Builds base's table (host) and allocates everything on `device`
  // (chunk_points 0: kDefaultChunk). Throws kDeviceError / kResourceExhausted.
  CudaFixedBase(const Affine& base, int device, size_t chunk_points = 0);
  ~CudaFixedBase();
  CudaFixedBase(const CudaFixedBase&) = delete;
  CudaFixedBase& operator=(const CudaFixedBase&) = delete;

  // out[i] = k_i·base for i < count, k_i from fill.
  void Mul(size_t count, const ScalarFill& fill, Affine* out, cpu::ThreadPool& pool);
  // out[i] = scalars[i]·base (Montgomery scalars); out holds scalars.size().
  void Mul(const std::vector<ff::Bls12_381Fr>& scalars, Affine* out, cpu::ThreadPool& pool);

  size_t chunk_points() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkfleet::bellman
