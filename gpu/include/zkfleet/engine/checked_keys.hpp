// The proving keys whose points this host has already checked (the key check
// at load: every point below q, on its curve and in the prime-order
// subgroup). ProvingKey::Load consults it when EngineOptions::checked_keys is
// enabled: a key is recorded, by a digest of its whole content, only after it
// passed; a load whose key has a recorded digest skips the check. A changed
// file has another digest and is checked again. zkprove and zkworker share
// the cache (same directory rules, same records).
//
// The digest is taken over the very bytes the load then checks and copies
// (the key's mapping, engine::ProvingKey::Load), not over a separate read of
// the path. It is BLAKE2b-256 (libsodium) over the file in 4 MiB pieces
// hashed on several threads, then over the little-endian 64-bit size and the
// pieces' digests in order:
//   root = BLAKE2b-256(le64(size) || BLAKE2b-256(piece_0) || ... )
// (one empty piece for an empty file). Collision resistant: a crafted key
// cannot pass for a checked one. About 10 ms for a 16 MB key on 2 cores,
// 0.2 s for a 2 GB key on 8. (The pieces were 64 MiB until 2026-12-07: a
// key over 4 MiB recorded before then is checked once more.)
//
// Records are files named <digest>.checked in dir(), written under a
// temporary name and renamed. The directory is created 0700 (with its
// parents); a record is trusted, and one written, only where the directory
// belongs to this process's user and is not writable by group or others, and
// the record is a regular file of that user (not a link): nobody else can
// plant one.
//
// Failures to record never fail a load: Record returns why, and the first
// failure of a cache (and of its copies) is reported once.
//
// A .zkey file that passed is also remembered by its file's identity (as
// below), so that the next load of that same file skips the digest too (a
// one-shot zkprove paid ~15 ms for a 2^15 key, 30 ms for 2^16, on every
// call); a copy or a changed file is digested as above. ProvingKey::Load
// uses such a record only when the file is still the one remembered once its
// bytes are copied (else it loads again, digesting and checking).
//
// Bellperson parameter files (engine::BellmanKey, tens of GB for Filecoin's
// circuits) are not hashed: they are remembered by the identity of the file
// the load opened (FileIdentity: fstat of the open descriptor, st_dev,
// st_ino, st_size, st_mtim and st_ctim in nanoseconds), in records named
// params-<BLAKE2b-256 of the identity, hex>.checked in the same directory,
// under the same trust rules (the prefix keeps them apart from content
// digests). Any write to a file changes its ctime, which unprivileged users
// cannot set back (utimensat sets atime and mtime only), so a file changed
// in any way -- even rewritten with the same bytes and its mtime restored --
// has another identity and is checked again; a copy, a move to another
// filesystem or a restore from a backup is a new file, checked once. Two
// guards: a file whose ctime is less than min_file_age() (2 s) older than the
// moment its identity was taken is not recorded (a write in the same clock
// tick as the last one might leave the ctime as it was; such a file is
// checked again at the next load, which records it), and the loader records
// only when the file's identity is the same after the check as before it
// (BellmanKey::Load, bellman.hpp).
//
// Thread-safety: const methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "zkfleet/engine/file_identity.hpp"

namespace zkfleet::engine {

class CheckedKeys {
 public:
  // Disabled: nothing is remembered (every key is checked at every load).
  CheckedKeys() = default;
  // `dir` empty: disabled.
  explicit CheckedKeys(std::filesystem::path dir) : dir_(std::move(dir)) {}
  // A setting as the command-line tools take it: "" or "off" = disabled,
  // anything else a directory.
  static CheckedKeys FromSetting(const std::string& setting);

  bool enabled() const { return !dir_.empty(); }
  const std::filesystem::path& dir() const { return dir_; }

  // The content digest (hex, 64 characters) of `bytes`, or of the file at
  // `path` (throws zkfleet::Error naming the file when it cannot be read).
  static std::string Digest(std::span<const uint8_t> bytes, unsigned threads = 8);
  static std::string Digest(const std::string& path, unsigned threads = 8);

  // Whether a key with this digest passed the check on this host before
  // (false when disabled, or when the directory or record is not trusted).
  bool Contains(const std::string& digest) const;
  // Records that the key with this digest (loaded from `zkey_path`, which is
  // written into the record for people) passed. Returns "" when recorded,
  // else why not; never throws.
  std::string Record(const std::string& digest, const std::string& zkey_path) const;
  // True the first time it is called on this cache or any copy of it: lets
  // the caller warn once about records that cannot be written.
  bool FirstWarning() const { return !warned_->exchange(true); }

  // Parameter files, by identity (see the top). ContainsFile: whether the
  // file with this identity passed the full check on this host before (false
  // when disabled or untrusted, as Contains).
  bool ContainsFile(const FileIdentity& identity) const;
  // Records that the file with this identity (taken before the check that
  // passed) passed; `path` goes into the record for people. Returns "" when
  // recorded, else why not; never throws. A file changed less than
  // min_file_age() before identity.observed_ns is not recorded: the answer
  // then starts with kTooRecent.
  std::string RecordFile(const FileIdentity& identity, const std::string& path) const;
  static constexpr const char* kTooRecent = "changed too recently";
  // 2 s by default; tests set 0.
  std::chrono::nanoseconds min_file_age() const { return min_file_age_; }
  void set_min_file_age(std::chrono::nanoseconds age) { min_file_age_ = age; }
  // The record file of a parameters file with this identity (dir()/params-<digest>.checked).
  std::filesystem::path FileRecordPath(const FileIdentity& identity) const;
  // The decoded image of a parameters file with this identity
  // (dir()/params-<digest>.points, bellman/decoded_image.hpp; written only
  // with EngineOptions::keep_decoded_params), and whether one is there to
  // use: a trusted directory and a regular file of this user, as a record.
  std::filesystem::path FileImagePath(const FileIdentity& identity) const;
  bool ContainsFileImage(const FileIdentity& identity) const;
  // Makes dir() as a record's write does (0700, with its parents); "" when
  // files may be written there, else why not. Never throws.
  std::string PrepareDir() const;

  // The default directory, in order:
  //   $ZKFLEET_KEY_CHECK_CACHE when set ("" or "off": disabled);
  //   $CACHE_DIRECTORY/checked-keys under systemd (CacheDirectory=; the first
  //   of several);
  //   ${XDG_CACHE_HOME:-$HOME/.cache}/zkfleet/checked-keys (XDG_CACHE_HOME only
//   when absolute);
  // "" (disabled) when none of those is set.
  static std::filesystem::path DefaultDir();

 private:
  // Why dir_ cannot be trusted ("" when it can); "" too when it does not exist.
  std::string Untrusted() const;
  // A record `name` in a trusted dir_, a regular file of this user.
  bool ContainsRecord(const std::string& name) const;
  // Writes record `name` holding `note` (temporary file, renamed); "" or why not.
  std::string WriteRecord(const std::string& name, const std::string& note) const;

  std::filesystem::path dir_;
  std::chrono::nanoseconds min_file_age_ = std::chrono::seconds(2);
  std::shared_ptr<std::atomic<bool>> warned_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace zkfleet::engine
