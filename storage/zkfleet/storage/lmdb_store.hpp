// The journal's records in an LMDB environment under the broker's data
// directory (the default store; journal.hpp says why LMDB). One broker per
// directory (an flock on broker.lock); one write transaction per turn; a
// failure LMDB declares fatal (MDB_PANIC) reopens the environment at the next
// transaction. Reads go through the open transaction, so they see the turn's
// writes.
//
// Thread-safety: not thread-safe; owned by the Journal.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "zkfleet/storage/record_store.hpp"

namespace zkfleet::storage {

struct JournalOptions;

// "ENOSPC", "EIO", ... for the errno values the journal explains ("errno N" else).
std::string ErrnoName(int err);

// `rc` (an LMDB code or an errno) in plain words, naming the data directory
// `dir`: "the disk holding DIR is full (ENOSPC)", ...
std::string ExplainStorageError(const std::filesystem::path& dir, int rc, uint64_t map_bytes);

class LmdbStore final : public RecordStore {
 public:
  // Opens (creating unless read-only) the environment in options.dir and
  // its databases; takes the directory's broker.lock unless read-only.
  // Throws Error naming the directory.
  static std::unique_ptr<LmdbStore> Open(const JournalOptions& options);
  ~LmdbStore() override;

  bool has(unsigned db) override;
  std::optional<std::string_view> Get(unsigned db, std::string_view key) override;
  void Put(unsigned db, std::string_view key, std::string_view value) override;
  bool Del(unsigned db, std::string_view key) override;
  void Scan(unsigned db, std::string_view from, ScanDirection direction,
            const std::function<bool(std::string_view, std::string_view)>& visit) override;
  uint64_t Count(unsigned db) override;
  void Commit() override;
  void Abort() override;
  uint64_t StoreBytes() override;
  // The map reserved: options.map_bytes, or less where the process could
  // not reserve that much address space.
  uint64_t map_bytes() const { return map_bytes_; }

 private:
  struct Lmdb;
  LmdbStore(const JournalOptions& options);
  void OpenEnvironment();
  void OpenDatabases();
  void* Txn();
  [[noreturn]] void Fail(const std::string& doing, int rc) const;

  std::filesystem::path dir_;
  bool read_only_;
  bool no_sync_;
  uint64_t map_bytes_;
  std::unique_ptr<Lmdb> lmdb_;
};

}  // namespace zkfleet::storage
