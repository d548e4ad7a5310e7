#include "witness_refs.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <limits>
#include <memory>
#include <span>

#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/engine/wtns.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkctl {
namespace {

using zkfleet::wire::RedactUrl;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A file mapped read-only for the length of a call.
class MappedFile {
 public:
  ~MappedFile() {
    if (data_ && size_ > 0) munmap(data_, size_);
    if (fd_ >= 0) close(fd_);
  }
  bool Open(const std::string& path, std::string* why) {
    fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return Fail(why, std::strerror(errno));
    struct stat st {};
    if (fstat(fd_, &st) != 0) return Fail(why, std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return Fail(why, "not a regular file");
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) return true;
    void* data = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (data == MAP_FAILED) return Fail(why, std::strerror(errno));
    data_ = data;
    madvise(data_, size_, MADV_SEQUENTIAL);
    return true;
  }
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  static bool Fail(std::string* why, const std::string& text) {
    *why = text;
    return false;
  }
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

bool ParseSha256Hex(const std::string& hex, std::string* bytes) {
  if (hex.size() != 2 * zkfleet::wire::kSha256Bytes) return false;
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int high = HexValue(hex[i]), low = HexValue(hex[i + 1]);
    if (high < 0 || low < 0) return false;
    out.push_back(static_cast<char>(high * 16 + low));
  }
  *bytes = std::move(out);
  return true;
}

std::string LocalPathOfFileUrl(const std::string& url) {
  if (zkfleet::wire::UrlScheme(url) != "file") return "";
  std::string rest = url.substr(url.find("://") + 3);
  if (rest.find_first_of("?#") != std::string::npos) return "";
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) return "";
  const std::string host = rest.substr(0, slash);
  if (!host.empty() && host != "localhost") return "";  // another host's file
  std::string path;
  for (size_t i = slash; i < rest.size(); ++i) {
    if (rest[i] == '%') {
      if (i + 2 >= rest.size() || HexValue(rest[i + 1]) < 0 || HexValue(rest[i + 2]) < 0) return "";
      const char c = static_cast<char>(HexValue(rest[i + 1]) * 16 + HexValue(rest[i + 2]));
      if (c == '\0') return "";
      path.push_back(c);
      i += 2;
    } else {
      path.push_back(rest[i]);
    }
  }
  return path;
}

bool BuildWitnessRefs(const WitnessRefArgs& args, std::vector<zkfleet::client::WitnessRef>* refs,
                      std::vector<std::string>* public_json, std::string* why) {
  const size_t n = args.urls.size();
  auto fail = [&](const std::string& text) {
    *why = text;
    return false;
  };
  if (n == 0) {
    if (!args.sha256_hex.empty() || !args.sizes.empty()) {
      return fail("--sha256 and --size describe --witness-url references; no --witness-url was given");
    }
    return true;
  }
  if (!args.sha256_hex.empty() && args.sha256_hex.size() != n) {
    return fail(std::to_string(args.sha256_hex.size()) + " --sha256 for " + std::to_string(n) +
                " --witness-url: give one per URL, in the same order, or none (file:// URLs only)");
  }
  if (!args.sizes.empty() && args.sizes.size() != n) {
    return fail(std::to_string(args.sizes.size()) + " --size for " + std::to_string(n) +
                " --witness-url: give one per URL, in the same order, or none (file:// URLs only)");
  }
  if (args.sha256_hex.empty() != args.sizes.empty()) {
    return fail("--sha256 and --size go together: give both (one of each per --witness-url) or neither");
  }
  if (args.has_n_public && args.has_public_files) {
    return fail("--n-public and --public-signals both set the expected public signals: give one");
  }
  if (args.has_n_public && !args.sha256_hex.empty()) {
    return fail("--n-public reads the public signals from file:// witnesses zkctl hashes itself (no --sha256/--size); "
                "with --sha256 and --size give --public-signals instead");
  }
  const bool given = !args.sha256_hex.empty();
  for (size_t p = 0; p < n; ++p) {
    const std::string& url = args.urls[p];
    const std::string shown = RedactUrl(url);
    const std::string where = "--witness-url #" + std::to_string(p + 1) + " (" + shown + ")";
    {  // the URL first (bounds, scheme), before any file is read
      zkfleet::proto::WitnessRef probe;
      probe.set_url(url);
      probe.set_size(1);
      probe.set_sha256(std::string(zkfleet::wire::kSha256Bytes, '\0'));
      if (auto problem = zkfleet::wire::WitnessRefProblem(probe, 1)) {
        return fail("--witness-url #" + std::to_string(p + 1) + ": " + *problem);
      }
    }
    zkfleet::client::WitnessRef ref;
    ref.url = url;
    if (given) {
      if (!ParseSha256Hex(args.sha256_hex[p], &ref.sha256)) {
        return fail("--sha256 #" + std::to_string(p + 1) + " is " + std::to_string(args.sha256_hex[p].size()) +
                    " characters; expected 64 hex digits (a SHA-256, as sha256sum prints it)");
      }
      ref.size = args.sizes[p];
    } else {
      const std::string scheme = zkfleet::wire::UrlScheme(url);
      if (scheme != "file") {
        return fail(where + ": zkctl cannot read " + (scheme.empty() ? std::string("this URL") : scheme + " URLs") +
                    " itself: give --sha256 and --size (one of each per --witness-url)");
      }
      const std::string path = LocalPathOfFileUrl(url);
      if (path.empty()) {
        return fail(where + ": not a local file:///path (no host other than localhost, no query): give --sha256 "
                    "and --size");
      }
      MappedFile file;
      std::string error;
      if (!file.Open(path, &error)) {
        return fail(where + ": cannot read " + path + ": " + error +
                    " (a file the workers see but this host does not: give --sha256 and --size)");
      }
      ref.size = file.bytes().size();
      if (ref.size == 0) return fail(where + ": " + path + " is empty");
      try {
        ref.sha256 = zkfleet::fetch::Sha256::Of(file.bytes());
      } catch (const std::exception& e) {
        return fail(where + ": SHA-256 failed: " + e.what());
      }
      if (args.has_n_public) {
        std::span<const uint8_t> whole = file.bytes();
        auto signals = zkfleet::engine::PublicSignalsOfWtns({&whole, 1}, args.n_public, &error);
        if (!signals) return fail(where + ": " + path + ": " + error);
        public_json->push_back(zkfleet::engine::PublicJson(*signals));
      }
    }
    zkfleet::proto::WitnessRef wire_ref;
    wire_ref.set_url(ref.url);
    wire_ref.set_size(ref.size);
    wire_ref.set_sha256(ref.sha256);
    if (auto problem = zkfleet::wire::WitnessRefProblem(wire_ref, std::numeric_limits<uint64_t>::max())) {
      return fail("--witness-url #" + std::to_string(p + 1) + ": " + *problem);
    }
    refs->push_back(std::move(ref));
  }
  return true;
}

}  // namespace zkctl
