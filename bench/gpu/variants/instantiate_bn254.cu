// The GPU MSM of BN254 for zkfleet_msm_variants (as msm/msm_bn254.cu).
#include "zkfleet/runtime/hd_host_inline.hpp"
#include "zkfleet/msm/cuda_msm.cuh"
#include "zkfleet/msm/msm_kernels.cuh"
#include "zkfleet/curve/bn254.hpp"
#include "zkfleet/curve/bls12_381.hpp"
namespace zkfleet::cuda {
template void EnqueueMsmBuckets<curve::Bn254G1>(cudaStream_t, const MsmWorkspace&, const MsmWorkspace&, const msm::Plan&,
                                              const curve::Affine<curve::Bn254G1>*, curve::Xyzz<curve::Bn254G1>*,
                                              const std::string&, const MsmMarks*);
template void EnqueueMsmBuckets<curve::Bn254G2>(cudaStream_t, const MsmWorkspace&, const MsmWorkspace&, const msm::Plan&,
                                              const curve::Affine<curve::Bn254G2>*, curve::Xyzz<curve::Bn254G2>*,
                                              const std::string&, const MsmMarks*);
template void EnqueueMsmTables<curve::Bn254G1>(cudaStream_t, const msm::Plan&, uint64_t,
                                                 curve::Affine<curve::Bn254G1>*, const std::string&);
template void EnqueueMsmTables<curve::Bn254G2>(cudaStream_t, const msm::Plan&, uint64_t,
                                                 curve::Affine<curve::Bn254G2>*, const std::string&);
template class DeviceMsm<curve::Bn254G1>;
template class DeviceMsm<curve::Bn254G2>;
}  // namespace zkfleet::cuda
