#include "zkfleet/worker/checked_keys.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/mapped_file.hpp"

namespace zkfleet::worker {
namespace {

constexpr size_t kPieceBytes = 64ull << 20;
constexpr size_t kDigestBytes = 32;

std::string Hex(const unsigned char* bytes, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < size; ++i) {
    hex += digits[bytes[i] >> 4];
    hex += digits[bytes[i] & 15];
  }
  return hex;
}

}  // namespace

std::string CheckedKeys::Digest(const std::string& path, unsigned threads) {
  if (sodium_init() < 0) throw Error(ErrorCode::kInternal, "libsodium failed to initialise");
  const io::MappedFile file = io::MappedFile::Open(path);
  const size_t pieces = std::max<size_t>(1, (file.size() + kPieceBytes - 1) / kPieceBytes);
  std::vector<unsigned char> digests(pieces * kDigestBytes);
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(pieces)));
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (size_t piece = t; piece < pieces; piece += threads) {
        const size_t offset = piece * kPieceBytes;
        const size_t length = file.size() > offset ? std::min(kPieceBytes, file.size() - offset) : 0;
        crypto_generichash(digests.data() + piece * kDigestBytes, kDigestBytes,
                           length ? file.data() + offset : nullptr, length, nullptr, 0);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  // The root binds the size and the ordered piece digests.
  crypto_generichash_state root;
  crypto_generichash_init(&root, nullptr, 0, kDigestBytes);
  const uint64_t size = file.size();
  crypto_generichash_update(&root, reinterpret_cast<const unsigned char*>(&size), sizeof(size));
  crypto_generichash_update(&root, digests.data(), digests.size());
  unsigned char out[kDigestBytes];
  crypto_generichash_final(&root, out, kDigestBytes);
  return Hex(out, kDigestBytes);
}

bool CheckedKeys::Contains(const std::string& digest) const {
  if (!enabled()) return false;
  std::error_code error;
  return std::filesystem::is_regular_file(dir_ / (digest + ".checked"), error);
}

std::string CheckedKeys::Record(const std::string& digest, const std::string& zkey_path) const {
  if (!enabled()) return "";
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) return "cannot create " + dir_.string() + ": " + error.message();
  std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace,
                               error);
  // Written under a temporary name and renamed: a record exists whole or not at all.
  const std::filesystem::path final_path = dir_ / (digest + ".checked");
  const std::filesystem::path temp_path = dir_ / (digest + ".tmp" + std::to_string(getpid()));
  int fd = open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write " + temp_path.string() + ": " + std::strerror(errno);
  const std::string note = "points checked: " + zkey_path + "\n";
  const bool wrote = write(fd, note.data(), note.size()) == static_cast<ssize_t>(note.size());
  close(fd);
  if (!wrote) return "cannot write " + temp_path.string();
  std::filesystem::rename(temp_path, final_path, error);
  if (error) return "cannot rename into " + final_path.string() + ": " + error.message();
  return "";
}

std::filesystem::path CheckedKeys::DefaultDir() {
  if (const char* systemd = std::getenv("CACHE_DIRECTORY"); systemd && *systemd) {
    std::string first(systemd);
    first = first.substr(0, first.find(':'));  // several directories: the first
    return std::filesystem::path(first) / "checked-keys";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::filesystem::path(xdg) / "zkfleet" / "checked-keys";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "zkfleet" / "checked-keys";
  }
  return {};
}

}  // namespace zkfleet::worker
