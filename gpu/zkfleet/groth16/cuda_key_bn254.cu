// The CUDA proving key for Bn254 (one file per curve so that the two compile
// in parallel).
#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/groth16/cuda_key.cuh"

namespace zkfleet::cuda::groth16 {

std::unique_ptr<engine::ProvingKey> LoadBn254Key(const io::ZkeyFile& zkey, const engine::EngineOptions& options) {
  return std::make_unique<CudaGroth16Key<curve::Bn254>>(zkey, options);
}

}  // namespace zkfleet::cuda::groth16
