// StateClocks: how long the current (or last) drain and memory wait have
// lasted, computed when Prometheus scrapes, so the values keep growing even
// if the worker's own threads are stuck, which is exactly when the alerts on
// them matter. Exported as zkfleet_drain_duration_seconds and
// zkfleet_memory_wait_seconds (gauges).
//
// Thread-safety: Start/Stop from one thread at a time (the worker's state
// owner); Seconds/Collect from any thread (the HTTP threads): the timestamps
// are atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

namespace zkfleet::metrics {

// One stopwatch: 0 before its first Start, growing while running, frozen at
// its last length after Stop.
class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts unless already running (a second DRAINING report keeps the start).
  void Start(Clock::time_point now = Clock::now());
  // Stops if running.
  void Stop(Clock::time_point now = Clock::now());
  double Seconds(Clock::time_point now = Clock::now()) const;
  bool running() const { return start_ns_.load() != 0 && stop_ns_.load() == 0; }

 private:
  std::atomic<int64_t> start_ns_{0};  // 0: never started
  std::atomic<int64_t> stop_ns_{0};   // 0: running (or never started)
};

class StateClocks : public prometheus::Collectable {
 public:
  Stopwatch drain;        // first DRAINING/RELEASING until GONE
  Stopwatch memory_wait;  // WAITING_FOR_MEMORY

  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace zkfleet::metrics
