// circuit.wasm -> a compiled, cached generator program.
//
// Steps, in a fresh directory under the cache: copy the wasm (the bytes that
// were hashed), `wasm2c circuit.wasm -n circuit -o circuit.c`, patch the
// field functions listed on native_fr.c's first line (PatchNativeField),
// write driver.c and native_fr.c (embedded in this library), and
// `cc -O3 circuit.c driver.c wasm-rt-impl.c -o generator`. Then
// `generator --describe` tells the field and the sizes, and the directory is
// renamed into place: <cache>/<BLAKE2b-256 of the wasm>-<16 hex of the tools' digest>.
// The tools' digest covers driver.c, native_fr.c, wasm-rt-impl.c, the wasm2c
// and cc binaries (path, size, mtime) and the flags, so a new zkfleet or
// compiler builds anew.
// Two processes building the same circuit at once both succeed; one
// directory stays. A cached directory whose generator no longer describes
// itself is rebuilt.
#pragma once

#include <filesystem>
#include <string>

#include "zkfleet/engine/witness_generator.hpp"

namespace zkfleet::witgen {

// Loads or builds. Throws zkfleet::Error naming the wasm and the step.
engine::GeneratorInfo BuildOrFindGenerator(const std::filesystem::path& wasm,
                                           const engine::WitnessGeneratorOptions& options);

// Renames the wasm2c definitions of the functions that `native_source`'s
// first line lists ("/* zkfleet-native: NAME ... */") to NAME_wasm and
// includes native_fr.c at the end (after GetWitnessLayout's defines). Returns false, leaving `c_source` as it
// was, unless every listed function is defined (a wasm without circom's
// function names, or another circom version's runtime).
bool PatchNativeField(std::string& c_source, const std::string& native_source);

// The "#define ZKF_GETWITNESS_*" lines for native_fr.c's one-pass readout of
// the witness, read off wasm2c's text of circom's getWitness, or "" when that
// function is not exactly the shape known (PatchNativeField adds them).
std::string GetWitnessLayout(const std::string& c_source);

// Parses `generator --describe` output into info (n8, prime, sizes, native).
bool ParseDescribe(const std::string& line, engine::GeneratorInfo& info);

}  // namespace zkfleet::witgen
