#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/groth16/cuda_prover.hpp"

#include "zkfleet/common/error.hpp"

namespace zkfleet::cuda {
namespace prover {
// Defined in cuda_key_bn254.cu / cuda_key_bls12_381.cu.
std::unique_ptr<groth16::Key> LoadBn254Key(const io::ZkeyFile& zkey, const groth16::KeyOptions& options);
std::unique_ptr<groth16::Key> LoadBls12_381Key(const io::ZkeyFile& zkey, const groth16::KeyOptions& options);
}  // namespace prover

std::unique_ptr<groth16::Key> LoadCudaProvingKey(const io::ZkeyFile& zkey, const groth16::KeyOptions& options) {
  switch (zkey.curve()) {
    case io::Curve::kBn254:
      return prover::LoadBn254Key(zkey, options);
    case io::Curve::kBls12_381:
      return prover::LoadBls12_381Key(zkey, options);
  }
  throw Error(ErrorCode::kUnsupported, zkey.path() + ": unsupported curve");
}

}  // namespace zkfleet::cuda
