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

void* TryPinnedAlloc(size_t bytes, std::string* why) {
  if (bytes == 0) return nullptr;
  void* ptr = nullptr;
  // Portable: one pool serves every device of the process.
  const cudaError_t err = cudaHostAlloc(&ptr, bytes, cudaHostAllocPortable);
  if (err != cudaSuccess) {
    ClearPendingError();  // a refused allocation is not a sticky error
    g_failed_allocs++;
    if (why) *why = std::string("cudaHostAlloc of ") + Mib(bytes) + ": " + cudaGetErrorString(err);
    return nullptr;
  }
  g_pinned_allocs++;
  g_pinned_bytes += bytes;
  return ptr;
}

void PinnedFree(void* ptr, size_t bytes) noexcept {
  if (!ptr) return;
  cudaFreeHost(ptr);
  g_pinned_bytes -= bytes;
}

bool TryRegisterHost(void* ptr, size_t bytes, int device, std::string* why) {
  if (ptr == nullptr || bytes == 0) return false;
  if (cudaSetDevice(device) != cudaSuccess) ClearPendingError();
  const cudaError_t err = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);
  if (err != cudaSuccess) {
    ClearPendingError();  // a refused registration is not a sticky error
    if (why) *why = std::string("cudaHostRegister of ") + Mib(bytes) + ": " + cudaGetErrorString(err);
    return false;
  }
  g_registered_bytes += bytes;
  return true;
}

void UnregisterHost(void* ptr, size_t bytes) noexcept {
  if (!ptr) return;
  cudaHostUnregister(ptr);
  g_registered_bytes -= bytes;
}

template <Memory kind>
Buffer<kind>::Buffer(size_t bytes, const std::string& what) {
  if (bytes == 0) return;
  device_ = CurrentDevice();
  if constexpr (kind == Memory::kDevice) {
    const cudaError_t err = cudaMalloc(&ptr_, bytes);
    if (err != cudaSuccess) {
      ptr_ = nullptr;
      g_failed_allocs++;
      ThrowCudaError(err, "cudaMalloc", "allocating " + Mib(bytes) + " of device memory for " + what);
    }
    g_device_allocs++;
    g_device_bytes += bytes;
  } else {
    std::string why;
    ptr_ = TryPinnedAlloc(bytes, &why);
    if (!ptr_) {
      throw Error(ErrorCode::kResourceExhausted,
                  "allocating " + Mib(bytes) + " of pinned host memory for " + what + ": " + why);
    }
  }
  bytes_ = bytes;
}

template <Memory kind>
void Buffer<kind>::Reset() noexcept {
  if (ptr_) {
    SelectQuietly(device_);
    if constexpr (kind == Memory::kDevice) {
      cudaFree(ptr_);  // cannot fail usefully here; a sticky error already lost the memory
      g_device_bytes -= bytes_;
    } else {
      PinnedFree(ptr_, bytes_);
    }
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

template class Buffer<Memory::kDevice>;
template class Buffer<Memory::kPinnedHost>;

HostRegistration HostRegistration::Try(void* ptr, size_t bytes, std::string* why) {
  HostRegistration out;
  const int device = CurrentDevice();
  if (!TryRegisterHost(ptr, bytes, device, why)) return out;
  out.ptr_ = ptr;
  out.bytes_ = bytes;
  out.device_ = device;
  return out;
}

void HostRegistration::Reset() {
  if (ptr_) SelectQuietly(device_);
  UnregisterHost(ptr_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
}

void CopyToDevice(void* device_dst, const void* host_src, size_t bytes, const std::string& phase) {
  if (bytes == 0) return;
  ZK_CUDA_CHECK(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice), phase);
}

void CopyToHost(void* host_dst, const void* device_src, size_t bytes, const std::string& phase) {
  if (bytes == 0) return;
  ZK_CUDA_CHECK(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost), phase);
}

void Zero(void* device_dst, size_t bytes, const std::string& phase) {
  if (bytes == 0) return;
  ZK_CUDA_CHECK(cudaMemset(device_dst, 0, bytes), phase);
}

void SynchronizeDevice(const std::string& phase) { ZK_CUDA_CHECK(cudaDeviceSynchronize(), phase); }

int CurrentDevice() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    ClearPendingError();
    return 0;
  }
  return device;
}

void SelectQuietly(int device) noexcept {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device) {
    if (cudaSetDevice(device) != cudaSuccess) ClearPendingError();
  }
}

DeviceDescription DescribeDevice(int device) {
  cudaDeviceProp prop{};
  ZK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device), "describing CUDA device " + std::to_string(device));
  return DeviceDescription{prop.name, prop.multiProcessorCount};
}

std::string HostMemoryKind(const void* ptr) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    ClearPendingError();
    return "unknown";
  }
  return attributes.type == cudaMemoryTypeHost           ? "host-pinned"
         : attributes.type == cudaMemoryTypeUnregistered ? "unregistered"
                                                         : "other";
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
