#include "zkfleet/metrics/labels.hpp"

namespace zkfleet::metrics {
namespace {

// "WORKER_STATE_READY" minus "WORKER_STATE_" -> "READY". A value the enum
// does not name (a newer peer) becomes "UNKNOWN".
std::string StripPrefix(const std::string& full, std::string_view prefix) {
  if (full.size() > prefix.size() && full.compare(0, prefix.size(), prefix) == 0) return full.substr(prefix.size());
  return "UNKNOWN";
}

}  // namespace

std::string PriorityLabel(proto::Priority priority) {
  return StripPrefix(proto::Priority_Name(priority), "PRIORITY_");
}

std::string WorkerStateLabel(proto::WorkerState state) {
  return StripPrefix(proto::WorkerState_Name(state), "WORKER_STATE_");
}

int PriorityIndex(proto::Priority priority) {
  for (size_t i = 0; i < kPriorities.size(); ++i) {
    if (kPriorities[i] == priority) return static_cast<int>(i);
  }
  static_assert(kPriorities[1] == proto::PRIORITY_NORMAL);
  return 1;  // NORMAL
}

int WorkerStateIndex(proto::WorkerState state) {
  for (size_t i = 0; i < kWorkerStates.size(); ++i) {
    if (kWorkerStates[i] == state) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace zkfleet::metrics
