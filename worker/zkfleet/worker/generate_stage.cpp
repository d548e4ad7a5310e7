#include "zkfleet/worker/generate_stage.hpp"

#include <spdlog/spdlog.h>

namespace zkfleet::worker {

GenerateStage::GenerateStage(const CircuitSet& circuits, unsigned threads, EventMailbox& mailbox)
    : stage_(PipelineEvent::Kind::kGenerated, threads, mailbox, [&circuits] {
        return [&circuits](QueuedItem& item, const std::atomic<bool>& cancel, PipelineEvent& event) {
          const auto taken = std::chrono::steady_clock::now();
          item.generation_queue_s = std::chrono::duration<double>(taken - item.arrived).count();
          auto generator = circuits.Generator(item.job.circuit_id());
          if (!generator) {
            event.generated.status = engine::GenerationStatus::kInternal;
            event.generated.error = "no witness generator for circuit " + item.job.circuit_id();
            return;
          }
          const std::string& input = item.job.input_json();
          try {
            event.generated = generator->Generate(input, item.writable_witness(), &cancel);
          } catch (const std::exception& e) {
            // Out of memory parsing a huge input, and the like: this host's
            // trouble, another worker may manage.
            event.generated.status = engine::GenerationStatus::kInternal;
            event.generated.error = std::string("witness generation failed on this worker: ") + e.what();
          }
          item.witness_generation_s = event.generated.seconds;
          if (!event.generated.ok() && event.generated.status != engine::GenerationStatus::kCancelled) {
            spdlog::warn("job_seq={} partition={}: its witness could not be computed ({}): {}", event.ref.job_seq,
                         event.ref.partition, engine::GenerationStatusName(event.generated.status),
                         event.generated.error);
          }
        };
      }) {}

}  // namespace zkfleet::worker
