#include "zkfleet/witgen/node_tier.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "zkfleet/witgen/child_process.hpp"
#include "zkfleet/witgen/embedded_sources.hpp"
#include "zkfleet/witgen/generator_build.hpp"

namespace zkfleet::witgen {
namespace {

// `name` as execvp would find it on this process's PATH, as an absolute
// path ("" when there is none): the child runs with an empty environment,
// where prlimit's own lookup would see no PATH.
std::string FindExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    // An empty entry is the working directory, as for execvp.
    const std::string candidate = (end > begin ? dirs.substr(begin, end - begin) : std::string(".")) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    begin = end + 1;
  }
  return "";
}

}  // namespace

std::vector<std::string> NodeTierArgv(const WitnessGeneratorOptions& options,
                                      const std::vector<std::string>& args) {
  const std::string node = FindExecutable(options.node);
  const std::string prlimit = FindExecutable(options.prlimit);
  if (node.empty() || prlimit.empty()) return {};
  std::vector<std::string> argv = {prlimit, "--core=0"};
  const GeneratorLimits& limits = options.limits;
  if (limits.cpu_seconds > 0) {
    const uint64_t s = static_cast<uint64_t>(std::max(1.0, limits.cpu_seconds));
    argv.push_back("--cpu=" + std::to_string(s) + ":" + std::to_string(s + 1));  // SIGXCPU, then SIGKILL
  }
  if (limits.memory_bytes > 0) argv.push_back("--data=" + std::to_string(limits.memory_bytes));
  argv.insert(argv.end(), {node, "--no-warnings", "-e", std::string(embedded::GeneratorJs()), "--"});
  argv.insert(argv.end(), args.begin(), args.end());
  if (limits.memory_bytes > 0) {
    argv.push_back("--memory-bytes");
    argv.push_back(std::to_string(limits.memory_bytes));
  }
  return argv;
}

std::vector<uint8_t> NodeTierPrefix(const std::string& wasm_bytes) {
  std::vector<uint8_t> prefix(4 + wasm_bytes.size());
  const uint32_t size = static_cast<uint32_t>(wasm_bytes.size());
  for (int i = 0; i < 4; ++i) prefix[i] = static_cast<uint8_t>(size >> (8 * i));
  std::memcpy(prefix.data() + 4, wasm_bytes.data(), wasm_bytes.size());
  return prefix;
}

bool DescribeWithNode(const std::string& wasm_bytes, const WitnessGeneratorOptions& options,
                      GeneratorInfo& info, std::string& why) {
  ChildOptions o;
  o.argv = NodeTierArgv(options, {"--describe"});
  if (o.argv.empty()) {
    why = "no " + options.node + " or " + options.prlimit + " on PATH";
    return false;
  }
  o.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  StringSink out(4096);
  ChildExit exit;
  const std::vector<uint8_t> input = NodeTierPrefix(wasm_bytes);
  try {
    exit = RunChild(o, input, out);
  } catch (const std::exception& e) {
    why = e.what();
    return false;
  }
  if (!exit.exited || exit.code != 0) {
    why = "node --describe: " + exit.Describe() + ": " + exit.stderr_tail.substr(0, 2000);
    return false;
  }
  if (!ParseDescribe(out.text(), info)) {
    why = "node --describe printed \"" + out.text().substr(0, 200) + "\"";
    return false;
  }
  info.executable = FindExecutable(options.node);
  info.curve = CurveOfPrime(info.prime);
  info.native_field = false;
  info.from_cache = false;
  return true;
}

}  // namespace zkfleet::witgen
