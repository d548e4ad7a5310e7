// An allocator for vectors of many gigabytes that are filled in parallel
// right after they are sized (decoded parameters, made points):
//
//   * resize() leaves trivially constructible elements uninitialised
//     (construct() default-initialises): a value-initialising resize writes
//     zeros over tens of GB on one thread (seconds at 2^27) just before the
//     decoder overwrites them;
//   * blocks of 2 MiB or more are their own anonymous mapping, 2 MiB aligned
//     and advised to use transparent huge pages: page aligned, so the CUDA
//     layer can page-lock them in place (engine::PinnedMemory::Register)
//     instead of copying them into memory it allocated, and with few TLB
//     misses for the MSMs that read them. Smaller blocks come from operator
//     new.
//
// Stateless: any two allocators of it are equal, vectors move and swap
// freely. Thread-safety: as operator new and mmap.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace zkfleet::runtime {

inline constexpr size_t kLargeArrayAlignment = size_t{2} << 20;

// The mapping behind a large block: [base, base + bytes), what munmap takes.
// Exposed for the allocator and its tests.
inline void* MapLargeArray(size_t bytes) {
  const size_t padded = bytes + kLargeArrayAlignment;
  void* raw = ::mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  // Trim to a 2 MiB aligned block of `bytes` rounded up to whole pages.
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kLargeArrayAlignment - 1) & ~(kLargeArrayAlignment - 1);
  const uintptr_t end = aligned + ((bytes + 4095) & ~size_t{4095});
  if (aligned > begin) ::munmap(raw, aligned - begin);
  if (begin + padded > end) ::munmap(reinterpret_cast<void*>(end), begin + padded - end);
  ::madvise(reinterpret_cast<void*>(aligned), end - aligned, MADV_HUGEPAGE);  // advice: failure is harmless
  return reinterpret_cast<void*>(aligned);
}

inline void UnmapLargeArray(void* p, size_t bytes) { ::munmap(p, (bytes + 4095) & ~size_t{4095}); }

// Replaces the pages of a large block (one MapLargeArray made: 2 MiB
// aligned, at least kLargeArrayAlignment bytes) with a private, copy-on-write
// mapping of `bytes` of file `fd` from `offset` (a multiple of 4096): the
// block then reads the file's cached pages, copying one only when it is
// written. The block's deallocation unmaps it as before. False when the
// block is not such a block (then untouched) or mmap failed (then its pages
// may be gone, as a failed MAP_FIXED may leave them: free the block unread).
inline bool MapFileIntoLargeArray(void* block, size_t bytes, int fd, uint64_t offset) {
  if (bytes < kLargeArrayAlignment || reinterpret_cast<uintptr_t>(block) % kLargeArrayAlignment != 0 ||
      offset % 4096 != 0) {
    return false;
  }
  void* mapped = ::mmap(block, (bytes + 4095) & ~size_t{4095}, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                        static_cast<off_t>(offset));
  return mapped == block;
}

template <class T>
class LargeArrayAllocator {
 public:
  using value_type = T;

  LargeArrayAllocator() noexcept = default;
  template <class U>
  LargeArrayAllocator(const LargeArrayAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kLargeArrayAlignment) return static_cast<T*>(MapLargeArray(bytes));
    return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kLargeArrayAlignment) {
      UnmapLargeArray(p, bytes);
    } else {
      ::operator delete(p, std::align_val_t{alignof(T)});
    }
  }

  // Default-initialise (no zeros for trivial types); any other construction
  // as usual.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <class U>
  bool operator==(const LargeArrayAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace zkfleet::runtime
