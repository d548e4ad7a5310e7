// The CUDA device layer every other file in zkfleet/cuda builds on:
//   * DeviceCount(): how many usable GPUs this process sees (0 without a
//     driver or device; never throws), usable from plain C++.
//   * Counted allocations: every cudaMalloc / cudaHostAlloc the backend makes
//     goes through DeviceBuffer / PinnedBuffer, which count calls and bytes in
//     AllocationStats(). Tests read the counter to check that proofs after the
//     first one allocate nothing.
//   * Error conversion (in cuda_check.hpp, CUDA-only): a failed CUDA call
//     becomes zkfleet::Error with the call, the phase and cudaGetErrorString.
//
// This header compiles without the CUDA toolkit (it only declares plain C++
// functions and RAII handles); the definitions live in cuda_device.cu.
//
// Thread-safety: all functions may be called from any thread. The counters
// are atomics. DeviceBuffer / PinnedBuffer are move-only owners; one object
// is not meant to be shared between threads while being moved or reset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace zkfleet::cuda {

// Number of CUDA devices the driver reports, 0 when there is no driver, no
// device, or the runtime fails to initialise. Never throws.
int DeviceCount();

// Calls and bytes of the backend's own allocations since process start.
struct AllocationCounts {
  uint64_t device_allocs = 0;  // successful cudaMalloc calls
  uint64_t pinned_allocs = 0;  // successful cudaHostAlloc calls
  uint64_t failed_allocs = 0;  // calls that returned an error (e.g. out of memory)
  uint64_t device_bytes_live = 0;  // currently held through DeviceBuffer
  uint64_t pinned_bytes_live = 0;  // currently held through PinnedBuffer
  uint64_t registered_bytes_live = 0;  // currently page-locked through HostRegistration
};
AllocationCounts AllocationStats();

// The current device's memory as the driver sees it (every process and the
// contexts included): used = total - free. Throws kDeviceError.
struct DeviceMemoryUse {
  uint64_t free = 0, total = 0;
  uint64_t used() const { return total - free; }
};
DeviceMemoryUse DeviceMemoryInfo();

// Owns one cudaMalloc'd block on the current device. Allocation failure
// throws zkfleet::Error (kResourceExhausted for out of memory, else
// kDeviceError) naming `what` and the size.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, const std::string& what);
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void Reset();
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Owns one cudaHostAlloc'd (page-locked) host block. Same error rules.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, const std::string& what);
  ~PinnedBuffer() { Reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void Reset();
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Page-locks host memory the caller owns, in place (cudaHostRegister,
// portable), until Reset or destruction (cudaHostUnregister). The caller
// keeps the memory mapped for longer than the registration. Pinning memory
// that is already filled costs a fraction of cudaHostAlloc plus a copy
// (docs/benchmarks-gpu.md: 0.056 s/GiB for huge pages against 0.59 s/GiB).
class HostRegistration {
 public:
  HostRegistration() = default;
  // An empty registration when CUDA refuses (the error is cleared, not
  // sticky); *why then says why. Never throws.
  static HostRegistration Try(void* ptr, size_t bytes, std::string* why);
  ~HostRegistration() { Reset(); }
  HostRegistration(HostRegistration&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  HostRegistration& operator=(HostRegistration&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

  void Reset();
  bool registered() const { return ptr_ != nullptr; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Low-level counted allocation for code that manages lifetime itself (the
// host pool). Throw like the buffers above; Free* accept nullptr.
void* PinnedAlloc(size_t bytes, const std::string& what);
void PinnedFree(void* ptr, size_t bytes);

// Makes `device` current for the calling thread; throws kDeviceError naming
// `what` when the ordinal is out of range or the device is unusable.
void SetDevice(int device, const std::string& what);

// Makes `device` current and creates its context now (the runtime would on
// the first real call), loading the kernels if CUDA_MODULE_LOADING=EAGER.
void CreateContext(int device, const std::string& what);

// Fault injection for tests of the error path: the next proof on any CUDA
// key performs one deliberately failing CUDA operation in the middle of its
// device work, then clears the request. kOutOfMemory asks cudaMalloc for far
// more than any GPU has (a real cudaErrorMemoryAllocation); kBadCopy issues a
// cudaMemcpyAsync with an invalid direction (a real, non-sticky error).
enum class InjectedFault { kNone, kOutOfMemory, kBadCopy };
void InjectFaultForTesting(InjectedFault fault);
// Returns and clears the pending fault (used by the prover).
InjectedFault TakeInjectedFault();

}  // namespace zkfleet::cuda
