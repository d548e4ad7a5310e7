// engine::PinnedMemory (engine/pinned_memory.hpp): the CUDA host-memory calls.
#include "zkfleet/engine/pinned_memory.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace zkfleet::engine {

#ifdef ZKFLEET_HAVE_CUDA
namespace {

std::string CudaFailure(const char* call, cudaError_t status) {
  cudaGetLastError();  // clear it: a refused allocation or registration is not a sticky error
  return std::string(call) + ": " + cudaGetErrorString(status);
}

}  // namespace

std::string PinnedMemory::Allocate(size_t bytes, uint8_t** out) {
  void* base = nullptr;
  // Portable: one pool serves every device of the process; with unified
  // addressing it is so anyway, this says it.
  const cudaError_t status = cudaHostAlloc(&base, bytes, cudaHostAllocPortable);
  if (status != cudaSuccess) {
    *out = nullptr;
    return CudaFailure("cudaHostAlloc", status);
  }
  *out = static_cast<uint8_t*>(base);
  return {};
}

void PinnedMemory::Free(uint8_t* base) { cudaFreeHost(base); }

std::string PinnedMemory::Register(uint8_t* base, size_t bytes, int device) {
  cudaSetDevice(device);
  const cudaError_t status = cudaHostRegister(base, bytes, cudaHostRegisterPortable);
  return status == cudaSuccess ? std::string() : CudaFailure("cudaHostRegister", status);
}

void PinnedMemory::Unregister(uint8_t* base) { cudaHostUnregister(base); }

int PinnedMemory::CurrentDevice() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return device;
}

#else  // no CUDA backend

std::string PinnedMemory::Allocate(size_t, uint8_t** out) {
  *out = nullptr;
  return "this build has no CUDA backend";
}

void PinnedMemory::Free(uint8_t*) {}

std::string PinnedMemory::Register(uint8_t*, size_t, int) {
  return "cudaHostRegister: this build has no CUDA backend";
}

void PinnedMemory::Unregister(uint8_t*) {}

int PinnedMemory::CurrentDevice() { return 0; }

#endif

}  // namespace zkfleet::engine
