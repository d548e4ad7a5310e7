// ProgressTicker: calls `tick(seconds since it started)` every `interval` on
// a thread of its own until it is destroyed, so that a long wait with no
// progress of its own to report (a compiler running, a key being read) still
// says it is alive (issue 49: no silent waits).
//
// Thread-safety: `tick` runs on the ticker's thread; the destructor stops it
// and joins, and no tick runs after it returns. Construct and destroy on one
// thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace zkfleet {

class ProgressTicker {
 public:
  ProgressTicker(std::chrono::milliseconds interval, std::function<void(double seconds)> tick)
      : started_(std::chrono::steady_clock::now()), thread_([this, interval, tick = std::move(tick)] {
          std::unique_lock lock(mutex_);
          while (!stop_) {
            if (stopped_.wait_for(lock, interval, [this] { return stop_; })) break;
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
            lock.unlock();
            tick(seconds);
            lock.lock();
          }
        }) {}
  ~ProgressTicker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    stopped_.notify_all();
    thread_.join();
  }
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

 private:
  const std::chrono::steady_clock::time_point started_;
  std::mutex mutex_;
  std::condition_variable stopped_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace zkfleet
