#include "zkfleet/engine/types.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/runtime/cuda_device.hpp"
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

void PrepareCuda(int device) {
#ifdef ZKFLEET_HAVE_CUDA
  try {
    if (device >= 0 && device < cuda::DeviceCount()) cuda::CreateContext(device, "preparing the CUDA device");
  } catch (const std::exception&) {
    // The load that follows reports the same failure, with its context.
  }
#else
  (void)device;
#endif
}

}  // namespace zkfleet::engine
