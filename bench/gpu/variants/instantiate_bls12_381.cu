// The GPU MSM of BLS12-381 for zkfleet_msm_variants (as msm/msm_bls12_381.cu).
#include "zkfleet/runtime/hd_host_inline.hpp"
#include "zkfleet/msm/cuda_msm.cuh"
#include "zkfleet/msm/msm_kernels.cuh"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/bls12_381.hpp"
namespace zkfleet::cuda {
template void EnqueueMsmBuckets<curve::Bls12_381G1>(cudaStream_t, const MsmWorkspace&, const MsmWorkspace&, const msm::Plan&,
                                              const curve::Affine<curve::Bls12_381G1>*, curve::Xyzz<curve::Bls12_381G1>*,
                                              const std::string&, const MsmMarks*);
template void EnqueueMsmBuckets<curve::Bls12_381G2>(cudaStream_t, const MsmWorkspace&, const MsmWorkspace&, const msm::Plan&,
                                              const curve::Affine<curve::Bls12_381G2>*, curve::Xyzz<curve::Bls12_381G2>*,
                                              const std::string&, const MsmMarks*);
template void EnqueueMsmTables<curve::Bls12_381G1>(cudaStream_t, const msm::Plan&, uint64_t,
                                                 curve::Affine<curve::Bls12_381G1>*, const std::string&);
template void EnqueueMsmTables<curve::Bls12_381G2>(cudaStream_t, const msm::Plan&, uint64_t,
                                                 curve::Affine<curve::Bls12_381G2>*, const std::string&);
template class DeviceMsm<curve::Bls12_381G1>;
template class DeviceMsm<curve::Bls12_381G2>;
}  // namespace zkfleet::cuda
