#include "zkfleet/metrics/state_clocks.hpp"

namespace zkfleet::metrics {
namespace {

// Nanoseconds on the steady clock; never 0, which means "unset".
int64_t Ns(Stopwatch::Clock::time_point t) {
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns > 0 ? ns : 1;
}

}  // namespace

void Stopwatch::Start(Clock::time_point now) {
  if (running()) return;
  stop_ns_.store(0);
  start_ns_.store(Ns(now));
}

void Stopwatch::Stop(Clock::time_point now) {
  if (running()) stop_ns_.store(Ns(now));
}

double Stopwatch::Seconds(Clock::time_point now) const {
  int64_t start = start_ns_.load();
  if (start == 0) return 0;
  int64_t stop = stop_ns_.load();
  int64_t end = stop != 0 ? stop : Ns(now);
  return end > start ? static_cast<double>(end - start) * 1e-9 : 0.0;
}

namespace {

prometheus::MetricFamily GaugeFamily(const char* name, const char* help, double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = prometheus::MetricType::Gauge;
  family.metric.resize(1);
  family.metric[0].gauge.value = value;
  return family;
}

}  // namespace

std::vector<prometheus::MetricFamily> StateClocks::Collect() const {
  auto now = Stopwatch::Clock::now();
  return {GaugeFamily("zkfleet_drain_duration_seconds",
                      "Seconds the worker has been draining (DRAINING + RELEASING); 0 before a drain",
                      drain.Seconds(now)),
          GaugeFamily("zkfleet_memory_wait_seconds",
                      "Seconds the worker has waited for host memory in WAITING_FOR_MEMORY (the last wait "
                      "once it ended); 0 if it never waited",
                      memory_wait.Seconds(now))};
}

}  // namespace zkfleet::metrics
