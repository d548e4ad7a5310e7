#include "zkfleet/common/error.hpp"

namespace zkfleet {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kNotFound: return "not_found";
    case ErrorCode::kBadFormat: return "bad_format";
    case ErrorCode::kMismatch: return "mismatch";
    case ErrorCode::kUnsatisfied: return "unsatisfied";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kResourceExhausted: return "resource_exhausted";
    case ErrorCode::kDeviceError: return "device_error";
    case ErrorCode::kDeviceLost: return "device_lost";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kNotLeader: return "not the leader";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

}  // namespace zkfleet
