// ParseCommandLine: CLI11 parsing with the exit codes every zkfleet program
// documents: --help prints the usage and exits 0; a usage error (unknown
// flag, missing or bad value) prints the error and exits 2 -- not CLI11's
// own codes (105, 106, 109, ...), so scripts and systemd's
// RestartPreventExitStatus=2 can tell a configuration error from a failure.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace zkfleet::cmd {

inline constexpr int kExitUsage = 2;

// nullopt when the command line parsed and the program goes on; otherwise
// the exit code to return from main. A usage error goes to `report` (the
// message, with the hint to --help) when given, else to stderr prefixed with
// `program`; its exit code is kExitUsage.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv, const char* program,
                                           const std::function<void(const std::string&)>& report = nullptr) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    // CLI11 words a misspelt name in a --config file as an INI parse error.
    const std::string extras = "INI was not able to parse ";
    if (what.rfind(extras, 0) == 0) what = "--config: no option is called '" + what.substr(extras.size()) + "'";
    const std::string message = what + " (" + program + " --help shows the usage)";
    if (report) {
      report(message);
    } else {
      std::fprintf(stderr, "%s: %s\n", program, message.c_str());
    }
    return kExitUsage;
  }
}

}  // namespace zkfleet::cmd
