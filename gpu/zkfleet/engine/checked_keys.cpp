#include "zkfleet/engine/checked_keys.hpp"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "zkfleet/common/error.hpp"
#include "zkfleet/io/mapped_file.hpp"

namespace zkfleet::engine {
namespace {

// 4 MiB: a key of tens of MB (a circomlib circuit of 2^15-2^16) is hashed on
// every core, not on one (its digest is on the path of a first sight).
constexpr size_t kPieceBytes = 4ull << 20;
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

int64_t NanosecondsOf(const struct timespec& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + static_cast<int64_t>(t.tv_nsec);
}

// Seconds.nanoseconds since the epoch.
std::string TimeText(int64_t ns) {
  char text[48];
  std::snprintf(text, sizeof(text), "%lld.%09lld", static_cast<long long>(ns / 1000000000),
                static_cast<long long>(ns % 1000000000));
  return text;
}

bool IsDigest(const std::string& digest) {
  return digest.size() == 2 * kDigestBytes &&
         std::all_of(digest.begin(), digest.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

CheckedKeys CheckedKeys::FromSetting(const std::string& setting) {
  if (setting.empty() || setting == "off") return CheckedKeys();
  return CheckedKeys(setting);
}

std::string CheckedKeys::Digest(std::span<const uint8_t> bytes, unsigned threads) {
  if (sodium_init() < 0) throw Error(ErrorCode::kInternal, "libsodium failed to initialise");
  const size_t size = bytes.size();
  const size_t pieces = std::max<size_t>(1, (size + kPieceBytes - 1) / kPieceBytes);
  std::vector<unsigned char> digests(pieces * kDigestBytes);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(pieces)));
  const auto hash_pieces = [&](unsigned t) {
    for (size_t piece = t; piece < pieces; piece += threads) {
      const size_t offset = piece * kPieceBytes;
      const size_t length = size > offset ? std::min(kPieceBytes, size - offset) : 0;
      crypto_generichash(digests.data() + piece * kDigestBytes, kDigestBytes, length ? bytes.data() + offset : nullptr,
                         length, nullptr, 0);
    }
  };
  std::vector<std::thread> workers;
  for (unsigned t = 1; t < threads; ++t) workers.emplace_back(hash_pieces, t);
  hash_pieces(0);
  for (std::thread& worker : workers) worker.join();
  // The root binds the size and the ordered piece digests.
  crypto_generichash_state root;
  crypto_generichash_init(&root, nullptr, 0, kDigestBytes);
  const uint64_t size64 = size;  // little-endian on every host we build for
  crypto_generichash_update(&root, reinterpret_cast<const unsigned char*>(&size64), sizeof(size64));
  crypto_generichash_update(&root, digests.data(), digests.size());
  unsigned char out[kDigestBytes];
  crypto_generichash_final(&root, out, kDigestBytes);
  return Hex(out, kDigestBytes);
}

std::string CheckedKeys::Digest(const std::string& path, unsigned threads) {
  const io::MappedFile file = io::MappedFile::Open(path);
  return Digest(file.bytes(), threads);
}

std::string CheckedKeys::Untrusted() const {
  struct stat st;
  if (stat(dir_.c_str(), &st) != 0) return "";  // not there (yet): nothing in it to trust
  if (!S_ISDIR(st.st_mode)) return dir_.string() + " is not a directory";
  if (st.st_uid != geteuid()) return dir_.string() + " belongs to another user";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return dir_.string() + " is writable by group or others";
  return "";
}

bool CheckedKeys::ContainsRecord(const std::string& name) const {
  if (!enabled() || !Untrusted().empty()) return false;
  struct stat st;
  const std::filesystem::path record = dir_ / name;
  if (lstat(record.c_str(), &st) != 0) return false;
  return S_ISREG(st.st_mode) && st.st_uid == geteuid();
}

bool CheckedKeys::Contains(const std::string& digest) const {
  return IsDigest(digest) && ContainsRecord(digest + ".checked");
}

std::string CheckedKeys::Record(const std::string& digest, const std::string& zkey_path) const {
  if (!enabled()) return "";
  if (!IsDigest(digest)) return "not a key digest: '" + digest + "'";
  return WriteRecord(digest + ".checked", "points checked: " + zkey_path + "\n");
}

std::string CheckedKeys::PrepareDir() const {
  if (!enabled()) return "no key-check cache directory";
  std::error_code error;
  // A directory made here is made 0700; one found is used only if trusted
  // (its mode is not changed: records planted while it was open stay out).
  if (std::filesystem::create_directories(dir_, error)) {
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace,
                                 error);
  }
  if (error) return "cannot create " + dir_.string() + ": " + error.message();
  if (std::string why = Untrusted(); !why.empty()) return why + ": not used";
  return "";
}

std::string CheckedKeys::WriteRecord(const std::string& name, const std::string& note) const {
  if (sodium_init() < 0) return "libsodium failed to initialise";  // for the temporary name's random part
  std::error_code error;
  if (std::string why = PrepareDir(); !why.empty()) return why;
  // Written under a temporary name and renamed: a record exists whole or not at all.
  const std::filesystem::path final_path = dir_ / name;
  const std::filesystem::path temp_path =
      dir_ / (name + ".tmp" + std::to_string(getpid()) + "." + std::to_string(randombytes_random()));
  const int fd = open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write " + temp_path.string() + ": " + std::strerror(errno);
  const bool wrote = write(fd, note.data(), note.size()) == static_cast<ssize_t>(note.size());
  close(fd);
  if (!wrote) {
    std::filesystem::remove(temp_path, error);
    return "cannot write " + temp_path.string();
  }
  std::filesystem::rename(temp_path, final_path, error);
  if (error) {
    const std::string why = "cannot rename into " + final_path.string() + ": " + error.message();
    std::filesystem::remove(temp_path, error);
    return why;
  }
  return "";
}

// ---- parameter files, by identity --------------------------------------------

FileIdentity FileIdentity::OfDescriptor(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) throw Error(ErrorCode::kIo, path + ": cannot stat: " + std::strerror(errno));
  struct timespec now {};
  clock_gettime(CLOCK_REALTIME, &now);
  FileIdentity id;
  id.device = static_cast<uint64_t>(st.st_dev);
  id.inode = static_cast<uint64_t>(st.st_ino);
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = NanosecondsOf(st.st_mtim);
  id.ctime_ns = NanosecondsOf(st.st_ctim);
  id.observed_ns = NanosecondsOf(now);
  return id;
}

std::string FileIdentity::Digest() const {
  if (sodium_init() < 0) throw Error(ErrorCode::kInternal, "libsodium failed to initialise");
  // A fixed encoding: a label, then the five fields as little-endian 64-bit integers.
  static constexpr char kLabel[] = "zkfleet bellman params identity v1";
  unsigned char encoded[sizeof(kLabel) + 5 * 8];
  std::memcpy(encoded, kLabel, sizeof(kLabel));
  const uint64_t fields[5] = {device, inode, size, static_cast<uint64_t>(mtime_ns), static_cast<uint64_t>(ctime_ns)};
  for (int f = 0; f < 5; ++f) {
    for (int b = 0; b < 8; ++b) encoded[sizeof(kLabel) + 8 * f + b] = static_cast<unsigned char>(fields[f] >> (8 * b));
  }
  unsigned char out[kDigestBytes];
  crypto_generichash(out, kDigestBytes, encoded, sizeof(encoded), nullptr, 0);
  return Hex(out, kDigestBytes);
}

std::string FileIdentity::Describe() const {
  return "device " + std::to_string(device) + ", inode " + std::to_string(inode) + ", size " + std::to_string(size) +
         " bytes, mtime " + TimeText(mtime_ns) + ", ctime " + TimeText(ctime_ns);
}

std::filesystem::path CheckedKeys::FileRecordPath(const FileIdentity& identity) const {
  return dir_ / ("params-" + identity.Digest() + ".checked");
}

std::filesystem::path CheckedKeys::FileImagePath(const FileIdentity& identity) const {
  return dir_ / ("params-" + identity.Digest() + ".points");
}

bool CheckedKeys::ContainsFileImage(const FileIdentity& identity) const {
  if (!enabled()) return false;
  return ContainsRecord("params-" + identity.Digest() + ".points");
}

bool CheckedKeys::ContainsFile(const FileIdentity& identity) const {
  if (!enabled()) return false;
  return ContainsRecord("params-" + identity.Digest() + ".checked");
}

std::string CheckedKeys::RecordFile(const FileIdentity& identity, const std::string& path) const {
  if (!enabled()) return "";
  if (identity.ctime_ns > identity.observed_ns - static_cast<int64_t>(min_file_age_.count())) {
    return std::string(kTooRecent) + ": " + path + " changed at " + TimeText(identity.ctime_ns) +
           ", less than " + std::to_string(std::chrono::duration<double>(min_file_age_).count()) +
           " s before it was opened";
  }
  std::error_code error;
  std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  if (error) canonical = path;
  return WriteRecord("params-" + identity.Digest() + ".checked",
                     "parameters checked: " + canonical.string() + "\n" + identity.Describe() + "\n");
}

std::filesystem::path CheckedKeys::DefaultDir() {
  if (const char* setting = std::getenv("ZKFLEET_KEY_CHECK_CACHE")) {
    return FromSetting(setting).dir();
  }
  if (const char* systemd = std::getenv("CACHE_DIRECTORY"); systemd && *systemd) {
    std::string first(systemd);
    first = first.substr(0, first.find(':'));  // several directories: the first
    return std::filesystem::path(first) / "checked-keys";
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') {  // relative: ignored (XDG spec)
    return std::filesystem::path(xdg) / "zkfleet" / "checked-keys";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::filesystem::path(home) / ".cache" / "zkfleet" / "checked-keys";
  }
  return {};
}

}  // namespace zkfleet::engine
