#include "zkfleet/common/byte_size.hpp"

#include <cctype>
#include <cmath>

namespace zkfleet {

std::optional<uint64_t> ParseByteSize(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    return std::nullopt;
  }
  if (value < 0 || !std::isfinite(value)) return std::nullopt;
  std::string unit = text.substr(used);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KIB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MB" || unit == "MIB") {
    scale = 1024.0 * 1024;
  } else if (unit == "G" || unit == "GB" || unit == "GIB") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "T" || unit == "TB" || unit == "TIB") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return std::nullopt;
  }
  const double bytes = value * scale;
  if (bytes >= 18446744073709551616.0) return std::nullopt;  // 2^64
  return static_cast<uint64_t>(bytes);
}

}  // namespace zkfleet
