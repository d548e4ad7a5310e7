#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/groth16/cuda_prover.hpp"

#include "zkfleet/common/error.hpp"

namespace zkfleet::cuda {
namespace groth16 {
// Defined in groth16_bn254.cu / groth16_bls12_381.cu.
std::unique_ptr<engine::ProvingKey> LoadBn254Key(const io::ZkeyFile& zkey, const engine::EngineOptions& options);
std::unique_ptr<engine::ProvingKey> LoadBls12_381Key(const io::ZkeyFile& zkey, const engine::EngineOptions& options);
}  // namespace groth16

std::unique_ptr<engine::ProvingKey> LoadCudaProvingKey(const io::ZkeyFile& zkey, const engine::EngineOptions& options) {
  switch (zkey.curve()) {
    case io::Curve::kBn254:
      return groth16::LoadBn254Key(zkey, options);
    case io::Curve::kBls12_381:
      return groth16::LoadBls12_381Key(zkey, options);
  }
  throw Error(ErrorCode::kUnsupported, zkey.path() + ": unsupported curve");
}

}  // namespace zkfleet::cuda
