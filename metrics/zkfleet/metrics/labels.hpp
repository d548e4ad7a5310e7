// The bounded label values of zkfleet's metrics. Every label a metric carries
// takes its values from one of these sets (or from the configured circuits,
// see CircuitLabels), so the number of series is fixed at start.
//
// Worker states and priorities are the proto enums' names without their
// prefix (WORKER_STATE_DRAINING -> "DRAINING"), as in zkctl output and logs.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "zkfleet.pb.h"

namespace zkfleet::metrics {

// Label value of a priority / worker state: the enum name minus its prefix.
std::string PriorityLabel(proto::Priority priority);
std::string WorkerStateLabel(proto::WorkerState state);

// Position of a value in kPriorities / kWorkerStates below. A priority the
// broker would treat as NORMAL (UNSPECIFIED, unknown) maps to NORMAL; a state
// without series (UNSPECIFIED, unknown) maps to -1.
int PriorityIndex(proto::Priority priority);
int WorkerStateIndex(proto::WorkerState state);

// Every priority and worker state that gets a series (UNSPECIFIED does not:
// the broker treats it as NORMAL, and no worker is ever in it).
inline constexpr std::array<proto::Priority, 4> kPriorities = {
    proto::PRIORITY_LOW, proto::PRIORITY_NORMAL, proto::PRIORITY_HIGH, proto::PRIORITY_CRITICAL};
inline constexpr std::array<proto::WorkerState, 8> kWorkerStates = {
    proto::WORKER_STATE_STARTING, proto::WORKER_STATE_WAITING_FOR_MEMORY, proto::WORKER_STATE_LOADING,
    proto::WORKER_STATE_READY,    proto::WORKER_STATE_DRAINING,           proto::WORKER_STATE_RELEASING,
    proto::WORKER_STATE_GONE,     proto::WORKER_STATE_FAULTED};

// Proving phases of zkfleet_job_phase_seconds{phase}; the fields of
// proto::PhaseTimings, in order.
enum class Phase { kQueueWait, kWitnessTransfer, kBuildAbc, kNtt, kMsm, kProveTotal };
inline constexpr std::array<std::string_view, 6> kPhaseLabels = {
    "queue_wait", "witness_transfer", "build_abc", "ntt", "msm", "prove_total"};

// Why the broker ended a job unsuccessfully: zkfleet_jobs_failed_total{reason}.
//   prove_error:   a worker reported a non-retryable failure (bad witness,
//                  prover error): the job's fault, not retried.
//   dead_lettered: its attempts were used up (workers died or failed it).
enum class FailReason { kProveError, kDeadLettered, kExpired };
inline constexpr std::array<std::string_view, 3> kFailReasonLabels = {"prove_error", "dead_lettered", "expired"};

// Why a frame was dropped unread: zkfleet_messages_dropped_total{reason}.
//   malformed: not a protobuf Envelope, or the wrong number of frames;
//   oversized: above --max-message-bytes;
//   version:   another protocol version.
enum class DropReason { kMalformed, kOversized, kVersion };
inline constexpr std::array<std::string_view, 3> kDropReasonLabels = {"malformed", "oversized", "version"};

// How a work item ended on a worker: zkfleet_worker_jobs_total{outcome}.
//   succeeded:   proof sent;
//   failed:      non-retryable error (the job's fault);
//   error:       retryable error (the worker's fault, e.g. a device error);
//   handed_back: never started, returned to the broker by a drain;
//   aborted:     started, aborted by a drain timeout and handed back.
enum class Outcome { kSucceeded, kFailed, kError, kHandedBack, kAborted };
inline constexpr std::array<std::string_view, 5> kOutcomeLabels = {"succeeded", "failed", "error", "handed_back",
                                                                    "aborted"};

// How a worker's pinned pool is pinned: zkfleet_worker_pool_mode{mode}, the
// values of proto::MemoryStatus.pool_mode (PinnedPool::mode_name()).
inline constexpr std::array<std::string_view, 5> kPoolModeLabels = {
    "hugepage-registered", "cuda-host-alloc", "mmap-locked", "mmap-unlocked", "none"};

// Circuit label value used once the configured number of distinct circuits
// is reached, so a stream of unknown circuit ids cannot grow the series set.
inline constexpr std::string_view kOtherCircuitLabel = "_other";

// The series set of `circuit_id` in `circuits` (a map from circuit label to
// the struct of its series), created with make(set, label) on first use.
// Past `max_circuits` distinct circuits every new id shares the "_other"
// set (created at the first such id, so it is one of max_circuits + 1).
// The caller holds the lock that guards `circuits`.
template <class Map, class Make>
typename Map::mapped_type& BoundedCircuitSeries(Map& circuits, size_t max_circuits, const std::string& circuit_id,
                                                Make&& make) {
  auto it = circuits.find(circuit_id);
  if (it != circuits.end()) return it->second;
  const std::string label = circuits.size() < max_circuits ? circuit_id : std::string(kOtherCircuitLabel);
  if (label != circuit_id) {
    auto other = circuits.find(label);
    if (other != circuits.end()) return other->second;
  }
  auto& series = circuits[label];
  make(series, label);
  return series;
}

}  // namespace zkfleet::metrics
