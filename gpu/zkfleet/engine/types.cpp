// Names of the engine's Backend and KeyCheck enums (CudaAvailable lives in cuda_available.cpp).
#include "zkfleet/engine/types.hpp"

#include <string>

#include "zkfleet/common/error.hpp"

namespace zkfleet::engine {

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kCpu: return "cpu";
    case Backend::kCuda: return "cuda";
    case Backend::kAuto: return "auto";
  }
  return "unknown";
}

const char* KeyCheckName(KeyCheck check) {
  switch (check) {
    case KeyCheck::kSkipped: return "skipped";
    case KeyCheck::kChecked: return "checked";
    case KeyCheck::kRemembered: return "remembered";
  }
  return "unknown";
}

Backend ParseBackend(std::string_view name) {
  for (Backend b : {Backend::kCpu, Backend::kCuda, Backend::kAuto}) {
    if (name == BackendName(b)) return b;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "backend: expected one of cpu, cuda, auto; found \"" + std::string(name) + "\"");
}

}  // namespace zkfleet::engine
