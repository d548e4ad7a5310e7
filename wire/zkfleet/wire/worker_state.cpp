#include "zkfleet/wire/worker_state.hpp"

namespace zkfleet::wire {
namespace {

using S = proto::WorkerState;

struct Transition {
  S from;
  WorkerEvent event;
  S to;
};

// The whole table; anything else is refused.
constexpr Transition kTransitions[] = {
    {S::WORKER_STATE_STARTING, WorkerEvent::kMemoryShort, S::WORKER_STATE_WAITING_FOR_MEMORY},
    {S::WORKER_STATE_STARTING, WorkerEvent::kMemoryFits, S::WORKER_STATE_LOADING},
    {S::WORKER_STATE_WAITING_FOR_MEMORY, WorkerEvent::kMemoryFits, S::WORKER_STATE_LOADING},
    {S::WORKER_STATE_LOADING, WorkerEvent::kLoaded, S::WORKER_STATE_READY},
    {S::WORKER_STATE_STARTING, WorkerEvent::kStartFailed, S::WORKER_STATE_GONE},
    {S::WORKER_STATE_WAITING_FOR_MEMORY, WorkerEvent::kStartFailed, S::WORKER_STATE_GONE},
    {S::WORKER_STATE_LOADING, WorkerEvent::kStartFailed, S::WORKER_STATE_GONE},
    // Drained while loading, then the load failed: nothing left to release.
    {S::WORKER_STATE_DRAINING, WorkerEvent::kStartFailed, S::WORKER_STATE_GONE},
    {S::WORKER_STATE_RELEASING, WorkerEvent::kStartFailed, S::WORKER_STATE_GONE},
    {S::WORKER_STATE_READY, WorkerEvent::kEngineFaults, S::WORKER_STATE_FAULTED},
    {S::WORKER_STATE_STARTING, WorkerEvent::kDrain, S::WORKER_STATE_DRAINING},
    {S::WORKER_STATE_WAITING_FOR_MEMORY, WorkerEvent::kDrain, S::WORKER_STATE_DRAINING},
    {S::WORKER_STATE_LOADING, WorkerEvent::kDrain, S::WORKER_STATE_DRAINING},
    {S::WORKER_STATE_READY, WorkerEvent::kDrain, S::WORKER_STATE_DRAINING},
    {S::WORKER_STATE_FAULTED, WorkerEvent::kDrain, S::WORKER_STATE_DRAINING},
    {S::WORKER_STATE_DRAINING, WorkerEvent::kItemsSettled, S::WORKER_STATE_RELEASING},
    {S::WORKER_STATE_RELEASING, WorkerEvent::kReleased, S::WORKER_STATE_GONE},
    {S::WORKER_STATE_STARTING, WorkerEvent::kFatal, S::WORKER_STATE_FAULTED},
    {S::WORKER_STATE_WAITING_FOR_MEMORY, WorkerEvent::kFatal, S::WORKER_STATE_FAULTED},
    {S::WORKER_STATE_LOADING, WorkerEvent::kFatal, S::WORKER_STATE_FAULTED},
    {S::WORKER_STATE_READY, WorkerEvent::kFatal, S::WORKER_STATE_FAULTED},
    {S::WORKER_STATE_DRAINING, WorkerEvent::kFatal, S::WORKER_STATE_FAULTED},
    {S::WORKER_STATE_RELEASING, WorkerEvent::kFatal, S::WORKER_STATE_FAULTED},
    {S::WORKER_STATE_FAULTED, WorkerEvent::kLeave, S::WORKER_STATE_GONE},
};

// The way out, event by event, from a state that may be drained.
constexpr WorkerEvent kDrainPath[] = {WorkerEvent::kDrain, WorkerEvent::kItemsSettled, WorkerEvent::kReleased};

}  // namespace

const char* WorkerEventName(WorkerEvent event) {
  switch (event) {
    case WorkerEvent::kMemoryShort: return "memory short";
    case WorkerEvent::kMemoryFits: return "memory fits";
    case WorkerEvent::kLoaded: return "loaded";
    case WorkerEvent::kStartFailed: return "start failed";
    case WorkerEvent::kEngineFaults: return "engine faults";
    case WorkerEvent::kDrain: return "drain";
    case WorkerEvent::kItemsSettled: return "items settled";
    case WorkerEvent::kReleased: return "released";
    case WorkerEvent::kFatal: return "fatal";
    case WorkerEvent::kLeave: return "leave";
  }
  return "?";
}

std::optional<proto::WorkerState> NextState(proto::WorkerState from, WorkerEvent event) {
  for (const Transition& t : kTransitions) {
    if (t.from == from && t.event == event) return t.to;
  }
  return std::nullopt;
}

int DrainStep(proto::WorkerState state) {
  std::optional<S> at = S::WORKER_STATE_READY;
  int step = 0;
  for (WorkerEvent event : kDrainPath) {
    at = NextState(*at, event);
    if (!at) break;
    ++step;
    if (*at == state) return step;
  }
  return 0;
}

}  // namespace zkfleet::wire
