// The worker's pinned host pool: allocated within --pinned-budget and locked
// in RAM. It holds the witnesses of the items waiting in the local queue. It
// is allocated in chunks (alloc_calls counts them) so that RELEASING can free
// it chunk by chunk while heartbeats report the bytes still held, and so that
// it can grow in the background: the worker may become READY with part of the
// pool pinned and call Allocate again (from another thread) for the rest.
//
// How it pins (Kind; mode_name() is what heartbeats and metrics show):
//   kHugepageRegistered  "hugepage-registered": anonymous memory, 2 MiB
//                        aligned, madvise(MADV_HUGEPAGE), every page touched
//                        from N threads, then cudaHostRegister per chunk from
//                        N threads. About 7x faster to pin than cudaHostAlloc
//                        (0.058 vs 0.4 s/GiB on the H200 host) and 20x faster
//                        to free, and the kernel takes it back within seconds
//                        of a kill -9 (13 s for cudaHostAlloc'd memory). When
//                        cudaHostRegister is refused, that chunk and the later
//                        ones fall back to cudaHostAlloc (logged).
//   kCudaHost            "cuda-host-alloc": cudaHostAlloc, the old way.
//   kLockedMmap          "mmap-locked" (CPU backend): anonymous memory with
//                        huge-page advice, touched from N threads, mlock'ed;
//                        "mmap-unlocked" when mlock is refused (RLIMIT_MEMLOCK).
// Before the first Allocate the mode is "none". Every CUDA host-memory call
// (alloc, register and their inverses) goes through the engine's
// engine::PinnedMemory (zkfleet/engine/pinned_memory.hpp).
//
// Ownership: the pool owns its chunks and frees them in ReleaseChunk or the
// destructor. PoolBuffers may be destroyed on any thread but must not outlive
// the pool; no Allocate may be running when the pool is destroyed (cancel it
// and join its thread first).
//
// Thread-safety: thread-safe. One Allocate runs at a time (a second one waits
// for the first); Acquire, stats, ReleaseChunk and PoolBuffer destruction may
// run concurrently with it: a chunk joins the pool only once it is pinned, so
// ReleaseChunk never sees, let alone frees, a chunk still being registered.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
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

// What the operator asked for (--pool-mode): auto, hugepage, cuda-host, mmap.
enum class PoolModeRequest { kAuto, kHugepage, kCudaHost, kMmap };

// "auto", "hugepage", "cuda-host" or "mmap"; nullopt for anything else.
std::optional<PoolModeRequest> ParsePoolModeRequest(std::string_view text);

class PinnedPool {
 public:
  enum class Kind { kCudaHost, kHugepageRegistered, kLockedMmap };
  struct Stats {
    uint64_t pool_bytes = 0;     // pinned and not yet released (buffers can use them)
    uint64_t in_use_bytes = 0;   // carved out for buffers
    uint64_t pending_bytes = 0;  // mapped by a running Allocate, not yet in pool_bytes
    uint64_t target_bytes = 0;   // pool_bytes once the running Allocate completes
    uint64_t alloc_calls = 0;    // chunks allocated so far (cudaHostAlloc / mmap calls)
    bool locked = true;          // false when mlock was refused (RLIMIT_MEMLOCK)
    std::string mode = "none";   // mode_name()
  };
  // Called with pool_bytes after every chunk allocated or released, without
  // the pool's lock held (it may call stats()), on the allocating or
  // releasing thread.
  using Observer = std::function<void(uint64_t pool_bytes)>;

  struct AllocateOptions {
    // 0: kDefaultChunkBytes for kCudaHost, kDefaultHugepageChunkBytes for
    // the kinds that map and touch their pages themselves (fewer, larger
    // registrations). Rounded up to 2 MiB for kHugepageRegistered (whole huge
    // pages), to the page size otherwise. Mapped chunks start 2 MiB-aligned.
    uint64_t chunk_bytes = 0;
    // Threads that touch and register; capped by the hardware threads.
    unsigned threads = kDefaultThreads;
    // Checked between chunks: once true, Allocate stops and returns what it
    // pinned so far (a drain does not wait for the pool to finish growing).
    const std::atomic<bool>* cancel = nullptr;
    // On a failure, keep the chunks this call pinned before it (background
    // growth: the worker carries on with a smaller pool) instead of freeing
    // them (at start: nothing is half-allocated).
    bool keep_on_failure = false;
  };

  static constexpr uint64_t kDefaultChunkBytes = 64ull << 20;
  static constexpr uint64_t kDefaultHugepageChunkBytes = 1ull << 30;
  static constexpr uint64_t kHugepageBytes = 2ull << 20;
  static constexpr unsigned kDefaultThreads = 8;
  static constexpr const char* kThpEnabledPath = "/sys/kernel/mm/transparent_hugepage/enabled";

  PinnedPool() = default;
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // The kind for a backend and an operator's request. auto: with CUDA,
  // kHugepageRegistered when transparent huge pages are usable (the file at
  // `thp_enabled_path` shows [always] or [madvise]), else kCudaHost; without
  // CUDA, kLockedMmap. An explicit request is obeyed with CUDA (mmap there
  // gives locked memory the GPU copies from through a staging buffer: slow,
  // for experiments); without CUDA every request gives kLockedMmap.
  static Kind ChooseKind(bool cuda_backend, PoolModeRequest request,
                         const std::string& thp_enabled_path = kThpEnabledPath);
  // Whether the THP file at `path` selects [always] or [madvise].
  static bool TransparentHugepagesUsable(const std::string& path = kThpEnabledPath);
  static const char* KindName(Kind kind);  // "hugepage-registered", ...

  void set_observer(Observer observer);

  // Adds `bytes` (rounded up to pages) to the pool in chunks, pinning them as
  // `kind` says; may be called again to grow the pool (with the same kind
  // while chunks are held). Returns the bytes added: less than asked when
  // `options.cancel` stopped it. Throws zkfleet::Error(kResourceExhausted)
  // naming the call that failed, after freeing what this call pinned (unless
  // keep_on_failure); kInvalidArgument for another kind than the held chunks'.
  uint64_t Allocate(uint64_t bytes, Kind kind, const AllocateOptions& options);
  uint64_t Allocate(uint64_t bytes, Kind kind, uint64_t chunk_bytes = kDefaultChunkBytes) {
    AllocateOptions options;
    options.chunk_bytes = chunk_bytes;
    return Allocate(bytes, kind, options);
  }

  // A buffer of `bytes` from the pool, or an empty one when no chunk has room.
  PoolBuffer Acquire(size_t bytes);

  // Frees the last chunk if no buffer uses it. Returns the pool bytes still
  // held (0 when everything is released). The chunk is unpinned without the
  // lock held, so heartbeats are not held up by cudaHostUnregister.
  uint64_t ReleaseChunk();

  // "hugepage-registered", "cuda-host-alloc", "mmap-locked", "mmap-unlocked"
  // or "none": how the chunks allocated now are pinned (after a fallback from
  // hugepage-registered, "cuda-host-alloc").
  std::string mode_name() const;

  Stats stats() const;

 private:
  friend class PoolBuffer;
  struct Chunk {
    uint8_t* base = nullptr;  // null once released (or being released)
    size_t size = 0;
    size_t in_use = 0;
    Kind kind = Kind::kLockedMmap;  // how this chunk was pinned, so it is freed the same way
    std::map<size_t, size_t> free;  // offset -> length, coalesced
  };
  // A chunk being made by Allocate, not yet in chunks_.
  struct Pending {
    uint8_t* base = nullptr;
    size_t size = 0;
    Kind kind = Kind::kLockedMmap;
    std::string failure;     // empty on success
    int mlock_error = 0;     // kLockedMmap: mapped, but mlock refused
    bool cancelled = false;  // not pinned: the cancel flag was seen first
    bool refused = false;    // cudaHostRegister refused it (failure says why)
  };
  void GiveBack(size_t chunk, size_t offset, size_t reserved);
  static void Unpin(uint8_t* base, size_t size, Kind kind);
  void MapBatch(std::vector<Pending>& batch, unsigned threads, const std::atomic<bool>* cancel);
  void Notify(std::unique_lock<std::mutex>& lock);
  const char* ModeNameLocked() const;
  // Frees the chunks at `indices` that no buffer uses (a failed Allocate).
  void FreeUnused(const std::vector<size_t>& indices, std::unique_lock<std::mutex>& lock);

  std::mutex allocate_mutex_;  // one Allocate at a time
  std::mutex notify_mutex_;    // observer calls in order, the last one with the final bytes
  mutable std::mutex mutex_;   // everything below
  std::optional<Kind> kind_;   // what Allocate was asked for; unset before the first one
  bool fell_back_ = false;     // cudaHostRegister was refused: new chunks use cudaHostAlloc
  std::vector<Chunk> chunks_;  // slots stay (buffers name chunks by index)
  uint64_t pool_bytes_ = 0;
  uint64_t in_use_bytes_ = 0;
  uint64_t pending_bytes_ = 0;
  uint64_t growth_left_ = 0;   // bytes the running Allocate has yet to add to pool_bytes_
  uint64_t alloc_calls_ = 0;
  bool locked_ = true;
  Observer observer_;
};

}  // namespace zkfleet::worker
