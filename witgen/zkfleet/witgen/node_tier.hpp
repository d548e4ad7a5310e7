// The witness generator's first-sight tier: generator/generator.js (driver.c's
// protocol and messages) run by Node.js on the circuit's wasm as it is, while
// the native generator compiles (witness_generator.cpp chooses).
//
// Sandboxed as the native generator is: its own process group, an empty
// environment, no descriptor but 0-2 (child_process.hpp), the CPU-time and
// memory limits set on node by util-linux's prlimit (driver.c sets its own),
// its oom_score_adj raised by the script. The wasm's bytes go on stdin, so
// node runs exactly the bytes that were hashed.
//
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zkfleet/witgen/witness_generator.hpp"

namespace zkfleet::witgen {

// The argv of one run: prlimit's limits (from options.limits), then
// `node -e <generator.js> --` and `args`. Empty when options.node or
// options.prlimit is not an executable on PATH (or a path to one).
std::vector<std::string> NodeTierArgv(const WitnessGeneratorOptions& options,
                                      const std::vector<std::string>& args);

// What the script reads first on stdin: u32 size (little-endian), the wasm.
std::vector<uint8_t> NodeTierPrefix(const std::string& wasm_bytes);

// `--describe` through node -> info (native_field false, executable the node
// binary, from_cache false), or false with why (no node, a wasm that is not
// circom's).
bool DescribeWithNode(const std::string& wasm_bytes, const WitnessGeneratorOptions& options,
                      GeneratorInfo& info, std::string& why);

}  // namespace zkfleet::witgen
