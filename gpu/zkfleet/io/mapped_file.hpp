// A read-only memory mapping of a whole file.
//
// Ownership: a MappedFile owns its mapping and unmaps it when destroyed. It is
// move-only; moving keeps the mapped address, so pointers into data() stay
// valid for as long as some MappedFile owns the mapping.
// Thread-safety: const methods may be called from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "zkfleet/engine/file_identity.hpp"

namespace zkfleet::io {

class MappedFile {
 public:
  // Maps `path` read-only. Throws zkfleet::Error: kNotFound when the file does
  // not exist, kIo for any other failure (permissions, a directory, mmap).
  // An empty file gives size() == 0 and data() == nullptr.
  static MappedFile Open(const std::string& path);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // What fstat said of the file when it was mapped (the key-check cache
  // remembers checked keys by it: engine/checked_keys.hpp); all zero for a
  // default-constructed MappedFile.
  const engine::FileIdentity& identity() const { return identity_; }

 private:
  void Reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  engine::FileIdentity identity_;
};

}  // namespace zkfleet::io
