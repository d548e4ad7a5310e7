#include "zkfleet/worker/fetch_stage.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::worker {

FetchStage::FetchStage(const fetch::FetchOptions& options, unsigned threads, EventMailbox& mailbox)
    : config_(std::make_shared<const fetch::FetchConfig>(options)),
      stage_(PipelineEvent::Kind::kFetched, threads, mailbox, [config = config_] { return MakeWork(config); }) {}

ItemStage::Work FetchStage::MakeWork(std::shared_ptr<const fetch::FetchConfig> config) {
  // One Fetcher per thread: its connections are reused from fetch to fetch.
  auto fetcher = std::make_shared<fetch::Fetcher>(std::move(config));
  return [fetcher](QueuedItem& item, const std::atomic<bool>& cancel, PipelineEvent& event) {
    const proto::WitnessRef& ref = item.job.witness_ref();
    fetch::FetchRequest request{ref.url(), ref.size(), ref.sha256()};
    try {
      event.fetch = fetcher->Fetch(request, item.writable_witness(), &cancel);
    } catch (const std::exception& e) {
      // Not the job's fault (no handle, an OpenSSL failure): another worker may manage.
      event.fetch.status = fetch::FetchStatus::kTransient;
      event.fetch.why = wire::RedactUrl(ref.url()) + ": the fetch failed on this worker: " + e.what();
    }
    if (event.fetch.status != fetch::FetchStatus::kOk && event.fetch.status != fetch::FetchStatus::kCancelled) {
      spdlog::warn("job_seq={} partition={}: fetching its witness failed ({}): {}", event.ref.job_seq,
                   event.ref.partition, fetch::FetchStatusName(event.fetch.status), event.fetch.why);
    }
  };
}

}  // namespace zkfleet::worker
