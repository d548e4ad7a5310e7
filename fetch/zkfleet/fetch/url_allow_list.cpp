#include "zkfleet/fetch/url_allow_list.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "zkfleet/common/error.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::fetch {

namespace {

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// What curl's parser made of a URL, with the path checked for the tricks a
// server's decoding would turn into an escape from the prefix.
struct Parsed {
  std::string scheme, host, port, path;  // path percent-decoded
  bool has_userinfo = false, has_query = false;
};

// Returns the reason `url` cannot be used, or "" with `out` filled.
std::string Parse(std::string_view url, Parsed* out) {
  std::unique_ptr<CURLU, UrlDeleter> handle(curl_url());
  if (!handle) return "out of memory";
  const std::string text(url);
  // PATH_AS_IS: curl would otherwise resolve dot segments silently; we want
  // to see them and refuse. No NON_SUPPORT_SCHEME: only schemes curl knows.
  const CURLUcode rc = curl_url_set(handle.get(), CURLUPART_URL, text.c_str(), CURLU_PATH_AS_IS);
  if (rc != CURLUE_OK) return std::string("not a URL (") + curl_url_strerror(rc) + ")";
  auto get = [&](CURLUPart part, unsigned flags, std::string* value) {
    char* got = nullptr;
    const CURLUcode code = curl_url_get(handle.get(), part, &got, flags);
    if (code == CURLUE_OK && got != nullptr) *value = got;
    curl_free(got);
    return code == CURLUE_OK;
  };
  get(CURLUPART_SCHEME, 0, &out->scheme);
  out->scheme = Lower(out->scheme);
  get(CURLUPART_HOST, 0, &out->host);
  out->host = Lower(out->host);
  if (out->scheme != "file") get(CURLUPART_PORT, CURLU_DEFAULT_PORT, &out->port);
  std::string ignored;
  out->has_userinfo = get(CURLUPART_USER, 0, &ignored) || get(CURLUPART_PASSWORD, 0, &ignored) ||
                      get(CURLUPART_OPTIONS, 0, &ignored);
  out->has_query = get(CURLUPART_QUERY, 0, &ignored) || get(CURLUPART_FRAGMENT, 0, &ignored);
  std::string raw;
  get(CURLUPART_PATH, 0, &raw);
  if (raw.empty() || raw[0] != '/') return "no absolute path";
  // Decode by hand so that every decoded byte can be checked (curl's own
  // decoder stops at some of the bytes we want to name).
  std::string path;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      path.push_back(raw[i]);
      continue;
    }
    const int hi = i + 2 < raw.size() ? HexValue(raw[i + 1]) : -1;
    const int lo = hi >= 0 ? HexValue(raw[i + 2]) : -1;
    if (lo < 0) return "a malformed percent-encoding in its path";
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '/') return "an encoded '/' (%2f) in its path";
    path.push_back(c);
    i += 2;
  }
  if (path.find('\0') != std::string::npos) return "a NUL byte in its path";
  if (path.find('\\') != std::string::npos) return "a backslash in its path";
  // A server or proxy that decodes twice, or reads ';' as a parameter
  // (Tomcat's "..;"), would see another path than the one checked here.
  if (path.find('%') != std::string::npos) return "a '%' left after decoding (double encoding) in its path";
  if (path.find(';') != std::string::npos) return "a ';' in its path";
  for (size_t start = 1; start <= path.size();) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view segment(path.data() + start, end - start);
    if (segment == "." || segment == "..") return "a '.' or '..' segment in its path";
    start = end + 1;
  }
  out->path = std::move(path);
  return "";
}

}  // namespace

UrlAllowList::UrlAllowList(const std::vector<std::string>& prefixes) {
  for (const std::string& text : prefixes) {
    Parsed parsed;
    std::string why = Parse(text, &parsed);
    if (why.empty() && parsed.scheme != "file" && parsed.scheme != "http" && parsed.scheme != "https") {
      why = "its scheme is not file, http or https";
    }
    if (why.empty() && parsed.has_userinfo) why = "it carries userinfo";
    if (why.empty() && parsed.has_query) why = "it carries a query or fragment";
    if (why.empty() && parsed.scheme == "file" && !parsed.host.empty() && parsed.host != "localhost") {
      why = "a file:// prefix must name no host (or localhost)";
    }
    // curl reads "https:///w/" as host "w"; an operator meant something else.
    const size_t authority = text.find("://");
    if (why.empty() && parsed.scheme != "file" &&
        (parsed.host.empty() || authority == std::string::npos || text.compare(authority + 3, 1, "/") == 0)) {
      why = "it names no host";
    }
    if (!why.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--fetch-allow " + wire::RedactUrl(text) + ": " + why +
                      " (expected e.g. https://store.internal/witnesses/ or file:///mnt/witnesses/)");
    }
    if (parsed.scheme == "file") parsed.host.clear();
    if (parsed.path.back() != '/') parsed.path.push_back('/');
    prefixes_.push_back(Prefix{parsed.scheme, parsed.host, parsed.port, parsed.path});
  }
}

const UrlAllowList::Prefix* UrlAllowList::Match(std::string_view url, std::string* why,
                                          std::string* decoded_path) const {
  Parsed parsed;
  *why = Parse(url, &parsed);
  if (!why->empty()) return nullptr;
  if (parsed.scheme == "file") {
    if (!parsed.host.empty() && parsed.host != "localhost") {
      *why = "a file:// URL must name no host (or localhost)";
      return nullptr;
    }
    if (parsed.has_query) {
      *why = "a file:// URL with a query or fragment";
      return nullptr;
    }
    parsed.host.clear();
  }
  for (const Prefix& prefix : prefixes_) {
    if (prefix.scheme == parsed.scheme && prefix.host == parsed.host && prefix.port == parsed.port &&
        parsed.path.size() > prefix.path.size() && parsed.path.compare(0, prefix.path.size(), prefix.path) == 0) {
      if (decoded_path != nullptr) *decoded_path = parsed.path;
      return &prefix;
    }
  }
  *why = prefixes_.empty() ? "no --fetch-allow prefix is configured" : "it is under no --fetch-allow prefix";
  return nullptr;
}

std::optional<std::string> UrlAllowList::Refusal(std::string_view url) const {
  std::string why;
  if (Match(url, &why, nullptr) != nullptr) return std::nullopt;
  return wire::RedactUrl(url) + " is refused: " + why;
}

std::optional<UrlAllowList::LocalFile> UrlAllowList::Local(std::string_view url) const {
  std::string why, path;
  const Prefix* prefix = Match(url, &why, &path);
  if (prefix == nullptr || prefix->scheme != "file") return std::nullopt;
  return LocalFile{path, prefix->path};
}

}  // namespace zkfleet::fetch
