// The identity of an open file as fstat gives it: what the key-check cache
// (checked_keys.hpp) remembers a bellperson .params file by, and what the
// .params reader (a layer below the engine's API) takes before and after it
// reads. A plain value; OfDescriptor, Digest and Describe are defined in
// engine/checked_keys.cpp.
//
// Thread-safety: a value type.
#pragma once

#include <cstdint>
#include <string>

namespace zkfleet::engine {

// What fstat says of an open file, the parts that change whenever the file
// does (checked_keys.hpp). observed_ns is when it was taken (CLOCK_REALTIME): it is
// not part of the identity.
struct FileIdentity {
  uint64_t device = 0;
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  int64_t observed_ns = 0;

  // fstat(fd). Throws zkfleet::Error (kIo) naming `path` when it fails.
  static FileIdentity OfDescriptor(int fd, const std::string& path);
  // The five identity fields (observed_ns aside) are equal.
  bool Same(const FileIdentity& other) const {
    return device == other.device && inode == other.inode && size == other.size && mtime_ns == other.mtime_ns &&
           ctime_ns == other.ctime_ns;
  }
  // BLAKE2b-256 (hex) of a fixed encoding of the five fields: the record's name.
  std::string Digest() const;
  // "device 2049, inode 1234, size 96 bytes, mtime <s.ns>, ctime <s.ns>", for people.
  std::string Describe() const;
};

}  // namespace zkfleet::engine
