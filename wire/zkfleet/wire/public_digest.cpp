#include "zkfleet/wire/public_digest.hpp"

#include <sodium.h>

#include <nlohmann/json.hpp>

namespace zkfleet::wire {

std::string PublicSignalsDigest(const std::vector<std::string>& decimal_signals) {
  std::string joined;
  for (size_t i = 0; i < decimal_signals.size(); ++i) {
    if (i) joined += ',';
    joined += decimal_signals[i];
  }
  std::string digest(crypto_hash_sha256_BYTES, '\0');
  crypto_hash_sha256(reinterpret_cast<unsigned char*>(digest.data()),
                     reinterpret_cast<const unsigned char*>(joined.data()), joined.size());
  return digest;
}

std::optional<std::string> PublicSignalsDigestOfJson(std::string_view public_json, std::string* why) {
  auto fail = [&](const std::string& text) -> std::optional<std::string> {
    if (why) *why = text;
    return std::nullopt;
  };
  nlohmann::json parsed = nlohmann::json::parse(public_json, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) return fail("not a JSON array (snarkjs' public.json is one)");
  std::vector<std::string> signals;
  for (const auto& value : parsed) {
    if (!value.is_string()) return fail("public signal " + std::to_string(signals.size()) + " is not a string");
    const std::string& text = value.get_ref<const std::string&>();
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || (text.size() > 1 && text[0] == '0')) {
      return fail("public signal " + std::to_string(signals.size()) + " is not a decimal number: \"" +
                  text.substr(0, 80) + "\"");
    }
    signals.push_back(text);
  }
  return PublicSignalsDigest(signals);
}

std::string DigestHex(std::string_view digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : digest) {
    hex += kHex[c >> 4];
    hex += kHex[c & 15];
  }
  return hex;
}

}  // namespace zkfleet::wire
