#include "zkfleet/worker/pinned_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"

#ifdef ZKFLEET_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace zkfleet::worker {
namespace {

constexpr size_t kAlignment = 256;  // enough for any DMA or SIMD use

size_t AlignUp(size_t value, size_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace

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

PinnedPool::~PinnedPool() {
  std::lock_guard lock(mutex_);
  for (Chunk& chunk : chunks_) FreeChunk(chunk);
  chunks_.clear();
}

void PinnedPool::set_observer(Observer observer) {
  std::lock_guard lock(mutex_);
  observer_ = std::move(observer);
}

void PinnedPool::Notify(std::unique_lock<std::mutex>& lock) {
  Observer observer = observer_;
  uint64_t bytes = pool_bytes_;
  lock.unlock();
  if (observer) observer(bytes);
  lock.lock();
}

void PinnedPool::FreeChunk(Chunk& chunk) {
  if (!chunk.base) return;
  if (kind_ == Kind::kCudaHost) {
#ifdef ZKFLEET_HAVE_CUDA
    cudaFreeHost(chunk.base);
#endif
  } else {
    munmap(chunk.base, chunk.size);
  }
  pool_bytes_ -= chunk.size;
  chunk.base = nullptr;
}

void PinnedPool::Allocate(uint64_t bytes, Kind kind, uint64_t chunk_bytes) {
  std::unique_lock lock(mutex_);
  kind_ = kind;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t left = AlignUp(bytes, page);
  chunk_bytes = AlignUp(chunk_bytes, page);
  while (left > 0) {
    size_t size = static_cast<size_t>(std::min(left, chunk_bytes));
    void* base = nullptr;
    ++alloc_calls_;
    std::string failure;
    int mlock_error = 0;
    // The allocation itself (0.4 s per GiB with cudaHostAlloc) runs without
    // the lock: the socket thread reads stats() for every heartbeat and must
    // not starve behind it, or the broker declares the worker dead.
    lock.unlock();
    if (kind == Kind::kCudaHost) {
#ifdef ZKFLEET_HAVE_CUDA
      cudaError_t status = cudaHostAlloc(&base, size, cudaHostAllocDefault);
      if (status != cudaSuccess) failure = std::string("cudaHostAlloc: ") + cudaGetErrorString(status);
#else
      failure = "this build has no CUDA backend";
#endif
    } else {
      // MAP_POPULATE commits the pages now, so the memory is really ours (and
      // counted by the cgroup) from the start, not on first touch.
      base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (base == MAP_FAILED) {
        base = nullptr;
        failure = std::string("mmap: ") + std::strerror(errno);
      } else if (mlock(base, size) != 0) {
        mlock_error = errno;
      }
    }
    lock.lock();
    if (mlock_error != 0) {
      if (locked_) {
        spdlog::warn("pinned pool: mlock refused ({}); the pool is allocated but not locked (raise RLIMIT_MEMLOCK)",
                     std::strerror(mlock_error));
      }
      locked_ = false;
    }
    if (!base) {
      for (Chunk& chunk : chunks_) FreeChunk(chunk);
      chunks_.clear();
      throw Error(ErrorCode::kResourceExhausted, "pinned pool: allocating a chunk of " + std::to_string(size) +
                                                     " bytes (of a " + std::to_string(bytes) +
                                                     "-byte budget) failed: " + failure);
    }
    Chunk chunk;
    chunk.base = static_cast<uint8_t*>(base);
    chunk.size = size;
    chunk.free[0] = size;
    chunks_.push_back(std::move(chunk));
    pool_bytes_ += size;
    left -= size;
    Notify(lock);
  }
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
    if (chunk.in_use != 0) return pool_bytes_;  // still used; the caller retries
    FreeChunk(chunk);
    Notify(lock);
    return pool_bytes_;
  }
  return pool_bytes_;
}

PinnedPool::Stats PinnedPool::stats() const {
  std::lock_guard lock(mutex_);
  return {pool_bytes_, in_use_bytes_, alloc_calls_, locked_};
}

}  // namespace zkfleet::worker
