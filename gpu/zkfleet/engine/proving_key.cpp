#include "zkfleet/engine/proving_key.hpp"

#include "zkfleet/common/error.hpp"
#include "zkfleet/cpu/groth16_prover.hpp"
#include "zkfleet/io/zkey.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/cuda/groth16_cuda.hpp"
#endif

namespace zkfleet::engine {

std::unique_ptr<ProvingKey> ProvingKey::Load(const std::string& zkey_path, const EngineOptions& options) {
  Backend backend = options.backend;
  if (backend == Backend::kAuto) backend = CudaAvailable() ? Backend::kCuda : Backend::kCpu;

  io::ZkeyFile zkey = io::ZkeyFile::Open(zkey_path);
  if (backend == Backend::kCpu) return cpu::LoadCpuProvingKey(zkey, options);

#ifdef ZKFLEET_HAVE_CUDA
  if (!CudaAvailable()) {
    throw Error(ErrorCode::kDeviceError, "backend cuda requested for " + zkey_path + " but no CUDA device is present");
  }
  return cuda::LoadCudaProvingKey(zkey, options);
#else
  throw Error(ErrorCode::kUnsupported,
              "backend cuda requested for " + zkey_path + " but this build has no CUDA backend (configure with -DZKFLEET_CUDA=ON)");
#endif
}

}  // namespace zkfleet::engine
