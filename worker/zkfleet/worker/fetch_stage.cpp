#include "zkfleet/worker/fetch_stage.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::worker {

namespace {

// The core's terms for how a fetch ended (events::WitnessPrepared).
void Judge(const fetch::FetchResult& fetched, const proto::WitnessRef& witness, events::WitnessPrepared& event) {
  event.status = fetch::FetchStatusName(fetched.status);
  event.bytes = fetched.status == fetch::FetchStatus::kOk ? fetched.bytes : 0;
  event.seconds = fetched.seconds;
  event.retries = fetched.attempts > 0 ? fetched.attempts - 1 : 0;
  switch (fetched.status) {
    case fetch::FetchStatus::kOk:
      event.verdict = events::WitnessVerdict::kReady;
      return;
    case fetch::FetchStatus::kRefused:
      // Not under this worker's --fetch-allow: the job's reference, never retried.
      event.verdict = events::WitnessVerdict::kJobFault;
      event.why = "its witness could not be used: " + fetched.why;
      return;
    case fetch::FetchStatus::kClientError:
      // The job's own fault, never retried. The client is told that its
      // reference gave no object of its size and digest, not which of
      // missing, unreadable, another size or other bytes: those would let a
      // client probe the store for other clients' objects and their sizes.
      // This worker's log has the detail (the warning below).
      event.verdict = events::WitnessVerdict::kJobFault;
      event.why = "its witness could not be used: " + wire::RedactUrl(witness.url()) + ": no object of " +
                  std::to_string(witness.size()) + " bytes with sha256 " + wire::DigestHex(witness.sha256()) +
                  " is there (missing, unreadable, another size or other bytes)";
      return;
    case fetch::FetchStatus::kTransient:
    case fetch::FetchStatus::kCancelled:
      event.verdict = events::WitnessVerdict::kRetryable;
      event.why = "its witness could not be fetched: " + fetched.why;
      return;
  }
}

}  // namespace

FetchStage::FetchStage(const fetch::FetchOptions& options, unsigned threads, EventMailbox& mailbox)
    : config_(std::make_shared<const fetch::FetchConfig>(options)),
      stage_(events::WitnessSource::kFetched,
             {fetch::FetchStatusName(fetch::FetchStatus::kTransient),
              "its witness could not be fetched: failed on this worker: "},
             threads, mailbox, [config = config_] { return MakeWork(config); }) {}

ItemStage::Work FetchStage::MakeWork(std::shared_ptr<const fetch::FetchConfig> config) {
  // One Fetcher per thread: its connections are reused from fetch to fetch.
  auto fetcher = std::make_shared<fetch::Fetcher>(std::move(config));
  return [fetcher](QueuedItem& item, const std::atomic<bool>& cancel, events::WitnessPrepared& event) {
    const proto::WitnessRef& ref = item.job.witness_ref();
    fetch::FetchRequest request{ref.url(), ref.size(), ref.sha256()};
    fetch::FetchResult fetched;
    try {
      fetched = fetcher->Fetch(request, item.writable_witness(), &cancel);
    } catch (const std::exception& e) {
      // Not the job's fault (no handle, an OpenSSL failure): another worker may manage.
      fetched.status = fetch::FetchStatus::kTransient;
      fetched.why = wire::RedactUrl(ref.url()) + ": the fetch failed on this worker: " + e.what();
    }
    if (fetched.status != fetch::FetchStatus::kOk && fetched.status != fetch::FetchStatus::kCancelled) {
      spdlog::warn("job_seq={} partition={}: fetching its witness failed ({}): {}", event.ref.job_seq,
                   event.ref.partition, fetch::FetchStatusName(fetched.status), fetched.why);
    }
    Judge(fetched, ref, event);
  };
}

}  // namespace zkfleet::worker
