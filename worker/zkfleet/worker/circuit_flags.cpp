#include "zkfleet/worker/circuit_flags.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>

namespace zkfleet::worker {
namespace {

// Why `path` cannot be a circuit's .zkey ("" when it may be): missing,
// unreadable, not a regular file, or without snarkjs' "zkey" magic. The key
// itself is parsed and checked later, at load; this catches a wrong path
// before the worker registers.
std::string ZkeyFileProblem(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) return "no such file: " + path;
  if (!std::filesystem::is_regular_file(status)) return path + " is not a regular file";
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, sizeof(magic))) return "cannot read " + path;
  if (std::string_view(magic, sizeof(magic)) != "zkey") {
    return path + " is not a .zkey (it does not start with snarkjs' \"zkey\" magic)";
  }
  return "";
}

[[noreturn]] void Refuse(const std::string& flag, const std::string& arg, const std::string& why) {
  throw std::invalid_argument(flag + " " + arg + ": " + why);
}

// "ID=PATH" as the circuit flags write it: the id and the path ("" when
// there is no '=').
struct IdAndPath {
  std::string id, path;
};
IdAndPath SplitIdPath(const std::string& arg) {
  const auto eq = arg.find('=');
  return {arg.substr(0, eq), eq == std::string::npos ? std::string() : arg.substr(eq + 1)};
}

}  // namespace

void AddCircuitFlags(CLI::App& app, CircuitFlags& flags) {
  app.add_option("--circuit", flags.circuits,
                 "ID=PATH.zkey: a circuit to hold (repeatable); with --instant, ID alone. SIGHUP rereads the circuit "
                 "flags (and --config): circuits are added and removed without a restart");
  app.add_option("--bellman-circuit", flags.bellman_circuits,
                 "ID=PATH.params: a bellperson-style circuit (Filecoin Groth16, BLS12-381) to hold (repeatable): its "
                 "jobs carry one assignment file per partition (docs/bellman.md)");
  app.add_option("--generator", flags.generators,
                 "ID=PATH/circuit.wasm: circom's witness generator of circuit ID (repeatable): the worker takes jobs "
                 "from inputs for it, compiling the wasm at start (cached, see --witgen-cache; needs wasm2c and cc)");
  app.add_flag("--instant", flags.instant,
               "BENCHMARK MODE: answer every job at once without proving (zkeys are not loaded; results carry no proof)");
  app.add_option("--instant-circuit", flags.instant_circuits,
                 "BENCHMARK MODE for one more circuit id: answered at once, no proof (repeatable)");
}

std::vector<CircuitSpec> CircuitSpecsOf(const CircuitFlags& flags) {
  std::vector<CircuitSpec> specs;
  auto taken = [&specs](const std::string& id) {
    return std::any_of(specs.begin(), specs.end(), [&](const CircuitSpec& s) { return s.id == id; });
  };
  for (const std::string& arg : flags.circuits) {
    auto [id, path] = SplitIdPath(arg);
    CircuitSpec spec;
    spec.id = std::move(id);
    spec.zkey_path = std::move(path);
    spec.instant = flags.instant;
    if (spec.id.empty() || (!flags.instant && spec.zkey_path.empty())) {
      Refuse("--circuit", arg, "expected ID=PATH.zkey (or ID alone with --instant)");
    }
    // Before anything connects: a mistyped path must not register, fail and
    // be restarted by systemd every few seconds (exit 2 stops that:
    // RestartPreventExitStatus in deploy/systemd).
    if (!spec.instant) {
      if (std::string problem = ZkeyFileProblem(spec.zkey_path); !problem.empty()) Refuse("--circuit", arg, problem);
    }
    if (taken(spec.id)) Refuse("--circuit", arg, "circuit " + spec.id + " is given twice");
    specs.push_back(spec);
  }
  for (const std::string& id : flags.instant_circuits) {
    if (taken(id)) Refuse("--instant-circuit", id, "circuit " + id + " is given twice");
    specs.push_back({id, "", true, ""});
  }
  for (const std::string& arg : flags.bellman_circuits) {
    auto [id, path] = SplitIdPath(arg);
    CircuitSpec spec;
    spec.id = std::move(id);
    spec.zkey_path = std::move(path);
    spec.kind = proto::CIRCUIT_KIND_BELLMAN;
    std::error_code ec;
    if (spec.id.empty() || spec.zkey_path.empty() || flags.instant) {
      Refuse("--bellman-circuit", arg, "expected ID=PATH.params (and no --instant)");
    }
    if (!std::filesystem::is_regular_file(spec.zkey_path, ec)) {
      Refuse("--bellman-circuit", arg, "no such file: " + spec.zkey_path);
    }
    if (taken(spec.id)) Refuse("--bellman-circuit", arg, "circuit " + spec.id + " is given twice");
    specs.push_back(spec);
  }
  if (specs.empty()) {
    throw std::invalid_argument("give at least one --circuit, --bellman-circuit or --instant-circuit");
  }
  for (const std::string& arg : flags.generators) {
    const IdAndPath parsed = SplitIdPath(arg);
    const std::string& id = parsed.id;
    const std::string& wasm = parsed.path;
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const CircuitSpec& s) { return s.id == id; });
    if (id.empty() || wasm.empty() || spec == specs.end() || spec->kind == proto::CIRCUIT_KIND_BELLMAN) {
      Refuse("--generator", arg, "expected ID=PATH/circuit.wasm for a circuit given with --circuit");
    }
    if (std::FILE* f = std::fopen(wasm.c_str(), "rb")) {
      std::fclose(f);
    } else {
      Refuse("--generator", arg, "cannot read " + wasm);
    }
    spec->wasm_path = wasm;
  }
  return specs;
}

std::vector<CircuitSpec> ReadCircuitSpecsAgain(const std::vector<std::string>& args) {
  CLI::App app;
  CircuitFlags flags;
  AddCircuitFlags(app, flags);
  app.set_config("--config");
  app.allow_extras();  // every other flag of zkworker, and its value
  app.allow_config_extras(CLI::config_extras_mode::ignore);
  std::vector<std::string> reversed(args.rbegin(), args.rend() - (args.empty() ? 0 : 1));  // CLI11: last first, no program
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(std::string("the command line or its --config file: ") + e.what());
  }
  return CircuitSpecsOf(flags);
}

}  // namespace zkfleet::worker
