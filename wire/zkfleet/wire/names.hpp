// Names of the protocol enums as used in zkctl output, logs, metrics and
// command-line options: the enum value name without its prefix
// (WORKER_STATE_DRAINING -> "DRAINING", PRIORITY_HIGH -> "HIGH").
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "zkfleet.pb.h"

namespace zkfleet::wire {

std::string WorkerStateName(proto::WorkerState state);
std::string PriorityName(proto::Priority priority);
std::string JobStateName(proto::JobState state);
std::string ErrorKindName(proto::ErrorKind kind);
// "CIRCOM" or "BELLMAN"; UNSPECIFIED reads as CIRCOM (a peer from before the field).
std::string CircuitKindName(proto::CircuitKind kind);

// Case-insensitive, accepts "high" or "PRIORITY_HIGH". nullopt when unknown.
std::optional<proto::Priority> ParsePriority(std::string_view text);
std::optional<proto::WorkerState> ParseWorkerState(std::string_view text);
std::optional<proto::JobState> ParseJobState(std::string_view text);

// True for SUCCEEDED, FAILED, DEAD_LETTERED and CANCELLED.
bool IsTerminal(proto::JobState state);
// The ends RetryJob may start a new round after: FAILED and DEAD_LETTERED.
inline bool IsRetryable(proto::JobState state) {
  return state == proto::JOB_STATE_FAILED || state == proto::JOB_STATE_DEAD_LETTERED;
}

}  // namespace zkfleet::wire
