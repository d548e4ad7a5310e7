#include "zkfleet/fetch/fetcher.hpp"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include "zkfleet/common/error.hpp"
#include "zkfleet/fetch/attempt.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::fetch {

namespace {

void RequireReadable(const std::string& path, const char* option) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(ErrorCode::kInvalidArgument, std::string(option) + " " + path + " cannot be read");
  }
  ::close(fd);
}

// libcurl's global state, set up once before the first handle (curl 7.88's
// curl_global_init is not thread-safe on its own).
void GlobalInit() {
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) throw Error(ErrorCode::kInternal, "curl_global_init failed");
}

}  // namespace

FetchConfig::FetchConfig(FetchOptions options) : options_(std::move(options)), allow_(options_.allow) {
  if (!options_.ca_bundle.empty()) RequireReadable(options_.ca_bundle, "--fetch-ca");
  if (options_.client_cert.empty() != options_.client_key.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "a fetch client certificate needs both its certificate and its key");
  }
  if (!options_.client_cert.empty()) {
    RequireReadable(options_.client_cert, "--fetch-client-cert");
    RequireReadable(options_.client_key, "--fetch-client-key");
  }
  if (options_.max_attempts == 0) throw Error(ErrorCode::kInvalidArgument, "fetch max_attempts must be at least 1");
  GlobalInit();
}

const char* FetchStatusName(FetchStatus status) {
  switch (status) {
    case FetchStatus::kOk: return "ok";
    case FetchStatus::kRefused: return "refused";
    case FetchStatus::kClientError: return "client_error";
    case FetchStatus::kTransient: return "transient";
    case FetchStatus::kCancelled: return "cancelled";
  }
  return "unknown";
}

struct Fetcher::Curl {
  CURL* handle = nullptr;
  ~Curl() { curl_easy_cleanup(handle); }
};

Fetcher::Fetcher(std::shared_ptr<const FetchConfig> config)
    : config_(std::move(config)), jitter_state_(std::random_device{}()) {
  if (!config_) throw Error(ErrorCode::kInvalidArgument, "Fetcher needs a FetchConfig");
}

Fetcher::~Fetcher() = default;

namespace internal {

Attempt CheckDigest(const FetchRequest& request, const std::string& digest, uint64_t bytes) {
  Attempt out;
  out.bytes = bytes;
  if (digest != request.sha256) {
    out.status = FetchStatus::kClientError;
    // The object's own digest is not named: the client reads this, and may
    // not be entitled to learn anything about objects it did not write.
    out.why = wire::RedactUrl(request.url) + ": its sha256 differs from the job's (" + wire::DigestHex(request.sha256) + ")";
  }
  return out;
}

}  // namespace internal

FetchResult Fetcher::Fetch(const FetchRequest& request, std::span<uint8_t> into, const std::atomic<bool>* cancel) {
  if (into.size() != request.size) {
    throw Error(ErrorCode::kInvalidArgument, "Fetch: a buffer of " + std::to_string(into.size()) +
                                                 " bytes for a witness of " + std::to_string(request.size));
  }
  const auto start = std::chrono::steady_clock::now();
  FetchResult result;
  auto finish = [&](FetchStatus status, std::string why, uint64_t bytes) {
    result.status = status;
    result.why = std::move(why);
    result.bytes = bytes;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  if (request.sha256.size() != wire::kSha256Bytes) {
    return finish(FetchStatus::kClientError,
                  wire::RedactUrl(request.url) + ": a sha256 of " + std::to_string(request.sha256.size()) +
                      " bytes, not 32",
                  0);
  }
  if (auto refusal = config_->allow().Refusal(request.url)) return finish(FetchStatus::kRefused, *refusal, 0);
  const bool is_file = wire::UrlScheme(request.url) == "file";
  if (!is_file && !curl_) {
    curl_ = std::make_unique<Curl>();
    curl_->handle = curl_easy_init();
    if (curl_->handle == nullptr) throw Error(ErrorCode::kResourceExhausted, "curl_easy_init failed");
  }
  const FetchOptions& options = config_->options();
  auto cancelled = [&] { return cancel != nullptr && cancel->load(std::memory_order_relaxed); };
  for (unsigned attempt = 1;; ++attempt) {
    result.attempts = attempt;
    if (cancelled()) return finish(FetchStatus::kCancelled, "cancelled", 0);
    internal::Attempt tried = is_file ? internal::FetchFile(*config_, request, into, cancel)
                                      : internal::FetchHttp(*config_, curl_->handle, request, into, cancel);
    if (tried.status != FetchStatus::kTransient || !tried.retry || attempt >= options.max_attempts) {
      if (tried.status == FetchStatus::kTransient && attempt > 1) {
        tried.why += " (after " + std::to_string(attempt) + " attempts)";
      }
      return finish(tried.status, std::move(tried.why), tried.bytes);
    }
    // Exponential back-off with "equal jitter": half fixed, half random, so
    // that workers failing together do not retry in lockstep.
    const auto base = std::min<std::chrono::milliseconds>(
        options.backoff_max, options.backoff_initial * (1ull << std::min(attempt - 1, 20u)));
    jitter_state_ = jitter_state_ * 6364136223846793005ull + 1442695040888963407ull;
    const auto half = base / 2;
    const auto wait = half + std::chrono::milliseconds(half.count() > 0 ? (jitter_state_ >> 33) % (half.count() + 1) : 0);
    const auto until = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < until) {
      if (cancelled()) return finish(FetchStatus::kCancelled, "cancelled during back-off", 0);
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
          std::chrono::milliseconds(20), until - std::chrono::steady_clock::now()));
    }
  }
}

}  // namespace zkfleet::fetch
