// Fuzzes zkfleet's snarkjs JSON code (gpu/zkfleet/io/json.*). zkfleet reads
// no snarkjs JSON itself: json.* only writes proof.json / public.json and
// converts limbs to decimal. So the input is treated as a snarkjs document
// (the seeds are the fixtures' proof.json, public.json and
// verification_key.json), parsed with nlohmann-json as clients and zkctl do,
// and whatever strings it holds are fed to the writers, whose output must be
// JSON that parses back to the same values in JSON.stringify(v, null, 1)
// layout. The raw bytes also drive LimbsToDecimal, checked by converting
// the decimal text back.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "zkfleet/io/json.hpp"

namespace {

using Json = nlohmann::ordered_json;  // keeps key order, as JSON.stringify does
using zkfleet::ErrorCode;
using zkfleet::fuzz::Check;

bool IsDecimal(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `text` must be JSON whose 1-space re-serialisation is `text` itself.
Json ParseOwnOutput(const std::string& text) {
  const Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  Check(!parsed.is_discarded(), "writer output is not JSON");
  Check(parsed.dump(1) == text, "writer output differs from JSON.stringify(v, null, 1) layout");
  return parsed;
}

// public.json from any array of strings (public.json itself, IC coordinates
// of verification_key.json, ...).
void FuzzPublicJson(const Json& array) {
  std::vector<std::string> signals;
  for (const Json& item : array) signals.push_back(item.get<std::string>());
  const bool valid = std::all_of(signals.begin(), signals.end(), IsDecimal);
  try {
    const std::string text = zkfleet::io::PublicJson(signals);
    Check(valid, "PublicJson accepted a non-decimal signal");
    Check(ParseOwnOutput(text) == Json(signals), "PublicJson output does not parse back to its input");
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kInvalidArgument});
    Check(!valid, "PublicJson rejected decimal signals");
  }
}

// The string at `v[i]`, or "" when absent or not a string.
std::string StringAt(const Json& v, size_t i) {
  return v.is_array() && i < v.size() && v[i].is_string() ? v[i].get<std::string>() : std::string();
}

// proof.json from the fields of a proof-shaped object.
void FuzzProofJson(const Json& proof) {
  const Json none;
  const auto field = [&](const char* key) -> const Json& { return proof.contains(key) ? proof[key] : none; };
  const Json& pi_b = field("pi_b");
  const Json& b_x = pi_b.is_array() && !pi_b.empty() ? pi_b[0] : none;
  const Json& b_y = pi_b.is_array() && pi_b.size() > 1 ? pi_b[1] : none;
  const std::string curve = field("curve").is_string() ? field("curve").get<std::string>() : std::string();
  const std::string args[8] = {StringAt(field("pi_a"), 0), StringAt(field("pi_a"), 1), StringAt(b_x, 0),
                               StringAt(b_x, 1),           StringAt(b_y, 0),           StringAt(b_y, 1),
                               StringAt(field("pi_c"), 0), StringAt(field("pi_c"), 1)};
  const bool valid = std::all_of(std::begin(args), std::end(args), IsDecimal) &&
                     (curve == "bn128" || curve == "bls12381");
  try {
    const std::string text = zkfleet::io::ProofJson(curve, args[0], args[1], args[2], args[3], args[4], args[5],
                                                     args[6], args[7]);
    Check(valid, "ProofJson accepted a bad argument");
    const Json out = ParseOwnOutput(text);
    // Json::array() throughout: a braced list of string pairs would be an object.
    Json expected = Json::object();
    expected["pi_a"] = Json::array({args[0], args[1], "1"});
    expected["pi_b"] = Json::array({Json::array({args[2], args[3]}), Json::array({args[4], args[5]}),
                                    Json::array({"1", "0"})});
    expected["pi_c"] = Json::array({args[6], args[7], "1"});
    expected["protocol"] = "groth16";
    expected["curve"] = curve;
    Check(out == expected, "ProofJson output does not parse back to its input");
  } catch (const zkfleet::Error& e) {
    zkfleet::fuzz::ExpectErrorCode(e, {ErrorCode::kInvalidArgument});
    Check(!valid, "ProofJson rejected valid arguments");
  }
}

// Visits every value (depth-limited: the writers need no deep nesting).
void Walk(const Json& v, int depth) {
  if (depth > 16) return;
  if (v.is_array() && std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_string(); })) {
    FuzzPublicJson(v);
  }
  if (v.is_object() && (v.contains("pi_a") || v.contains("pi_b") || v.contains("pi_c"))) FuzzProofJson(v);
  if (v.is_structured()) {
    for (const Json& child : v) Walk(child, depth + 1);
  }
}

// LimbsToDecimal(limbs) read back with schoolbook multiply-by-10.
void FuzzLimbsToDecimal(const uint8_t* data, size_t size) {
  const int n = static_cast<int>(std::min<size_t>(size / 8, 8));
  std::vector<uint64_t> limbs(n);
  if (n > 0) std::memcpy(limbs.data(), data, 8 * size_t(n));
  const std::string text = zkfleet::io::LimbsToDecimal(limbs.data(), n);
  Check(IsDecimal(text) && (text == "0" || text[0] != '0'), "LimbsToDecimal: not canonical decimal");
  std::vector<uint64_t> back(n + 1, 0);  // one spare limb to catch overflow
  for (char digit : text) {
    unsigned __int128 carry = static_cast<unsigned>(digit - '0');
    for (uint64_t& limb : back) {
      const unsigned __int128 cur = static_cast<unsigned __int128>(limb) * 10 + carry;
      limb = static_cast<uint64_t>(cur);
      carry = cur >> 64;
    }
  }
  Check(back[n] == 0 && std::equal(limbs.begin(), limbs.end(), back.begin()), "LimbsToDecimal: wrong value");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzLimbsToDecimal(data, size);
  const Json doc = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) Walk(doc, 0);
  return 0;
}
