// Witnesses by reference (proto::WitnessRef): the checks every receiver makes
// on one before anything else (the broker at SUBMIT, the worker at JOB), and
// the redaction every log line, metric, listing and error uses. Pure string
// work: the worker's fetcher (fetch/) parses URLs with libcurl and applies the
// operator's allow-list; this only bounds what a peer sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zkfleet.pb.h"

namespace zkfleet::wire {

inline constexpr size_t kMaxWitnessUrlBytes = 4096;
inline constexpr size_t kSha256Bytes = 32;

// `url` without userinfo, query string or fragment:
// "https://key:secret@s3.example/bucket/w.wtns?X-Amz-Signature=..." ->
// "https://s3.example/bucket/w.wtns". What cannot be read as
// scheme://authority/path is cut to its scheme (or "<url>") so nothing secret
// leaks through a malformed one. Control characters become '?'.
std::string RedactUrl(std::string_view url);

// Why `ref` cannot be taken (one line, naming the redacted URL), or nullopt:
// an empty URL or one over kMaxWitnessUrlBytes, with a space or a control
// character, a scheme other than file, http or https; a size of 0 or above
// `max_size`; a sha256 that is not 32 bytes.
std::optional<std::string> WitnessRefProblem(const proto::WitnessRef& ref, uint64_t max_size);

// "file", "http" or "https" (lower case) of a URL that passed
// WitnessRefProblem; "" otherwise.
std::string UrlScheme(std::string_view url);

}  // namespace zkfleet::wire
