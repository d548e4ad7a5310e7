// Witness generation: circom's circuit.wasm + an input.json -> the .wtns that
// `snarkjs wtns calculate` writes, byte for byte.
//
//   auto gen = witgen::WitnessGenerator::Load("circuit_js/circuit.wasm", {});
//   std::vector<uint8_t> wtns(gen->wtns_bytes());
//   witgen::GenerationResult r = gen->Generate(input_json_text, wtns);
//   if (!r.ok()) ... r.status, r.error (names the signal, the assert, the limit)
//
// Load translates the wasm to C with wabt's wasm2c, swaps the generator's
// field arithmetic for native Montgomery code when the prime is BN254's or
// BLS12-381's scalar field (witgen/generator/native_fr.c), and compiles it
// with the host's C compiler (`cc`), once: the program is cached under the
// BLAKE2b-256 digests of the wasm and of the tools (docs/design/witness-generation.md).
// The worker host therefore needs wasm2c (Debian: wabt) and a C compiler.
//
// First sight (FirstSight::kInterpretWhileBuilding, the default): a circuit
// not in the cache is not waited for. Load returns at once, and until the
// native generator is built (on a thread of this object, in the background)
// each Generate runs the wasm as it is under Node.js (witgen/generator/
// generator.js, the same protocol, messages and bytes); the result says
// which tier answered. Without node on PATH, Load builds first, as before.
//
// Each Generate runs the compiled generator as a child process of its own,
// with the limits below: a circuit that loops or grows its memory without
// end is killed and fails that one witness; the wasm2c runtime's SIGSEGV
// handler and its 8 GiB memory reservation never touch this process. The
// input.json is parsed here, with JavaScript's BigInt rules (as snarkjs),
// reduced mod p and handed to the child in binary; the child streams the
// .wtns back, and it is read straight into the caller's buffer (one copy).
//
// Ownership: Load returns a shared, immutable generator.
// Thread-safety: Generate may be called from any number of threads at once
// (each call is its own process).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zkfleet/engine/curve.hpp"

namespace zkfleet::witgen {

class OutputSink;  // child_process.hpp

// Per witness, enforced on the child process.
struct GeneratorLimits {
  double cpu_seconds = 600;                // RLIMIT_CPU: SIGXCPU, then SIGKILL
  uint64_t memory_bytes = 16ull << 30;     // RLIMIT_DATA: wasm memory + heap
  double wall_seconds = 900;               // killed (SIGKILL) after this
};

struct WitnessGeneratorOptions {
  // Empty: DefaultCacheDir(). Created 0700; a cache or an entry that is not
  // this user's, or that others may write, is refused (its programs run).
  std::filesystem::path cache_dir;
  std::string wasm2c = "wasm2c";           // wabt's translator (PATH)
  std::string cc = "cc";                   // the C compiler (PATH)
  // Where wasm-rt-impl.c lives (empty: /usr/share/wabt/wasm2c, else /usr/src/wasm2c).
  std::filesystem::path wasm_rt_dir;
  // false: plain wasm2c translation, no native field code (tests, benchmarks).
  bool native_field = true;
  GeneratorLimits limits;
  // Benchmarks: the child computes each witness this many times in one
  // process and reports its in-process times (GenerationResult::bench_json).
  int bench_repeat = 1;
  // Called once, on the loading thread, before a generator is compiled (a
  // circuit not in the cache: wasm2c and the C compiler take seconds to a
  // minute), with a line for people; zkprove prints it, the worker logs it.
  std::function<void(const std::string&)> on_compile;
  // Called once when a background build ends (kInterpretWhileBuilding), on
  // the building thread: "" when the native generator took over, else why
  // the first-sight tier goes on answering.
  std::function<void(const std::string&)> on_built;

  enum class FirstSight {
    kInterpretWhileBuilding,  // answer through node at once; build the native generator behind
    kWaitForBuild,            // Load builds first (the native generator answers every call)
  };
  FirstSight first_sight = FirstSight::kInterpretWhileBuilding;
  std::string node = "node";        // Node.js for the first-sight tier (PATH, or a path)
  std::string prlimit = "prlimit";  // util-linux's, to set the limits on node
  // At first sight, instead of building on a thread of this object, start
  // this command with the wasm's path appended, detached: it outlives a
  // one-shot process (zkprove passes `zkprove wtns build` with its cache).
  // This object then answers through node to its end.
  std::vector<std::string> build_command;

  // $ZKFLEET_WITGEN_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/zkfleet/witgen
  // (neither set, no HOME: zkfleet-witgen-<uid> in the system's temporary directory).
  static std::filesystem::path DefaultCacheDir();
};

// What a Generate call came to. Everything but kOk and kInternal is the
// job's own fault: its input, its circuit or its appetite; never retried.
enum class GenerationStatus {
  kOk,
  kBadInput,      // not JSON, not an object, a value that is not an integer,
                  // a signal missing, unknown or of the wrong size
  kCircuitError,  // the circuit's assert or constraint failed (circom's message), or its code trapped
  kLimit,         // killed at the CPU-time or memory limit, or at the wall-clock limit having used
                  // most of its CPU time (a slow host that starves it is kInternal)
  kCancelled,     // the caller's cancel flag
  kInternal,      // this host's fault: no process, a broken generator, I/O
};
const char* GenerationStatusName(GenerationStatus status);

// A generator stopped at its wall-clock limit of `wall_seconds` after
// `cpu_seconds` on a core: its own appetite (kLimit) when it had at least
// half of that time, else this host starved it (kInternal, "this host is too
// busy": a less busy host may finish it). The status and the error.
std::pair<GenerationStatus, std::string> WallClockVerdict(double wall_seconds, double cpu_seconds);

// Which program computed a witness.
enum class GeneratorTier {
  kNative,  // the compiled generator (wasm2c + cc)
  kNode,    // the first-sight tier: the wasm under Node.js
};
const char* GeneratorTierName(GeneratorTier tier);  // "native", "node"

struct GenerationResult {
  GenerationStatus status = GenerationStatus::kInternal;
  GeneratorTier tier = GeneratorTier::kNative;
  std::string error;         // with context: the signal, the circuit's lines, the limit
  double seconds = 0;        // parse + child process, wall clock
  std::string bench_json;    // with bench_repeat > 1: {"witnesses":N,"best_ms":...,"median_ms":...}
  bool ok() const { return status == GenerationStatus::kOk; }
};

struct GeneratorInfo {
  std::string wasm_digest;             // BLAKE2b-256 of circuit.wasm, hex: the cache key's first half
  std::filesystem::path executable;    // the compiled generator
  uint32_t n8 = 0;                     // bytes per field element
  std::vector<uint8_t> prime;          // little-endian, n8 bytes
  std::optional<engine::Curve> curve;  // when the prime is BN254's or BLS12-381's scalar field
  uint32_t witness_count = 0;          // signals in the witness (wire 0 = 1 included)
  uint32_t input_count = 0;            // input values the circuit expects
  bool native_field = false;           // native Montgomery code replaced the wasm's
  bool from_cache = false;             // false: compiled by this Load
  double load_seconds = 0;             // translate + compile (or cache lookup)
};

class WitnessGenerator {
 public:
  // Translates and compiles circuit.wasm, or finds it in the cache. Throws
  // zkfleet::Error naming the wasm and the step that failed (no wasm2c, no
  // compiler, a wasm that is not circom's).
  static std::shared_ptr<const WitnessGenerator> Load(const std::filesystem::path& wasm,
                                                      const WitnessGeneratorOptions& options);

  // The generator Load found or built; at first sight, node's description
  // of the circuit (native_field false) until the native one takes over.
  GeneratorInfo info() const;
  // The tier the next Generate uses.
  GeneratorTier tier() const;
  // Blocks until a background build has ended (tests, benchmarks); true
  // when the native generator answers from now on.
  bool WaitForNative() const;
  // The size of every .wtns this generator writes.
  uint64_t wtns_bytes() const;

  // Computes the witness of `input_json` into `out` (exactly wtns_bytes()
  // long): on kOk, out holds the .wtns. `cancel`, when set, is polled; the
  // child is then killed. Never throws for the input's or the circuit's
  // faults: they are the result's status and error.
  GenerationResult Generate(std::string_view input_json, std::span<uint8_t> out,
                            const std::atomic<bool>* cancel = nullptr) const;

  // The same, written to the file `wtns_path` by the child itself (no copy
  // through this process: zkprove wtns calculate). Through a temporary file
  // beside it, renamed into place only on kOk: a failed generation leaves
  // no file, and an older file at that path untouched.
  GenerationResult GenerateToFile(std::string_view input_json, const std::filesystem::path& wtns_path,
                                  const std::atomic<bool>* cancel = nullptr) const;

  WitnessGenerator(GeneratorInfo info, WitnessGeneratorOptions options);
  ~WitnessGenerator();  // cancels a background build (its tools are killed) and joins it
  WitnessGenerator(const WitnessGenerator&) = delete;
  WitnessGenerator& operator=(const WitnessGenerator&) = delete;

 private:
  struct Background;
  GenerationResult Run(std::string_view input_json, OutputSink* sink, int stdout_fd,
                       const std::function<std::string()>& check_output, const std::atomic<bool>* cancel) const;

  GeneratorInfo info_;  // at first sight, node's; the native one is in background_
  WitnessGeneratorOptions options_;
  std::unique_ptr<Background> background_;  // the first-sight tier and its build; null: native from Load
};

}  // namespace zkfleet::witgen
