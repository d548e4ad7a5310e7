#include "zkfleet/worker/pinned_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/engine/pinned_memory.hpp"

namespace zkfleet::worker {
namespace {

constexpr size_t kAlignment = 256;  // enough for any DMA or SIMD use

size_t AlignUp(size_t value, size_t alignment) { return (value + alignment - 1) / alignment * alignment; }

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Runs body(t) for t in [0, threads) on `threads` threads (the caller's one
// among them) and joins them.
template <typename Body>
void RunOnThreads(unsigned threads, const Body& body) {
  std::vector<std::thread> helpers;
  helpers.reserve(threads > 0 ? threads - 1 : 0);
  for (unsigned t = 1; t < threads; ++t) helpers.emplace_back([&body, t] { body(t); });
  body(0);
  for (std::thread& helper : helpers) helper.join();
}

// An anonymous mapping of `size` bytes starting on a 2 MiB boundary, so that
// the kernel can back all of it with huge pages. Null (errno set) on failure.
uint8_t* MapAligned(size_t size) {
  const size_t align = static_cast<size_t>(PinnedPool::kHugepageBytes);
  void* raw = mmap(nullptr, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t aligned = AlignUp(start, align);
  // Trim the slack on both sides: the pool then holds exactly `size` bytes.
  if (aligned > start) munmap(raw, aligned - start);
  size_t tail = start + size + align - (aligned + size);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  return reinterpret_cast<uint8_t*>(aligned);
}

}  // namespace

std::optional<PoolModeRequest> ParsePoolModeRequest(std::string_view text) {
  if (text == "auto") return PoolModeRequest::kAuto;
  if (text == "hugepage") return PoolModeRequest::kHugepage;
  if (text == "cuda-host") return PoolModeRequest::kCudaHost;
  if (text == "mmap") return PoolModeRequest::kMmap;
  return std::nullopt;
}

// ------------------------------------------------------------------ PoolBuffer

PoolBuffer& PoolBuffer::operator=(PoolBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = other.pool_;
    data_ = other.data_;
    size_ = other.size_;
    reserved_ = other.reserved_;
    chunk_ = other.chunk_;
    offset_ = other.offset_;
    other.pool_ = nullptr;
    other.data_ = nullptr;
  }
  return *this;
}

void PoolBuffer::Reset() {
  if (pool_ && data_) pool_->GiveBack(chunk_, offset_, reserved_);
  pool_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

// ------------------------------------------------------------------ choosing

bool PinnedPool::TransparentHugepagesUsable(const std::string& path) {
  // The kernel shows e.g. "always [madvise] never": the bracketed word is the
  // setting. With [never] (or no file: no THP in the kernel, gVisor)
  // registering 4 KiB pages is no faster than cudaHostAlloc.
  std::ifstream file(path);
  if (!file) return false;
  std::stringstream text;
  text << file.rdbuf();
  const std::string setting = text.str();
  return setting.find("[always]") != std::string::npos || setting.find("[madvise]") != std::string::npos;
}

PinnedPool::Kind PinnedPool::ChooseKind(bool cuda_backend, PoolModeRequest request,
                                        const std::string& thp_enabled_path) {
  if (!cuda_backend) return Kind::kLockedMmap;  // nothing to register with
  switch (request) {
    case PoolModeRequest::kHugepage: return Kind::kHugepageRegistered;
    case PoolModeRequest::kCudaHost: return Kind::kCudaHost;
    case PoolModeRequest::kMmap: return Kind::kLockedMmap;
    case PoolModeRequest::kAuto: break;
  }
  return TransparentHugepagesUsable(thp_enabled_path) ? Kind::kHugepageRegistered : Kind::kCudaHost;
}

const char* PinnedPool::KindName(Kind kind) {
  switch (kind) {
    case Kind::kHugepageRegistered: return "hugepage-registered";
    case Kind::kCudaHost: return "cuda-host-alloc";
    case Kind::kLockedMmap: return "mmap-locked";
  }
  return "none";
}

const char* PinnedPool::ModeNameLocked() const {
  if (!kind_) return "none";
  if (*kind_ == Kind::kLockedMmap) return locked_ ? "mmap-locked" : "mmap-unlocked";
  if (*kind_ == Kind::kHugepageRegistered && fell_back_) return "cuda-host-alloc";
  return KindName(*kind_);
}

std::string PinnedPool::mode_name() const {
  std::lock_guard lock(mutex_);
  return ModeNameLocked();
}

// ------------------------------------------------------------------ the pool

PinnedPool::~PinnedPool() {
  std::lock_guard lock(mutex_);
  for (Chunk& chunk : chunks_) {
    if (chunk.base) Unpin(chunk.base, chunk.size, chunk.kind);
    chunk.base = nullptr;
  }
  chunks_.clear();
}

void PinnedPool::set_observer(Observer observer) {
  std::lock_guard lock(mutex_);
  observer_ = std::move(observer);
}

void PinnedPool::Notify(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  {
    // Growth and release may notify from two threads: in order, and with the
    // bytes read inside notify_mutex_, the last call carries the final value.
    std::lock_guard ordered(notify_mutex_);
    Observer observer;
    uint64_t bytes = 0;
    {
      std::lock_guard state(mutex_);
      observer = observer_;
      bytes = pool_bytes_;
    }
    if (observer) observer(bytes);
  }
  lock.lock();
}

void PinnedPool::Unpin(uint8_t* base, size_t size, Kind kind) {
  switch (kind) {
    case Kind::kCudaHost:
      engine::PinnedMemory::Free(base, size);
      return;
    case Kind::kHugepageRegistered:
      engine::PinnedMemory::Unregister(base, size);
      munmap(base, size);
      return;
    case Kind::kLockedMmap: munmap(base, size); return;  // munmap unlocks too
  }
}

// Maps, touches and pins `batch` (all of one kind). cudaHostAlloc chunks are
// made on the calling thread; the others are mapped here, touched by
// `threads` threads splitting the batch's pages evenly, then registered or
// mlock'ed one chunk per task on `threads` threads. Failures are recorded in
// each Pending (base null). A chunk not yet registered when `cancel` turns
// true is unmapped and marked cancelled. Runs without the pool's lock.
void PinnedPool::MapBatch(std::vector<Pending>& batch, unsigned threads, const std::atomic<bool>* cancel) {
  if (batch.empty()) return;
  const Kind kind = batch.front().kind;
  if (kind == Kind::kCudaHost) {
    for (Pending& p : batch) {
      // Portable: one pool serves every device of the worker (--gpus).
      p.failure = engine::PinnedMemory::Allocate(p.size, &p.base);
    }
    return;
  }

  for (Pending& p : batch) {
    p.base = MapAligned(p.size);
    if (!p.base) {
      p.failure = std::string("mmap: ") + std::strerror(errno);
      continue;
    }
    // Huge pages: 512x fewer page faults to touch and pages to pin. Advice
    // only; a kernel without THP refuses it and we carry on with 4 KiB pages.
    if (madvise(p.base, p.size, MADV_HUGEPAGE) != 0) {
      spdlog::debug("pinned pool: madvise(MADV_HUGEPAGE) refused: {}", std::strerror(errno));
    }
  }

  // Touch every page so the memory is ours (and counted by the cgroup) now,
  // not on first use; the kernel zeroes pages on fault, and one thread
  // cannot zero fast enough (MAP_POPULATE would be that one thread).
  const size_t page = PageSize();
  std::vector<std::pair<uint8_t*, size_t>> spans;  // the mapped chunks, in order
  size_t total = 0;
  for (const Pending& p : batch) {
    if (p.base) {
      spans.emplace_back(p.base, p.size);
      total += p.size;
    }
  }
  const size_t pages = total / page;
  RunOnThreads(threads, [&](unsigned t) {
    size_t first = pages * t / threads, last = pages * (t + 1) / threads;
    size_t skipped = 0;  // pages of the spans before the current one
    for (const auto& [base, size] : spans) {
      size_t span_pages = size / page;
      size_t begin = std::max(first, skipped), end = std::min(last, skipped + span_pages);
      for (size_t i = begin; i < end; ++i) {
        *static_cast<volatile uint8_t*>(base + (i - skipped) * page) = 0;
      }
      skipped += span_pages;
    }
  });

  // Registering threads must use the caller's device; Portable makes the
  // memory pinned for every context anyway.
  const int device = kind == Kind::kHugepageRegistered ? engine::PinnedMemory::CurrentDevice() : 0;
  std::atomic<size_t> next{0};
  RunOnThreads(std::min<unsigned>(threads, static_cast<unsigned>(batch.size())), [&](unsigned) {
    for (size_t i = next++; i < batch.size(); i = next++) {
      Pending& p = batch[i];
      if (!p.base) continue;
      if (cancel && cancel->load()) {
        munmap(p.base, p.size);
        p.base = nullptr;
        p.cancelled = true;
        continue;
      }
      if (kind == Kind::kLockedMmap) {
        if (mlock(p.base, p.size) != 0) p.mlock_error = errno;
        continue;
      }
      p.failure = engine::PinnedMemory::Register(p.base, p.size, device);
      p.refused = !p.failure.empty();
      if (!p.failure.empty()) {
        munmap(p.base, p.size);
        p.base = nullptr;
      }
    }
  });
}

void PinnedPool::FreeUnused(const std::vector<size_t>& indices, std::unique_lock<std::mutex>& lock) {
  for (auto it = indices.rbegin(); it != indices.rend(); ++it) {
    Chunk& chunk = chunks_[*it];
    if (!chunk.base || chunk.in_use != 0) continue;
    Unpin(chunk.base, chunk.size, chunk.kind);
    chunk.base = nullptr;
    chunk.free.clear();
    pool_bytes_ -= chunk.size;
  }
}

uint64_t PinnedPool::Allocate(uint64_t bytes, Kind kind, const AllocateOptions& options) {
  std::lock_guard allocating(allocate_mutex_);
#ifndef ZKFLEET_HAVE_CUDA
  if (kind != Kind::kLockedMmap) {
    throw Error(ErrorCode::kUnsupported, std::string("pinned pool: ") + KindName(kind) +
                                             " needs the CUDA backend, which this build lacks");
  }
#endif
  const bool touches = kind != Kind::kCudaHost;
  uint64_t chunk_bytes = options.chunk_bytes != 0 ? options.chunk_bytes
                         : touches                ? kDefaultHugepageChunkBytes
                                                  : kDefaultChunkBytes;
  // Registered chunks are whole huge pages, so no 4 KiB tail is pinned apart.
  chunk_bytes = AlignUp(chunk_bytes, kind == Kind::kHugepageRegistered ? kHugepageBytes : PageSize());
  const uint64_t total = AlignUp(bytes, PageSize());
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = std::clamp(options.threads, 1u, hardware);

  std::unique_lock lock(mutex_);
  if (kind_ && *kind_ != kind) {
    if (pool_bytes_ != 0) {
      throw Error(ErrorCode::kInvalidArgument, std::string("pinned pool: cannot grow a ") + KindName(*kind_) +
                                                   " pool with " + KindName(kind) + " chunks");
    }
    fell_back_ = false;
    locked_ = true;
  }
  kind_ = kind;
  growth_left_ = total;

  uint64_t added = 0;
  std::vector<size_t> added_chunks;
  std::string failure;
  uint64_t failed_size = 0;
  while (added < total && failure.empty()) {
    if (options.cancel && options.cancel->load()) break;
    // A batch of up to `threads` chunks: each thread touches and registers
    // its share while the others do theirs. cudaHostAlloc goes one by one.
    const Kind chunk_kind = kind == Kind::kHugepageRegistered && fell_back_ ? Kind::kCudaHost : kind;
    std::vector<Pending> batch;
    uint64_t left = total - added;
    const size_t batch_chunks = chunk_kind == Kind::kCudaHost ? 1 : threads;
    while (batch.size() < batch_chunks && left > 0) {
      Pending p;
      p.size = static_cast<size_t>(std::min(left, chunk_bytes));
      p.kind = chunk_kind;
      left -= p.size;
      pending_bytes_ += p.size;
      batch.push_back(std::move(p));
    }
    alloc_calls_ += batch.size();
    // Pinning runs without the lock (0.06 to 0.4 s per GiB): the socket
    // thread reads stats() for every heartbeat and must not starve behind
    // it, or the broker declares the worker dead.
    lock.unlock();
    MapBatch(batch, threads, options.cancel);
    for (Pending& p : batch) {
      if (!p.refused) continue;
      // Registration refused (a driver or an IOMMU limit, RLIMIT_MEMLOCK):
      // this chunk and the later ones the old way, which works everywhere.
      std::string why = p.failure;
      p.failure.clear();
      p.refused = false;
      p.kind = Kind::kCudaHost;
      std::vector<Pending> retry(1);
      retry[0].size = p.size;
      retry[0].kind = Kind::kCudaHost;
      MapBatch(retry, 1, nullptr);
      p.base = retry[0].base;
      if (!p.base) p.failure = why + "; then " + retry[0].failure;
      lock.lock();
      if (!fell_back_) {
        spdlog::warn("pinned pool: registering a {}-byte chunk failed ({}); pinning it and the later chunks with "
                     "cudaHostAlloc (slower to pin and to release)",
                     p.size, why);
      }
      fell_back_ = true;
      lock.unlock();
    }
    lock.lock();
    for (Pending& p : batch) {
      pending_bytes_ -= p.size;
      if (p.cancelled) continue;
      if (p.mlock_error != 0) {
        if (locked_) {
          spdlog::warn("pinned pool: mlock refused ({}); the pool is allocated but not locked (raise "
                       "RLIMIT_MEMLOCK)",
                       std::strerror(p.mlock_error));
        }
        locked_ = false;
      }
      if (!p.failure.empty()) {
        if (failure.empty()) {
          failure = p.failure;
          failed_size = p.size;
        }
        continue;
      }
      if (!failure.empty()) {
        // A later chunk of a failed batch: not added, given back now.
        Unpin(p.base, p.size, p.kind);
        continue;
      }
      Chunk chunk;
      chunk.base = p.base;
      chunk.size = p.size;
      chunk.kind = p.kind;
      chunk.free[0] = p.size;
      added_chunks.push_back(chunks_.size());
      chunks_.push_back(std::move(chunk));
      pool_bytes_ += p.size;
      growth_left_ -= p.size;
      added += p.size;
      Notify(lock);
    }
  }
  growth_left_ = 0;
  if (failure.empty()) return added;

  if (!options.keep_on_failure) {
    FreeUnused(added_chunks, lock);
    Notify(lock);
  }
  throw Error(ErrorCode::kResourceExhausted,
              "pinned pool: allocating a chunk of " + std::to_string(failed_size) + " bytes (of a " +
                  std::to_string(bytes) + "-byte request, " + std::to_string(added) + " bytes pinned before) failed: " +
                  failure + "; the pool holds " + std::to_string(pool_bytes_) + " bytes");
}

PoolBuffer PinnedPool::Acquire(size_t bytes) {
  PoolBuffer buffer;
  if (bytes == 0) return buffer;
  size_t reserved = AlignUp(bytes, kAlignment);
  std::lock_guard lock(mutex_);
  for (size_t c = 0; c < chunks_.size(); ++c) {
    Chunk& chunk = chunks_[c];
    if (!chunk.base) continue;
    for (auto it = chunk.free.begin(); it != chunk.free.end(); ++it) {
      if (it->second < reserved) continue;
      size_t offset = it->first;
      size_t length = it->second;
      chunk.free.erase(it);
      if (length > reserved) chunk.free[offset + reserved] = length - reserved;
      chunk.in_use += reserved;
      in_use_bytes_ += reserved;
      buffer.pool_ = this;
      buffer.data_ = chunk.base + offset;
      buffer.size_ = bytes;
      buffer.reserved_ = reserved;
      buffer.chunk_ = c;
      buffer.offset_ = offset;
      return buffer;
    }
  }
  return buffer;
}

void PinnedPool::GiveBack(size_t chunk_index, size_t offset, size_t reserved) {
  std::lock_guard lock(mutex_);
  Chunk& chunk = chunks_[chunk_index];
  chunk.in_use -= reserved;
  in_use_bytes_ -= reserved;
  // Insert and merge with the neighbours.
  auto it = chunk.free.emplace(offset, reserved).first;
  auto next = std::next(it);
  if (next != chunk.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    chunk.free.erase(next);
  }
  if (it != chunk.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      chunk.free.erase(it);
    }
  }
}

uint64_t PinnedPool::ReleaseChunk() {
  std::unique_lock lock(mutex_);
  for (size_t c = chunks_.size(); c-- > 0;) {
    Chunk& chunk = chunks_[c];
    if (!chunk.base) continue;
    if (chunk.in_use != 0) continue;  // still used (an aborted proof's witness): the next one
    // Taken out of Acquire's reach now, unpinned without the lock, and only
    // then subtracted: pool_bytes never claims memory the kernel still holds.
    uint8_t* base = chunk.base;
    const size_t size = chunk.size;
    const Kind kind = chunk.kind;
    chunk.base = nullptr;
    chunk.free.clear();
    lock.unlock();
    Unpin(base, size, kind);
    lock.lock();
    pool_bytes_ -= size;
    Notify(lock);
    return pool_bytes_;
  }
  return pool_bytes_;
}

PinnedPool::Stats PinnedPool::stats() const {
  std::lock_guard lock(mutex_);
  Stats stats;
  stats.pool_bytes = pool_bytes_;
  stats.in_use_bytes = in_use_bytes_;
  stats.pending_bytes = pending_bytes_;
  stats.target_bytes = pool_bytes_ + growth_left_;
  stats.alloc_calls = alloc_calls_;
  stats.locked = locked_;
  stats.mode = ModeNameLocked();
  return stats;
}

}  // namespace zkfleet::worker
