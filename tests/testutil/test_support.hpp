// Helpers shared by zkfleet's tests: temporary directories, running a
// command and capturing its output, locating the reference peers.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

#ifdef ZKFLEET_NODE_BIN
inline std::string SnarkjsPath() { return std::string(ZKFLEET_NODE_BIN) + "/snarkjs"; }
inline bool HaveSnarkjs() { return std::filesystem::exists(SnarkjsPath()); }
// `snarkjs groth16 verify vk public proof`: true when it prints OK and exits 0.
inline bool SnarkjsVerify(const std::string& vk, const std::string& pub, const std::string& proof,
                          std::string* output = nullptr) {
  CommandResult r = RunCommand(Quote(SnarkjsPath()) + " groth16 verify " + Quote(vk) + " " + Quote(pub) + " " +
                               Quote(proof));
  if (output) *output = r.output;
  return r.exit_code == 0 && r.output.find("OK!") != std::string::npos;
}
#endif

#ifdef ZKFLEET_FIXTURES_DIR
inline std::string Fixture(const std::string& name, const std::string& file) {
  return std::string(ZKFLEET_FIXTURES_DIR) + "/" + name + "/" + file;
}
#endif

}  // namespace zkfleet::testing
