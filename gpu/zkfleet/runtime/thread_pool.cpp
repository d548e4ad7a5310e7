#include "zkfleet/runtime/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>

namespace zkfleet::cpu {

ThreadPool::ThreadPool(int threads) {
  int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (n < 1) n = 1;
  for (int i = 0; i < n - 1; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::WorkerLoop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

namespace {
// Shared state of one RunTasks call. Tasks are claimed through `next`, so the
// caller and the pool threads split them dynamically.
struct Batch {
  size_t count = 0;
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;  // guarded by mu
  const std::function<void(size_t)>* task = nullptr;

  void Drain() {
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= count) return;
      try {
        (*task)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
      }
      if (done.fetch_add(1) + 1 == count) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  }
};
}  // namespace

void ThreadPool::RunTasks(size_t count, const std::function<void(size_t)>& task) {
  if (count == 0) return;
  auto batch = std::make_shared<Batch>();
  batch->count = count;
  batch->task = &task;
  size_t helpers = std::min(workers_.size(), count - 1);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < helpers; ++i) queue_.emplace_back([batch] { batch->Drain(); });
  }
  if (helpers == 1) cv_.notify_one(); else if (helpers > 1) cv_.notify_all();
  batch->Drain();
  std::unique_lock<std::mutex> lock(batch->mu);
  batch->cv.wait(lock, [&] { return batch->done.load() == count; });
  if (batch->error) std::rethrow_exception(batch->error);
}

void ThreadPool::ParallelFor(size_t n, const std::function<void(size_t, size_t)>& body, size_t chunks) {
  if (n == 0) return;
  if (chunks == 0) chunks = static_cast<size_t>(size()) * 4;
  chunks = std::max<size_t>(1, std::min(chunks, n));
  size_t step = (n + chunks - 1) / chunks;
  chunks = (n + step - 1) / step;
  RunTasks(chunks, [&](size_t c) {
    size_t begin = c * step;
    size_t end = std::min(n, begin + step);
    body(begin, end);
  });
}

}  // namespace zkfleet::cpu
