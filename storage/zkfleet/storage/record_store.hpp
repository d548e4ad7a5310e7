// Where the journal's records live: bytes under (database, key), written a
// turn at a time. Two stores: an LMDB environment on the broker's disk
// (lmdb_store.hpp, the default) and an etcd cluster (etcd_store.hpp, brokers
// that survive their host). The Journal (journal.hpp) owns what the records
// mean: their keys, checksums, indexes and witness files; a store owns only
// how they are kept and made durable.
//
// Thread-safety: a store is owned by its Journal, on the broker's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace zkfleet::storage {

// The journal's databases (schema/journal.proto says what each record is).
enum JournalDb : unsigned {
  kMeta, kJobs, kItems, kWitnesses, kWitnessFiles, kRequests, kStubs, kWitnessHashes, kJobIndex, kJournalDbCount
};
inline constexpr const char* kJournalDbNames[kJournalDbCount] = {
    "meta", "jobs", "items", "witnesses", "witness_files", "requests", "stubs", "witness_hashes", "job_index"};

enum class ScanDirection {
  kForward,   // key order, from the first key >= `from`
  kBackward,  // reverse key order, from the last key < `from` (`from` empty: the last key)
};

class RecordStore {
 public:
  virtual ~RecordStore() = default;

  // Whether `db` exists (an older LMDB journal opened read-only may lack one).
  virtual bool has(unsigned db) = 0;
  // A view valid until the next write to the store, Commit() or Abort().
  virtual std::optional<std::string_view> Get(unsigned db, std::string_view key) = 0;
  virtual void Put(unsigned db, std::string_view key, std::string_view value) = 0;
  // false when there was no such record.
  virtual bool Del(unsigned db, std::string_view key) = 0;
  // Visits records until `visit` returns false. `visit` must not write to `db`.
  virtual void Scan(unsigned db, std::string_view from, ScanDirection direction,
                    const std::function<bool(std::string_view key, std::string_view value)>& visit) = 0;
  virtual uint64_t Count(unsigned db) = 0;

  // Whether this turn's writes should be committed now, before the next
  // message's (a store whose transactions have a size limit).
  virtual bool full() const { return false; }
  // Makes this turn's writes durable, all at once. Throws Error: kIo when the
  // store refuses or cannot be reached (the caller then calls Abort()),
  // kNotLeader when another broker leads now (nothing was written).
  virtual void Commit() = 0;
  // Drops this turn's writes: the store is as last committed. Never throws.
  virtual void Abort() = 0;
  // Bytes the store takes (0 where it cannot tell).
  virtual uint64_t StoreBytes() = 0;
};

}  // namespace zkfleet::storage
