#include "zkfleet/worker/generate_stage.hpp"

#include <spdlog/spdlog.h>

namespace zkfleet::worker {

namespace {

// The core's terms for how a generation ended (events::WitnessPrepared).
void Judge(const witgen::GenerationResult& generated, size_t witness_bytes, const std::string& worker_id,
           events::WitnessPrepared& event) {
  event.status = witgen::GenerationStatusName(generated.status);
  event.tier = witgen::GeneratorTierName(generated.tier);
  event.seconds = generated.seconds;
  event.bytes = generated.ok() ? witness_bytes : 0;
  switch (generated.status) {
    case witgen::GenerationStatus::kOk:
      event.verdict = events::WitnessVerdict::kReady;
      return;
    case witgen::GenerationStatus::kBadInput:
    case witgen::GenerationStatus::kCircuitError:
    case witgen::GenerationStatus::kLimit:
      // The job's own fault (its input, its circuit, its appetite): never retried.
      event.verdict = events::WitnessVerdict::kJobFault;
      event.why = "its witness could not be computed: " + generated.error;
      return;
    case witgen::GenerationStatus::kCancelled:
    case witgen::GenerationStatus::kInternal:
      event.verdict = events::WitnessVerdict::kRetryable;
      event.why = "its witness could not be computed on worker " + worker_id + ": " + generated.error;
      return;
  }
}

}  // namespace

GenerateStage::GenerateStage(const CircuitSet& circuits, std::string worker_id, unsigned threads,
                             EventMailbox& mailbox)
    : stage_(events::WitnessSource::kGenerated,
             {witgen::GenerationStatusName(witgen::GenerationStatus::kInternal),
              "its witness could not be computed on worker " + worker_id + ": failed on this worker: "},
             threads, mailbox, [&circuits, worker_id] {
        return [&circuits, worker_id](QueuedItem& item, const std::atomic<bool>& cancel,
                                      events::WitnessPrepared& event) {
          const auto taken = std::chrono::steady_clock::now();
          item.generation_queue_s = std::chrono::duration<double>(taken - item.arrived).count();
          witgen::GenerationResult generated;
          auto generator = circuits.Generator(item.job.circuit_id());
          if (!generator) {
            generated.status = witgen::GenerationStatus::kInternal;
            generated.error = "no witness generator for circuit " + item.job.circuit_id();
          } else {
            try {
              generated = generator->Generate(item.job.input_json(), item.writable_witness(), &cancel);
            } catch (const std::exception& e) {
              // Out of memory parsing a huge input, and the like: this host's
              // trouble, another worker may manage.
              generated.status = witgen::GenerationStatus::kInternal;
              generated.error = std::string("witness generation failed on this worker: ") + e.what();
            }
          }
          item.witness_generation_s = generated.seconds;
          if (!generated.ok() && generated.status != witgen::GenerationStatus::kCancelled) {
            spdlog::warn("job_seq={} partition={}: its witness could not be computed ({}): {}", event.ref.job_seq,
                         event.ref.partition, witgen::GenerationStatusName(generated.status), generated.error);
          }
          Judge(generated, item.witness().size(), worker_id, event);
        };
      }) {}

}  // namespace zkfleet::worker
