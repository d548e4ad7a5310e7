#include "zkfleet/wire/names.hpp"

#include <algorithm>
#include <cctype>

namespace zkfleet::wire {
namespace {

// "WORKER_STATE_READY" minus "WORKER_STATE_" -> "READY".
std::string StripPrefix(const std::string& full, std::string_view prefix) {
  if (full.size() > prefix.size() && full.compare(0, prefix.size(), prefix) == 0) {
    return full.substr(prefix.size());
  }
  return full.empty() ? "UNKNOWN" : full;
}

std::string Upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
  return out;
}

}  // namespace

std::string WorkerStateName(proto::WorkerState state) {
  return StripPrefix(proto::WorkerState_Name(state), "WORKER_STATE_");
}
std::string PriorityName(proto::Priority priority) {
  return StripPrefix(proto::Priority_Name(priority), "PRIORITY_");
}
std::string JobStateName(proto::JobState state) {
  return StripPrefix(proto::JobState_Name(state), "JOB_STATE_");
}
std::string ErrorKindName(proto::ErrorKind kind) {
  return StripPrefix(proto::ErrorKind_Name(kind), "ERROR_KIND_");
}

std::string CircuitKindName(proto::CircuitKind kind) {
  if (kind == proto::CIRCUIT_KIND_UNSPECIFIED) kind = proto::CIRCUIT_KIND_CIRCOM;
  return StripPrefix(proto::CircuitKind_Name(kind), "CIRCUIT_KIND_");
}

std::optional<proto::Priority> ParsePriority(std::string_view text) {
  std::string name = Upper(text);
  if (name.rfind("PRIORITY_", 0) != 0) name = "PRIORITY_" + name;
  proto::Priority value;
  if (!proto::Priority_Parse(name, &value) || value == proto::PRIORITY_UNSPECIFIED) return std::nullopt;
  return value;
}

std::optional<proto::JobState> ParseJobState(std::string_view text) {
  std::string name = Upper(text);
  if (name.rfind("JOB_STATE_", 0) != 0) name = "JOB_STATE_" + name;
  proto::JobState value;
  if (!proto::JobState_Parse(name, &value) || value == proto::JOB_STATE_UNSPECIFIED) return std::nullopt;
  return value;
}

std::optional<proto::WorkerState> ParseWorkerState(std::string_view text) {
  std::string name = Upper(text);
  if (name.rfind("WORKER_STATE_", 0) != 0) name = "WORKER_STATE_" + name;
  proto::WorkerState value;
  if (!proto::WorkerState_Parse(name, &value) || value == proto::WORKER_STATE_UNSPECIFIED) return std::nullopt;
  return value;
}

bool IsTerminal(proto::JobState state) {
  return state == proto::JOB_STATE_SUCCEEDED || state == proto::JOB_STATE_FAILED ||
         state == proto::JOB_STATE_DEAD_LETTERED || state == proto::JOB_STATE_CANCELLED ||
         state == proto::JOB_STATE_EXPIRED;
}

}  // namespace zkfleet::wire
