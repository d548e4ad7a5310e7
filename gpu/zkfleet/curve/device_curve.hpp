// Device curve configurations: the same curves as zkfleet/curve (whose
// point formulas are reused as they are), over the 32-bit-word field Fp32.
// DeviceCurve<curve::Bn254G1> etc. A point type over a device config has the
// bytes of the host point type (Affine<Bn254G1> == Affine<DeviceCurve<..>>),
// which is what lets zkey points be uploaded with a plain copy and MSM results
// come back with one.
//
// Thread-safety: types only.
#pragma once

#include "zkfleet/ff/field32.hpp"
#include "zkfleet/curve/bls12_381.hpp"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/point.hpp"

namespace zkfleet::cuda {

template <class HostCfg>
struct DeviceCurve {
  using Host = HostCfg;
  using Field = typename DeviceFieldOf<typename HostCfg::Field>::type;
  ZK_HD static Field b() { return BitCopy<Field>(HostCfg::b()); }
};

template <class HostCfg>
using DAffine = curve::Affine<DeviceCurve<HostCfg>>;
template <class HostCfg>
using DXyzz = curve::Xyzz<DeviceCurve<HostCfg>>;

static_assert(sizeof(DAffine<curve::Bn254G1>) == sizeof(curve::Affine<curve::Bn254G1>));
static_assert(sizeof(DAffine<curve::Bn254G2>) == sizeof(curve::Affine<curve::Bn254G2>));
static_assert(sizeof(DAffine<curve::Bls12_381G1>) == sizeof(curve::Affine<curve::Bls12_381G1>));
static_assert(sizeof(DAffine<curve::Bls12_381G2>) == sizeof(curve::Affine<curve::Bls12_381G2>));
static_assert(sizeof(DXyzz<curve::Bls12_381G2>) == sizeof(curve::Xyzz<curve::Bls12_381G2>));

}  // namespace zkfleet::cuda
