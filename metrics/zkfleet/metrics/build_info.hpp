// zkfleet_build_info{version,commit} = 1: which build a process runs, for
// dashboards and for spotting a fleet half-way through a redeploy.
//
// Thread-safety: pure functions; AddBuildInfo as safe as Registry::Add.
#pragma once

#include <string>

#include <prometheus/registry.h>

namespace zkfleet::metrics {

// The project version (CMake project()) and the git commit the binary was
// built from ("unknown" outside a git checkout, unless ZKFLEET_GIT_COMMIT was
// set in the build's environment).
std::string BuildVersion();
std::string BuildCommit();

void AddBuildInfo(prometheus::Registry& registry);

}  // namespace zkfleet::metrics
