// The proving keys whose points this host has already checked (engine
// key validation: every point on its curve and in the prime-order subgroup,
// about 20 s for a 2^22 BN254 key on 16 cores). A worker restarted with the
// same .zkey skips the check: a key is recorded, by a digest of its whole
// content, only after it passed; a changed file has another digest and is
// checked again.
//
// The digest is BLAKE2b-256 (libsodium) over the file in 64 MiB pieces hashed
// on several threads, then over the pieces' digests in order: collision
// resistant (a crafted key cannot pass for a checked one), and about 0.2 s
// for a 2 GB key. Records are empty files named by the digest in `dir`, which
// should belong to the worker's user alone (0700, created so).
//
// Thread-safety: const methods may be called from any thread.
#pragma once

#include <filesystem>
#include <string>

namespace zkfleet::worker {

class CheckedKeys {
 public:
  // `dir` empty: nothing is remembered (every key is checked at every load).
  explicit CheckedKeys(std::filesystem::path dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  const std::filesystem::path& dir() const { return dir_; }

  // The content digest of the file at `path` (hex). Throws zkfleet::Error
  // naming the file when it cannot be read.
  static std::string Digest(const std::string& path, unsigned threads = 8);

  // Whether a key with this digest passed the check on this host before.
  bool Contains(const std::string& digest) const;
  // Records that the key with this digest (loaded from `zkey_path`) passed.
  // Failures are returned as a message ("" = recorded), never thrown: the
  // worker carries on and checks again next time.
  std::string Record(const std::string& digest, const std::string& zkey_path) const;

  // The default directory: $CACHE_DIRECTORY/checked-keys under systemd
  // (CacheDirectory=), else ${XDG_CACHE_HOME:-$HOME/.cache}/zkfleet/checked-keys;
  // "" when none of those is set.
  static std::filesystem::path DefaultDir();

 private:
  std::filesystem::path dir_;
};

}  // namespace zkfleet::worker
