#include "zkfleet/engine/types.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/cuda/device.hpp"
#endif

namespace zkfleet::engine {

bool CudaAvailable() {
#ifdef ZKFLEET_HAVE_CUDA
  return cuda::DeviceCount() > 0;
#else
  return false;
#endif
}

}  // namespace zkfleet::engine
