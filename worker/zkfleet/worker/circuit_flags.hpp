// zkworker's circuit flags (--circuit, --bellman-circuit, --generator,
// --instant, --instant-circuit): declared once, turned into CircuitSpecs at
// start, and read again from the command line and its --config file on
// SIGHUP, so circuits are added and removed without a restart
// (WorkerCore::ReloadCircuits).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/worker/circuit_set.hpp"

namespace zkfleet::worker {

struct CircuitFlags {
  std::vector<std::string> circuits;          // ID=PATH.zkey (ID alone with --instant)
  std::vector<std::string> bellman_circuits;  // ID=PATH.params
  std::vector<std::string> generators;        // ID=PATH/circuit.wasm
  std::vector<std::string> instant_circuits;  // ID
  bool instant = false;
};

// Declares the flags on `app`, writing into `flags`.
void AddCircuitFlags(CLI::App& app, CircuitFlags& flags);

// The circuits the flags name, each file checked to exist (a .zkey by its
// magic). Throws std::invalid_argument with the message zkworker prints,
// naming the flag ("--circuit a=x.zkey: no such file: x.zkey").
std::vector<CircuitSpec> CircuitSpecsOf(const CircuitFlags& flags);

// The circuit flags read again from `args` (the command line as started,
// program name first) and the --config file it names, other flags ignored.
// Throws std::invalid_argument (CircuitSpecsOf's, or the parser's message).
std::vector<CircuitSpec> ReadCircuitSpecsAgain(const std::vector<std::string>& args);

}  // namespace zkfleet::worker
