#include "zkfleet/witgen/copy_runs.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace zkfleet::witgen {
namespace {

constexpr std::string_view kCopyDeclaration = "static void w2c_Fr_copy(Z_circuit_instance_t*, u32, u32);";

constexpr std::string_view kHelperDeclaration =
    "static void zkf_copy_run(Z_circuit_instance_t*, const u32 (*)[3], u32, u32, u32);";

// Appended at the end of the file, after native_fr.c (whose
// ZKF_NATIVE_COPY_SEGMENT copies a segment without a call per element where
// it may).
constexpr std::string_view kHelperDefinition = R"(
/* zkfleet: the runs of constant copies rolled by RollConstantCopies
 * (witgen/zkfleet/witgen/copy_runs.hpp): segments {first index, source, count},
 * element k of a segment is Fr_copy(instance, (first + k) * size + base,
 * source + k * size), in order, in u32 arithmetic as the unrolled code did. */
static void zkf_copy_run(Z_circuit_instance_t* instance, const u32 (*segments)[3], u32 count, u32 size, u32 base) {
  for (u32 s = 0; s < count; s++) {
    const u32 first = segments[s][0], source = segments[s][1], n = segments[s][2];
#ifdef ZKF_NATIVE_COPY_SEGMENT
    if (zkf_copy_segment(instance, first, source, n, size, base)) continue;
#endif
    for (u32 k = 0; k < n; k++) w2c_Fr_copy(instance, (first + k) * size + base, source + k * size);
  }
}
)";

struct CopyStep {
  size_t indent = 0;
  uint32_t index = 0;  // K
  uint32_t size = 0;
  std::string_view base;  // the local's name after "w2c_"
  uint32_t source = 0;
};

// "<digits>u;" exactly, the value below 2^32.
std::optional<uint32_t> ParseLiteral(std::string_view text) {
  if (text.size() < 3 || !text.ends_with("u;")) return std::nullopt;
  text.remove_suffix(2);
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
    if (value > UINT32_MAX) return std::nullopt;
  }
  return static_cast<uint32_t>(value);
}

bool IsIdentifier(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// The 7 lines of one copy statement starting at lines[at], or nothing.
std::optional<CopyStep> MatchStep(const std::vector<std::string_view>& lines, size_t at) {
  if (at + 7 > lines.size()) return std::nullopt;
  const std::string_view first = lines[at];
  const size_t indent = first.find_first_not_of(' ');
  if (indent == 0 || indent == std::string_view::npos) return std::nullopt;
  std::string_view body[7];
  for (size_t i = 0; i < 7; ++i) {
    const std::string_view line = lines[at + i];
    if (line.size() <= indent || line.find_first_not_of(' ') != indent) return std::nullopt;
    body[i] = line.substr(indent);
  }
  CopyStep step;
  step.indent = indent;
  auto literal_after = [](std::string_view line, std::string_view prefix) -> std::optional<uint32_t> {
    if (!line.starts_with(prefix)) return std::nullopt;
    return ParseLiteral(line.substr(prefix.size()));
  };
  const auto index = literal_after(body[0], "w2c_i0 = ");
  const auto size = literal_after(body[1], "w2c_i1 = ");
  const auto source = literal_after(body[5], "w2c_i1 = ");
  if (!index || !size || !source) return std::nullopt;
  if (body[2] != "w2c_i0 *= w2c_i1;" || body[4] != "w2c_i0 += w2c_i1;" ||
      body[6] != "w2c_Fr_copy(instance, w2c_i0, w2c_i1);") {
    return std::nullopt;
  }
  if (!body[3].starts_with("w2c_i1 = w2c_") || !body[3].ends_with(";")) return std::nullopt;
  std::string_view base = body[3].substr(13, body[3].size() - 14);
  // Not the i0/i1 registers themselves: the statement overwrites them.
  if (!IsIdentifier(base) || base.starts_with("i0") || base.starts_with("i1")) return std::nullopt;
  step.index = *index;
  step.size = *size;
  step.base = base;
  step.source = *source;
  return step;
}

bool SameRun(const CopyStep& a, const CopyStep& b) {
  return a.indent == b.indent && a.size == b.size && a.base == b.base;
}

struct Segment {
  uint32_t first, source, count;
};

std::vector<Segment> Segments(const std::vector<CopyStep>& run) {
  std::vector<Segment> segments;
  for (const CopyStep& step : run) {
    if (!segments.empty()) {
      Segment& last = segments.back();
      const uint64_t next_index = uint64_t{last.first} + last.count;
      const uint64_t next_source = uint64_t{last.source} + uint64_t{last.count} * step.size;
      if (step.index == next_index && step.source == next_source) {
        ++last.count;
        continue;
      }
    }
    segments.push_back({step.index, step.source, 1});
  }
  return segments;
}

void AppendRolled(std::string& out, const std::vector<CopyStep>& run, const std::vector<std::string_view>& lines,
                  size_t last_step_line) {
  const std::string indent(run.front().indent, ' ');
  const std::vector<Segment> segments = Segments(run);
  out += indent + "{ /* zkfleet: " + std::to_string(run.size()) + " constant copies, rolled (copy_runs.hpp) */\n";
  out += indent + "  static const u32 zkf_copies[" + std::to_string(segments.size()) + "][3] = {";
  for (size_t i = 0; i < segments.size(); ++i) {
    if (i % 8 == 0) out += "\n" + indent + "    ";
    // Piece by piece ("{" + std::to_string(...) trips GCC 12's -Wrestrict).
    out += '{';
    out += std::to_string(segments[i].first);
    out += "u, ";
    out += std::to_string(segments[i].source);
    out += "u, ";
    out += std::to_string(segments[i].count);
    out += "u}, ";
  }
  out += "\n" + indent + "  };\n";
  out += indent + "  zkf_copy_run(instance, zkf_copies, " + std::to_string(segments.size()) + "u, " +
         std::to_string(run.front().size) + "u, w2c_" + std::string(run.front().base) + ");\n";
  out += indent + "}\n";
  // What the last statement left in w2c_i0 and w2c_i1: its first six lines.
  for (size_t i = 0; i < 6; ++i) {
    out += lines[last_step_line + i];
    out += '\n';
  }
}

}  // namespace

size_t RollConstantCopies(std::string& c_source, size_t min_run) {
  const size_t declaration = c_source.find(kCopyDeclaration);
  if (declaration == std::string::npos || min_run == 0) return 0;
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < c_source.size();) {
    size_t end = c_source.find('\n', at);
    if (end == std::string::npos) end = c_source.size();
    lines.emplace_back(c_source.data() + at, end - at);
    at = end + 1;
  }
  const bool ends_with_newline = !c_source.empty() && c_source.back() == '\n';
  std::string out;
  out.reserve(c_source.size());
  size_t rolled = 0;
  for (size_t i = 0; i < lines.size();) {
    std::optional<CopyStep> step = MatchStep(lines, i);
    if (!step) {
      out += lines[i];
      if (i + 1 < lines.size() || ends_with_newline) out += '\n';
      if (lines[i] == kCopyDeclaration) out += std::string(kHelperDeclaration) + "\n";
      ++i;
      continue;
    }
    std::vector<CopyStep> run = {*step};
    size_t next = i + 7;
    for (std::optional<CopyStep> more; (more = MatchStep(lines, next)) && SameRun(run.front(), *more); next += 7) {
      run.push_back(*more);
    }
    if (run.size() < min_run) {
      for (size_t j = i; j < next; ++j) {
        out += lines[j];
        out += '\n';
      }
    } else {
      AppendRolled(out, run, lines, next - 7);
      rolled += run.size();
    }
    i = next;
  }
  if (rolled == 0) return 0;
  out += kHelperDefinition;
  c_source = std::move(out);
  return rolled;
}

}  // namespace zkfleet::witgen
