// Fetcher: copies one witness (proto::WitnessRef {url, size, sha256}) from
// where a job says it is straight into a caller's buffer (a slice of the
// worker's pinned pool): ONE copy, the bytes hashed with SHA-256 as they land,
// never staged in a file, string or vector.
//
//   file://   open(O_RDONLY|O_CLOEXEC), the fd's real path checked against the
//             allowed directory's real path (no symlink escapes, race-free),
//             then pread in chunks of 4 MiB into the buffer.
//   http(s):// libcurl, peer and host verification always on, redirects
//             followed by hand and each hop checked against the allow-list,
//             no proxy (http_proxy and friends are ignored: a proxy would see
//             presigned URLs, and the allow-list names the hosts connected to).
//
// What a FetchStatus means to the caller:
//   kOk           the buffer holds exactly `size` bytes whose SHA-256 matches.
//   kRefused      the URL (or a redirect hop, or a file's real path) is under
//                 no --fetch-allow prefix. Nothing was read. The job's fault
//                 (or a misconfigured allow-list): fail it, never retry.
//   kClientError  the job's fault: 400/401/403/404/410 (any 4xx but 408 and
//                 429), a missing or non-regular file, a size that differs
//                 (Content-Length, file size or body length), a digest
//                 mismatch, too many redirects. Never retried: fail the job.
//   kTransient    not the job's fault: connection errors, timeouts, a body
//                 slower than low_speed_bytes_per_s for low_speed_time, a
//                 truncated body, 5xx, 408, 429. Retried here up to
//                 max_attempts times (back-off with jitter); when this comes
//                 back the worker should give the job back to the broker.
//                 A TLS verification failure (unknown CA, wrong host name,
//                 bad client certificate) is kTransient too, since it is the
//                 operator's configuration and not the job, but it is not
//                 retried here: it does not heal in seconds. Its `why` carries
//                 libcurl's reason ("SSL certificate problem: ...").
//                 Caveat: a server that demands a client certificate and gets
//                 none may answer HTTP 400 (nginx does), which reads as
//                 kClientError.
//   kCancelled    `cancel` was set; the buffer's contents are undefined.
// In every status but kOk the buffer's contents are undefined.
//
// Thread-safety: a FetchConfig is immutable and shared by all threads; a
// Fetcher belongs to one thread (it keeps a libcurl easy handle so that
// connections and TLS sessions are reused between fetches).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "zkfleet/fetch/url_allow_list.hpp"

namespace zkfleet::fetch {

struct FetchOptions {
  std::vector<std::string> allow;       // --fetch-allow prefixes (UrlAllowList)
  std::string ca_bundle;                // "" = the system's CAs
  std::string client_cert, client_key;  // optional mTLS client certificate (PEM), both or neither
  std::chrono::milliseconds connect_timeout{5000};
  uint64_t low_speed_bytes_per_s = 1 << 20;  // slower than this for low_speed_time: transient
  std::chrono::seconds low_speed_time{10};
  // Per attempt. All attempts together stay below the broker's --lease-overrun-min
  // (10 min): a fetch counts as started work.
  std::chrono::seconds total_timeout{60};
  unsigned max_attempts = 4;                 // tries for transient errors
  std::chrono::milliseconds backoff_initial{200}, backoff_max{5000};
  unsigned max_redirects = 5;
};

// FetchOptions validated once: the parsed allow-list, readable CA and client
// certificate files. Shared (immutable) by every thread's Fetcher.
class FetchConfig {
 public:
  // Throws zkfleet::Error (kInvalidArgument) naming the bad option: a bad
  // prefix, an unreadable CA bundle or client certificate/key, a certificate
  // without its key, max_attempts of 0.
  explicit FetchConfig(FetchOptions options);

  const FetchOptions& options() const { return options_; }
  const UrlAllowList& allow() const { return allow_; }

 private:
  FetchOptions options_;
  UrlAllowList allow_;
};

enum class FetchStatus { kOk, kRefused, kClientError, kTransient, kCancelled };

// "ok", "refused", "client_error", "transient", "cancelled": metric labels.
const char* FetchStatusName(FetchStatus status);

struct FetchResult {
  FetchStatus status = FetchStatus::kOk;
  std::string why;        // one line, URLs redacted; "" when kOk
  unsigned attempts = 0;  // tries made (redirect hops are not tries); 0 when refused up front
  uint64_t bytes = 0;     // bytes copied in the last try
  double seconds = 0;     // wall time of the whole Fetch, back-off included
};

struct FetchRequest {
  std::string url;     // full URL (a presigned query string is sent, never logged)
  uint64_t size = 0;   // exact size in bytes
  std::string sha256;  // 32 raw bytes
};

class Fetcher {
 public:
  explicit Fetcher(std::shared_ptr<const FetchConfig> config);
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  // Fills exactly `into` with the object's bytes and checks their digest.
  // `into.size()` must equal `request.size` (else zkfleet::Error
  // kInvalidArgument: the caller's bug, not the job's). `cancel` (may be
  // null) is polled during transfers, between file chunks and during
  // back-off: once set, kCancelled comes back soon.
  FetchResult Fetch(const FetchRequest& request, std::span<uint8_t> into,
                    const std::atomic<bool>* cancel = nullptr);

 private:
  struct Curl;
  std::shared_ptr<const FetchConfig> config_;
  std::unique_ptr<Curl> curl_;  // created on the first http(s) fetch
  uint64_t jitter_state_;
};

}  // namespace zkfleet::fetch
