// Conventions the daemons (zkbroker, zkworker) share for their options:
//
//   --config FILE    a TOML file of options, each under its long flag's name
//                    (`data-dir = "/var/lib/zkfleet"`, `circuit = ["a=a.zkey"]`,
//                    `insecure-plaintext = true`); a flag on the command line
//                    overrides the file; an unknown name is an error (exit 2);
//   --print-config   prints every option with its value (the file's, the
//                    flags', or the default) as such a file, and exits 0;
//   sizes            every byte count also takes units: 512MiB, 2GiB, 64K;
//   TEST ONLY        options for tests are hidden from --help and refused in
//                    a config file.
// docs/operations.md, "Configuration files".
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/common/byte_size.hpp"
#include "zkfleet/common/logging.hpp"

namespace zkfleet::cmd {

// Adds --config and --print-config to `app`, after every other option is
// declared: each single-valued option's default is taken from its variable
// now, so that --help and --print-config show it. *print_config is set when
// the latter is given (call PrintConfig after parsing).
inline void AddConfigFile(CLI::App& app, bool* print_config) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_configurable() && option->get_expected_max() == 1) option->capture_default_str();
  }
  app.set_config("--config", "",
                 "TOML file of options, each under its long flag's name (see --print-config); flags given here "
                 "override it");
  app.allow_config_extras(false);  // a misspelt name is an error, not ignored
  app.add_flag("--print-config", *print_config,
               "print the options as a --config file (those set by --config or flags as settings, the others "
               "as commented-out defaults), and exit")
      ->configurable(false);
}

namespace config_detail {
// A TOML value: true/false and numbers as they are, anything else quoted.
inline std::string TomlValue(const std::string& text) {
  if (text == "true" || text == "false") return text;
  if (!text.empty()) {
    char* end = nullptr;
    (void)std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size() && text.find_first_not_of("0123456789.-+eE") == std::string::npos) {
      return text;
    }
  }
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "\"";
}
}  // namespace config_detail

// The options as a file --config reads: each option's help as a comment,
// then `name=value` for an option given (by the file or a flag) and
// `# name=default` for one left at its default, so that a printed file read
// back changes nothing (an option set counts as given, which some checks
// tell apart from the default).
inline void PrintConfig(const CLI::App& app) {
  std::string out = "# " + app.get_description() + "\n";
  for (const CLI::Option* option : app.get_options()) {
    if (!option->get_configurable() || option->get_lnames().empty()) continue;
    const std::string& name = option->get_lnames().front();
    if (name == "help") continue;
    out += "\n# " + option->get_description() + "\n";
    const bool flag = option->get_expected_max() == 0;  // a flag takes no value
    const bool many = option->get_expected_max() > 1;
    std::string value;
    if (option->count() > 0) {
      const std::vector<std::string>& results = option->results();
      if (flag) {
        value = option->as<bool>() ? "true" : "false";
      } else if (many) {
        value = "[";
        for (size_t i = 0; i < results.size(); ++i) value += (i ? ", " : "") + config_detail::TomlValue(results[i]);
        value += "]";
      } else {
        value = config_detail::TomlValue(results.empty() ? std::string() : results.back());
      }
      out += name + "=" + value + "\n";
    } else {
      if (flag) {
        value = "false";
      } else if (many) {
        value = "[]";
      } else {
        value = config_detail::TomlValue(option->get_default_str());
      }
      out += "# " + name + "=" + value + "\n";
    }
  }
  std::fputs(out.c_str(), stdout);
}

// --log-level and --log-format, as every daemon takes them.
struct LogFlags {
  std::string level = "info";
  std::string format = "text";
};
inline void AddLogFlags(CLI::App& app, LogFlags* flags) {
  app.add_option("--log-level", flags->level, "trace, debug, info, warn, error")->capture_default_str();
  app.add_option("--log-format", flags->format,
                 "text, or json: one JSON object per line (time, level, program, msg, and job_seq, worker_id, "
                 "request_id where the event names them) for a log collector")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}
// The process's logger as the flags say (InitLogging).
inline void InitLogging(const std::string& program, const LogFlags& flags) {
  LogFormat format = LogFormat::kText;
  ParseLogFormat(flags.format, &format);  // checked by the option
  zkfleet::InitLogging(program, flags.level, format);
}

// A flag whose value cannot be used: the message names the flag and what is
// expected; a daemon prints it and exits 2 (kExitUsage, command_line.hpp).
struct FlagError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// A flag given in seconds (fractions allowed), as the daemons keep it.
inline std::chrono::milliseconds MillisecondsOf(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// Marks an option as a test aid: not in --help, not settable from a file.
inline CLI::Option* TestOnly(CLI::Option* option) { return option->group("")->configurable(false); }

// A transform for byte-count options: "2GiB" becomes "2147483648" before
// CLI11 converts it; a bad size names the units.
inline CLI::Validator ByteSize() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto bytes = ParseByteSize(text);
        if (!bytes) return "'" + text + "' is not a size (bytes, or with a unit: 512MiB, 2GiB, 64K)";
        text = std::to_string(*bytes);
        return {};
      },
      "SIZE");
}

}  // namespace zkfleet::cmd
