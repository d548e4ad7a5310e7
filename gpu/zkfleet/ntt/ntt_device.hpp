// NTTs over a scalar field on the GPU (CUDA translation units only; tests
// and benchmarks use cuda_ntt.hpp). A DeviceNttDomain owns the twiddle tables of
// one size, computed on the device once, and enqueues transforms of `batch`
// vectors stored back to back (vector k at data + k·n).
//
// Conventions are ntt/cpu_ntt.hpp's: natural order in and out, forward
// v[i] = sum_j a[j] w^(ij), inverse with 1/n, w = 5^((r-1)/n), the odd coset
// x_i = w_2n·w_n^i.
//
// Thread-safety: immutable after construction; enqueues on different
// streams with different buffers may run concurrently.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "zkfleet/runtime/cuda_device.hpp"

namespace zkfleet::cuda {

template <class HostFr>
class DeviceNttDomain {
 public:
  DeviceNttDomain() = default;
  // Allocates and fills the tables for n = 2^log_n (synchronously).
  DeviceNttDomain(int log_n, const std::string& what);
  // With another primitive n-th root `root` and coset shift `shift`
  // (bellperson's domain: bellman/domain.hpp); also fills the table
  // EnqueueFromCoset needs. `lean`: the coset factors shift^±j/n come from
  // two small tables (2^kLeanLowBits entries and n / that) at one more
  // multiplication per element, instead of two n-entry tables: 2^27 points
  // then hold 4 GB of twiddles instead of 12.9 GB of tables.
  DeviceNttDomain(int log_n, const std::string& what, const HostFr& root, const HostFr& shift, bool lean = false);
  static constexpr int kLeanLowBits = 12;

  int log_size() const { return log_n_; }
  size_t size() const { return size_t{1} << log_n_; }
  size_t resident_bytes() const {
    return twiddles_.bytes() + inv_twiddles_.bytes() + coset_.bytes() + coset_inv_.bytes() + coset_low_.bytes() +
           coset_high_.bytes() + coset_inv_low_.bytes() + coset_inv_high_.bytes();
  }

  // dst = NTT(src) (src is left unchanged; src != dst).
  void EnqueueForward(cudaStream_t stream, const HostFr* src, HostFr* dst, int batch, const std::string& phase) const;
  // dst = iNTT(src) including the 1/n factor (src != dst).
  void EnqueueInverse(cudaStream_t stream, const HostFr* src, HostFr* dst, int batch, const std::string& phase) const;
  // data = evaluations on the odd coset of the polynomial whose evaluations
  // on the domain data holds (iNTT, ·(w_2n^j / n), NTT); tmp is scratch of
  // the same size.
  void EnqueueToOddCoset(cudaStream_t stream, HostFr* data, HostFr* tmp, int batch, const std::string& phase) const;
  // The inverse: data = coefficients of the polynomial whose evaluations on
  // the coset data holds (iNTT, then ·shift^-j / n). Only for a domain built
  // with an explicit shift.
  void EnqueueFromCoset(cudaStream_t stream, HostFr* data, HostFr* tmp, int batch, const std::string& phase) const;

 private:
  // dst = transform of src with twiddles `tw`, first-pass elements scaled by
  // scale[j] when scale != nullptr.
  void EnqueueTransform(cudaStream_t stream, const HostFr* src, HostFr* dst, int batch, const HostFr* tw,
                        const HostFr* scale, const std::string& phase) const;

  int log_n_ = 0;
  HostFr n_inv_{};
  DeviceBuffer twiddles_;      // w^k, k < n/2
  DeviceBuffer inv_twiddles_;  // w^-k, k < n/2
  DeviceBuffer coset_;         // shift^j / n, j < n (shift = w_2n unless given)
  DeviceBuffer coset_inv_;     // shift^-j / n, j < n (only with an explicit shift)
  // Lean: shift^j = low[j mod L]·high[j / L] with the 1/n in low (L = 2^kLeanLowBits).
  bool lean_ = false;
  DeviceBuffer coset_low_, coset_high_, coset_inv_low_, coset_inv_high_;
};

}  // namespace zkfleet::cuda
