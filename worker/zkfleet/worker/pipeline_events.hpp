// What the worker's own threads tell its core (WorkerCore::OnPipelineEvent):
// the proving pipeline's start, proofs and releases, the witness stages'
// prepared items, and the end of a run-time circuit change. One small struct
// per event; PipelineEvent is the variant of them, which the core handles in
// one std::visit. An event names its item (wire::ItemRef) and never carries a
// lease: the core holds the only copy and stamps it (worker_core.hpp).
//
// The witness stages (fetch_stage.hpp, generate_stage.hpp) say how their work
// ended in the core's terms (WitnessPrepared: ready, the job's fault, or
// retryable), so that the core has one path for a prepared witness and this
// header knows nothing of fetching or of witness generation.
//
// Thread-safety: plain values, moved through the EventMailbox.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "zkfleet.pb.h"
#include "zkfleet/common/mailbox.hpp"
#include "zkfleet/wire/work_key.hpp"
#include "zkfleet/wire/worker_state.hpp"
#include "zkfleet/worker/local_queue.hpp"

namespace zkfleet::worker {

namespace events {

// Startup: the memory gate's verdict (kMemoryShort or kMemoryFits).
struct MemoryGate {
  wire::WorkerEvent verdict = wire::WorkerEvent::kMemoryFits;
};

// The proving keys are resident and the pool is ready: the worker may take work.
struct KeysLoaded {};

// The worker cannot start (memory gate timeout, a bad key, the pool).
struct StartFailed {
  std::string why;
};

// A lane began proving an item on a device (an index in CircuitSet::devices()).
struct ProofStarted {
  wire::ItemRef ref;
  int device = -1;
};

// A lane finished an item: its result is ready to send.
struct ProofFinished {
  wire::ItemRef ref;
  int device = -1;
  proto::Result result;      // its item (without a lease), circuit and request id
  double verify_s = 0;       // the check before sending (0 when off)
  std::string engine_fault;  // the engine's first proof was wrong (re-proved on the CPU)
  bool device_lost = false;  // a sticky device error: the device leaves the set
  std::string local_error;   // the error with this host's paths (result's has them removed): for the log
};

// A device's lanes have stopped and its keys are freed.
struct DeviceReleased {
  int device = -1;
  uint64_t bytes = 0;
};

// Every lane has stopped; the last freed `bytes` of proving keys.
struct KeysReleased {
  uint64_t bytes = 0;
};

// Where a witness is prepared before a lane proves it.
enum class WitnessSource {
  kFetched,    // by reference (proto::WitnessRef): the fetch stage
  kGenerated,  // from inputs (proto::Job::input_json): the generate stage
};
inline const char* WitnessSourceName(WitnessSource source) {
  return source == WitnessSource::kFetched ? "fetched" : "generated";
}

// How a witness stage's work on an item ended, in the core's terms.
enum class WitnessVerdict {
  kReady,      // the item's buffer holds its witness
  kJobFault,   // the job's own fault (its reference, its input): failed, never retried
  kRetryable,  // this worker's trouble, or cancelled: another worker may manage
};

// A witness stage is done with an item (or cancelled it).
struct WitnessPrepared {
  WitnessSource source = WitnessSource::kFetched;
  wire::ItemRef ref;
  uint64_t generation = 0;  // ItemStage::Submit's: a late event of a replaced submission is ignored
  std::shared_ptr<QueuedItem> item;
  WitnessVerdict verdict = WitnessVerdict::kRetryable;
  std::string why;  // what the client is told when not kReady
  // For metrics and logs: the stage's own status name, the generator tier
  // that answered (generated only), bytes, seconds and retries.
  std::string status;
  std::string tier;
  uint64_t bytes = 0;
  double seconds = 0;
  unsigned retries = 0;
};

// A run-time circuit change was adopted (WorkerCore::ReloadCircuits).
struct CircuitsChanged {
  std::string load_error;  // why its new circuits could not be loaded (then only its removals were applied)
};

}  // namespace events

using PipelineEvent =
    std::variant<events::MemoryGate, events::KeysLoaded, events::StartFailed, events::ProofStarted,
                 events::ProofFinished, events::DeviceReleased, events::KeysReleased, events::WitnessPrepared,
                 events::CircuitsChanged>;

// The pipeline's (and the stages') events to the core; the session polls fd().
using EventMailbox = Mailbox<PipelineEvent>;

}  // namespace zkfleet::worker
