// A stand-alone GPU NTT for tests and benchmarks (plain C++ API; the prover
// uses ntt_device.hpp). Same transforms as cpu::NttDomain.
//
//   cuda::DeviceNtt<ff::Bn254Fr> ntt(log_n);
//   ntt.Run(cuda::NttOp::kToOddCoset, values);   // == cpu ToOddCoset
//
// HostFr is ff::Bn254Fr or ff::Bls12_381Fr. Throws zkfleet::Error on CUDA
// failures. Thread-safety: one object, one thread at a time.
#pragma once

#include <memory>

#include "zkfleet/ff/bls12_381.hpp"
#include "zkfleet/ff/bn254.hpp"

namespace zkfleet::cuda {

enum class NttOp { kForward, kInverse, kToOddCoset };

template <class HostFr>
class DeviceNtt {
 public:
  // Tables for 2^log_n points and device room for `batch` vectors.
  explicit DeviceNtt(int log_n, int batch = 1);
  ~DeviceNtt();
  DeviceNtt(const DeviceNtt&) = delete;
  DeviceNtt& operator=(const DeviceNtt&) = delete;

  // values: batch·2^log_n elements (vector k at values + k·n), in place.
  void Run(NttOp op, HostFr* values);

  // For timing: Upload, RunUploaded (returns GPU milliseconds) any number of
  // times, Download.
  void Upload(const HostFr* values);
  float RunUploaded(NttOp op);
  void Download(HostFr* values);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class DeviceNtt<ff::Bn254Fr>;
extern template class DeviceNtt<ff::Bls12_381Fr>;

}  // namespace zkfleet::cuda
