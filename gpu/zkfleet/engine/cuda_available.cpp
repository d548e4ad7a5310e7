#include "zkfleet/engine/types.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/cuda/device.hpp"
#endif

namespace zkfleet::engine {

bool CudaAvailable() { return CudaDeviceCount() > 0; }

int CudaDeviceCount() {
#ifdef ZKFLEET_HAVE_CUDA
  return cuda::DeviceCount();
#else
  return 0;
#endif
}

}  // namespace zkfleet::engine
