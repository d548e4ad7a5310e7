// Turning CUDA failures into zkfleet::Error (CUDA translation units only).
//
//   ZK_CUDA_CHECK(cudaMemcpyAsync(...), "witness upload");
//   ZK_CUDA_CHECK_LAUNCH("msm accumulate");   // after a <<<>>> launch
//
// Out of memory maps to ErrorCode::kResourceExhausted, everything else to
// kDeviceError; the message names the call, the phase and the CUDA error.
//
// Recovery: most CUDA errors (bad argument, out of memory, invalid copy) are
// "non-sticky": cudaGetLastError() clears them and the context keeps working,
// so the proving key stays usable for the next proof. Errors raised by a
// kernel that faulted (illegal address, launch failure, assert, ...) are
// sticky: the context is corrupted, every later call fails, and only a new
// process can use the GPU again. Nothing inside the process can repair that
// (cudaDeviceReset would destroy every resident key), so the message says so
// and the worker must restart.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace zkfleet::cuda {

// True for errors after which the CUDA context is unusable.
bool IsStickyError(cudaError_t err);

// Throws zkfleet::Error for `err` (which must not be cudaSuccess), after
// clearing the thread's non-sticky error state.
[[noreturn]] void ThrowCudaError(cudaError_t err, const char* call, const std::string& phase);

// Clears a pending non-sticky error (cudaGetLastError) so that it cannot be
// reported again by an unrelated later call. Returns what was pending.
cudaError_t ClearPendingError();

// Makes `device` current unless it already is; a failure is cleared, not
// thrown (destructors free a stream, event or buffer on its own device).
void SelectQuietly(int device) noexcept;

}  // namespace zkfleet::cuda

#define ZK_CUDA_CHECK(call, phase)                                               \
  do {                                                                           \
    const cudaError_t zk_cuda_err_ = (call);                                     \
    if (zk_cuda_err_ != cudaSuccess) ::zkfleet::cuda::ThrowCudaError(zk_cuda_err_, #call, (phase)); \
  } while (0)

#define ZK_CUDA_CHECK_LAUNCH(phase)                                              \
  do {                                                                           \
    const cudaError_t zk_cuda_err_ = cudaGetLastError();                         \
    if (zk_cuda_err_ != cudaSuccess) ::zkfleet::cuda::ThrowCudaError(zk_cuda_err_, "kernel launch", (phase)); \
  } while (0)
