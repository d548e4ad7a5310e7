#include "zkfleet/worker/proving_pipeline.hpp"

#include <thread>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/wire/local_paths.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::worker {
namespace {

using Clock = std::chrono::steady_clock;

using wire::Seconds;
}  // namespace

// ------------------------------------------------------------------ mailbox

// ------------------------------------------------------------------ pipeline

ProvingPipeline::ProvingPipeline(const WorkerOptions& options, CircuitSet& circuits, MemorySource& memory,
                                 PinnedPool& pool, LocalQueue& queue, EventMailbox& mailbox)
    : options_(options),
      circuits_(circuits),
      memory_(memory),
      pool_(pool),
      queue_(queue),
      mailbox_(mailbox),
      devices_(circuits.device_count()),
      depth_(options.pipeline_depth > 0 ? options.pipeline_depth : circuits.backend_name() == "cuda" ? 2 : 1),
      lanes_(depth_ * static_cast<int>(devices_)),
      retired_(devices_),
      device_lanes_running_(devices_) {}

ProvingPipeline::~ProvingPipeline() {
  if (start_thread_.joinable()) {
    queue_.Close();
    Join();
  }
}

void ProvingPipeline::Start() { start_thread_ = std::thread(&ProvingPipeline::StartMain, this); }

void ProvingPipeline::StopPoolGrowth() {
  std::thread growth;
  {
    std::lock_guard lock(threads_mutex_);  // the start thread may be creating it
    stop_growth_ = true;
    growth = std::move(growth_thread_);
  }
  if (growth.joinable()) growth.join();
}

void ProvingPipeline::Join() {
  if (start_thread_.joinable()) start_thread_.join();  // lane 0; it started the others first
  StopPoolGrowth();
  for (std::thread& lane : lane_threads_) {
    if (lane.joinable()) lane.join();
  }
}

void ProvingPipeline::Abandon() {
  StopPoolGrowth();
  if (start_thread_.joinable()) start_thread_.detach();
  for (std::thread& lane : lane_threads_) {
    if (lane.joinable()) lane.detach();
  }
}

void ProvingPipeline::RetireDevice(size_t device) {
  if (retired_.at(device).exchange(true)) return;
  queue_.Wake();  // its lanes waiting for an item see the flag and leave
}

void ProvingPipeline::StartMain() {
  if (!PassMemoryGate()) {
    keys_released_ = true;
    mailbox_.Post(events::KeysReleased{});
    return;
  }
  mailbox_.Post(events::MemoryGate{wire::WorkerEvent::kMemoryFits});
  try {
    circuits_.Load();  // while the pool is pinned in the background
  } catch (const std::exception& e) {
    mailbox_.Post(events::StartFailed{e.what()});
    return;
  }
  if (!WaitForPoolReady()) {
    if (queue_.WaitForClose(Clock::now())) {  // drained while starting
      const uint64_t freed = circuits_.Release();
      keys_released_ = true;
      mailbox_.Post(events::KeysReleased{freed});
    }
    return;
  }
  mailbox_.Post(events::KeysLoaded{});
  if (options_.dispatch_start_delay.count() > 0) {
    spdlog::info("dispatcher waits {} ms before the first item (--dispatch-start-delay-ms)",
                 options_.dispatch_start_delay.count());
    queue_.WaitForClose(Clock::now() + options_.dispatch_start_delay);
  }
  if (devices_ > 1) {
    std::string labels;
    for (const Device& device : circuits_.devices()) labels += (labels.empty() ? "" : ",") + device.label;
    spdlog::info("proving pipeline: {} devices ({}), {} lane{} each ({}); items go to the least-loaded device",
                 devices_, labels, depth_, depth_ == 1 ? "" : "s",
                 depth_ == 1 ? "one item at a time" : "host work of one item overlaps the device work of another");
  } else {
    spdlog::info("proving pipeline: {} lane{} ({})", lanes_, lanes_ == 1 ? "" : "s",
                 lanes_ == 1 ? "one item at a time" : "host work of one item overlaps the device work of another");
  }
  for (auto& running : device_lanes_running_) running = depth_;
  lanes_running_ = lanes_;
  // This thread ends the lane_threads_ writes before any other thread reads
  // them: Join() joins it first.
  for (int lane = 1; lane < lanes_; ++lane) lane_threads_.emplace_back(&ProvingPipeline::LaneMain, this, lane);
  LaneMain(0);
}

bool ProvingPipeline::PassMemoryGate() {
  MemoryReading reading = memory_.Read();
  last_available_ = reading.available_bytes;
  uint64_t budget = options_.pinned_budget.Resolve(reading.available_bytes);
  pool_budget_ = budget;
  if (budget == 0) {
    spdlog::info("no pinned pool (--pinned-budget 0); witnesses are received into heap buffers");
    return true;
  }
  uint64_t need = budget + options_.memory_margin;
  auto started = Clock::now();
  auto deadline = started + options_.memory_wait_timeout;
  auto next_log = started;
  bool waiting = false;
  while (reading.available_bytes < need) {
    auto now = Clock::now();
    if (!waiting) {
      waiting = true;
      mailbox_.Post(events::MemoryGate{wire::WorkerEvent::kMemoryShort});
    }
    if (now >= next_log) {
      spdlog::info("waiting for memory: need {} bytes (pinned budget {} + margin {}), available {} ({})", need, budget,
                   options_.memory_margin, reading.available_bytes, reading.detail);
      next_log = now + std::chrono::seconds(5);
    }
    if (now >= deadline) {
      events::StartFailed failed;
      failed.why = "memory gate: " + std::to_string(need) + " bytes (pinned budget " + std::to_string(budget) +
                    " + margin " + std::to_string(options_.memory_margin) + ") did not fit within " +
                    std::to_string(options_.memory_wait_timeout.count() / 1000) + " s; last seen " +
                    std::to_string(reading.available_bytes) + " available (" + reading.detail + ")";
      mailbox_.Post(std::move(failed));
      return false;
    }
    if (queue_.WaitForClose(now + std::chrono::milliseconds(100))) return false;  // drained while waiting
    reading = memory_.Read();
    last_available_ = reading.available_bytes;
  }
  spdlog::info("memory gate passed after {:.3f} s: {} bytes available ({}), allocating a {}-byte pinned pool",
               Seconds(Clock::now() - started), reading.available_bytes, reading.detail, budget);
  const auto kind = PinnedPool::ChooseKind(circuits_.backend_name() == "cuda", options_.pool_mode);
  // The pool is pinned on its own thread while the keys load (start-up takes
  // the longer of the two, not their sum); READY waits for --pool-ready bytes
  // (default: all, so that pinning never competes with proving).
  ready_bytes_ = options_.pool_ready_bytes == 0 ? budget : std::min(budget, options_.pool_ready_bytes);
  pin_started_ = Clock::now();
  std::lock_guard lock(threads_mutex_);
  if (!stop_growth_) growth_thread_ = std::thread(&ProvingPipeline::GrowPool, this, kind, budget);
  return true;
}

bool ProvingPipeline::WaitForPoolReady() {
  if (ready_bytes_ == 0) return true;
  // A line every 2 s while READY waits for the pool (pinning tens of GiB
  // takes tens of seconds).
  auto next_report = Clock::now() + std::chrono::seconds(2);
  for (;;) {
    const PinnedPool::Stats stats = pool_.stats();
    if (Clock::now() >= next_report && stats.pool_bytes < ready_bytes_) {
      const double seconds = Seconds(Clock::now() - pin_started_);
      spdlog::info("pinned pool: {} of {} MiB pinned after {:.1f} s ({:.0f} MiB/s); READY waits for it",
                   stats.pool_bytes >> 20, ready_bytes_ >> 20, seconds,
                   static_cast<double>(stats.pool_bytes >> 20) / std::max(seconds, 1e-9));
      next_report += std::chrono::seconds(2);
    }
    if (stats.pool_bytes >= ready_bytes_) {
      spdlog::info("pinned pool ({}): {} bytes in {} chunks after {:.3f} s{}", stats.mode, stats.pool_bytes,
                   stats.alloc_calls, Seconds(Clock::now() - pin_started_),
                   stats.target_bytes > stats.pool_bytes ? "; the rest is pinned in the background" : "");
      return true;
    }
    if (growth_done_) {
      std::lock_guard lock(threads_mutex_);
      events::StartFailed failed;
      failed.why = growth_error_.empty() ? "the pinned pool stopped growing at " + std::to_string(stats.pool_bytes) +
                                                " bytes (draining)"
                                          : growth_error_;
      if (!stop_growth_) mailbox_.Post(std::move(failed));
      return false;
    }
    if (queue_.WaitForClose(Clock::now() + std::chrono::milliseconds(10))) return false;  // drained
  }
}

void ProvingPipeline::GrowPool(PinnedPool::Kind kind, uint64_t bytes) {
  PinnedPool::AllocateOptions allocate;
  allocate.chunk_bytes = options_.pool_chunk_bytes;
  allocate.cancel = &stop_growth_;
  // Chunks pinned before a failure stay: past READY the worker carries on
  // with a smaller pool; before it, the start fails and they go at release.
  allocate.keep_on_failure = true;
  try {
    uint64_t added = pool_.Allocate(bytes, kind, allocate);
    spdlog::info("pinned pool complete: {} bytes in {:.3f} s{}", added, Seconds(Clock::now() - pin_started_),
                 added < bytes ? " (stopped: draining)" : "");
  } catch (const std::exception& e) {
    spdlog::warn("pinned pool: pinning stopped at {} bytes: {}", pool_.stats().pool_bytes, e.what());
    std::lock_guard lock(threads_mutex_);
    growth_error_ = e.what();
  }
  growth_done_ = true;
}

void ProvingPipeline::LaneMain(int lane) {
  const size_t device = static_cast<size_t>(lane) % devices_;
  const std::string& label = circuits_.devices()[device].label;
  while (auto item = queue_.PopForRun(static_cast<int>(device), &retired_[device])) {
    const wire::WorkKey key = item->key;
    auto started = Clock::now();
    // One line per item, in the order items start (the order test reads these).
    spdlog::info(
        "processing priority={} job_seq={} partition={} attempt={} circuit={} queued_ms={:.1f} lane={} device={}",
        wire::PriorityName(key.priority), key.job_seq, key.partition, item->job.attempt(), item->job.circuit_id(),
        Seconds(started - item->arrived) * 1e3, lane, label);
    ProveOutcome outcome;
    double deadline = item->job.deadline_unix_s();
    if (deadline > 0 && wire::UnixNow() > deadline) {
      // The broker expires the job; proving it would be wasted work.
      outcome.ok = false;
      outcome.retryable = false;
      outcome.error = "its deadline passed before it was proved";
    } else {
      mailbox_.Post(events::ProofStarted{key.ref(), static_cast<int>(device)});
      outcome = circuits_.Prove(item->job, item->witness(), device, item->circuit_version);
    }
    // A sticky error: nothing more goes to this device (the core takes it
    // out of the set when it reads the result).
    if (outcome.device_lost) RetireDevice(device);
    // The witness is no longer needed: its pool slot is free for the next item.
    item->pooled_witness.Reset();
    item->heap_witness.reset();

    events::ProofFinished done;
    done.ref = key.ref();
    done.device = static_cast<int>(device);
    proto::Result& result = done.result;
    wire::ToProto(key.ref(), result.mutable_item());  // no lease: the core stamps the one it holds
    result.set_attempt(item->job.attempt());
    result.set_circuit_id(item->job.circuit_id());
    result.set_request_id(item->job.request_id());
    result.set_ok(outcome.ok);
    result.set_proof_json(std::move(outcome.proof_json));
    result.set_public_json(std::move(outcome.public_json));
    result.set_proof_bytes(std::move(outcome.proof_bytes));
    result.set_error(wire::WithoutLocalPaths(outcome.error));  // the client reads it: this host's paths stay here
    result.set_retryable(outcome.retryable);
    *result.mutable_timings() = outcome.timings;
    result.mutable_timings()->set_queue_wait_s(Seconds(started - item->arrived));
    if (item->job.input_json().size() > 0) {
      result.mutable_timings()->set_witness_generation_s(item->witness_generation_s);
      result.mutable_timings()->set_generation_queue_s(item->generation_queue_s);
    }
    if (outcome.ok) {
      spdlog::debug("proved job_seq={} partition={} in {:.3f} s", key.job_seq, key.partition,
                    outcome.timings.prove_total_s());
    } else {
      spdlog::warn("job_seq={} partition={} failed on device {} ({}): {}", key.job_seq, key.partition, label,
                   outcome.retryable ? "retryable" : "final", outcome.error);
    }
    done.verify_s = outcome.verify_s;
    done.engine_fault = std::move(outcome.engine_fault);
    done.device_lost = outcome.device_lost;
    done.local_error = outcome.error;
    // The run ends before its result is posted. The other order let the
    // core send the result (under the lease it knew) and then take
    // a new lease of the same item (a restarted broker that had dropped that
    // result as stale) while the queue still counted the item as running:
    // the new lease was taken for the run already answered, and the job
    // waited forever (seen once in 500 jobs of the chaos test). Now a new
    // lease after the result finds the item gone and proves it again; one
    // before the result finds it running, and the result answers it. A
    // reconnect in between drops the result ("no longer held") and the
    // broker, which the READY told it was not held, proves it again.
    queue_.FinishRun(key);
    if (options_.test_hold_result.count() > 0) {
      spdlog::warn("TEST ONLY (--test-hold-result-ms): result of job_seq={} partition={} held", key.job_seq,
                   key.partition);
      std::this_thread::sleep_for(options_.test_hold_result);
    }
    mailbox_.Post(std::move(done));
  }
  // The last lane of a device frees its keys; the last lane out says that
  // all are free (after its own device's, so kReleased comes last).
  uint64_t freed = 0;
  if (device_lanes_running_[device].fetch_sub(1) == 1) {
    freed = circuits_.Release(device);
    mailbox_.Post(events::DeviceReleased{static_cast<int>(device), freed});
  }
  if (lanes_running_.fetch_sub(1) == 1) {
    keys_released_ = true;
    mailbox_.Post(events::KeysReleased{freed});
  }
}

}  // namespace zkfleet::worker
