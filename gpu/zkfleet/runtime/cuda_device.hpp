// The CUDA device layer every other file in zkfleet/cuda builds on:
//   * DeviceCount(): how many usable GPUs this process sees (0 without a
//     driver or device; never throws), usable from plain C++.
//   * Counted allocations: every cudaMalloc / cudaHostAlloc / cudaHostRegister
//     the project makes goes through Buffer, HostRegistration or the Try*
//     calls below (engine::PinnedMemory and the worker's pool use those), which
//     count calls and bytes in AllocationStats(). Tests read the counter to
//     check that proofs after the first one allocate nothing.
//   * Device selection (SetDevice, CurrentDevice) and blocking copies; the
//     streams and events proofs queue work on are in cuda_stream.hpp.
//   * Error conversion (in cuda_check.hpp, CUDA-only): a failed CUDA call
//     becomes zkfleet::Error with the call, the phase and cudaGetErrorString.
//
// This header compiles without the CUDA toolkit (it only declares plain C++
// functions and RAII handles); the definitions live in cuda_device.cu.
//
// Thread-safety: all functions may be called from any thread. The counters
// are atomics. Buffer and HostRegistration are move-only owners; one object
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
  uint64_t pinned_allocs = 0;  // successful cudaHostAlloc calls (PinnedBuffer and TryPinnedAlloc)
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

// Where a Buffer's bytes live.
enum class Memory {
  kDevice,      // cudaMalloc'd, on the device current when it was made
  kPinnedHost,  // cudaHostAlloc'd page-locked host memory (portable: every device may DMA it)
};

// Owns one counted allocation of `kind`. Allocation failure throws
// zkfleet::Error (kResourceExhausted for out of memory, else kDeviceError)
// naming `what` and the size. Reset (and the destructor) makes the device
// that was current at allocation current again before freeing: the freeing
// thread may have another device current, or none yet (a free would then
// open device 0's context).
template <Memory kind>
class Buffer {
 public:
  Buffer() = default;
  Buffer(size_t bytes, const std::string& what);
  ~Buffer() { Reset(); }
  Buffer(Buffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), device_(o.device_) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      device_ = o.device_;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void Reset() noexcept;
  void* get() const { return ptr_; }
  template <class T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;  // current when it was made: made current again to free it
};
extern template class Buffer<Memory::kDevice>;
extern template class Buffer<Memory::kPinnedHost>;
using DeviceBuffer = Buffer<Memory::kDevice>;
using PinnedBuffer = Buffer<Memory::kPinnedHost>;

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
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), device_(o.device_) {}
  HostRegistration& operator=(HostRegistration&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      device_ = o.device_;
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
  int device_ = 0;  // current when registered: made current again to unregister
};

// The counted calls behind PinnedBuffer and HostRegistration, for memory
// whose lifetime its owner manages itself (engine::PinnedMemory, the
// worker's pool). They never throw: a refusal returns null / false with *why
// saying which call failed and CUDA's reason, and leaves no error pending.
void* TryPinnedAlloc(size_t bytes, std::string* why);
void PinnedFree(void* ptr, size_t bytes) noexcept;  // accepts nullptr
// Page-locks [ptr, ptr + bytes) in place (portable), for `device`, which it
// makes the calling thread's current device.
bool TryRegisterHost(void* ptr, size_t bytes, int device, std::string* why);
void UnregisterHost(void* ptr, size_t bytes) noexcept;

// Blocking copies and fills on the legacy default stream (set-up, tests and
// benchmarks; proofs queue theirs on streams, cuda_stream.hpp). A copy from
// pageable memory may return before its DMA lands, and non-blocking streams
// do not wait for it: set-up that feeds streams ends with SynchronizeDevice.
// Throw kDeviceError naming `phase`.
void CopyToDevice(void* device_dst, const void* host_src, size_t bytes, const std::string& phase);
void CopyToHost(void* host_dst, const void* device_src, size_t bytes, const std::string& phase);
void Zero(void* device_dst, size_t bytes, const std::string& phase);
// Blocks until all work queued on the current device is done.
void SynchronizeDevice(const std::string& phase);

// The calling thread's current device (0 when the runtime cannot tell).
// Never throws.
int CurrentDevice();

// What the driver says of a device: its name and multiprocessor count.
struct DeviceDescription {
  std::string name;
  int multiprocessors = 0;
};
DeviceDescription DescribeDevice(int device);

// How CUDA sees a host pointer: "host-pinned" (page-locked), "unregistered"
// (pageable), "other", or "unknown" when the runtime cannot tell.
std::string HostMemoryKind(const void* ptr);

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
