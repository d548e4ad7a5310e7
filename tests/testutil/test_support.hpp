// Helpers shared by zkfleet's tests: temporary directories, running a
// command and capturing its output, locating the reference peers (and
// failing, not skipping, when one the install script provides is missing),
// and a per-build cache for expensive generated inputs.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace zkfleet::testing {

// A directory under $TMPDIR removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "zkfleet-test-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    path_ = made ? made : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` through /bin/sh, capturing stdout+stderr.
inline CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) result.output.append(buf, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

// Sanitizer builds run several times slower; their ctest presets set
// ZKFLEET_TEST_TIME_SCALE (see CMakePresets.json) and the waits for child
// processes (ChildProcess::WaitExit/WaitForLog, the fleet harness) stretch by
// it. Default 1.
inline double TimeScale() {
  const char* env = std::getenv("ZKFLEET_TEST_TIME_SCALE");
  const double scale = env ? std::atof(env) : 1.0;
  return scale >= 1.0 ? scale : 1.0;
}
template <class Duration>
std::chrono::milliseconds Scaled(Duration timeout) {
  return std::chrono::milliseconds(static_cast<long long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count() * TimeScale()));
}

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

// The tools ./scripts/install-deps.sh installs (snarkjs and circom2 from
// npm, prometheus from apt) are part of the test environment: a test that
// needs one FAILS when it is missing, with this message, instead of skipping
// (a skip would hide that nothing was checked). Use as
//   ASSERT_TRUE(zkfleet::testing::RequireSnarkjs());
// in the test body or in SetUp() (a fatal failure there skips the body).
inline ::testing::AssertionResult RequireExecutable(const std::string& what, const std::string& path) {
  if (!path.empty() && access(path.c_str(), X_OK) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << " not found at " << (path.empty() ? "<none>" : path)
                                       << ": run ./scripts/install-deps.sh";
}

// `name` looked up in $PATH; empty when absent.
inline std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

inline ::testing::AssertionResult RequireOnPath(const std::string& name) {
  std::string found = FindOnPath(name);
  if (!found.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << name << " not found on PATH: run ./scripts/install-deps.sh";
}

#ifdef ZKFLEET_NODE_BIN
inline std::string SnarkjsPath() { return std::string(ZKFLEET_NODE_BIN) + "/snarkjs"; }
inline std::string Circom2Path() { return std::string(ZKFLEET_NODE_BIN) + "/circom2"; }
inline ::testing::AssertionResult RequireSnarkjs() { return RequireExecutable("snarkjs", SnarkjsPath()); }
inline ::testing::AssertionResult RequireCircom2() { return RequireExecutable("circom2", Circom2Path()); }

// What `snarkjs groth16 verify` said about a proof.
enum class Verdict {
  kValid,     // exit 0 and "OK!"
  kInvalid,   // it ran and rejected the proof ("Invalid proof")
  kNotRun,    // anything else: snarkjs missing, unreadable files, a crash
};

inline Verdict SnarkjsVerdict(const std::string& vk, const std::string& pub, const std::string& proof,
                              std::string* output = nullptr) {
  CommandResult r = RunCommand(Quote(SnarkjsPath()) + " groth16 verify " + Quote(vk) + " " + Quote(pub) + " " +
                               Quote(proof));
  if (output) *output = r.output;
  if (r.exit_code == 0 && r.output.find("OK!") != std::string::npos) return Verdict::kValid;
  if (r.output.find("Invalid proof") != std::string::npos) return Verdict::kInvalid;
  return Verdict::kNotRun;
}

// `snarkjs groth16 verify vk public proof`: true when it prints OK and exits 0.
inline bool SnarkjsVerify(const std::string& vk, const std::string& pub, const std::string& proof,
                          std::string* output = nullptr) {
  return SnarkjsVerdict(vk, pub, proof, output) == Verdict::kValid;
}

// For negative controls: success only when snarkjs ran and said "Invalid
// proof" (a verifier that could not run is not a rejection).
inline ::testing::AssertionResult SnarkjsRejects(const std::string& vk, const std::string& pub,
                                                 const std::string& proof) {
  std::string output;
  Verdict v = SnarkjsVerdict(vk, pub, proof, &output);
  if (v == Verdict::kInvalid) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << (v == Verdict::kValid ? "snarkjs accepted the proof"
                                                                 : "snarkjs did not run to a verdict")
                                       << ":\n" << output;
}
#endif

// Expensive generated inputs (circuits, keys) shared by test cases that run
// as separate processes, possibly at the same time: `make(dir)` fills a
// fresh private directory, which is then renamed to `root/key` in one step.
// A finished entry is reused as it is; when two processes race, the loser's
// rename fails (the target exists, non-empty) and its copy is dropped. Returns
// the entry's path; empty (and the test failed) when `make` failed.
template <class Make>
std::string CachedDirectory(const std::string& root, const std::string& key, Make make) {
  namespace fs = std::filesystem;
  const fs::path entry = fs::path(root) / key;
  std::error_code ec;
  if (fs::is_directory(entry, ec) && fs::exists(entry / ".complete", ec)) return entry.string();
  fs::create_directories(root, ec);
  std::string tmpl = (fs::path(root) / (key + ".tmp-XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) {
    ADD_FAILURE() << "cannot create a directory under " << root;
    return {};
  }
  const fs::path scratch = tmpl;
  bool ok = make(scratch.string());
  if (ok) std::ofstream(scratch / ".complete") << key << "\n";
  if (!ok || ::testing::Test::HasFatalFailure()) {
    fs::remove_all(scratch, ec);
    ADD_FAILURE() << "could not make the cached input " << entry.string();
    return {};
  }
  if (std::rename(scratch.c_str(), entry.c_str()) != 0) {
    // Another process finished first: use its entry.
    fs::remove_all(scratch, ec);
    if (!fs::exists(entry / ".complete", ec)) {
      ADD_FAILURE() << "cannot rename " << scratch.string() << " to " << entry.string();
      return {};
    }
  }
  return entry.string();
}

#ifdef ZKFLEET_FIXTURES_DIR
inline std::string Fixture(const std::string& name, const std::string& file) {
  return std::string(ZKFLEET_FIXTURES_DIR) + "/" + name + "/" + file;
}
#endif

}  // namespace zkfleet::testing
