// Reading values back from MetricsServer::Collect() in tests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

namespace zkfleet::testing {

using LabelMap = std::map<std::string, std::string>;

inline LabelMap LabelsOf(const prometheus::ClientMetric& metric) {
  LabelMap labels;
  for (const auto& label : metric.label) labels[label.name] = label.value;
  return labels;
}

// The series of family `name` with exactly `labels`; nullopt when absent.
inline std::optional<prometheus::ClientMetric> FindSeries(const std::vector<prometheus::MetricFamily>& families,
                                                          const std::string& name, const LabelMap& labels) {
  for (const auto& family : families) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      if (LabelsOf(metric) == labels) return metric;
    }
  }
  return std::nullopt;
}

// Counter or gauge value; NaN-free: -1 when the series is absent.
inline double ValueOf(const std::vector<prometheus::MetricFamily>& families, const std::string& name,
                      const LabelMap& labels = {}) {
  for (const auto& family : families) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      if (LabelsOf(metric) != labels) continue;
      switch (family.type) {
        case prometheus::MetricType::Counter: return metric.counter.value;
        case prometheus::MetricType::Gauge: return metric.gauge.value;
        case prometheus::MetricType::Histogram: return static_cast<double>(metric.histogram.sample_count);
        default: return -1;
      }
    }
  }
  return -1;
}

inline size_t SeriesCount(const std::vector<prometheus::MetricFamily>& families) {
  size_t count = 0;
  for (const auto& family : families) count += family.metric.size();
  return count;
}

}  // namespace zkfleet::testing
