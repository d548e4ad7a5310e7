#include "zkfleet/witgen/generator_build.hpp"

#include <sodium.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/common/progress_ticker.hpp"
#include "zkfleet/witgen/child_process.hpp"
#include "zkfleet/witgen/copy_runs.hpp"
#include "zkfleet/witgen/embedded_sources.hpp"

namespace zkfleet::witgen {
namespace fs = std::filesystem;
namespace {

// Bumped when the build's recipe changes in a way the digests below miss.
constexpr const char* kRecipe = "zkfleet-witgen-recipe-6";  // 4: giant functions at O1; 5: GMP linked in; 6: copy runs rolled
constexpr const char* kNativeMarker = "/* zkfleet-native:";

std::string Hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

// BLAKE2b-256 (libsodium): 4 ms for a 4 MB wasm, where SHA-256 took 10 on
// every load of a cached generator. A content digest, not a signature.
std::string DigestHex(std::string_view bytes) {
  unsigned char out[32];
  crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), nullptr, 0);
  return Hex(out, sizeof out);
}

// native_fr.c followed by each header it includes (name, size, text), for
// the tools' digest: an edit to any of them builds new generators. Empty
// without the native field code: the headers are no part of a plain build.
std::string NativeSources(const std::string& native) {
  std::string all = native;
  if (native.empty()) return all;
  for (const embedded::File& header : embedded::NativeFrHeaders()) {
    all += "\n";
    all += header.name;
    all += "\n" + std::to_string(header.text.size()) + "\n";
    all += header.text;
  }
  return all;
}

std::string ReadFileOrThrow(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot read " + what + " " + path.string());
  std::string bytes(static_cast<size_t>(in.tellg()), '\0');  // one read, no growing buffer
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    throw Error(ErrorCode::kIo, "cannot read " + what + " " + path.string());
  }
  return bytes;
}

void WriteFileOrThrow(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out.flush()) throw Error(ErrorCode::kIo, "cannot write " + path.string());
}

fs::path WasmRtDir(const WitnessGeneratorOptions& options) {
  if (!options.wasm_rt_dir.empty()) return options.wasm_rt_dir;
  for (const char* dir : {"/usr/share/wabt/wasm2c", "/usr/src/wasm2c"}) {
    if (fs::exists(fs::path(dir) / "wasm-rt-impl.c")) return dir;
  }
  throw Error(ErrorCode::kNotFound,
              "wasm2c's runtime (wasm-rt-impl.c) is not in /usr/share/wabt/wasm2c or /usr/src/wasm2c: install wabt "
              "(apt-get install wabt)");
}

// Who a tool is, cheaply (no process: a cache lookup costs microseconds, not
// the milliseconds of `cc --version`): its resolved path, size and mtime, so
// a new compiler or wasm2c builds anew. Throws kNotFound naming the package.
std::string ToolIdentity(const std::string& tool) {
  fs::path found;
  if (tool.find('/') != std::string::npos) {
    found = tool;
  } else if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (!dir.empty() && ::access((fs::path(dir) / tool).c_str(), X_OK) == 0) {
        found = fs::path(dir) / tool;
        break;
      }
    }
  }
  std::error_code ec;
  const fs::path real = found.empty() ? fs::path() : fs::canonical(found, ec);
  if (found.empty() || ec || ::access(real.c_str(), X_OK) != 0) {
    throw Error(ErrorCode::kNotFound, "cannot find " + tool + " (witness generation needs it: apt-get install " +
                                          (tool.find("wasm2c") != std::string::npos ? "wabt" : "gcc") + ")");
  }
  const auto size = fs::file_size(real, ec);
  const auto mtime = fs::last_write_time(real, ec).time_since_epoch().count();
  return real.string() + " " + std::to_string(size) + " " + std::to_string(mtime);
}

// BMI2 (mulx) and ADX (adcx/adox): CPUID leaf 7, EBX bits 8 and 19 (clang's
// __builtin_cpu_supports knows no "adx").
bool CpuHasAdx() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & (1u << 8)) && (b & (1u << 19));
#else
  return false;
#endif
}

std::vector<std::string> CompileFlags() {
  std::vector<std::string> flags = {"-std=gnu11", "-O3", "-w", "-fno-strict-aliasing"};
  if (CpuHasAdx()) {
    flags.push_back("-mbmi2");
    flags.push_back("-madx");
  }
  return flags;
}

void RunTool(const std::vector<std::string>& argv, const fs::path& dir, const fs::path& wasm,
             const std::string& step, const std::atomic<bool>* cancel) {
  ChildOptions o;
  o.argv = argv;
  o.cancel = cancel;
  o.inherit_environment = true;
  o.working_directory = dir.string();
  o.deadline = std::chrono::steady_clock::now() + std::chrono::minutes(30);
  StringSink out(16384);
  ChildExit exit = RunChild(o, {}, out);
  if (exit.cancelled) {
    throw Error(ErrorCode::kInternal, "the build of the witness generator of " + wasm.string() + " was cancelled");
  }
  if (!exit.exited || exit.code != 0) {
    std::string tail = exit.stderr_tail.size() > 2000 ? exit.stderr_tail.substr(exit.stderr_tail.size() - 2000)
                                                      : exit.stderr_tail;
    throw Error(ErrorCode::kBadFormat, "cannot build the witness generator of " + wasm.string() + ": " + step +
                                           " failed (" + exit.Describe() + "): " + tail);
  }
}

// A directory whose programs we run must be ours alone: owned by this user
// and writable by no one else (else anyone could plant a generator).
void RequireOwnDirectory(const fs::path& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw Error(ErrorCode::kIo, "the generator cache " + dir.string() + " is not a directory");
  }
  if (st.st_uid != ::getuid() || (st.st_mode & 022) != 0) {
    throw Error(ErrorCode::kIo, "refusing the generator cache " + dir.string() +
                                    ": it must belong to this user and be writable by no one else (its programs run)");
  }
}

bool OwnEntry(const fs::path& dir) {
  struct stat st {};
  return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid() && (st.st_mode & 022) == 0;
}

}  // namespace

std::optional<engine::Curve> CurveOfPrime(const std::vector<uint8_t>& prime_le) {
  std::string hex;
  for (size_t i = prime_le.size(); i-- > 0;) hex += Hex(&prime_le[i], 1);
  if (hex == "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001") return engine::Curve::kBn254;
  if (hex == "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001") return engine::Curve::kBls12_381;
  return std::nullopt;
}

namespace {

// `generator --describe` -> info, or false. Run under the memory limit the
// witnesses will have: a limit below the circuit's initial memory fails the
// load, not every job.
bool Describe(const fs::path& executable, const WitnessGeneratorOptions& options, GeneratorInfo& info,
              std::string& why) {
  ChildOptions o;
  o.argv = {executable.string(), "--describe"};
  if (options.limits.memory_bytes > 0) {
    o.argv.push_back("--memory-bytes");
    o.argv.push_back(std::to_string(options.limits.memory_bytes));
  }
  o.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  StringSink out(4096);
  ChildExit exit;
  try {
    exit = RunChild(o, {}, out);
  } catch (const Error& e) {
    why = e.what();
    return false;
  }
  if (!exit.exited || exit.code != 0) {
    why = "--describe: " + exit.Describe() + ": " + exit.stderr_tail;
    return false;
  }
  if (!ParseDescribe(out.text(), info)) {
    why = "--describe printed \"" + out.text().substr(0, 200) + "\"";
    return false;
  }
  info.executable = executable;
  info.curve = CurveOfPrime(info.prime);
  return true;
}

}  // namespace

// circom's getWitness(i), as wasm2c writes it: the signal's index is the
// u32 at table + 4i, the element is at signals + 40 * index, and it is
// converted to long normal form in a scratch area. Read off here (the
// function's exact text, or nothing) so that native_fr.c can read the whole
// witness out in one pass; the driver still checks it against getWitness.
std::string GetWitnessLayout(const std::string& c_source) {
  const size_t begin = c_source.find("\nstatic void w2c_getWitness(Z_circuit_instance_t* instance, u32 w2c_p) {");
  if (begin == std::string::npos) return "";
  const size_t end = c_source.find("\n}\n", begin + 1);
  if (end == std::string::npos || end - begin > 4000) return "";
  static const std::regex shape(
      R"(\s*static void w2c_getWitness\(Z_circuit_instance_t\* instance, u32 w2c_p\) \{)"
      R"(\s*u32 w2c_c = 0;\s*FUNC_PROLOGUE;\s*u32 w2c_i0, w2c_i1, w2c_i2;)"
      R"(\s*w2c_i0 = (\d+)u;\s*w2c_i1 = w2c_p;\s*w2c_i2 = 2u;\s*w2c_i1 <<= \(w2c_i2 & 31\);\s*w2c_i0 \+= w2c_i1;)"
      R"(\s*w2c_i0 = i32_load\(&instance->w2c_memory, \(u64\)\(w2c_i0\)\);)"
      R"(\s*w2c_i1 = 40u;\s*w2c_i0 \*= w2c_i1;\s*w2c_i1 = (\d+)u;\s*w2c_i0 \+= w2c_i1;\s*w2c_c = w2c_i0;)"
      R"(\s*w2c_i0 = (\d+)u;\s*w2c_i1 = w2c_c;\s*w2c_Fr_copy\(instance, w2c_i0, w2c_i1\);)"
      R"(\s*w2c_i0 = \3u;\s*w2c_Fr_toLongNormal\(instance, w2c_i0\);\s*FUNC_EPILOGUE;\s*)");
  std::smatch m;
  const std::string body = c_source.substr(begin, end - begin);
  if (!std::regex_match(body, m, shape)) return "";
  return "#define ZKF_GETWITNESS_TABLE " + m[1].str() + "u\n#define ZKF_GETWITNESS_SIZE 40u\n" +
         "#define ZKF_GETWITNESS_SIGNALS " + m[2].str() + "u\n";
}

size_t MarkGiantFunctions(std::string& c_source, size_t max_lines) {
  // wasm2c writes each definition as "<type> w2c_<name>(<params>) {" at
  // column 0 and closes it with "}" alone on a line.
  auto is_definition = [](std::string_view line) {
    return !line.empty() && line[0] != ' ' && line[0] != '#' && line.ends_with(") {") &&
           line.find(" w2c_") != std::string_view::npos && line.find('(') != std::string_view::npos;
  };
  std::vector<size_t> marks;  // byte offsets of definitions to prefix
  size_t start = std::string::npos, start_line = 0, line_no = 0;
  for (size_t at = 0; at < c_source.size(); ++line_no) {
    size_t end = c_source.find('\n', at);
    if (end == std::string::npos) end = c_source.size();
    const std::string_view line(c_source.data() + at, end - at);
    if (start == std::string::npos) {
      if (is_definition(line)) {
        start = at;
        start_line = line_no;
      }
    } else if (line == "}") {
      if (line_no - start_line > max_lines) marks.push_back(start);
      start = std::string::npos;
    }
    at = end + 1;
  }
  if (marks.empty()) return 0;
  static constexpr std::string_view kMark = "ZKF_GIANT_FUNCTION ";
  std::string out =
      "/* zkfleet: functions over " + std::to_string(max_lines) +
      " lines (circom's constant tables) get less optimisation than -O3 */\n"
      "#if defined(__clang__)\n#define ZKF_GIANT_FUNCTION __attribute__((optnone))\n"
      "#else\n#define ZKF_GIANT_FUNCTION __attribute__((optimize(\"O1\")))\n#endif\n"
      "#define ZKF_NO_FORCED_INLINE 1 /* native_fr.c's fast paths: inlined where the compiler chooses */\n";
  out.reserve(out.size() + c_source.size() + marks.size() * kMark.size());
  size_t copied = 0;
  for (size_t mark : marks) {
    out.append(c_source, copied, mark - copied);
    out.append(kMark);
    copied = mark;
  }
  out.append(c_source, copied, std::string::npos);
  c_source = std::move(out);
  return marks.size();
}

bool PatchNativeField(std::string& c_source, const std::string& native_source) {
  if (!native_source.starts_with(kNativeMarker)) return false;
  size_t end = native_source.find("*/");
  if (end == std::string::npos) return false;
  std::istringstream names(native_source.substr(std::strlen(kNativeMarker), end - std::strlen(kNativeMarker)));
  std::string patched = c_source;
  int count = 0;
  for (std::string name; names >> name; ++count) {
    // The definition: a line "static <type> w2c_NAME(<params>) {".
    const std::string needle = " w2c_" + name + "(";
    size_t at = 0;
    bool found = false;
    while ((at = patched.find(needle, at)) != std::string::npos) {
      size_t line_begin = patched.rfind('\n', at);
      line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
      size_t line_end = patched.find('\n', at);
      std::string_view line(patched.data() + line_begin, line_end - line_begin);
      if (line.starts_with("static ") && line.ends_with("{")) {
        patched.insert(at + needle.size() - 1, "_wasm");
        patched.insert(line_begin, "__attribute__((unused)) ");
        found = true;
        break;
      }
      at += needle.size();
    }
    if (!found) return false;
  }
  if (count == 0) return false;
  patched += "\n" + GetWitnessLayout(c_source) + "#include \"native_fr.c\"\n";
  c_source = std::move(patched);
  return true;
}

bool ParseDescribe(const std::string& text, GeneratorInfo& info) {
  std::istringstream in(text.substr(0, text.find('\n')));
  std::string word;
  if (!(in >> word) || word != "zkfleet-generator" || !(in >> word) || word != "1") return false;
  bool have_prime = false;
  uint32_t n32 = 0;
  while (in >> word) {
    size_t eq = word.find('=');
    if (eq == std::string::npos) return false;
    std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    try {
      if (key == "n32") n32 = static_cast<uint32_t>(std::stoul(value));
      if (key == "witness") info.witness_count = static_cast<uint32_t>(std::stoul(value));
      if (key == "inputs") info.input_count = static_cast<uint32_t>(std::stoul(value));
    } catch (const std::exception&) {
      return false;
    }
    if (key == "native") info.native_field = value == "1";
    if (key == "prime") {
      if (value.size() % 8 != 0 || value.empty()) return false;
      info.prime.assign(value.size() / 2, 0);
      for (size_t i = 0; i < value.size() / 2; ++i) {
        // most significant first in the text; little-endian bytes in info
        unsigned byte = 0;
        if (std::sscanf(value.c_str() + 2 * i, "%2x", &byte) != 1) return false;
        info.prime[value.size() / 2 - 1 - i] = static_cast<uint8_t>(byte);
      }
      have_prime = true;
    }
  }
  if (!have_prime || n32 == 0 || info.prime.size() != 4ull * n32 || info.witness_count == 0) return false;
  info.n8 = 4 * n32;
  return true;
}

namespace {

// An exclusive flock on `path` (created 0600), held until destruction;
// polled, so that `cancel` ends the wait (throws). Without a lock file (a
// read-only cache) it does not lock: the build then runs as before.
class BuildLock {
 public:
  BuildLock(const fs::path& path, const std::atomic<bool>* cancel) {
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) break;
      if (cancel && cancel->load()) {
        ::close(fd_);
        fd_ = -1;
        throw Error(ErrorCode::kInternal, "cancelled while waiting for another build of " + path.string());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~BuildLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;

 private:
  int fd_ = -1;
};

// The cached generator, or (build) the one built now; without build,
// nullopt where it would have to be built.
std::optional<GeneratorInfo> LoadGenerator(const fs::path& wasm, const WitnessGeneratorOptions& options,
                                                   bool build, const std::atomic<bool>* cancel) {
  auto t0 = std::chrono::steady_clock::now();
  const std::string wasm_bytes = ReadWasm(wasm);
  GeneratorInfo info;
  info.wasm_digest = WasmDigest(wasm_bytes);
  const fs::path cache = options.cache_dir.empty() ? WitnessGeneratorOptions::DefaultCacheDir()
                                                   : options.cache_dir;
  std::error_code made;
  if (!fs::exists(cache)) {
    fs::create_directories(cache, made);
    if (made) throw Error(ErrorCode::kIo, "cannot create the generator cache " + cache.string() + ": " + made.message());
    fs::permissions(cache, fs::perms::owner_all, fs::perm_options::replace, made);
  }
  RequireOwnDirectory(cache);
  const std::string native = options.native_field ? std::string(embedded::NativeFrC()) : std::string();
  const std::vector<std::string> flags = CompileFlags();
  std::string tools;
  fs::path rt_dir;
  std::string rt_impl;
  try {
    rt_dir = WasmRtDir(options);
    rt_impl = ReadFileOrThrow(rt_dir / "wasm-rt-impl.c", "wasm2c runtime");
    tools = std::string(kRecipe) + "\n" + ToolIdentity(options.wasm2c) + "\n" + ToolIdentity(options.cc) + "\n" +
            rt_dir.string() + "\n";
  } catch (const Error& no_tools) {
    // A host without wasm2c or a compiler (a GPU image) runs a generator
    // built elsewhere and shipped in the cache: any entry for this wasm whose
    // program still describes itself.
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(cache, ec)) {
      if (!entry.path().filename().string().starts_with(info.wasm_digest + "-")) continue;
      std::string why;
      if (OwnEntry(entry.path()) && Describe(entry.path() / "generator", options, info, why) && (info.native_field || !options.native_field)) {
        info.from_cache = true;
        info.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return info;
      }
    }
    if (!build) return std::nullopt;
    throw Error(no_tools.code(), std::string(no_tools.what()) + "; and " + cache.string() +
                                     " holds no generator built elsewhere for " + wasm.string());
  }
  for (const std::string& f : flags) tools += f + " ";
  tools += "\n" + DigestHex(embedded::DriverC()) + DigestHex(NativeSources(native)) + DigestHex(rt_impl);
  const fs::path final_dir = cache / (info.wasm_digest + "-" + DigestHex(tools).substr(0, 16));
  std::string why;
  auto cached = [&] {
    if (!fs::exists(final_dir / "generator") || !OwnEntry(final_dir) ||
        !Describe(final_dir / "generator", options, info, why)) {
      return false;
    }
    info.from_cache = true;
    info.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return true;
  };
  if (cached()) return info;
  if (!build) return std::nullopt;
  // One build per entry at a time: a second process (two first sights, two
  // workers, two tests) waits for the first and finds its result, instead
  // of compiling the same circuit beside it.
  BuildLock lock(cache / (".lock-" + final_dir.filename().string()), cancel);
  if (cached()) return info;

  std::error_code ec;
  std::random_device random;
  if (fs::exists(final_dir)) {
    // A broken or foreign entry: moved aside (never deleted in place, where
    // another process may be running its program), then rebuilt below.
    const fs::path aside = cache / (".broken-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    fs::rename(final_dir, aside, ec);
    fs::remove_all(aside, ec);
  }
  if (options.on_compile) {
    options.on_compile("compiling a witness generator for " + wasm.string() + " (" + std::to_string(wasm_bytes.size()) +
                       " bytes of wasm; wasm2c and " + options.cc + ", once per circuit: cached in " + cache.string() +
                       ")");
  }
  const fs::path dir = cache / (".build-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIo, "cannot create " + dir.string() + ": " + ec.message());
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec,
                  fs::perm_options::replace, ec);
  struct RemoveOnExit {
    fs::path dir;
    ~RemoveOnExit() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{dir};

  // A first compile of a large circuit takes tens of seconds (~37 s at
  // 2^22): said every 2 s while it runs.
  std::optional<ProgressTicker> still_compiling;
  if (options.on_compile) {
    still_compiling.emplace(std::chrono::seconds(2), [&options, &wasm](double seconds) {
      options.on_compile("still compiling the witness generator of " + wasm.filename().string() + " (" +
                         std::to_string(static_cast<int>(seconds)) + " s so far)");
    });
  }
  WriteFileOrThrow(dir / "circuit.wasm", wasm_bytes);
  RunTool({options.wasm2c, "circuit.wasm", "-n", "circuit", "-o", "circuit.c"}, dir, wasm, "wasm2c", cancel);
  std::string c_source = ReadFileOrThrow(dir / "circuit.c", "wasm2c output");
  const bool patched = !native.empty() && PatchNativeField(c_source, native);
  if (patched) {
    WriteFileOrThrow(dir / "native_fr.c", native);
    for (const embedded::File& header : embedded::NativeFrHeaders()) WriteFileOrThrow(dir / header.name, header.text);
  }
  // After the native patch (the rolled copies' helper goes after native_fr.c),
  // before the giant functions are judged (rolled, most of them are not).
  const bool rolled = RollConstantCopies(c_source) > 0;
  if (MarkGiantFunctions(c_source) > 0 || patched || rolled) WriteFileOrThrow(dir / "circuit.c", c_source);
  WriteFileOrThrow(dir / "driver.c", embedded::DriverC());
  std::vector<std::string> cc = {options.cc};
  cc.insert(cc.end(), flags.begin(), flags.end());
  for (const char* arg : {"-I.", "-o", "generator", "circuit.c", "driver.c"}) cc.push_back(arg);
  cc.push_back("-I" + rt_dir.string());
  cc.push_back((rt_dir / "wasm-rt-impl.c").string());
  // native_fr.c's modular inverse, linked in: a generator shipped to a host
  // without GMP (a GPU image) runs there too.
  if (patched) {
    for (const char* arg : {"-Wl,-Bstatic", "-lgmp", "-Wl,-Bdynamic"}) cc.push_back(arg);
  }
  cc.push_back("-lm");
  RunTool(cc, dir, wasm, "the C compiler (" + options.cc + ")", cancel);
  still_compiling.reset();
  if (!Describe(dir / "generator", options, info, why)) {
    throw Error(ErrorCode::kBadFormat, wasm.string() + " is not a circom witness generator: " + why);
  }
  // Keep only what runs; then move into place (another process may have won).
  for (const char* f : {"circuit.c", "circuit.h", "circuit.wasm"}) fs::remove(dir / f, ec);
  fs::rename(dir, final_dir, ec);
  if (ec) {
    if (!fs::exists(final_dir / "generator")) {
      throw Error(ErrorCode::kIo, "cannot move the generator into " + final_dir.string() + ": " + ec.message());
    }
  }
  if (!Describe(final_dir / "generator", options, info, why)) {
    throw Error(ErrorCode::kIo, "the cached generator " + final_dir.string() + " does not run: " + why);
  }
  info.from_cache = false;
  info.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return info;
}

}  // namespace

std::string ReadWasm(const fs::path& wasm) {
  std::string bytes = ReadFileOrThrow(wasm, "circuit wasm");
  if (bytes.size() < 8 || bytes.compare(0, 4, std::string("\0asm", 4)) != 0) {
    throw Error(ErrorCode::kBadFormat, wasm.string() + " is not a WebAssembly module (no \\0asm header)");
  }
  return bytes;
}

std::string WasmDigest(const std::string& wasm_bytes) {
  if (sodium_init() < 0) throw Error(ErrorCode::kInternal, "libsodium failed to initialise");
  return DigestHex(wasm_bytes);
}

GeneratorInfo BuildOrFindGenerator(const fs::path& wasm, const WitnessGeneratorOptions& options,
                                           const std::atomic<bool>* cancel) {
  return *LoadGenerator(wasm, options, /*build=*/true, cancel);
}

std::optional<GeneratorInfo> FindGenerator(const fs::path& wasm, const WitnessGeneratorOptions& options) {
  return LoadGenerator(wasm, options, /*build=*/false, nullptr);
}

}  // namespace zkfleet::witgen
