// The .zkey point checks of groth16/key_validation.hpp on the device, for the
// big sections of a CUDA key (A, B1, B2, C, H), run on the points the key has
// already uploaded: every coordinate (as stored) below q, on the curve, in the
// prime-order subgroup, infinity allowed. The same endomorphism tests as
// curve/subgroup.hpp, with their constants computed there, on the host, and
// passed in. A 2^22 key's 16 M G1 and 4 M G2 points take seconds on 16 CPU
// cores and milliseconds here.
//
// FirstBadPoint returns only an index: the caller has the CPU check describe
// that point (groth16::CheckZkeyPoint), so messages match the CPU path's.
//
// Thread-safety: stateless; one call's stream work is its own.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "zkfleet/runtime/cuda_device.hpp"
#include "zkfleet/runtime/cuda_stream.hpp"
#include "zkfleet/runtime/cuda_check.hpp"
#include "zkfleet/curve/device_curve.hpp"
#include "zkfleet/curve/subgroup.hpp"

namespace zkfleet::cuda {
namespace point_check {

template <class P>
ZK_HD bool BelowModulus(const Fp32<P>& x) {
  for (int i = Fp32<P>::kWords - 1; i >= 0; --i) {
    if (x.v[i] != Fp32<P>::mod(i)) return x.v[i] < Fp32<P>::mod(i);
  }
  return false;  // equal to q
}
template <class F>
ZK_HD bool BelowModulus(const ff::Fp2<F>& x) {
  return BelowModulus(x.c0) && BelowModulus(x.c1);
}

// The subgroup test of group HostCfg on device points, with its constants.
template <class HostCfg>
struct SubgroupTest {
  using Cfg = DeviceCurve<HostCfg>;
  using F = typename Cfg::Field;
  using J = curve::Jacobian<Cfg>;
  F c1{}, c2{};  // psi's coefficients (G2), or beta in c1 (BLS12-381 G1)

  static SubgroupTest Make() {
    namespace sd = curve::subgroup_detail;
    SubgroupTest t;
    if constexpr (std::is_same_v<HostCfg, curve::Bn254G2>) {
      t.c1 = BitCopy<F>(sd::Bn254Psi::Get().c1);
      t.c2 = BitCopy<F>(sd::Bn254Psi::Get().c2);
    } else if constexpr (std::is_same_v<HostCfg, curve::Bls12_381G2>) {
      t.c1 = BitCopy<F>(sd::Bls12_381Psi::Get().c1);
      t.c2 = BitCopy<F>(sd::Bls12_381Psi::Get().c2);
    } else if constexpr (std::is_same_v<HostCfg, curve::Bls12_381G1>) {
      t.c1 = BitCopy<F>(sd::Bls12_381Beta());
    }
    return t;
  }

  ZK_HD J Psi(const J& p) const { return J{p.x.conjugate() * c1, p.y.conjugate() * c2, p.z.conjugate()}; }
  ZK_HD static J MulU64(const J& p, uint64_t k) { return curve::scalar_mul(p, &k, 1); }

  // p on the curve, not infinity.
  ZK_HD bool operator()(const curve::Affine<Cfg>& p) const {
    namespace sd = curve::subgroup_detail;
    const J j = J::from_affine(p);
    if constexpr (std::is_same_v<HostCfg, curve::Bn254G1>) {
      return true;  // cofactor 1
    } else if constexpr (std::is_same_v<HostCfg, curve::Bls12_381G1>) {
      const J phi{j.x * c1, j.y, j.z};
      return curve::equal(phi, curve::neg(MulU64(MulU64(j, sd::kBls12_381X), sd::kBls12_381X)));
    } else if constexpr (std::is_same_v<HostCfg, curve::Bls12_381G2>) {
      return curve::equal(Psi(j), curve::neg(MulU64(j, sd::kBls12_381X)));
    } else {
      static_assert(std::is_same_v<HostCfg, curve::Bn254G2>);
      const J xq = MulU64(j, sd::kBn254X);
      const J psi_xq = Psi(xq);
      const J lhs = curve::add(curve::add(curve::add(xq, j), psi_xq), Psi(psi_xq));
      return curve::equal(lhs, Psi(Psi(Psi(curve::dbl(xq)))));
    }
  }
};

template <class HostCfg>
__global__ void FindBadPoints(const curve::Affine<DeviceCurve<HostCfg>>* points, uint64_t count,
                              SubgroupTest<HostCfg> in_subgroup, unsigned long long* first_bad) {
  const uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x;
  if (i >= count) return;
  const auto p = points[i];
  bool ok = BelowModulus(p.x) && BelowModulus(p.y);
  if (ok && !p.is_infinity()) ok = curve::is_on_curve(p) && in_subgroup(p);
  if (!ok) atomicMin(first_bad, static_cast<unsigned long long>(i));
}

}  // namespace point_check

// The lowest index of a bad point among `count` points (host point layout) at
// `device_points`, or `count` when all are good. Throws zkfleet::Error on
// CUDA failures, naming `what`.
template <class HostCfg>
uint64_t FirstBadPoint(const void* device_points, uint64_t count, cudaStream_t stream, const std::string& what) {
  if (count == 0) return 0;
  DeviceBuffer first(sizeof(unsigned long long), what + ": point check");
  const unsigned long long none = count;
  CopyToDeviceAsync(first.get(), &none, sizeof(none), stream, what);
  constexpr int kThreads = 128;
  point_check::FindBadPoints<HostCfg><<<static_cast<unsigned>((count + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      static_cast<const curve::Affine<DeviceCurve<HostCfg>>*>(device_points), count,
      point_check::SubgroupTest<HostCfg>::Make(), first.template as<unsigned long long>());
  ZK_CUDA_CHECK_LAUNCH(what + ": point check");
  unsigned long long result = count;
  CopyToHostAsync(&result, first.get(), sizeof(result), stream, what);
  SynchronizeStream(stream, what + ": point check");
  return result;
}

}  // namespace zkfleet::cuda
