// The fetch stage: witnesses by reference (proto::WitnessRef in a JOB),
// fetched straight into the item's buffer in the pinned pool on the stage's
// own threads (one fetch::Fetcher each, so connections are reused), while the
// pipeline's lanes prove earlier items. The core allocates the buffer and
// hands the item over; the stage fills it (the one copy: libcurl's write
// callback or pread, hashed as the bytes arrive) and posts an
// events::WitnessPrepared with the item back and the fetch's verdict: the
// core queues it for a lane only when it is ready (the size and the SHA-256
// matched).
//
// The threads, generations and cancellation are ItemStage's (item_stage.hpp).
//
// Ownership: the stage owns its threads and the items while they are
// fetched; the mailbox is not owned and must outlive the stage.
// Thread-safety: Submit, Cancel, in_flight and Stop are called from the
// core's thread; the stage's threads only post to the mailbox.
#pragma once

#include <memory>

#include "zkfleet/fetch/fetcher.hpp"
#include "zkfleet/worker/item_stage.hpp"

namespace zkfleet::worker {

class FetchStage {
 public:
  // Validates `options` (allowed prefixes, CA bundle, client certificate):
  // throws zkfleet::Error with the reason when they cannot be used. Starts
  // max(1, threads) threads.
  FetchStage(const fetch::FetchOptions& options, unsigned threads, EventMailbox& mailbox);

  // Fetches the witness `item->job.witness_ref()` names into
  // `item->witness()` (allocated with exactly its size); posts
  // WitnessPrepared carrying the returned generation (ItemStage::Submit).
  uint64_t Submit(std::unique_ptr<QueuedItem> item) { return stage_.Submit(std::move(item)); }
  // The item's fetch ends soon (or never starts); its WitnessPrepared still
  // comes, retryable ("cancelled") unless it had already finished.
  void Cancel(const wire::ItemRef& ref) { stage_.Cancel(ref); }
  size_t in_flight() const { return stage_.in_flight(); }
  void Stop() { stage_.Stop(); }

 private:
  static ItemStage::Work MakeWork(std::shared_ptr<const fetch::FetchConfig> config);

  std::shared_ptr<const fetch::FetchConfig> config_;
  ItemStage stage_;
};

}  // namespace zkfleet::worker
