// http(s):// witnesses: libcurl writes the body straight into the caller's
// buffer (one memcpy from its receive buffer) and the same bytes feed SHA-256.
// Redirects are followed here, not by libcurl, so that every hop passes the
// allow-list before anything connects to it.
#include <cstring>

#include "zkfleet/fetch/attempt.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::fetch::internal {

namespace {

// A response other than 200 has its (error page) body discarded, up to this
// much; beyond, the connection is dropped rather than drained.
constexpr uint64_t kMaxDiscard = 64 << 10;

struct Transfer {
  CURL* curl;
  std::span<uint8_t> into;
  Sha256* sha;
  const std::atomic<bool>* cancel;
  uint64_t offset = 0;
  uint64_t discarded = 0;
  long status = 0;           // HTTP status, known once the headers are complete
  bool headers_done = false;
  bool too_long = false;     // body larger than the size
  int64_t bad_length = -1;   // Content-Length that differs from the size
  bool cancelled = false;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  // The empty line ends a header block; 1xx blocks are followed by another.
  if (n <= 2 && (n == 0 || data[0] == '\r' || data[0] == '\n')) {
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200) {
      t->status = code;
      t->headers_done = true;
      if (code == 200) {
        curl_off_t length = -1;
        curl_easy_getinfo(t->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
        if (length >= 0 && static_cast<uint64_t>(length) != t->into.size()) {
          t->bad_length = length;
          return 0;  // abort before reading the body
        }
      }
    }
  }
  return n;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->status != 200) {
    t->discarded += n;
    return t->discarded > kMaxDiscard ? 0 : n;
  }
  if (n > t->into.size() - t->offset) {
    t->too_long = true;
    return 0;
  }
  std::memcpy(t->into.data() + t->offset, data, n);
  t->sha->Update(t->into.subspan(t->offset, n));
  t->offset += n;
  return n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->cancel != nullptr && t->cancel->load(std::memory_order_relaxed)) {
    t->cancelled = true;
    return 1;
  }
  return 0;
}

bool IsTlsVerification(CURLcode rc) {
  return rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM ||
         rc == CURLE_SSL_CIPHER || rc == CURLE_SSL_ISSUER_ERROR || rc == CURLE_SSL_CRL_BADFILE ||
         rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH;
}

void SetOptions(const FetchOptions& o, CURL* curl, const std::string& url, Transfer* t, char* errors) {
  curl_easy_reset(curl);  // keeps the connection and TLS session caches
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // No proxy from the environment: a proxy would see presigned URLs, and the
  // allow-list speaks of the hosts actually connected to.
  curl_easy_setopt(curl, CURLOPT_PROXY, "");
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errors);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, 512L << 10);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(o.total_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(o.low_speed_bytes_per_s));
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.low_speed_time.count()));
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!o.ca_bundle.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, o.ca_bundle.c_str());
  if (!o.client_cert.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, o.client_cert.c_str());
    curl_easy_setopt(curl, CURLOPT_SSLKEY, o.client_key.c_str());
  }
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, t);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
}

}  // namespace

Attempt FetchHttp(const FetchConfig& config, CURL* curl, const FetchRequest& request, std::span<uint8_t> into,
                  const std::atomic<bool>* cancel) {
  const FetchOptions& o = config.options();
  Attempt out;
  std::string url = request.url;
  auto fail = [&](FetchStatus status, std::string why, bool retry = true) {
    out.status = status;
    out.why = wire::RedactUrl(url) + ": " + why;
    out.retry = retry;
    return out;
  };
  Sha256 sha;
  for (unsigned hops = 0;; ++hops) {
    Transfer t{curl, into, &sha, cancel};
    char errors[CURL_ERROR_SIZE] = {0};
    SetOptions(o, curl, url, &t, errors);
    const CURLcode rc = curl_easy_perform(curl);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);  // `errors` goes out of scope
    out.bytes = t.offset;
    if (t.cancelled) return fail(FetchStatus::kCancelled, "cancelled");
    if (t.bad_length >= 0) {
      // Its real size is not named (the client reads this).
      return fail(FetchStatus::kClientError,
                  "wrong size: its Content-Length is not the " + std::to_string(request.size) + " bytes the job says");
    }
    if (t.too_long) {
      return fail(FetchStatus::kClientError, "the body is larger than its size (" + std::to_string(request.size) +
                                                 " bytes)");
    }
    const std::string reason = errors[0] != 0 ? errors : curl_easy_strerror(rc);
    if (rc != CURLE_OK && !(t.status != 200 && t.status != 0 && rc == CURLE_WRITE_ERROR)) {
      if (rc == CURLE_OPERATION_TIMEDOUT) {
        return fail(FetchStatus::kTransient, "too slow or timed out after " + std::to_string(t.offset) + " of " +
                                                 std::to_string(request.size) + " bytes (" + reason + ")");
      }
      if (IsTlsVerification(rc)) {
        return fail(FetchStatus::kTransient, "TLS verification failed: " + reason, /*retry=*/false);
      }
      if (rc == CURLE_UNSUPPORTED_PROTOCOL || rc == CURLE_URL_MALFORMAT) {
        return fail(FetchStatus::kClientError, reason);
      }
      return fail(FetchStatus::kTransient, reason + " (" + std::to_string(t.offset) + " of " +
                                               std::to_string(request.size) + " bytes)");
    }
    const long status = t.status;
    if (status == 200) {
      if (t.offset != request.size) {
        return fail(FetchStatus::kTransient, "truncated body: " + std::to_string(t.offset) + " of " +
                                                 std::to_string(request.size) + " bytes");
      }
      return CheckDigest(request, sha.Finish(), t.offset);
    }
    if (status == 301 || status == 302 || status == 303 || status == 307 || status == 308) {
      char* location = nullptr;
      curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &location);
      if (location == nullptr) return fail(FetchStatus::kClientError, "HTTP " + std::to_string(status) + " without a Location");
      const std::string next = location;
      if (config.allow().Refusal(next)) {
        return fail(FetchStatus::kRefused, "redirect to " + wire::RedactUrl(next) + " leaves the allowed prefixes");
      }
      if (hops + 1 > o.max_redirects) {
        return fail(FetchStatus::kClientError, "more than " + std::to_string(o.max_redirects) + " redirects");
      }
      url = next;
      continue;
    }
    if (status >= 500 || status == 408 || status == 429) {
      return fail(FetchStatus::kTransient, "HTTP " + std::to_string(status));
    }
    return fail(FetchStatus::kClientError, "HTTP " + std::to_string(status));
  }
}

}  // namespace zkfleet::fetch::internal
