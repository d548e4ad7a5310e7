// circuit.wasm -> a compiled, cached generator program.
//
// Steps, in a fresh directory under the cache: copy the wasm (the bytes that
// were hashed), `wasm2c circuit.wasm -n circuit -o circuit.c`, patch the
// field functions listed on native_fr.c's first line (PatchNativeField),
// write driver.c and native_fr.c with its headers (embedded in this library), and
// `cc -O3 circuit.c driver.c wasm-rt-impl.c -o generator`. Then
// `generator --describe` tells the field and the sizes, and the directory is
// renamed into place: <cache>/<BLAKE2b-256 of the wasm>-<16 hex of the tools' digest>.
// The tools' digest covers driver.c, native_fr.c and its headers, wasm-rt-impl.c, the wasm2c
// and cc binaries (path, size, mtime) and the flags, so a new zkfleet or
// compiler builds anew.
// Two processes building the same circuit at once: the second waits on the
// entry's lock (<cache>/.lock-<entry>, flock) and finds the first's result. A cached directory whose generator no longer describes
// itself is rebuilt.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "zkfleet/witgen/witness_generator.hpp"

namespace zkfleet::witgen {

// Loads or builds. Throws zkfleet::Error naming the wasm and the step
// (when `cancel` is set during the build, its tools are killed and it throws).
GeneratorInfo BuildOrFindGenerator(const std::filesystem::path& wasm,
                                           const WitnessGeneratorOptions& options,
                                           const std::atomic<bool>* cancel = nullptr);

// Only loads: the cached generator, or nullopt where BuildOrFindGenerator
// would build one (or the host has no tools and the cache has none). Throws
// as it does for an unreadable wasm or cache.
std::optional<GeneratorInfo> FindGenerator(const std::filesystem::path& wasm,
                                                   const WitnessGeneratorOptions& options);

// circuit.wasm's bytes, checked to be WebAssembly. Throws kNotFound/kIo/kBadFormat naming it.
std::string ReadWasm(const std::filesystem::path& wasm);

// BN254's or BLS12-381's scalar field, by its prime (little-endian bytes).
std::optional<engine::Curve> CurveOfPrime(const std::vector<uint8_t>& prime_le);

// BLAKE2b-256 of bytes, hex (the cache key's first half).
std::string WasmDigest(const std::string& wasm_bytes);

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

// Functions of wasm2c's output longer than this many lines are compiled with
// less optimisation (MarkGiantFunctions).
inline constexpr size_t kGiantFunctionLines = 2000;

// Prefixes each function definition in `c_source` longer than `max_lines`
// lines with ZKF_GIANT_FUNCTION, defined at the top as GCC's
// optimize("O1") (clang: optnone); every other function keeps -O3. GCC's -O3
// grows faster than linearly with a function's size: circomlib's constant
// tables (POSEIDON_C/S/M/P, 16,000-129,000 lines of straight-line stores) and
// its unrolled PoseidonEx/MixS templates (2,000-10,000 lines) kept cc1 busy
// past 30 minutes for a 517-constraint Poseidon(2). Marked, the 1,767-
// constraint tests/fixtures/witgen/poseidon compiles in 22 s of CPU without
// the native field code (all at -O1: 20 s; -O2: 24 s). It also defines
// ZKF_NO_FORCED_INLINE: native_fr.c's always_inline fast paths, forced into
// those functions, took cc1 past 5 minutes even at -O1 (41 s without the
// forcing). The build rolls runs of constant copies first (copy_runs.hpp),
// which leaves most of those functions short. Returns how many were marked.
size_t MarkGiantFunctions(std::string& c_source, size_t max_lines = kGiantFunctionLines);

// Parses `generator --describe` output into info (n8, prime, sizes, native).
bool ParseDescribe(const std::string& line, GeneratorInfo& info);

}  // namespace zkfleet::witgen
