// HostPool: host memory for staging buffers (witnesses in, proofs out),
// reserved once when a worker starts and carved into blocks, so that the
// proving path never asks the OS (or the CUDA driver) for memory.
//
//   memory::HostPool pool(8ull << 30, memory::HostPool::Backing::kPinned);
//   memory::HostPool::Block b = pool.Allocate(witness_bytes);
//   ... use b.data ...
//   pool.Free(b);
//   pool.Release(256 << 20, [](uint64_t held) { log(held); });  // at shutdown
//
// Backing:
//   kPinned   cudaHostAlloc (page-locked, DMA-able by the GPU at full speed);
//             counted in cuda::AllocationStats(). Needs a CUDA build
//             (ZKFLEET_HAVE_CUDA) and a device, else throws kUnsupported.
//   kPageable mmap + mlock. mlock needs CAP_IPC_LOCK or a large enough
//             RLIMIT_MEMLOCK; when it fails the pool keeps the mapping and
//             touches every page instead (resident now, but swappable), and
//             stats().lock_failed says so.
// The reservation is made of segments of `segment_bytes` (default: one
// segment for everything); a block lies within one segment, and Release
// frees memory segment by segment (pinned) or chunk by chunk (pageable).
//
// Allocation: first fit over a free list kept sorted by offset, blocks
// rounded up to 256 bytes, neighbours coalesced on Free.
//
// Ownership: the pool owns all its memory; blocks point into it and must
// not be used after Free, Release or the pool's destruction.
// Thread-safety: every member function may be called from any thread (one
// internal mutex).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "zkfleet/common/error.hpp"
#if defined(ZKFLEET_HAVE_CUDA)
#include "zkfleet/cuda/device.hpp"
#endif

namespace zkfleet::memory {

class HostPool {
 public:
  enum class Backing { kPinned, kPageable };

  struct Block {
    void* data = nullptr;
    size_t bytes = 0;
  };

  struct Stats {
    uint64_t bytes_total = 0;   // currently reserved (drops during Release)
    uint64_t bytes_in_use = 0;  // in allocated blocks
    uint64_t alloc_calls = 0;   // successful Allocate calls
    uint64_t free_calls = 0;
    uint64_t failed_allocs = 0;  // Allocate calls that found no room
    Backing backing = Backing::kPageable;
    bool lock_failed = false;  // kPageable: mlock refused, pages were touched instead
    int lock_errno = 0;
  };

  static constexpr size_t kAlign = 256;

  HostPool(size_t bytes, Backing backing, size_t segment_bytes = 0) {
    stats_.backing = backing;
    if (bytes == 0) return;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (segment_bytes == 0 || segment_bytes > bytes) segment_bytes = bytes;
    segment_bytes = RoundUp(segment_bytes, page);
    try {
      for (size_t reserved = 0; reserved < bytes; reserved += segment_bytes) {
        segments_.push_back(Segment{Reserve(segment_bytes, backing), segment_bytes, {}, {}});
        segments_.back().free[0] = segment_bytes;
        stats_.bytes_total += segment_bytes;
      }
    } catch (...) {
      for (Segment& s : segments_) Unreserve(s.base, s.bytes, backing);
      throw;
    }
  }
  ~HostPool() {
    for (Segment& s : segments_) {
      if (s.base) Unreserve(s.base, s.bytes, stats_.backing);
    }
  }
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  // A block of at least `bytes`. Throws kResourceExhausted when no free
  // range of one segment is large enough.
  Block Allocate(size_t bytes) {
    const size_t need = RoundUp(std::max<size_t>(bytes, 1), kAlign);
    std::lock_guard<std::mutex> lock(mu_);
    for (Segment& s : segments_) {
      for (auto it = s.free.begin(); it != s.free.end(); ++it) {
        if (it->second < need) continue;
        const size_t offset = it->first, len = it->second;
        s.free.erase(it);
        if (len > need) s.free[offset + need] = len - need;
        s.used_blocks[offset] = need;
        stats_.bytes_in_use += need;
        stats_.alloc_calls++;
        return Block{static_cast<char*>(s.base) + offset, need};
      }
    }
    stats_.failed_allocs++;
    throw Error(ErrorCode::kResourceExhausted, "host pool: no free range of " + std::to_string(need) + " bytes (" +
                                                   std::to_string(stats_.bytes_in_use) + " of " +
                                                   std::to_string(stats_.bytes_total) + " bytes in use)");
  }

  // Returns a block from Allocate. Throws kInvalidArgument for anything
  // else (a block of another pool, a part of a block, a double free).
  void Free(const Block& block) {
    if (!block.data) return;
    std::lock_guard<std::mutex> lock(mu_);
    for (Segment& s : segments_) {
      char* base = static_cast<char*>(s.base);
      char* p = static_cast<char*>(block.data);
      if (!base || p < base || p >= base + s.bytes) continue;
      size_t offset = static_cast<size_t>(p - base);
      auto used = s.used_blocks.find(offset);
      if (used == s.used_blocks.end() || used->second != block.bytes) break;
      s.used_blocks.erase(used);
      size_t len = block.bytes;
      auto next = s.free.lower_bound(offset);
      if (next != s.free.end() && next->first == offset + len) {  // merge with the right neighbour
        len += next->second;
        next = s.free.erase(next);
      }
      if (next != s.free.begin()) {  // merge with the left neighbour
        auto prev = std::prev(next);
        if (prev->first + prev->second == offset) {
          offset = prev->first;
          len += prev->second;
          s.free.erase(prev);
        }
      }
      s.free[offset] = len;
      stats_.bytes_in_use -= block.bytes;
      stats_.free_calls++;
      return;
    }
    throw Error(ErrorCode::kInvalidArgument, "host pool: Free of a block this pool did not hand out (or a double free)");
  }

  // Gives the memory back to the OS, about chunk_bytes at a time (pinned:
  // one whole segment at a time), calling progress(bytes still held) after
  // each step. Every block must have been freed (throws kInvalidArgument
  // otherwise). Afterwards Allocate fails.
  void Release(size_t chunk_bytes, const std::function<void(uint64_t)>& progress) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stats_.bytes_in_use) {
      throw Error(ErrorCode::kInvalidArgument,
                  "host pool: Release with " + std::to_string(stats_.bytes_in_use) + " bytes still in use");
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    chunk_bytes = RoundUp(std::max<size_t>(chunk_bytes, page), page);
    for (Segment& s : segments_) {
      if (!s.base) continue;
      if (stats_.backing == Backing::kPinned) {
        Unreserve(s.base, s.bytes, Backing::kPinned);
        stats_.bytes_total -= s.bytes;
      } else {
        // munmap may release any page-aligned part of a mapping.
        for (size_t off = 0; off < s.bytes; off += chunk_bytes) {
          const size_t len = std::min(chunk_bytes, s.bytes - off);
          munmap(static_cast<char*>(s.base) + off, len);
          stats_.bytes_total -= len;
          if (progress && off + len < s.bytes) progress(stats_.bytes_total);
        }
      }
      s.base = nullptr;
      s.free.clear();
      if (progress) progress(stats_.bytes_total);
    }
  }

  Stats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  struct Segment {
    void* base;
    size_t bytes;
    std::map<size_t, size_t> free;         // offset -> length, disjoint and not adjacent
    std::map<size_t, size_t> used_blocks;  // offset -> length of blocks handed out
  };

  static size_t RoundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

  void* Reserve(size_t bytes, Backing backing) {
    if (backing == Backing::kPinned) {
#if defined(ZKFLEET_HAVE_CUDA)
      return cuda::PinnedAlloc(bytes, "host pool");
#else
      throw Error(ErrorCode::kUnsupported, "host pool: pinned memory needs a CUDA build");
#endif
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      throw Error(ErrorCode::kResourceExhausted,
                  "host pool: mmap of " + std::to_string(bytes) + " bytes failed (errno " + std::to_string(errno) + ")");
    }
    if (mlock(p, bytes) != 0) {
      // No privilege or RLIMIT_MEMLOCK too small: make the pages resident
      // now so the first proofs do not pay for page faults.
      stats_.lock_failed = true;
      stats_.lock_errno = errno;
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      for (size_t off = 0; off < bytes; off += page) static_cast<volatile char*>(p)[off] = 0;
    }
    return p;
  }

  static void Unreserve(void* p, size_t bytes, Backing backing) {
    if (!p) return;
    if (backing == Backing::kPinned) {
#if defined(ZKFLEET_HAVE_CUDA)
      cuda::PinnedFree(p, bytes);
#endif
      return;
    }
    munmap(p, bytes);  // also unlocks
  }

  mutable std::mutex mu_;
  std::vector<Segment> segments_;
  Stats stats_;  // guarded by mu_
};

}  // namespace zkfleet::memory
