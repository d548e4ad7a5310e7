#include "zkfleet/snarkjs/json_writer.hpp"

#include <algorithm>
#include <initializer_list>

#include "zkfleet/common/error.hpp"

namespace zkfleet::io {
namespace {

// snarkjs only ever emits decimal digits here; anything else would also break
// the JSON (quotes, backslashes), so it is rejected.
void CheckDecimal(std::string_view s, std::string_view what) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    throw Error(ErrorCode::kInvalidArgument,
                "JSON output: " + std::string(what) + ": expected decimal digits, found \"" + std::string(s) + "\"");
  }
}

// Appends a JSON array of strings, one element per line, as
// JSON.stringify(value, null, 1) lays it out at nesting depth `depth`.
void AppendStringArray(std::string& out, std::initializer_list<std::string_view> items, int depth) {
  const std::string inner(depth + 1, ' ');
  out += "[\n";
  bool first = true;
  for (std::string_view item : items) {
    if (!first) out += ",\n";
    first = false;
    out += inner;
    out += '"';
    out += item;
    out += '"';
  }
  out += '\n';
  out.append(depth, ' ');
  out += ']';
}

}  // namespace

std::string LimbsToDecimal(const uint64_t* limbs, int n) {
  std::vector<uint64_t> v(limbs, limbs + std::max(n, 0));
  constexpr uint64_t kChunk = 10000000000000000000ULL;  // 10^19, the largest power of 10 in a u64
  std::vector<uint64_t> chunks;  // base-10^19 digits, least significant first
  while (!v.empty()) {
    while (!v.empty() && v.back() == 0) v.pop_back();
    if (v.empty()) break;
    unsigned __int128 rem = 0;
    for (size_t i = v.size(); i-- > 0;) {
      const unsigned __int128 cur = (rem << 64) | v[i];
      v[i] = static_cast<uint64_t>(cur / kChunk);
      rem = cur % kChunk;
    }
    chunks.push_back(static_cast<uint64_t>(rem));
  }
  if (chunks.empty()) return "0";
  std::string text = std::to_string(chunks.back());
  for (size_t i = chunks.size() - 1; i-- > 0;) {
    const std::string part = std::to_string(chunks[i]);
    text.append(19 - part.size(), '0');
    text += part;
  }
  return text;
}

std::string ProofJson(std::string_view curve_name, std::string_view a_x, std::string_view a_y,
                      std::string_view b_x_c0, std::string_view b_x_c1, std::string_view b_y_c0,
                      std::string_view b_y_c1, std::string_view c_x, std::string_view c_y) {
  CheckDecimal(a_x, "pi_a.x");
  CheckDecimal(a_y, "pi_a.y");
  CheckDecimal(b_x_c0, "pi_b.x.c0");
  CheckDecimal(b_x_c1, "pi_b.x.c1");
  CheckDecimal(b_y_c0, "pi_b.y.c0");
  CheckDecimal(b_y_c1, "pi_b.y.c1");
  CheckDecimal(c_x, "pi_c.x");
  CheckDecimal(c_y, "pi_c.y");
  if (curve_name != "bn128" && curve_name != "bls12381") {
    throw Error(ErrorCode::kInvalidArgument,
                "JSON output: curve: expected bn128 or bls12381, found \"" + std::string(curve_name) + "\"");
  }

  std::string out = "{\n \"pi_a\": ";
  AppendStringArray(out, {a_x, a_y, "1"}, 1);
  out += ",\n \"pi_b\": [\n  ";
  AppendStringArray(out, {b_x_c0, b_x_c1}, 2);
  out += ",\n  ";
  AppendStringArray(out, {b_y_c0, b_y_c1}, 2);
  out += ",\n  ";
  AppendStringArray(out, {"1", "0"}, 2);
  out += "\n ],\n \"pi_c\": ";
  AppendStringArray(out, {c_x, c_y, "1"}, 1);
  out += ",\n \"protocol\": \"groth16\",\n \"curve\": \"";
  out += curve_name;
  out += "\"\n}";
  return out;
}

std::string PublicJson(const std::vector<std::string>& signals) {
  if (signals.empty()) return "[]";  // JSON.stringify([], null, 1)
  std::string out = "[\n";
  for (size_t i = 0; i < signals.size(); ++i) {
    CheckDecimal(signals[i], "public signal " + std::to_string(i));
    if (i != 0) out += ",\n";
    out += " \"";
    out += signals[i];
    out += '"';
  }
  out += "\n]";
  return out;
}

}  // namespace zkfleet::io
