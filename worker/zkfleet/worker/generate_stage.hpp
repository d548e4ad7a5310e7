// The generate stage: jobs from inputs (proto::Job::input_json). Each
// item's witness is computed by its circuit's generator
// (witgen::WitnessGenerator, compiled when the circuit loaded) into the
// item's buffer in the pinned pool (the generator's child process writes the
// .wtns into a pipe; it is read straight into the buffer), on the stage's own
// threads, while the pipeline's lanes prove earlier items. Posts an
// events::WitnessPrepared with the item back and the generation's verdict;
// the core queues the item for a lane only when it is ready. With --witgen-threads N, at most N generators
// run at once (one child process each, one core each).
//
// The threads, generations and cancellation are ItemStage's (item_stage.hpp).
// Ownership: the stage owns its threads and the items while they are
// generated; the circuits and the mailbox are not owned and must outlive it.
// Thread-safety: Submit, Cancel, in_flight, waiting and Stop are called
// from the core's thread.
#pragma once

#include <memory>

#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/item_stage.hpp"

namespace zkfleet::worker {

class GenerateStage {
 public:
  // `worker_id` names this worker in the errors clients read.
  GenerateStage(const CircuitSet& circuits, std::string worker_id, unsigned threads, EventMailbox& mailbox);

  // Computes the witness of `item->job.input_json()` into `item->witness()`
  // (allocated with the generator's wtns_bytes()); posts WitnessPrepared
  // carrying the returned generation (ItemStage::Submit).
  uint64_t Submit(std::unique_ptr<QueuedItem> item) { return stage_.Submit(std::move(item)); }
  // Kills the item's generator (or it never starts); its WitnessPrepared
  // still comes, retryable ("cancelled") unless it had already finished.
  void Cancel(const wire::ItemRef& ref) { stage_.Cancel(ref); }
  size_t in_flight() const { return stage_.in_flight(); }
  size_t waiting() const { return stage_.waiting(); }
  void Stop() { stage_.Stop(); }

 private:
  ItemStage stage_;
};

}  // namespace zkfleet::worker
