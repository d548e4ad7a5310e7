// What the Journal's source files (journal.cpp, journal_witnesses.cpp) share
// beyond journal.hpp; no part of the storage interface: include it only there.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace zkfleet::storage::detail {

// Keys sort as the numbers they encode (LMDB compares bytes).
inline void AppendBigEndian(std::string& key, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) key.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
inline uint64_t ReadBigEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<unsigned char>(p[i]);
  return value;
}

// A job's key (its job_seq), and a work item's (and its witness's records'):
// the job's key, then the partition.
inline std::string JobKey(uint64_t job_seq) {
  std::string key;
  AppendBigEndian(key, job_seq, 8);
  return key;
}
inline std::string ItemKey(uint64_t job_seq, uint32_t partition) {
  std::string key = JobKey(job_seq);
  AppendBigEndian(key, partition, 4);
  return key;
}

}  // namespace zkfleet::storage::detail
