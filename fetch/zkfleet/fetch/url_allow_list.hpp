// The operator's allow-list of witness URL prefixes (--fetch-allow), checked
// before every fetch and every redirect hop. A job's URL is data from a
// client; without this a worker could be sent to file:///etc/passwd or to a
// cloud metadata endpoint (http://169.254.169.254/).
//
// URLs are parsed with libcurl's URL API (the parser that will fetch them),
// never matched as raw strings: "https://store.internal@evil/" has host
// "evil". A prefix's path is a directory ("https://h/a" means "https://h/a/").
// A URL is allowed when its scheme, host (case-insensitive) and port (80/443
// when absent) equal a prefix's and its percent-decoded path starts with the
// prefix's directory. Paths with "." or ".." segments, backslashes, NUL or an
// encoded '/' are refused outright: a server decodes them and would escape
// the prefix.
//
// Thread-safety: immutable after construction; const methods may be called
// from any number of threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::fetch {

class UrlAllowList {
 public:
  // Each prefix must be a file://, http:// or https:// URL without query,
  // fragment, userinfo or dot segments. Throws zkfleet::Error
  // (kInvalidArgument) naming the bad prefix otherwise. An empty list allows
  // nothing.
  explicit UrlAllowList(const std::vector<std::string>& prefixes);

  // nullopt when `url` is allowed, else one line naming the redacted URL and
  // the reason.
  std::optional<std::string> Refusal(std::string_view url) const;

  // For an allowed file:// URL: its percent-decoded local path and the local
  // directory of the prefix that allowed it (the fetcher checks the opened
  // file's real path against that directory's real path).
  struct LocalFile {
    std::string path;
    std::string root;  // ends with '/'
  };
  std::optional<LocalFile> Local(std::string_view url) const;

  size_t size() const { return prefixes_.size(); }

 private:
  struct Prefix {
    std::string scheme;  // file, http, https
    std::string host;    // lower case; "" for file://
    std::string port;    // decimal; "" for file://
    std::string path;    // percent-decoded, ends with '/'
  };
  // The prefix that allows `url`, or the reason it does not.
  const Prefix* Match(std::string_view url, std::string* why, std::string* decoded_path) const;

  std::vector<Prefix> prefixes_;
};

}  // namespace zkfleet::fetch
