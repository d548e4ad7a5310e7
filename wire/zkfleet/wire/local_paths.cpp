#include "zkfleet/wire/local_paths.hpp"

namespace zkfleet::wire {
namespace {

// Where an absolute path may start: the text's start, after a space or an
// opening quote, parenthesis or '=' (not after ':' or '/': URLs stay).
bool PathMayStart(std::string_view text, size_t at) {
  if (at == 0) return true;
  const char before = text[at - 1];
  return before == ' ' || before == '\t' || before == '\n' || before == '(' || before == '\'' || before == '"' ||
         before == '=' || before == '[' || before == '`';
}

bool EndsPath(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == ')' || c == '\'' || c == '"' || c == ',' || c == ';' ||
         c == ']' || c == '`' || c == ':';
}

}  // namespace

std::string WithoutLocalPaths(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '/' && PathMayStart(text, i) && i + 1 < text.size() && text[i + 1] != '/' &&
        !EndsPath(text[i + 1])) {
      size_t end = i;
      while (end < text.size() && !EndsPath(text[end])) ++end;
      std::string_view path = text.substr(i, end - i);
      // A sentence's full stop is not part of the path.
      while (!path.empty() && path.back() == '.') path.remove_suffix(1);
      i += path.size();
      std::string_view name = path;
      while (name.size() > 1 && name.back() == '/') name.remove_suffix(1);  // a directory's name too
      const size_t last = name.find_last_of('/');
      out += last == std::string_view::npos || last + 1 == name.size() ? name : name.substr(last + 1);
      continue;
    }
    out += text[i++];
  }
  return out;
}

}  // namespace zkfleet::wire
