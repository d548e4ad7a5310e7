#include "zkfleet/metrics/build_info.hpp"

#include <prometheus/gauge.h>

#include "zkfleet/metrics/build_info_generated.hpp"  // from metrics/generate_build_info.cmake

namespace zkfleet::metrics {

std::string BuildVersion() { return ZKFLEET_BUILD_VERSION; }
std::string BuildCommit() { return ZKFLEET_BUILD_GIT_COMMIT; }

void AddBuildInfo(prometheus::Registry& registry) {
  prometheus::BuildGauge()
      .Name("zkfleet_build_info")
      .Help("Always 1; the labels say which zkfleet build this process runs")
      .Register(registry)
      .Add({{"version", BuildVersion()}, {"commit", BuildCommit()}})
      .Set(1);
}

}  // namespace zkfleet::metrics
