#include "zkfleet/wire/input_json.hpp"

#include <nlohmann/json.hpp>

namespace zkfleet::wire {
namespace {

// Counts the nesting and stops the parse at the first problem; keeps no value.
class ShapeCheck : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit ShapeCheck(size_t max_depth) : max_depth_(max_depth) {}

  bool null() override { return Scalar(); }
  bool boolean(bool) override { return Scalar(); }
  bool number_integer(number_integer_t) override { return Scalar(); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(); }
  bool number_float(number_float_t, const string_t&) override { return Scalar(); }
  bool string(string_t&) override { return Scalar(); }
  bool binary(binary_t&) override { return Fail("binary values are not JSON"); }
  bool start_object(std::size_t) override { return Open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return Fail("its top-level value is an array; an input.json is a JSON object");
    return Open();
  }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception&) override {
    return Fail("not valid JSON (at byte " + std::to_string(position > 0 ? position - 1 : 0) + ")");
  }

  const std::optional<std::string>& problem() const { return problem_; }

 private:
  bool Scalar() {
    if (depth_ == 0) return Fail("its top-level value is not an object; an input.json is a JSON object");
    return true;
  }
  bool Open() {
    if (++depth_ > max_depth_) {
      return Fail("nested deeper than " + std::to_string(max_depth_) + " levels");
    }
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }
  bool Fail(std::string why) {
    if (!problem_) problem_ = std::move(why);
    return false;
  }

  size_t max_depth_;
  size_t depth_ = 0;
  std::optional<std::string> problem_;
};

}  // namespace

std::optional<std::string> InputJsonProblem(std::string_view input, size_t max_depth) {
  if (input.empty()) return "empty; an input.json is a JSON object";
  // nlohmann's lexer takes a NUL byte for the end of the input (and would
  // ignore what follows); valid JSON holds none, not even inside a string.
  if (const size_t nul = input.find('\0'); nul != std::string_view::npos) {
    return "not valid JSON (a NUL byte at byte " + std::to_string(nul) + ")";
  }
  ShapeCheck check(max_depth);
  bool ok = false;
  try {
    ok = nlohmann::json::sax_parse(input, &check, nlohmann::json::input_format_t::json, /*strict=*/true,
                                   /*ignore_comments=*/false);
  } catch (const std::exception&) {
    // sax_parse reports through parse_error; anything else is still a refusal.
    if (!check.problem()) return "not valid JSON";
  }
  if (check.problem()) return check.problem();
  if (!ok) return "not valid JSON";
  return std::nullopt;
}

}  // namespace zkfleet::wire
