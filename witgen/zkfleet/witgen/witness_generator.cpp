// WitnessGenerator (witness_generator.hpp):
// the build (generator_build), the input (input_json) and the child process
// (child_process) put together, and the child's exit read as a status.
#include "zkfleet/witgen/witness_generator.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "zkfleet/common/error.hpp"
#include "zkfleet/witgen/child_process.hpp"
#include "zkfleet/witgen/generator_build.hpp"
#include "zkfleet/witgen/input_json.hpp"
#include "zkfleet/witgen/node_tier.hpp"

namespace zkfleet::witgen {
namespace {

// Reads the child's stdout straight into the caller's buffer.
class SpanSink : public OutputSink {
 public:
  explicit SpanSink(std::span<uint8_t> out) : out_(out) {}
  std::span<uint8_t> Buffer() override { return out_.subspan(filled_); }
  void Commit(size_t n) override { filled_ += n; }
  size_t filled() const { return filled_; }

 private:
  std::span<uint8_t> out_;
  size_t filled_ = 0;
};

// The driver's message: what follows its last "error: " on stderr.
std::string ChildError(const std::string& stderr_text) {
  size_t at = stderr_text.rfind("error: ");
  std::string message = at == std::string::npos ? stderr_text : stderr_text.substr(at + 7);
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
  if (message.size() > 4000) message = message.substr(0, 4000) + "...";
  return message;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

}  // namespace

const char* GenerationStatusName(GenerationStatus status) {
  switch (status) {
    case GenerationStatus::kOk: return "ok";
    case GenerationStatus::kBadInput: return "bad_input";
    case GenerationStatus::kCircuitError: return "circuit_error";
    case GenerationStatus::kLimit: return "limit";
    case GenerationStatus::kCancelled: return "cancelled";
    case GenerationStatus::kInternal: return "internal";
  }
  return "unknown";
}

std::pair<GenerationStatus, std::string> WallClockVerdict(double wall_seconds, double cpu_seconds) {
  // Its own appetite only when it had most of that time on a core; else this
  // host starved it (too many generators, provers): another may not.
  const bool ran = cpu_seconds >= 0.5 * wall_seconds;
  return {ran ? GenerationStatus::kLimit : GenerationStatus::kInternal,
          "the witness generator ran past its wall-clock limit (" + Seconds(wall_seconds) + ", " +
              Seconds(cpu_seconds) + " of CPU" + (ran ? ")" : ": this host is too busy)")};
}

std::filesystem::path WitnessGeneratorOptions::DefaultCacheDir() {
  if (const char* dir = std::getenv("ZKFLEET_WITGEN_CACHE"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "zkfleet/witgen";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache/zkfleet/witgen";
  return std::filesystem::temp_directory_path() / ("zkfleet-witgen-" + std::to_string(::getuid()));
}

const char* GeneratorTierName(GeneratorTier tier) {
  switch (tier) {
    case GeneratorTier::kNative: return "native";
    case GeneratorTier::kNode: return "node";
  }
  return "unknown";
}

// The first-sight tier's state: the wasm's bytes for node, and the native
// generator once the background build has made it.
struct WitnessGenerator::Background {
  std::string wasm_bytes;
  std::filesystem::path wasm;
  std::atomic<bool> cancel{false};
  mutable std::mutex mutex;
  mutable std::condition_variable done_cv;
  bool done = false;                             // under mutex
  std::shared_ptr<const GeneratorInfo> native;   // under mutex: set once, when built
  std::thread thread;

  std::shared_ptr<const GeneratorInfo> Native() const {
    std::lock_guard<std::mutex> lock(mutex);
    return native;
  }
};

WitnessGenerator::WitnessGenerator(GeneratorInfo info, WitnessGeneratorOptions options)
    : info_(std::move(info)), options_(std::move(options)) {}

WitnessGenerator::~WitnessGenerator() {
  if (background_ && background_->thread.joinable()) {
    background_->cancel = true;
    background_->thread.join();
  }
}

std::shared_ptr<const WitnessGenerator> WitnessGenerator::Load(const std::filesystem::path& wasm,
                                                                 const WitnessGeneratorOptions& options) {
  if (options.first_sight == WitnessGeneratorOptions::FirstSight::kInterpretWhileBuilding) {
    if (auto cached = FindGenerator(wasm, options)) return std::make_shared<WitnessGenerator>(*cached, options);
    auto background = std::make_unique<Background>();
    background->wasm_bytes = ReadWasm(wasm);
    background->wasm = wasm;
    GeneratorInfo info;
    std::string why;
    const auto t0 = std::chrono::steady_clock::now();
    if (DescribeWithNode(background->wasm_bytes, options, info, why)) {
      info.wasm_digest = WasmDigest(background->wasm_bytes);
      info.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      auto generator = std::make_shared<WitnessGenerator>(std::move(info), options);
      Background* state = background.get();
      generator->background_ = std::move(background);
      if (!options.build_command.empty()) {
        std::vector<std::string> command = options.build_command;
        command.push_back(wasm.string());
        std::string error;
        try {
          SpawnDetached(command);
        } catch (const std::exception& e) {
          error = e.what();
        }
        state->done = true;
        if (options.on_compile) {
          options.on_compile(error.empty() ? "first sight of " + wasm.string() + ": node answers; the native generator "
                                                 "is built behind, once per circuit (" + command[0] + " ... wtns build)"
                                           : "first sight of " + wasm.string() + ": node answers; the native build did "
                                                 "not start: " + error);
        }
        return generator;
      }
      if (options.on_compile) {
        options.on_compile("first sight of " + wasm.string() + ": node answers while the native generator is built "
                           "behind, once per circuit");
      }
      WitnessGeneratorOptions build_options = options;
      build_options.on_compile = nullptr;  // said above; the build runs on its own thread
      state->thread = std::thread([state, build_options, digest = generator->info_.wasm_digest] {
        std::string error;
        std::shared_ptr<const GeneratorInfo> native;
        try {
          native = std::make_shared<GeneratorInfo>(BuildOrFindGenerator(state->wasm, build_options, &state->cancel));
          // The file may have changed since node read it: only the same circuit takes over.
          if (native->wasm_digest != digest) {
            error = state->wasm.string() + " changed while its generator was built; the first-sight tier goes on";
            native.reset();
          }
        } catch (const std::exception& e) {
          error = e.what();
        }
        {
          std::lock_guard<std::mutex> lock(state->mutex);
          state->native = native;
          state->done = true;
        }
        state->done_cv.notify_all();
        if (build_options.on_built && !state->cancel) build_options.on_built(error);
      });
      return generator;
    }
    // No node (or it cannot read this wasm): build first, saying why.
    if (options.on_compile) options.on_compile("no first-sight tier (" + why + "): the generator is built first");
  }
  return std::make_shared<WitnessGenerator>(BuildOrFindGenerator(wasm, options), options);
}

GeneratorInfo WitnessGenerator::info() const {
  if (background_) {
    if (auto native = background_->Native()) return *native;
  }
  return info_;
}

GeneratorTier WitnessGenerator::tier() const {
  return background_ && !background_->Native() ? GeneratorTier::kNode : GeneratorTier::kNative;
}

bool WitnessGenerator::WaitForNative() const {
  if (!background_) return true;
  std::unique_lock<std::mutex> lock(background_->mutex);
  background_->done_cv.wait(lock, [&] { return background_->done; });
  return background_->native != nullptr;
}

uint64_t WitnessGenerator::wtns_bytes() const {
  // "wtns" v2, 2 sections: 12 + section 1 (12 + 4 + n8 + 4) + section 2 (12 + n8 * witnesses)
  return 12 + 12 + 4 + uint64_t{info_.n8} + 4 + 12 + uint64_t{info_.n8} * info_.witness_count;
}

// The witness of `input_json` from a fresh child. Its stdout: `sink`, or the
// file `stdout_fd` when >= 0. `written_ok` says whether the output of a child
// that exited 0 is a whole .wtns (a short or foreign one is kInternal).
GenerationResult WitnessGenerator::Run(std::string_view input_json, OutputSink* sink, int stdout_fd,
                                       const std::function<std::string()>& check_output,
                                       const std::atomic<bool>* cancel) const {
  const auto t0 = std::chrono::steady_clock::now();
  GenerationResult result;
  auto finish = [&](GenerationStatus status, std::string error) {
    result.status = status;
    result.error = std::move(error);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return result;
  };
  std::vector<uint8_t> request;
  InputError input_error;
  if (!BuildGeneratorRequest(input_json, info_.prime, request, input_error)) {
    return finish(GenerationStatus::kBadInput, input_error.message);
  }
  const GeneratorLimits& limits = options_.limits;
  ChildOptions child;
  const std::shared_ptr<const GeneratorInfo> native = background_ ? background_->Native() : nullptr;
  result.tier = background_ && !native ? GeneratorTier::kNode : GeneratorTier::kNative;
  std::vector<std::string> extra;
  if (options_.bench_repeat > 1) extra = {"--repeat", std::to_string(options_.bench_repeat)};
  if (result.tier == GeneratorTier::kNode) {
    // The wasm's bytes first, then the same request; prlimit sets the limits.
    child.argv = NodeTierArgv(options_, extra);
    if (child.argv.empty()) {
      return finish(GenerationStatus::kInternal, "the first-sight tier cannot run: no " + options_.node + " or " +
                                                     options_.prlimit + " on PATH any more");
    }
    std::vector<uint8_t> prefixed = NodeTierPrefix(background_->wasm_bytes);
    prefixed.insert(prefixed.end(), request.begin(), request.end());
    request = std::move(prefixed);
    extra.clear();
  } else {
    child.argv = {(native ? native->executable : info_.executable).string()};
    if (limits.cpu_seconds > 0) {
      child.argv.push_back("--cpu-seconds");
      child.argv.push_back(std::to_string(static_cast<uint64_t>(std::max(1.0, limits.cpu_seconds))));
    }
    if (limits.memory_bytes > 0) {
      child.argv.push_back("--memory-bytes");
      child.argv.push_back(std::to_string(limits.memory_bytes));
    }
  }
  if (limits.wall_seconds > 0) {
    child.deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(limits.wall_seconds));
  }
  child.argv.insert(child.argv.end(), extra.begin(), extra.end());
  child.cancel = cancel;
  child.stdout_fd = stdout_fd;
  StringSink unused(0);
  ChildExit exit;
  try {
    exit = RunChild(child, request, sink ? *sink : unused);
  } catch (const std::exception& e) {
    return finish(GenerationStatus::kInternal, std::string("cannot run the witness generator: ") + e.what());
  }
  if (exit.cancelled) return finish(GenerationStatus::kCancelled, "cancelled");
  if (exit.timed_out) {
    auto [status, error] = WallClockVerdict(limits.wall_seconds, exit.cpu_seconds);
    return finish(status, error);
  }
  if (!exit.exited && (exit.signal == SIGXCPU || (exit.signal == SIGKILL && limits.cpu_seconds > 0 &&
                                                  exit.cpu_seconds >= limits.cpu_seconds))) {
    return finish(GenerationStatus::kLimit, "the witness generator used up its CPU-time limit (" +
                                                Seconds(limits.cpu_seconds) + ")");
  }
  if (!exit.exited) {
    if (exit.stderr_tail.find("os_mmap failed") != std::string::npos ||
        exit.stderr_tail.find("os_mprotect failed") != std::string::npos) {
      return finish(GenerationStatus::kLimit, "the witness generator could not get its initial memory within its "
                                              "memory limit (" + std::to_string(limits.memory_bytes >> 20) + " MiB)");
    }
    return finish(GenerationStatus::kInternal, "the witness generator crashed (" + exit.Describe() + "): " +
                                                   ChildError(exit.stderr_tail));
  }
  switch (exit.code) {
    case 0:
      if (exit.output_overflow) {
        return finish(GenerationStatus::kInternal, "the witness generator wrote more than the " +
                                                       std::to_string(wtns_bytes()) + " bytes expected");
      }
      if (std::string wrong = check_output(); !wrong.empty()) return finish(GenerationStatus::kInternal, wrong);
      if (size_t at = exit.stderr_tail.rfind("{\"witnesses\""); at != std::string::npos) {
        result.bench_json = exit.stderr_tail.substr(at, exit.stderr_tail.find('\n', at) - at);
      }
      return finish(GenerationStatus::kOk, "");
    case 2: return finish(GenerationStatus::kBadInput, ChildError(exit.stderr_tail));
    case 3: return finish(GenerationStatus::kCircuitError, ChildError(exit.stderr_tail));
    case 5: return finish(GenerationStatus::kLimit, ChildError(exit.stderr_tail));
    default:
      return finish(GenerationStatus::kInternal,
                    "the witness generator failed (" + exit.Describe() + "): " + ChildError(exit.stderr_tail));
  }
}

GenerationResult WitnessGenerator::Generate(std::string_view input_json, std::span<uint8_t> out,
                                            const std::atomic<bool>* cancel) const {
  if (out.size() != wtns_bytes()) {
    GenerationResult result;
    result.error = "witness buffer of " + std::to_string(out.size()) + " bytes, " + std::to_string(wtns_bytes()) +
                   " needed";
    return result;
  }
  SpanSink sink(out);
  return Run(input_json, &sink, -1, [&]() -> std::string {
    if (sink.filled() == out.size() && std::memcmp(out.data(), "wtns", 4) == 0) return "";
    return "the witness generator wrote " + std::to_string(sink.filled()) + " bytes, " + std::to_string(out.size()) +
           " expected";
  }, cancel);
}

GenerationResult WitnessGenerator::GenerateToFile(std::string_view input_json, const std::filesystem::path& wtns_path,
                                                  const std::atomic<bool>* cancel) const {
  const std::filesystem::path tmp = wtns_path.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    GenerationResult result;
    result.error = "cannot write " + tmp.string() + ": " + std::strerror(errno);
    return result;
  }
  GenerationResult result = Run(input_json, nullptr, fd, [&]() -> std::string {
    struct stat st {};
    char magic[4] = {};
    if (::fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == wtns_bytes() &&
        ::pread(fd, magic, 4, 0) == 4 && std::memcmp(magic, "wtns", 4) == 0) {
      return "";
    }
    return "the witness generator wrote " + std::to_string(st.st_size) + " bytes to " + tmp.string() + ", " +
           std::to_string(wtns_bytes()) + " expected";
  }, cancel);
  const bool closed = ::close(fd) == 0;
  if (result.ok() && !closed) {
    result.status = GenerationStatus::kInternal;
    result.error = "cannot write " + tmp.string() + ": " + std::strerror(errno);
  }
  if (result.ok()) {
    // Not renamed over an old file: ext4 would flush the new one to disk
    // before the rename returns (~10 ms for 33 MB); the old one goes first.
    ::unlink(wtns_path.c_str());
    if (::rename(tmp.c_str(), wtns_path.c_str()) != 0) {
      result.status = GenerationStatus::kInternal;
      result.error = "cannot rename " + tmp.string() + " to " + wtns_path.string() + ": " + std::strerror(errno);
    }
  }
  if (!result.ok()) ::unlink(tmp.c_str());
  return result;
}

}  // namespace zkfleet::witgen
