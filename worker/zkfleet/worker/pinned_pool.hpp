// The worker's pinned host pool: allocated once at start within
// --pinned-budget and locked in RAM, cudaHostAlloc with the CUDA backend (so
// the device can DMA from it) or mmap + mlock on CPU-only hosts. It holds the
// witnesses of the items waiting in the local queue. It is allocated in chunks
// (alloc_calls counts them) so that RELEASING can free it chunk by chunk while
// heartbeats report the bytes still held.
//
// Thread-safety: thread-safe (one mutex). PoolBuffers may be destroyed on any
// thread but must not outlive the pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string_view>
#include <vector>

namespace zkfleet::worker {

class PinnedPool;

// A piece of the pool, returned to it when destroyed. Move-only.
class PoolBuffer {
 public:
  PoolBuffer() = default;
  PoolBuffer(PoolBuffer&& other) noexcept { *this = std::move(other); }
  PoolBuffer& operator=(PoolBuffer&& other) noexcept;
  ~PoolBuffer() { Reset(); }

  explicit operator bool() const { return data_ != nullptr; }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  void Reset();  // gives the bytes back now

 private:
  friend class PinnedPool;
  PinnedPool* pool_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;      // bytes asked for
  size_t reserved_ = 0;  // bytes carved (aligned)
  size_t chunk_ = 0;
  size_t offset_ = 0;
};

class PinnedPool {
 public:
  enum class Kind { kCudaHost, kLockedMmap };
  struct Stats {
    uint64_t pool_bytes = 0;    // allocated and not yet released
    uint64_t in_use_bytes = 0;  // carved out for buffers
    uint64_t alloc_calls = 0;   // cudaHostAlloc / mmap calls so far
    bool locked = true;         // false when mlock was refused (RLIMIT_MEMLOCK)
  };
  // Called with pool_bytes after every chunk allocated or released.
  using Observer = std::function<void(uint64_t pool_bytes)>;

  static constexpr uint64_t kDefaultChunkBytes = 64ull << 20;

  PinnedPool() = default;
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  void set_observer(Observer observer);

  // Allocates `bytes` (rounded up to pages) in chunks of at most
  // `chunk_bytes`. Throws zkfleet::Error(kResourceExhausted) naming the call
  // that failed; what was allocated before the failure is freed.
  void Allocate(uint64_t bytes, Kind kind, uint64_t chunk_bytes = kDefaultChunkBytes);

  // A buffer of `bytes` from the pool, or an empty one when no chunk has room.
  PoolBuffer Acquire(size_t bytes);

  // Frees the last chunk if no buffer uses it. Returns the pool bytes still
  // held (0 when everything is released).
  uint64_t ReleaseChunk();

  Stats stats() const;

 private:
  friend class PoolBuffer;
  struct Chunk {
    uint8_t* base = nullptr;
    size_t size = 0;
    size_t in_use = 0;
    std::map<size_t, size_t> free;  // offset -> length, coalesced
  };
  void GiveBack(size_t chunk, size_t offset, size_t reserved);
  void FreeChunk(Chunk& chunk);
  void Notify(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mutex_;
  Kind kind_ = Kind::kLockedMmap;
  std::vector<Chunk> chunks_;
  uint64_t pool_bytes_ = 0;
  uint64_t in_use_bytes_ = 0;
  uint64_t alloc_calls_ = 0;
  bool locked_ = true;
  Observer observer_;
};

}  // namespace zkfleet::worker
