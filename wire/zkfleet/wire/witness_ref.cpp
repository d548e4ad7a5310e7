#include "zkfleet/wire/witness_ref.hpp"

#include <algorithm>
#include <cctype>

namespace zkfleet::wire {

namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool IsControlOrSpace(unsigned char c) { return c <= 0x20 || c == 0x7f; }

}  // namespace

std::string UrlScheme(std::string_view url) {
  const size_t colon = url.find("://");
  if (colon == std::string_view::npos) return "";
  std::string scheme = Lower(url.substr(0, colon));
  if (scheme == "file" || scheme == "http" || scheme == "https") return scheme;
  return "";
}

std::string RedactUrl(std::string_view url) {
  const size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0 || colon > 16) return "<url>";
  std::string_view scheme = url.substr(0, colon);
  for (unsigned char c : scheme) {
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return "<url>";
  }
  std::string_view rest = url.substr(colon + 3);
  // Query and fragment go first: an '@' inside them is not userinfo.
  rest = rest.substr(0, std::min(rest.find('?'), rest.find('#')));
  const size_t path_start = std::min(rest.find('/'), rest.size());
  std::string_view authority = rest.substr(0, path_start);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  std::string out = Lower(scheme) + "://";
  out += authority;
  out += rest.substr(path_start);
  for (char& c : out) {
    if (IsControlOrSpace(static_cast<unsigned char>(c)) && c != ' ') c = '?';
  }
  return out;
}

std::optional<std::string> WitnessRefProblem(const proto::WitnessRef& ref, uint64_t max_size) {
  const std::string& url = ref.url();
  if (url.empty()) return std::string("witness reference without a URL");
  if (url.size() > kMaxWitnessUrlBytes) {
    return "witness URL is " + std::to_string(url.size()) + " bytes; at most " + std::to_string(kMaxWitnessUrlBytes);
  }
  const std::string shown = RedactUrl(url);
  for (unsigned char c : url) {
    if (IsControlOrSpace(c)) return "witness URL " + shown + " contains a space or a control character";
  }
  if (UrlScheme(url).empty()) {
    return "witness URL " + shown + " is not file://, http:// or https://";
  }
  if (ref.size() == 0) return "witness " + shown + " has size 0; give the object's exact size in bytes";
  if (ref.size() > max_size) {
    return "witness " + shown + " is " + std::to_string(ref.size()) + " bytes; at most " + std::to_string(max_size) +
           " are accepted";
  }
  if (ref.sha256().size() != kSha256Bytes) {
    return "witness " + shown + " has a sha256 of " + std::to_string(ref.sha256().size()) +
           " bytes; a SHA-256 digest is 32";
  }
  return std::nullopt;
}

}  // namespace zkfleet::wire
