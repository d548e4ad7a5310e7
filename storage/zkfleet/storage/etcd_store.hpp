// The journal's records in an etcd cluster (zkbroker --journal etcd://...):
// a broker whose host dies leaves its journal to the standby that takes
// over (etcd_leadership.hpp).
//
// Keys: "<prefix>journal/<database>/<key bytes>", values as the Journal
// writes them (with their checksums). The leader is the only writer, so the
// store keeps every record in memory (loaded once, at open, from one
// revision): reads never wait for the network, and a turn's writes go to
// memory with an undo record each. Commit() sends them as one etcd
// transaction that compares the leader key's create revision (the fence):
// etcd applies it only while this broker still leads, and answers only once
// a quorum of members has it on disk. full() asks the broker to commit
// before the next message could take a transaction past its bounds
// (EtcdJournalOptions: the bounds, and the room one message needs); writes
// that still pass them (one message writing more than that room, e.g. a
// worker re-registering with thousands of items) are sent as several
// transactions in order, each fenced, and logged.
//
// Failure: a transaction etcd refuses for the fence throws Error(kNotLeader)
// (nothing of it was written); one that fails or times out throws Error(kIo)
// and may or may not have been applied, so after Abort() the store reads
// every record from etcd again before it answers the next read.
//
// Thread-safety: not thread-safe; owned by the Journal.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "zkfleet/storage/etcd_client.hpp"
#include "zkfleet/storage/journal.hpp"
#include "zkfleet/storage/record_store.hpp"

namespace zkfleet::storage {

class EtcdStore final : public RecordStore {
 public:
  // Connects and loads every record. Without options.leadership the store
  // is read-only (writes throw). Throws Error(kIo) when etcd cannot be read.
  static std::unique_ptr<EtcdStore> Open(const EtcdJournalOptions& options, bool read_only);

  bool has(unsigned) override { return true; }
  std::optional<std::string_view> Get(unsigned db, std::string_view key) override;
  void Put(unsigned db, std::string_view key, std::string_view value) override;
  bool Del(unsigned db, std::string_view key) override;
  void Scan(unsigned db, std::string_view from, ScanDirection direction,
            const std::function<bool(std::string_view, std::string_view)>& visit) override;
  uint64_t Count(unsigned db) override;
  bool full() const override;
  void Commit() override;
  void Abort() override;
  uint64_t StoreBytes() override { return stored_bytes_; }

 private:
  EtcdStore(const EtcdJournalOptions& options, bool read_only);
  // Reads every record of every database (one revision, in pages).
  void Load();
  // Load() again if a failed commit left memory unsure of what etcd holds.
  void EnsureLoaded();
  std::string EtcdKey(unsigned db, std::string_view key) const;
  // Notes `key`'s value before this turn's first write to it.
  void Remember(unsigned db, std::string_view key);
  // Sends `request`; throws kNotLeader when the fence refuses it.
  void SendFenced(etcdserverpb::TxnRequest& request);

  EtcdJournalOptions options_;
  bool read_only_;
  EtcdClient client_;
  std::string journal_prefix_;  // "<prefix>journal/"
  std::map<std::string, std::string, std::less<>> records_[kJournalDbCount];
  // This turn: each written record's value before it (nullopt: absent).
  std::map<std::pair<unsigned, std::string>, std::optional<std::string>> before_;
  uint64_t pending_bytes_ = 0;
  uint64_t stored_bytes_ = 0;
  bool reload_ = false;  // a commit failed: etcd may hold some of it
};

}  // namespace zkfleet::storage
