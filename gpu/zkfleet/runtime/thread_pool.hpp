// A fixed pool of worker threads for data-parallel loops inside one proof.
//
// Thread-safety: ParallelFor may be called concurrently from several threads
// (several proofs at once share the pool); each call waits only for its own
// chunks, and the calling thread works on its own chunks too, so a call never
// deadlocks waiting for a busy pool.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace zkfleet::cpu {

class ThreadPool {
 public:
  // threads == 0 means std::thread::hardware_concurrency().
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }  // + the caller

  // Runs body(begin, end) over [0, n) split into about `chunks` contiguous
  // ranges (default: 4 per thread), and returns when all have finished.
  // Exceptions thrown by body are rethrown here (the first one).
  void ParallelFor(size_t n, const std::function<void(size_t, size_t)>& body, size_t chunks = 0);

  // Runs task(i) for i in [0, count), one task per index.
  void RunTasks(size_t count, const std::function<void(size_t)>& task);

  // The lowest i < n with !ok(i), or n when every i passes: the checks run
  // in parallel chunks, and a chunk stops at an index past a failure already
  // found. The answer is the one a sequential scan gives.
  template <class Ok>
  uint64_t FirstFailing(uint64_t n, const Ok& ok) {
    std::atomic<uint64_t> first{n};
    ParallelFor(n, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) {
        if (i >= first.load(std::memory_order_relaxed)) return;
        if (!ok(i)) {
          uint64_t seen = first.load();
          while (i < seen && !first.compare_exchange_weak(seen, i)) {
          }
          return;
        }
      }
    });
    return first.load();
  }

 private:
  void WorkerLoop();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
};

}  // namespace zkfleet::cpu
