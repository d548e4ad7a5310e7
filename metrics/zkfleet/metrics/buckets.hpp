// Histogram bucket boundaries for zkfleet's durations, in seconds: about
// 1-2.5-5 per decade from 1 ms to 10 min, the range from a queue wait on an
// idle fleet to a large proof. Changing them breaks the continuity of
// recorded histograms: add buckets, do not move them.
#pragma once

#include <prometheus/histogram.h>

namespace zkfleet::metrics {

inline prometheus::Histogram::BucketBoundaries DurationBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
          2.5,   5,      10,    25,   50,    100,  250, 600};
}

}  // namespace zkfleet::metrics
