// zkprove: a drop-in for rapidsnark's `prover`.
//
//   zkprove <circuit.zkey> <witness.wtns> <proof.json> <public.json>
//           [--threads N] [--backend cpu|cuda|auto] [--timings] [--repeat N]
//           [--verify on|off] [--no-key-check] [--key-check-cache DIR|off]
//           [--msm-tables N]
//
// Exit 0 and both files written on success; on any error, one line naming
// the file and what is wrong on stderr, exit 1, and no output files.
// The key's points are checked at load unless this very key (by a BLAKE2b
// digest of its content) passed the check on this host before: the
// key-check cache, shared with zkworker (engine/checked_keys.hpp), by default
// $ZKFLEET_KEY_CHECK_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/zkfleet/checked-keys.
// A cache that cannot be written costs a warning, never the proof.
// Every proof is verified against the key's own verification key before it
// is written (--verify off skips that, for benchmarks only). A witness that
// does not satisfy the circuit is such an error: "zkprove: error: witness
// does not satisfy circuit <zkey file stem> (...)". An engine fault (the
// first proof failed, the CPU re-proof verified) writes the re-proof, exits
// 0 and says so in a warning line.
//
//   zkprove export-vk <circuit.zkey> <verification_key.json>
//
// writes the key's verification key as `snarkjs zkey export verificationkey`
// does (same JSON, vk_alphabeta_12 included).
//
//   zkprove wtns calculate <circuit.wasm> <input.json> <witness.wtns>
//   zkprove fullprove <input.json> <circuit.wasm> <circuit.zkey> <proof.json> <public.json>
//
// compute the witness from circom's circuit.wasm and an input.json, as
// `snarkjs wtns calculate` / `snarkjs groth16 fullprove` (same argument
// order, same .wtns bytes), with zkfleet's witness generator
// (witgen/witness_generator.hpp): compiled from the wasm once and cached
// (--witgen-cache), run as a child process under --cpu-seconds and
// --memory-mib. An input or circuit error (a missing or unknown signal, a
// value that is not an integer, the circuit's failing assert) exits 2 with
// the signal or circom's message; other errors exit 1.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <sstream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "zkfleet/common/error.hpp"
#include "zkfleet/common/progress_ticker.hpp"
#include "zkfleet/engine/proving_key.hpp"
#include "zkfleet/engine/witness_file.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/witgen/witness_generator.hpp"

namespace {

void WriteFile(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw zkfleet::Error(zkfleet::ErrorCode::kIo, "cannot write " + path);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) throw zkfleet::Error(zkfleet::ErrorCode::kIo, "cannot write " + path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw zkfleet::Error(zkfleet::ErrorCode::kIo, "cannot rename " + tmp + " to " + path);
  }
}

int ExportVk(int argc, char** argv) {
  CLI::App app{"zkprove export-vk: write a .zkey's verification_key.json (as snarkjs zkey export verificationkey)"};
  app.name("zkprove export-vk");
  std::string zkey_path, vk_path;
  app.add_option("zkey", zkey_path, "circuit proving key (.zkey, Groth16)")->required();
  app.add_option("vk", vk_path, "output verification_key.json")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    WriteFile(vk_path, zkfleet::engine::ExportVerificationKeyJson(zkey_path));
  } catch (const std::exception& e) {
    std::cerr << "zkprove export-vk: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

std::string ReadTextFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw zkfleet::Error(zkfleet::ErrorCode::kNotFound, std::string("cannot read ") + what + " " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The witness generator's options, shared by `wtns calculate` and `fullprove`.
struct WitgenFlags {
  std::string cache = zkfleet::witgen::WitnessGeneratorOptions::DefaultCacheDir().string();
  bool plain = false;
  double cpu_seconds = 600;
  uint64_t memory_mib = 16384;
  double wall_seconds = 900;
  bool timings = false;
  int repeat = 1;

  void Add(CLI::App& app) {
    app.add_option("--witgen-cache", cache,
                   "directory of compiled generators, by the BLAKE2b-256 digests of the wasm and of the tools "
                   "(default: $ZKFLEET_WITGEN_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/zkfleet/witgen)")
        ->capture_default_str();
    app.add_flag("--plain-wasm2c", plain, "keep the wasm's own field arithmetic (no native code; benchmarks)");
    app.add_option("--cpu-seconds", cpu_seconds, "CPU-time limit of the generator process")->capture_default_str();
    app.add_option("--memory-mib", memory_mib, "memory limit of the generator process (MiB)")->capture_default_str();
    app.add_option("--wall-seconds", wall_seconds, "wall-clock limit of the generator process")->capture_default_str();
    app.add_flag("--timings", timings, "print the generator's load and run times to stderr");
    app.add_option("--repeat", repeat,
                   "benchmarks: compute the witness N times in one generator process and print its in-process "
                   "times (JSON) to stderr")
        ->check(CLI::PositiveNumber);
  }
  zkfleet::witgen::WitnessGeneratorOptions Options() const {
    zkfleet::witgen::WitnessGeneratorOptions o;
    o.cache_dir = cache;
    o.native_field = !plain;
    o.limits.cpu_seconds = cpu_seconds;
    o.limits.memory_bytes = memory_mib << 20;
    o.limits.wall_seconds = wall_seconds;
    o.bench_repeat = repeat;
    // A first sight compiles for seconds to a minute: say so, or it looks hung.
    o.on_compile = [](const std::string& line) { std::fprintf(stderr, "zkprove: %s...\n", line.c_str()); };
    // At first sight node answers, and the native generator is built by a
    // `zkprove wtns build` left running behind this one-shot process.
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      o.build_command = {self.string(), "wtns", "build", "--witgen-cache", cache};
      if (plain) o.build_command.push_back("--plain-wasm2c");
    }
    return o;
  }
};

// A witness that could not be computed: the message is printed; the command
// returns `exit_code` (2: the input's or the circuit's fault, 1: else).
struct WitnessFailed {
  int exit_code;
};

// Prints the timings (--timings) and the failure of one generation; throws
// WitnessFailed unless it succeeded.
void ReportGeneration(const char* command, const std::string& input_path,
                      const zkfleet::witgen::WitnessGenerator& generator,
                      const zkfleet::witgen::GenerationResult& r, const WitgenFlags& flags) {
  if (flags.timings) {
    const zkfleet::witgen::GeneratorInfo info = generator.info();
    const bool node = r.tier == zkfleet::witgen::GeneratorTier::kNode;
    std::fprintf(stderr, "%s: generator %s in %.4fs (%s), witness %.4fs by the %s tier (%u signals)\n", command,
                 node ? "first sight, described by node" : info.from_cache ? "found in the cache" : "compiled",
                 info.load_seconds, node ? "the wasm under node" : info.native_field ? "native field code" : "wasm field code",
                 r.seconds, zkfleet::witgen::GeneratorTierName(r.tier), info.witness_count);
  }
  if (!r.bench_json.empty()) std::fprintf(stderr, "%s\n", r.bench_json.c_str());
  if (!r.ok()) {
    bool theirs = r.status != zkfleet::witgen::GenerationStatus::kInternal;
    std::fprintf(stderr, "%s: error: %s: %s (%s)\n", command, input_path.c_str(), r.error.c_str(),
                 zkfleet::witgen::GenerationStatusName(r.status));
    throw WitnessFailed{theirs ? 2 : 1};
  }
}

// Computes the .wtns bytes of input.json; throws WitnessFailed.
// The .wtns bytes: not zero-filled first (the generator writes every byte).
struct WtnsBuffer {
  std::unique_ptr<uint8_t[]> bytes;
  size_t size = 0;
  std::span<uint8_t> span() { return {bytes.get(), size}; }
};

WtnsBuffer CalculateWitness(const char* command, const std::string& wasm, const std::string& input_path,
                            const WitgenFlags& flags) {
  const std::string input = ReadTextFile(input_path, "input");
  auto generator = zkfleet::witgen::WitnessGenerator::Load(wasm, flags.Options());
  WtnsBuffer wtns{std::unique_ptr<uint8_t[]>(new uint8_t[generator->wtns_bytes()]), generator->wtns_bytes()};
  ReportGeneration(command, input_path, *generator, generator->Generate(input, wtns.span()), flags);
  return wtns;
}

int WtnsCalculate(int argc, char** argv) {
  CLI::App app{"zkprove wtns calculate: compute a witness from circuit.wasm and input.json (as snarkjs wtns calculate)"};
  app.name("zkprove wtns calculate");
  std::string wasm, input, wtns_path;
  WitgenFlags flags;
  app.add_option("wasm", wasm, "circom's witness generator (circuit_js/circuit.wasm)")->required();
  app.add_option("input", input, "input.json")->required();
  app.add_option("witness", wtns_path, "output witness (.wtns)")->required();
  flags.Add(app);
  CLI11_PARSE(app, argc, argv);
  try {
    // The generator writes the file itself (no copy through this process).
    const std::string input_json = ReadTextFile(input, "input");
    auto generator = zkfleet::witgen::WitnessGenerator::Load(wasm, flags.Options());
    ReportGeneration("zkprove wtns calculate", input, *generator, generator->GenerateToFile(input_json, wtns_path),
                     flags);
  } catch (const WitnessFailed& failed) {
    return failed.exit_code;
  } catch (const std::exception& e) {
    std::cerr << "zkprove wtns calculate: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// Builds (or finds) the native generator of a wasm and exits: what a first
// sight leaves running behind it, and a way to build ahead of the first job.
int WtnsBuild(int argc, char** argv) {
  CLI::App app{"zkprove wtns build: compile circuit.wasm's native witness generator into the cache (once per circuit)"};
  app.name("zkprove wtns build");
  std::string wasm;
  WitgenFlags flags;
  app.add_option("wasm", wasm, "circom's witness generator (circuit_js/circuit.wasm)")->required();
  flags.Add(app);
  CLI11_PARSE(app, argc, argv);
  try {
    zkfleet::witgen::WitnessGeneratorOptions options = flags.Options();
    options.first_sight = zkfleet::witgen::WitnessGeneratorOptions::FirstSight::kWaitForBuild;
    options.build_command.clear();
    auto generator = zkfleet::witgen::WitnessGenerator::Load(wasm, options);
    if (flags.timings) {
      std::fprintf(stderr, "zkprove wtns build: %s in %.4fs: %s\n",
                   generator->info().from_cache ? "found in the cache" : "compiled", generator->info().load_seconds,
                   generator->info().executable.c_str());
    }
  } catch (const std::exception& e) {
    std::cerr << "zkprove wtns build: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// On a terminal (stderr a TTY), a long phase shows that it is alive: after
// the first second, one line rewritten every half second ("zkprove: loading
// and checking circuit_final.zkey... 12 s"), cleared when the phase ends.
// Piped or redirected, as rapidsnark's `prover` is driven, nothing is printed.
class TerminalProgress {
 public:
  explicit TerminalProgress(std::string what) {
    if (!::isatty(STDERR_FILENO)) return;
    ticker_.emplace(std::chrono::milliseconds(500), [what = std::move(what), this](double seconds) {
      if (seconds < 1.0) return;
      std::fprintf(stderr, "\rzkprove: %s... %.0f s\033[K", what.c_str(), seconds);
      shown_ = true;
    });
  }
  ~TerminalProgress() {
    ticker_.reset();  // joined: no line after this
    if (shown_) std::fprintf(stderr, "\r\033[K");
  }
  TerminalProgress(const TerminalProgress&) = delete;
  TerminalProgress& operator=(const TerminalProgress&) = delete;

 private:
  std::atomic<bool> shown_{false};
  std::optional<zkfleet::ProgressTicker> ticker_;
};

int FullProve(int argc, char** argv) {
  CLI::App app{"zkprove fullprove: witness and Groth16 proof in one step (as snarkjs groth16 fullprove)"};
  app.name("zkprove fullprove");
  std::string input, wasm, zkey_path, proof_path, public_path, backend_name = "auto";
  WitgenFlags flags;
  app.add_option("input", input, "input.json")->required();
  app.add_option("wasm", wasm, "circom's witness generator (circuit_js/circuit.wasm)")->required();
  app.add_option("zkey", zkey_path, "circuit proving key (.zkey, Groth16)")->required();
  app.add_option("proof", proof_path, "output proof.json")->required();
  app.add_option("public", public_path, "output public.json")->required();
  app.add_option("--backend", backend_name, "cpu | cuda | auto (CUDA when a GPU is present)");
  flags.Add(app);
  CLI11_PARSE(app, argc, argv);
  try {
    zkfleet::engine::EngineOptions options;
    options.backend = zkfleet::engine::ParseBackend(backend_name);
    options.checked_keys =
        zkfleet::engine::CheckedKeys::FromSetting(zkfleet::engine::CheckedKeys::DefaultDir().string());
    // The key loads while the witness is computed.
    auto key_future = std::async(std::launch::async, [&] { return zkfleet::engine::ProvingKey::Load(zkey_path, options); });
    WtnsBuffer wtns = CalculateWitness("zkprove fullprove", wasm, input, flags);
    auto key = key_future.get();
    auto witness = zkfleet::engine::Witness::View(wtns.span(), input + " (computed)");
    zkfleet::engine::Proof proof = key->Prove(witness, zkfleet::engine::ProveOptions{});
    WriteFile(proof_path, proof.proof_json);
    WriteFile(public_path, proof.public_json);
  } catch (const WitnessFailed& failed) {
    return failed.exit_code;  // (the key's load, if under way, finishes first: the future waits)
  } catch (const std::exception& e) {
    std::cerr << "zkprove fullprove: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "export-vk") return ExportVk(argc - 1, argv + 1);
  if (argc >= 3 && std::string(argv[1]) == "wtns" && std::string(argv[2]) == "calculate") {
    return WtnsCalculate(argc - 2, argv + 2);
  }
  if (argc >= 3 && std::string(argv[1]) == "wtns" && std::string(argv[2]) == "build") return WtnsBuild(argc - 2, argv + 2);
  if (argc >= 2 && std::string(argv[1]) == "fullprove") return FullProve(argc - 1, argv + 1);
  CLI::App app{"zkprove: Groth16 prover for circom/snarkjs files (drop-in for rapidsnark's prover)"};
  app.footer(
      "Also: zkprove export-vk <circuit.zkey> <verification_key.json>\n"
      "      zkprove wtns calculate <circuit.wasm> <input.json> <witness.wtns>\n"
      "      zkprove wtns build <circuit.wasm>   (the native generator, ahead of the first witness)\n"
      "      zkprove fullprove <input.json> <circuit.wasm> <circuit.zkey> <proof.json> <public.json>");
  std::string zkey_path, wtns_path, proof_path, public_path, backend_name = "auto";
  int threads = 0, repeat = 1;
  bool timings = false;
  std::string verify = "on";
  bool no_key_check = false;
  std::string key_check_cache = zkfleet::engine::CheckedKeys::DefaultDir().string();
  int msm_tables = 1;
  app.add_option("zkey", zkey_path, "circuit proving key (.zkey, Groth16)")->required();
  app.add_option("witness", wtns_path, "witness (.wtns)")->required();
  app.add_option("proof", proof_path, "output proof.json")->required();
  app.add_option("public", public_path, "output public.json")->required();
  app.add_option("--threads", threads, "CPU threads (0 = all)")->check(CLI::NonNegativeNumber);
  app.add_option("--backend", backend_name, "cpu | cuda | auto (CUDA when a GPU is present)");
  app.add_flag("--timings", timings, "print per-phase timings to stderr");
  app.add_option("--repeat", repeat, "prove the witness N times with the key loaded once (benchmarks)")
      ->check(CLI::PositiveNumber);
  app.add_option("--verify", verify,
                 "verify each proof against the key's verification key before writing it (on); off: benchmarks only")
      ->check(CLI::IsMember({"on", "off"}));
  app.add_flag("--no-key-check", no_key_check,
               "skip the point checks of the .zkey at load (on curve, in subgroup, < q); benchmarks only");
  app.add_option("--key-check-cache", key_check_cache,
                 "directory remembering the keys whose points passed the check on this host (by a BLAKE2b digest of "
                 "their content; shared with zkworker), so a key seen before loads without it; \"\" or off = check "
                 "every time (default: $ZKFLEET_KEY_CHECK_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/zkfleet/checked-keys)")
      ->capture_default_str();
  app.add_option("--msm-tables", msm_tables,
                 "CUDA: up to N precomputed copies of the MSM points, built at load (1 = none): pays off only when "
                 "the key proves many times (--repeat)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    zkfleet::engine::EngineOptions options;
    options.backend = zkfleet::engine::ParseBackend(backend_name);
    options.threads = threads;
    options.validate_key = !no_key_check;
    options.checked_keys = zkfleet::engine::CheckedKeys::FromSetting(key_check_cache);
    options.cuda_msm_copies = msm_tables;
    options.cuda_msm_tables_in_background = false;  // --repeat measures proofs over them
    // One shot: the CUDA context and the kernels (loaded eagerly, unless the
    // environment says otherwise) are made on a thread of their own while the
    // witness and the key are read; otherwise the first proof's launches
    // would load them lazily, one by one.
    std::thread prepare_cuda;
    if (options.backend != zkfleet::engine::Backend::kCpu) {
      setenv("CUDA_MODULE_LOADING", "EAGER", /*overwrite=*/0);
      prepare_cuda = std::thread([device = options.cuda_device] { zkfleet::engine::PrepareCuda(device); });
    }
    struct Join {
      std::thread& t;
      ~Join() {
        if (t.joinable()) t.join();
      }
    } join_prepare{prepare_cuda};
    zkfleet::engine::ProveOptions prove_options;
    prove_options.verify = verify == "on";
    // The witness is read on a thread of its own while the key loads; one
    // that cannot even be opened fails first, without a key load.
    if (!std::ifstream(wtns_path)) (void)zkfleet::engine::Witness::FromFile(wtns_path);  // throws, naming the file
    auto t0 = std::chrono::steady_clock::now();
    double witness_s = 0;
    // Proved more than once on the CUDA backend, into page-locked memory
    // (engine/witness_file.hpp): every upload is then a DMA at full speed.
    auto read_witness = std::async(std::launch::async, [&] {
      auto w = zkfleet::engine::WitnessFile::Read(wtns_path, options.backend, repeat);
      witness_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return w;
    });
    std::unique_ptr<zkfleet::engine::ProvingKey> key;
    {
      const TerminalProgress loading("loading and checking " + std::filesystem::path(zkey_path).filename().string());
      key = zkfleet::engine::ProvingKey::Load(zkey_path, options);
    }
    double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const zkfleet::engine::WitnessFile witness_file = read_witness.get();
    const zkfleet::engine::Witness& witness = witness_file.witness();
    zkfleet::engine::Proof proof;
    for (int i = 0; i < repeat; ++i) {
      {
        const TerminalProgress proving(repeat > 1 ? "proving " + std::to_string(i + 1) + " of " + std::to_string(repeat)
                                                  : std::string("proving"));
        proof = key->Prove(witness, prove_options);
      }
      if (!proof.check.engine_fault.empty()) {
        std::fprintf(stderr, "zkprove: warning: engine fault on backend %s: %s; the CPU re-proof verified and is written\n",
                     zkfleet::engine::BackendName(key->backend()), proof.check.engine_fault.c_str());
      }
      if (i == 0 && !key->info().msm_tables_skipped.empty()) {
        std::fprintf(stderr, "zkprove: warning: no MSM table copies (--msm-tables %d): %s\n", msm_tables,
                     key->info().msm_tables_skipped.c_str());
      }
      if (timings && i == 0) {
        const auto& l = key->load_timings();
        std::fprintf(stderr,
                     "zkprove: load=%.4fs: open=%.4fs digest=%.4fs key_check=%.4fs (%s) backend=%.4fs (MSM tables: %d "
                     "copies) (witness read %.4fs%s)\n",
                     l.total_s, l.open_s, l.digest_s, l.key_check_s,
                     zkfleet::engine::KeyCheckName(key->key_check().outcome), l.backend_s, key->info().msm_copies,
                     witness_s, witness_file.page_locked() ? ", page-locked" : "");
      }
      if (timings) {
        const auto& t = proof.timings;
        std::fprintf(stderr,
                     "zkprove: backend=%s load=%.4fs proof %d: total=%.4fs abc=%.4fs ntt=%.4fs msm=%.4fs transfer=%.4fs "
                     "verify=%.4fs\n",
                     zkfleet::engine::BackendName(key->backend()), load_s, i + 1, t.total_s, t.build_abc_s,
                     t.ntt_s, t.msm_s, t.witness_transfer_s, proof.check.verify_s);
      }
    }
    WriteFile(proof_path, proof.proof_json);
    WriteFile(public_path, proof.public_json);
    // After the outputs: a run that fails says one line, its error.
    if (!key->key_check().cache_warning.empty()) {
      std::fprintf(stderr, "zkprove: warning: the key's points passed the check, but it is not remembered (%s)\n",
                   key->key_check().cache_warning.c_str());
    }
  } catch (const zkfleet::Error& e) {
    std::cerr << "zkprove: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "zkprove: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
