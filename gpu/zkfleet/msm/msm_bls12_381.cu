// GPU MSM instantiations for Bls12_381 G1 and G2 (one file per curve so that the
// two compile in parallel).
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/msm/cuda_msm.cuh"
#include "zkfleet/msm/msm_kernels.cuh"

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
