#include "zkfleet/runtime/hd_host_inline.hpp"  // first: see there
#include "zkfleet/runtime/cuda_device.hpp"

#include <atomic>
#include <string>

#include "zkfleet/common/error.hpp"
#include "zkfleet/runtime/cuda_check.hpp"

namespace zkfleet::cuda {
namespace {

std::atomic<uint64_t> g_device_allocs{0}, g_pinned_allocs{0}, g_failed_allocs{0};
std::atomic<uint64_t> g_device_bytes{0}, g_pinned_bytes{0}, g_registered_bytes{0};
std::atomic<int> g_injected_fault{static_cast<int>(InjectedFault::kNone)};

std::string Mib(size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

}  // namespace

int DeviceCount() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // "no driver" / "no device" must not linger
    return 0;
  }
  return count;
}

AllocationCounts AllocationStats() {
  AllocationCounts c;
  c.device_allocs = g_device_allocs.load();
  c.pinned_allocs = g_pinned_allocs.load();
  c.failed_allocs = g_failed_allocs.load();
  c.device_bytes_live = g_device_bytes.load();
  c.pinned_bytes_live = g_pinned_bytes.load();
  c.registered_bytes_live = g_registered_bytes.load();
  return c;
}

DeviceMemoryUse DeviceMemoryInfo() {
  size_t free = 0, total = 0;
  ZK_CUDA_CHECK(cudaMemGetInfo(&free, &total), "device memory info");
  return DeviceMemoryUse{free, total};
}

bool IsStickyError(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return true;
    default:
      return false;
  }
}

cudaError_t ClearPendingError() { return cudaGetLastError(); }

void ThrowCudaError(cudaError_t err, const char* call, const std::string& phase) {
  ClearPendingError();
  std::string msg = "CUDA error during " + phase + ": " + call + " returned " + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")";
  if (IsStickyError(err)) {
    msg += "; the CUDA context is corrupted and this process cannot use the GPU again (restart the worker)";
  }
  throw Error(err == cudaErrorMemoryAllocation ? ErrorCode::kResourceExhausted
              : IsStickyError(err)           ? ErrorCode::kDeviceLost
                                             : ErrorCode::kDeviceError,
              msg);
}

DeviceBuffer::DeviceBuffer(size_t bytes, const std::string& what) {
  if (bytes == 0) return;
  const cudaError_t err = cudaMalloc(&ptr_, bytes);
  if (err != cudaSuccess) {
    ptr_ = nullptr;
    g_failed_allocs++;
    ThrowCudaError(err, "cudaMalloc", "allocating " + Mib(bytes) + " of device memory for " + what);
  }
  bytes_ = bytes;
  g_device_allocs++;
  g_device_bytes += bytes;
}

void DeviceBuffer::Reset() {
  if (ptr_) {
    cudaFree(ptr_);  // cannot fail usefully here; a sticky error already lost the memory
    g_device_bytes -= bytes_;
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

void* PinnedAlloc(size_t bytes, const std::string& what) {
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  const cudaError_t err = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
  if (err != cudaSuccess) {
    g_failed_allocs++;
    ThrowCudaError(err, "cudaHostAlloc", "allocating " + Mib(bytes) + " of pinned host memory for " + what);
  }
  g_pinned_allocs++;
  g_pinned_bytes += bytes;
  return ptr;
}

void PinnedFree(void* ptr, size_t bytes) {
  if (!ptr) return;
  cudaFreeHost(ptr);
  g_pinned_bytes -= bytes;
}

PinnedBuffer::PinnedBuffer(size_t bytes, const std::string& what) : ptr_(PinnedAlloc(bytes, what)), bytes_(ptr_ ? bytes : 0) {}

void PinnedBuffer::Reset() {
  PinnedFree(ptr_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
}

HostRegistration HostRegistration::Try(void* ptr, size_t bytes, std::string* why) {
  HostRegistration out;
  if (ptr == nullptr || bytes == 0) return out;
  const cudaError_t err = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);
  if (err != cudaSuccess) {
    cudaGetLastError();  // a refused registration is not a sticky error: clear it
    if (why) *why = std::string("cudaHostRegister of ") + Mib(bytes) + ": " + cudaGetErrorString(err);
    return out;
  }
  out.ptr_ = ptr;
  out.bytes_ = bytes;
  g_registered_bytes += bytes;
  return out;
}

void HostRegistration::Reset() {
  if (!ptr_) return;
  cudaHostUnregister(ptr_);
  g_registered_bytes -= bytes_;
  ptr_ = nullptr;
  bytes_ = 0;
}

void SetDevice(int device, const std::string& what) {
  const int count = DeviceCount();
  if (device < 0 || device >= count) {
    throw Error(ErrorCode::kDeviceError, what + ": CUDA device " + std::to_string(device) + " does not exist (" +
                                             std::to_string(count) + " device(s) present)");
  }
  ZK_CUDA_CHECK(cudaSetDevice(device), what);
}

void CreateContext(int device, const std::string& what) {
  SetDevice(device, what);
  ZK_CUDA_CHECK(cudaFree(nullptr), what + ": creating the CUDA context");
}

void InjectFaultForTesting(InjectedFault fault) { g_injected_fault.store(static_cast<int>(fault)); }

InjectedFault TakeInjectedFault() {
  return static_cast<InjectedFault>(g_injected_fault.exchange(static_cast<int>(InjectedFault::kNone)));
}

}  // namespace zkfleet::cuda
