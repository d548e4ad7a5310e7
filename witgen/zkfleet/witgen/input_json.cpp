#include "zkfleet/witgen/input_json.hpp"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

namespace zkfleet::witgen {
namespace {

constexpr int kMaxDepth = 64;

// A value mod p, in 32-bit words, least significant first.
class ModP {
 public:
  explicit ModP(const std::vector<uint32_t>& p) : p_(p), v_(p.size() + 1, 0) {}

  // v = v * base + digit (mod p); base and digit small.
  void MulAdd(uint32_t base, uint32_t digit) {
    uint64_t carry = digit;
    for (size_t i = 0; i < v_.size(); ++i) {
      uint64_t t = static_cast<uint64_t>(v_[i]) * base + carry;
      v_[i] = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    // v < p*base + digit <= p*(base+1): a few subtractions bring it below p.
    while (!BelowP()) SubP();
  }

  // p - v when v != 0.
  void Negate() {
    if (IsZero()) return;
    std::vector<uint32_t> r(v_.size(), 0);
    int64_t borrow = 0;
    for (size_t i = 0; i < v_.size(); ++i) {
      int64_t t = static_cast<int64_t>(i < p_.size() ? p_[i] : 0) - v_[i] - borrow;
      borrow = t < 0;
      r[i] = static_cast<uint32_t>(t + (borrow ? (int64_t{1} << 32) : 0));
    }
    v_ = r;
  }

  void AppendTo(std::vector<uint8_t>& out) const {
    for (size_t i = 0; i < p_.size(); ++i) {
      uint32_t w = v_[i];
      for (int b = 0; b < 4; ++b) out.push_back(static_cast<uint8_t>(w >> (8 * b)));
    }
  }

 private:
  bool IsZero() const {
    for (uint32_t w : v_) if (w) return false;
    return true;
  }
  bool BelowP() const {
    for (size_t i = v_.size(); i-- > 0;) {
      uint32_t pw = i < p_.size() ? p_[i] : 0;
      if (v_[i] != pw) return v_[i] < pw;
    }
    return false;  // equal
  }
  void SubP() {
    int64_t borrow = 0;
    for (size_t i = 0; i < v_.size(); ++i) {
      int64_t t = static_cast<int64_t>(v_[i]) - (i < p_.size() ? p_[i] : 0) - borrow;
      borrow = t < 0;
      v_[i] = static_cast<uint32_t>(t + (borrow ? (int64_t{1} << 32) : 0));
    }
  }

  const std::vector<uint32_t>& p_;
  std::vector<uint32_t> v_;
};

// JavaScript's StrWhiteSpaceChar (WhiteSpace and LineTerminator), in UTF-8:
// returns the length of the white space character at s[i], or 0.
size_t JsSpaceAt(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r') return 1;
  auto rest = s.substr(i);
  static const char* const kMultiByte[] = {
      "\xC2\xA0",      // U+00A0 no-break space
      "\xEF\xBB\xBF",  // U+FEFF
      "\xE1\x9A\x80",  // U+1680
      "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82", "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85",
      "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88", "\xE2\x80\x89", "\xE2\x80\x8A",  // U+2000..U+200A
      "\xE2\x80\xA8", "\xE2\x80\xA9",  // U+2028, U+2029
      "\xE2\x80\xAF",                  // U+202F
      "\xE2\x81\x9F",                  // U+205F
      "\xE3\x80\x80",                  // U+3000
  };
  for (const char* m : kMultiByte) {
    if (rest.starts_with(m)) return std::strlen(m);
  }
  return 0;
}

std::string_view TrimJs(std::string_view s) {
  size_t b = 0;
  while (b < s.size()) {
    size_t n = JsSpaceAt(s, b);
    if (!n) break;
    b += n;
  }
  s = s.substr(b);
  // From the end: find the last character that is not white space.
  size_t end = 0, i = 0;
  while (i < s.size()) {
    size_t n = JsSpaceAt(s, i);
    if (n) {
      i += n;
    } else {
      // one UTF-8 character
      unsigned char c = static_cast<unsigned char>(s[i]);
      size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      i += len;
      end = std::min(i, s.size());
    }
  }
  return s.substr(0, end);
}

int DigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// BigInt(string) (ECMAScript StringToBigInt), mod p. nullopt: SyntaxError.
std::optional<std::string> ParseJsBigIntString(std::string_view text, ModP& v) {
  std::string_view s = TrimJs(text);
  if (s.empty()) return std::nullopt;  // BigInt("") is 0n
  uint32_t base = 10;
  bool negative = false;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'o' || s[1] == 'O' || s[1] == 'b' ||
                                       s[1] == 'B')) {
    base = (s[1] == 'x' || s[1] == 'X') ? 16 : (s[1] == 'o' || s[1] == 'O') ? 8 : 2;
    s.remove_prefix(2);
  } else if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::string("no digits");
  for (char c : s) {
    int d = DigitValue(c);
    if (d >= static_cast<int>(base)) return std::string("not an integer in base ") + std::to_string(base);
    v.MulAdd(base, static_cast<uint32_t>(d));
  }
  if (negative) v.Negate();
  return std::nullopt;
}

// BigInt(double): the double must be an integer; its exact value mod p.
bool FromDouble(double d, ModP& v) {
  if (!std::isfinite(d) || d != std::trunc(d)) return false;
  bool negative = d < 0;
  d = std::fabs(d);
  int exp = 0;
  double frac = std::frexp(d, &exp);  // d = frac * 2^exp, 0.5 <= frac < 1
  uint64_t mantissa = static_cast<uint64_t>(std::ldexp(frac, 53));
  int shift = exp - 53;
  if (shift < 0) {
    mantissa >>= -shift;  // exact: d is an integer
    shift = 0;
  }
  for (int bit = 63; bit >= 0; --bit) v.MulAdd(2, static_cast<uint32_t>((mantissa >> bit) & 1));
  for (int i = 0; i < shift; ++i) v.MulAdd(2, 0);
  if (negative) v.Negate();
  return true;
}

std::string FormatDouble(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

struct Signal {
  std::string name;
  std::vector<uint8_t> values;  // count * n8 bytes
  uint32_t count = 0;
  std::string error;            // its first bad value (reported only if this value of the key is the last)
};

// SAX events -> signals. A syntax error, or a top level that is not an
// object, stops the parse; a bad value is remembered on its signal, since a
// later value of the same key replaces it (JSON.parse keeps the last).
class Handler : public nlohmann::json_sax<nlohmann::json> {
 public:
  Handler(const std::vector<uint32_t>& p, InputError& error) : p_(p), error_(error) {}

  std::vector<Signal> signals;

  bool null() override { return Value([&](ModP&) { return std::optional<std::string>("null is not a number"); }); }
  bool boolean(bool b) override {
    return Value([&](ModP& v) {
      v.MulAdd(1, b ? 1 : 0);
      return std::optional<std::string>();
    });
  }
  bool number_integer(number_integer_t n) override {
    return Number(static_cast<double>(n), n >= -(int64_t{1} << 53) && n <= (int64_t{1} << 53)
                                              ? std::optional<int64_t>(n)
                                              : std::nullopt);
  }
  bool number_unsigned(number_unsigned_t n) override {
    return Number(static_cast<double>(n),
                  n <= (uint64_t{1} << 53) ? std::optional<int64_t>(static_cast<int64_t>(n)) : std::nullopt);
  }
  bool number_float(number_float_t d, const string_t& text) override {
    return Value([&](ModP& v) {
      return FromDouble(d, v) ? std::optional<std::string>() : std::optional<std::string>("the number " + text +
                                                                                          " is not an integer");
    });
  }
  bool string(string_t& s) override {
    return Value([&](ModP& v) -> std::optional<std::string> {
      if (auto why = ParseJsBigIntString(s, v)) return "\"" + Shorten(s) + "\" is not an integer (" + *why + ")";
      return std::nullopt;
    });
  }
  bool binary(binary_t&) override { return Stop("binary values are not JSON"); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) {
      depth_ = 1;
      return true;
    }
    if (depth_ + 1 > kMaxDepth) return Stop("values nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (skip_ == 0) Bad("an object is not a number");
    ++depth_;
    ++skip_;  // its contents are not values of the signal
    return true;
  }
  bool key(string_t& name) override {
    if (depth_ > 1) return true;  // inside an object that is a (bad) value: skipped
    if (name == "__proto__") {
      // snarkjs's unstringifyBigInts assigns it to a fresh object, which sets
      // (or ignores) its prototype: never an input signal.
      ignored_ = Signal{};
      current_ = &ignored_;
      return true;
    }
    auto [it, inserted] = index_.try_emplace(name, signals.size());
    if (inserted) {
      signals.push_back(Signal{name, {}, 0, {}});
    } else {
      signals[it->second] = Signal{name, {}, 0, {}};  // JSON.parse: the last one wins
    }
    current_ = &signals[it->second];
    return true;
  }
  bool end_object() override { return Leave(); }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return Stop("the top level must be an object, not an array");
    return Enter();
  }
  bool end_array() override { return Leave(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (error_.message.empty()) {
      error_.message = "input.json is not valid JSON at byte " + std::to_string(position) + ": " + e.what();
    }
    return false;
  }

  // The first bad value among the signals as they stand at the end.
  bool Finish() {
    for (const Signal& s : signals) {
      if (!s.error.empty()) {
        error_.message = s.error;
        return false;
      }
    }
    return true;
  }

 private:
  template <class Convert>
  bool Value(Convert convert) {
    if (depth_ == 0 || current_ == nullptr) return Stop("the top level must be an object");
    if (skip_ > 0) return true;
    ModP v(p_);
    if (auto why = convert(v)) {
      Bad(*why);
      ++current_->count;  // the position of the next value stays right in messages
      return true;
    }
    v.AppendTo(current_->values);
    ++current_->count;
    return true;
  }

  bool Number(double as_js, std::optional<int64_t> exact) {
    return Value([&](ModP& v) -> std::optional<std::string> {
      if (exact) {
        // small integers: exact, with their sign
        uint64_t mag = *exact < 0 ? static_cast<uint64_t>(-*exact) : static_cast<uint64_t>(*exact);
        for (int bit = 63; bit >= 0; --bit) v.MulAdd(2, static_cast<uint32_t>((mag >> bit) & 1));
        if (*exact < 0) v.Negate();
        return std::nullopt;
      }
      if (!FromDouble(as_js, v)) return "the number " + FormatDouble(as_js) + " is not an integer";
      return std::nullopt;
    });
  }

  bool Enter() {
    if (++depth_ > kMaxDepth) return Stop("arrays nested deeper than " + std::to_string(kMaxDepth) + " levels");
    if (skip_ > 0) ++skip_;
    return true;
  }
  bool Leave() {
    --depth_;
    if (skip_ > 0) --skip_;
    return true;
  }

  // A bad value of the current signal: remembered (the first), and an
  // object's contents skipped.
  void Bad(const std::string& why) {
    if (current_->error.empty()) {
      current_->error = "input signal " + Shorten(current_->name) + ", value " + std::to_string(current_->count) +
                        ": " + why;
    }
  }

  static std::string Shorten(const std::string& s) { return s.size() <= 80 ? s : s.substr(0, 77) + "..."; }

  bool Stop(const std::string& why) {
    if (error_.message.empty()) error_.message = "input.json: " + why;
    return false;
  }

  const std::vector<uint32_t>& p_;
  InputError& error_;
  std::map<std::string, size_t> index_;
  Signal* current_ = nullptr;
  Signal ignored_;
  int depth_ = 0;
  int skip_ = 0;  // > 0 inside an object that is a value (its nesting depth)
};

void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int b = 0; b < 4; ++b) out.push_back(static_cast<uint8_t>(v >> (8 * b)));
}

}  // namespace

bool BuildGeneratorRequest(std::string_view json, std::span<const uint8_t> prime, std::vector<uint8_t>& request,
                           InputError& error) {
  error = {};
  if (prime.empty() || prime.size() % 4 != 0) {
    error.message = "the circuit's prime has " + std::to_string(prime.size()) + " bytes (a multiple of 4 expected)";
    return false;
  }
  std::vector<uint32_t> p(prime.size() / 4);
  std::memcpy(p.data(), prime.data(), prime.size());  // little-endian host (x86-64, aarch64)
  if (json.find('\0') != std::string_view::npos) {
    // nlohmann's reader would stop there and take what came before; JSON.parse refuses it.
    error.message = "input.json is not valid JSON: a NUL byte at byte " + std::to_string(json.find('\0'));
    return false;
  }
  Handler handler(p, error);
  bool ok = nlohmann::json::sax_parse(json.begin(), json.end(), &handler, nlohmann::json::input_format_t::json,
                                      /*strict=*/true) &&
            handler.Finish();
  if (!ok || !error.message.empty()) {
    if (error.message.empty()) error.message = "input.json is not valid JSON";
    return false;
  }
  request.clear();
  request.reserve(16);
  for (char c : {'Z', 'K', 'W', 'I'}) request.push_back(static_cast<uint8_t>(c));
  PutU32(request, 1);
  PutU32(request, static_cast<uint32_t>(p.size()));
  PutU32(request, static_cast<uint32_t>(handler.signals.size()));
  for (const Signal& s : handler.signals) {
    PutU32(request, static_cast<uint32_t>(s.name.size()));
    request.insert(request.end(), s.name.begin(), s.name.end());
    PutU32(request, s.count);
    request.insert(request.end(), s.values.begin(), s.values.end());
  }
  return true;
}

}  // namespace zkfleet::witgen
