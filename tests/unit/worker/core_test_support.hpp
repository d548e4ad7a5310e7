// What the worker core's unit tests share: a memory source with room for
// anything, the outbox taken and filtered, and a stage's events handed to
// the core (the test plays the session's loop).
#pragma once

#include <chrono>
#include <thread>
#include <vector>

#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker::testing {

class PlentyOfMemory : public MemorySource {
 public:
  MemoryReading Read() const override { return {1ull << 40, "test"}; }
};

// What the core sent since the last call.
inline std::vector<proto::Envelope> TakeSent(WorkerCore& core) {
  std::vector<proto::Envelope> sent;
  sent.swap(core.outbox());
  return sent;
}

inline std::vector<proto::Envelope> Only(const std::vector<proto::Envelope>& sent, proto::Envelope::BodyCase kind) {
  std::vector<proto::Envelope> found;
  for (const auto& envelope : sent) {
    if (envelope.body_case() == kind) found.push_back(envelope);
  }
  return found;
}

// Hands the mailbox's events to the core until `count` events of type
// `Event` came (or `timeout` passed); returns how many came.
template <class Event>
size_t HandEventsUntil(WorkerCore& core, size_t count, WorkerCore::Clock::time_point now,
                       std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t seen = 0;
  while (seen < count && std::chrono::steady_clock::now() < deadline) {
    for (PipelineEvent& event : core.mailbox().TakeAll()) {
      if (std::holds_alternative<Event>(event)) ++seen;
      core.OnPipelineEvent(event, now);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return seen;
}

}  // namespace zkfleet::worker::testing
