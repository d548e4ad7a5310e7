// The CUDA proving key for Bn254 (one file per curve so that the two compile
// in parallel).
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/groth16/cuda_key.cuh"

namespace zkfleet::cuda::prover {

std::unique_ptr<groth16::Key> LoadBn254Key(const io::ZkeyFile& zkey, const groth16::KeyOptions& options) {
  return std::make_unique<CudaGroth16Key<curve::Bn254>>(zkey, options);
}

}  // namespace zkfleet::cuda::prover
