// engine::PinnedMemory (engine/pinned_memory.hpp), on the runtime's counted
// pinned-memory calls (cuda_device.hpp).
#include "zkfleet/engine/pinned_memory.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include "zkfleet/runtime/cuda_device.hpp"
#endif

namespace zkfleet::engine {

#ifdef ZKFLEET_HAVE_CUDA

std::string PinnedMemory::Allocate(size_t bytes, uint8_t** out) {
  std::string why;
  *out = static_cast<uint8_t*>(cuda::TryPinnedAlloc(bytes, &why));
  return *out ? std::string() : why;
}

void PinnedMemory::Free(uint8_t* base, size_t bytes) { cuda::PinnedFree(base, bytes); }

std::string PinnedMemory::Register(uint8_t* base, size_t bytes, int device) {
  std::string why;
  return cuda::TryRegisterHost(base, bytes, device, &why) ? std::string() : why;
}

void PinnedMemory::Unregister(uint8_t* base, size_t bytes) { cuda::UnregisterHost(base, bytes); }

int PinnedMemory::CurrentDevice() { return cuda::CurrentDevice(); }

#else  // no CUDA backend

std::string PinnedMemory::Allocate(size_t, uint8_t** out) {
  *out = nullptr;
  return "cudaHostAlloc: this build has no CUDA backend";
}

void PinnedMemory::Free(uint8_t*, size_t) {}

std::string PinnedMemory::Register(uint8_t*, size_t, int) {
  return "cudaHostRegister: this build has no CUDA backend";
}

void PinnedMemory::Unregister(uint8_t*, size_t) {}

int PinnedMemory::CurrentDevice() { return 0; }

#endif

}  // namespace zkfleet::engine
