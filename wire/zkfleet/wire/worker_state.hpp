// The worker's one state machine: what may happen in each proto::WorkerState
// (the one state enum, shared with the protocol, zkctl, logs and metrics) and
// where it leads. The worker's core (WorkerCore) owns the state and changes
// it only through NextState(); anything the table does not allow is a bug,
// logged and ignored, never a silent jump. The broker reads the same table
// through DrainStep(). Thread-safety: pure functions over a constant table.
//
//   STARTING ──memory short──▶ WAITING_FOR_MEMORY ──memory fits──▶ LOADING
//   STARTING ──memory fits──▶ LOADING ──loaded──▶ READY
//   READY ──engine faults──▶ FAULTED            (stays connected, takes no work)
//   STARTING..READY, FAULTED ──drain──▶ DRAINING ──items settled──▶ RELEASING
//   RELEASING ──released──▶ GONE                (keys, then the pool, chunk by chunk)
//   STARTING..LOADING ──start failed──▶ GONE    (memory gate timed out, bad key;
//                                               also after a drain began while loading)
//   any but GONE ──fatal──▶ FAULTED ──leave──▶ GONE  (a lost device: exit non-zero,
//                                                   only a new process can use it)
#pragma once

#include <optional>

#include "zkfleet.pb.h"

namespace zkfleet::wire {

enum class WorkerEvent {
  kMemoryShort,   // the memory gate found too little memory for the pool
  kMemoryFits,    // the gate passed (or there is no pool): load the circuits
  kLoaded,        // every proving key is resident: take work
  kStartFailed,   // the gate timed out or a circuit failed to load
  kEngineFaults,  // too many wrong proofs from the engine within the window
  kDrain,         // SIGTERM/SIGINT or the broker's DrainCommand
  kItemsSettled,  // every held item answered, handed back or aborted
  kReleased,      // proving keys and pool freed
  kFatal,         // a sticky device error: stop taking work, then leave
  kLeave,         // after a fatal error: disconnect and exit non-zero
};

const char* WorkerEventName(WorkerEvent event);

// The state `event` leads to from `from`, or nullopt when the table does not
// allow it there (e.g. a second drain, a fault while draining).
std::optional<proto::WorkerState> NextState(proto::WorkerState from, WorkerEvent event);

// Where `state` sits on the way out that a drain starts, as the table walks
// it (kDrain, then kItemsSettled, then kReleased): 1 DRAINING, 2 RELEASING,
// 3 GONE; 0 for a state off that path (the worker has not begun to leave).
// The broker holds a leaving worker to it: a reported state that is not
// further along is ignored, so a drain only moves forward.
int DrainStep(proto::WorkerState state);

}  // namespace zkfleet::wire
