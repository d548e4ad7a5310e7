// Helpers shared by the file-format tests: fixture paths, a scratch directory, byte
// patching, container re-assembly and "expect this error" checks.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"

namespace zkfleet::io::testing {

using Bytes = std::vector<uint8_t>;

inline std::string Fixture(const std::string& circuit, const std::string& file) {
  return std::string(ZKFLEET_FIXTURES_DIR) + "/" + circuit + "/" + file;
}

inline Bytes ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

inline std::string ReadText(const std::string& path) {
  const Bytes b = ReadBytes(path);
  return std::string(b.begin(), b.end());
}

inline void WriteBytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline uint32_t GetU32(const Bytes& b, size_t off) {
  uint32_t v;
  std::memcpy(&v, b.data() + off, 4);
  return v;
}
inline void PutU32(Bytes& b, size_t off, uint32_t v) { std::memcpy(b.data() + off, &v, 4); }

// A per-test scratch directory under the system temp dir, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "zkfleet_io_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterized names: one directory, not a tree left behind
    }
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  // Writes `bytes` to a file named `name` and returns its path.
  std::string Put(const std::string& name, const Bytes& bytes) const {
    const std::string p = File(name);
    WriteBytes(p, bytes);
    return p;
  }

 private:
  std::filesystem::path path_;
};

// A container split into its parts, to rebuild it with changes.
struct Container {
  std::string magic;
  uint32_t version = 0;
  std::vector<std::pair<uint32_t, Bytes>> sections;  // in file order

  static Container Split(const Bytes& file) {
    Container c;
    c.magic.assign(file.begin(), file.begin() + 4);
    c.version = GetU32(file, 4);
    const uint32_t n = GetU32(file, 8);
    size_t pos = 12;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t id = GetU32(file, pos);
      uint64_t size;
      std::memcpy(&size, file.data() + pos + 4, 8);
      c.sections.emplace_back(id, Bytes(file.begin() + pos + 12, file.begin() + pos + 12 + size));
      pos += 12 + size;
    }
    return c;
  }

  Bytes& Payload(uint32_t id) {
    for (auto& [sid, payload] : sections) {
      if (sid == id) return payload;
    }
    throw std::runtime_error("no section " + std::to_string(id));
  }

  Bytes Join() const {
    Bytes out(magic.begin(), magic.end());
    out.resize(12);
    PutU32(out, 4, version);
    PutU32(out, 8, static_cast<uint32_t>(sections.size()));
    for (const auto& [id, payload] : sections) {
      const size_t pos = out.size();
      out.resize(pos + 12);
      PutU32(out, pos, id);
      const uint64_t size = payload.size();
      std::memcpy(out.data() + pos + 4, &size, 8);
      out.insert(out.end(), payload.begin(), payload.end());
    }
    return out;
  }
};

// Runs `fn`, expecting a zkfleet::Error with `code` whose message contains
// every string of `parts`.
inline void ExpectError(const std::function<void()>& fn, ErrorCode code,
                        const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(ErrorCodeName(e.code()), std::string(ErrorCodeName(code))) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << part << "\"";
    }
    return;
  }
  ADD_FAILURE() << "no zkfleet::Error thrown";
}

// Runs a shell command, returning its exit status and combined output.
inline std::pair<int, std::string> RunCommand(const std::string& command) {
  std::string output;
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) output.append(buf, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// snarkjs is installed by ./scripts/install-deps.sh: a test that needs it
// fails without it (ASSERT_TRUE(testing::RequireSnarkjs())).
using ::zkfleet::testing::RequireSnarkjs;
using ::zkfleet::testing::SnarkjsPath;

}  // namespace zkfleet::io::testing
