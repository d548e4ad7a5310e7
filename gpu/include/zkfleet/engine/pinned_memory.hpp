// Page-locked (pinned) host memory for buffers the CUDA backend uploads from:
// a witness in pinned memory is copied to the device by a true async DMA.
// Part of the engine's public API; it is the face of the engine's runtime
// layer (gpu/zkfleet/runtime), which makes every CUDA host-memory call of the
// project (cudaHostAlloc, cudaHostRegister and their inverses) and counts
// what they hold.
//
// Two ways to pin, as the worker's pool uses them:
//   * Allocate / Free: cudaHostAlloc'd memory (portable: pinned for every
//     device of the process).
//   * Register / Unregister: memory the caller mapped itself (e.g. anonymous,
//     2 MiB aligned, madvise(MADV_HUGEPAGE), pages touched), pinned in place
//     with cudaHostRegister (portable). Faster to pin and to free than
//     Allocate; the caller keeps owning the mapping and unmaps it after
//     Unregister.
//
// Errors: Allocate and Register return "" on success, else one line saying
// which call failed and why ("cudaHostRegister: <CUDA's reason>"); a refused
// call leaves no sticky error behind, so the caller may fall back (e.g. from
// Register to Allocate). In a build without the CUDA backend they fail with
// "... this build has no CUDA backend", and Free / Unregister do nothing.
// Nothing here throws.
//
// Ownership: memory from Allocate is the caller's until it passes it to Free;
// Register does not take ownership of the caller's mapping.
// Thread-safety: every function may be called from any thread at once (they
// are CUDA runtime calls). Register pins for `device`, which it makes the
// calling thread's current device (what cudaSetDevice does): registering
// threads pass the device of the thread that started the pool
// (CurrentDevice()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace zkfleet::engine {

class PinnedMemory {
 public:
  // cudaHostAlloc(bytes, portable) into *out (null on failure).
  static std::string Allocate(size_t bytes, uint8_t** out);
  // cudaFreeHost of `bytes` from Allocate.
  static void Free(uint8_t* base, size_t bytes);

  // cudaHostRegister(base, bytes, portable) on `device`.
  static std::string Register(uint8_t* base, size_t bytes, int device);
  // cudaHostUnregister of `bytes` pinned by Register (the mapping stays).
  static void Unregister(uint8_t* base, size_t bytes);

  // The calling thread's current CUDA device (0 without CUDA or on error).
  static int CurrentDevice();
};

}  // namespace zkfleet::engine
