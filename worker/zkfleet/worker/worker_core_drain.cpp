// The worker core's faults and its drain sequence (see worker_core.hpp):
// DRAINING (hand back what has not started, let running items finish or
// abort them at drain_timeout) -> RELEASING (the keys, then the pool chunk by
// chunk, one per Tick, a heartbeat after each) -> GONE (DISCONNECT).
#include <spdlog/spdlog.h>

#include "zkfleet/wire/names.hpp"
#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker {

void WorkerCore::OnEngineFault(const std::string& circuit, size_t device, const std::string& detail,
                               Clock::time_point now) {
  spdlog::error("engine fault: backend={} device={} circuit={} {}; re-proved on the CPU, the valid proof was sent",
                circuits_->backend_name(), devices_.device(device).label, circuit, detail);
  if (metrics_) metrics_->ProofVerificationFailed(circuit, device);
  // The threshold counts per device: one bad GPU leaves, the others go on.
  if (devices_.CountEngineFault(device, now) && state_ == proto::WORKER_STATE_READY) {
    RetireDevice(device,
                 std::to_string(devices_.recent_faults(device)) + " engine faults within " +
                     std::to_string(options_.fault_window.count()) + " s (--fault-threshold " +
                     std::to_string(options_.fault_threshold) + ")",
                 /*lost=*/false);
  }
}

void WorkerCore::RetireDevice(size_t device, const std::string& why, bool lost) {
  if (finished()) return;
  if (!devices_.Fault(device, why, lost)) {
    // It had left already (engine faults) and now hit a fatal error too: a
    // worker with no device left must exit so that a new process can use it.
    if (lost && devices_.live() == 0) EnterFaulted("fatal device error after the last device left: " + why, true);
    return;
  }
  pipeline_->RetireDevice(device);  // its lanes stop after their item; the last frees its keys
  if (metrics_) metrics_->SetDeviceUp(device, false);
  const size_t live = devices_.live();
  if (live == 0) {
    // The last one: the worker cannot prove any more. With one device this
    // is the worker's fault as before; fatal when any device was lost (a new
    // process can use it again).
    std::string reason = why;
    if (devices_.size() > 1) reason = "no device left (the last, " + devices_.device(device).label + ": " + why + ")";
    EnterFaulted(reason, /*fatal=*/devices_.any_lost());
    return;
  }
  // Fewer lanes: the broker is granted credit for the devices still here
  // (credit it already holds stays; no more is granted until it fits).
  ledger_.set_capacity(options_.capacity * static_cast<uint32_t>(live));
  spdlog::error("device {} left the set: {}; proving on the {} remaining of {} device{} (capacity now {})",
                devices_.device(device).label, why, live, devices_.size(), devices_.size() == 1 ? "" : "s",
                ledger_.capacity());
}

void WorkerCore::EnterFaulted(const std::string& why, bool fatal) {
  if (finished()) return;
  if (state_ != proto::WORKER_STATE_FAULTED) {
    if (!Transition(fatal ? wire::WorkerEvent::kFatal : wire::WorkerEvent::kEngineFaults, why)) return;
    spdlog::error("worker FAULTED: {} (backend={} device={}); taking no more work{}", why, circuits_->backend_name(),
                  options_.device_label, fatal ? ", exiting" : "");
    SendHeartbeat();  // the broker stops routing to us and requeues our leases
    std::vector<wire::ItemRef> unstarted = CancelPreparations();
    for (const QueuedItem& item : queue_.TakeAllQueued()) unstarted.push_back(item.key.ref());
    HandBack(unstarted, {}, "faulted: " + why);
  }
  if (fatal) Leave("faulted: " + why, 1);
}

void WorkerCore::BeginDrain(const std::string& why, Clock::time_point now) {
  now_ = now;
  if (!Transition(wire::WorkerEvent::kDrain, why)) {
    spdlog::info("{}: already {}; the drain continues", why, wire::WorkerStateName(state_));
    return;
  }
  drain_deadline_ = now + options_.drain_timeout;
  circuits_->StopChanges();  // a circuit change still loading is not adopted
  SendHeartbeat();  // the broker stops routing to us on this message
  // Items still being fetched go back with the queued ones: nothing was proved.
  std::vector<wire::ItemRef> unstarted = CancelPreparations();
  for (const QueuedItem& item : queue_.TakeAllQueued()) unstarted.push_back(item.key.ref());
  HandBack(unstarted, {}, "draining");
  // Taken after the queue was emptied, so it names every item a lane took
  // before the drain, even one whose "processing" line is not out yet: these
  // finish, nothing else starts.
  const std::vector<wire::WorkKey> running = queue_.running_keys();  // one snapshot: count and names agree
  std::string names;
  for (const wire::WorkKey& key : running) names += fmt::format(" job_seq={} partition={};", key.job_seq, key.partition);
  spdlog::info("draining: {} running item(s) finish first:{}", running.size(), names);
  CheckDrain(now);
}

void WorkerCore::CheckDrain(Clock::time_point now) {
  if (ledger_.held() == 0) {
    StartReleasing(/*abandon_running=*/false);
    return;
  }
  if (now < drain_deadline_) return;
  // The items still proving (or whose results are not out yet) are aborted.
  std::vector<wire::ItemRef> aborted(ledger_.held_items().begin(), ledger_.held_items().end());
  HandBack({}, aborted, "drain timeout");
  StartReleasing(/*abandon_running=*/queue_.running() > 0);
}

void WorkerCore::StartReleasing(bool abandon_running) {
  if (!Transition(wire::WorkerEvent::kItemsSettled, abandon_running ? "drain timeout" : "every item answered")) return;
  SendHeartbeat();
  queue_.Close();  // the lanes leave their loop; the last frees the keys and posts kReleased
  pipeline_->StopPoolGrowth();  // a pool still growing stops after its current chunks
  // The keys may be gone already (every device left the set before).
  release_step_ = pipeline_->keys_released() ? ReleaseStep::kPool : ReleaseStep::kKeys;
  if (abandon_running) {
    // A lane is inside a proof we gave up on (its witness is in the pool:
    // that chunk stays until exit); its proving keys are freed at exit.
    spdlog::warn("leaving while an aborted proof still runs; its proving keys are freed at exit");
    pipeline_abandoned_ = true;
    release_step_ = ReleaseStep::kPool;
  }
}

void WorkerCore::ReleasePoolChunk() {
  // One chunk per Tick (about 0.02 s per GiB of huge-page memory), a
  // heartbeat after each reporting what is still held.
  // Cancelled fetches hold their buffers until they return (promptly: the
  // fetcher polls its cancel flag); their chunks are not stuck.
  if (fetch_stage_ && fetch_stage_->in_flight() > 0) return;
  if (generate_stage_ && generate_stage_->in_flight() > 0) return;
  const uint64_t before = pool_.stats().pool_bytes;
  const uint64_t left = pool_.ReleaseChunk();
  const bool stuck = left > 0 && left == before;  // only chunks still in use are left
  SendHeartbeat();  // reports the bytes still held
  if (left > 0) {
    if (stuck) {
      // Still used by the witness of a proof the drain gave up on: the
      // process exit frees it.
      spdlog::warn("{} pool bytes are still in use; freed at exit", left);
      Leave("drained", 0);
      return;
    }
    spdlog::info("releasing the pinned pool: {} bytes still held", left);
    return;
  }
  spdlog::info("pinned pool released: 0 bytes held");
  Leave("drained", 0);
}

void WorkerCore::Leave(const std::string& reason, int exit_code) {
  proto::Envelope envelope;
  envelope.mutable_disconnect()->set_reason(reason);
  Send(envelope);
  wire::WorkerEvent event = state_ == proto::WORKER_STATE_FAULTED ? wire::WorkerEvent::kLeave : wire::WorkerEvent::kReleased;
  if (!Transition(event, reason)) {
    state_ = proto::WORKER_STATE_GONE;  // never stay connected after deciding to leave
    if (metrics_) metrics_->SetState(state_);
  }
  exit_code_ = exit_code;
}

}  // namespace zkfleet::worker
