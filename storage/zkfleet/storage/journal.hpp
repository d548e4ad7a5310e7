// The broker's journal: every accepted job, its witnesses, the items that
// started or ended, results, dead letters and the idempotency index, in an
// LMDB environment under --data-dir (records: schema/journal.proto).
//
// Why LMDB (docs/journal-store.md has the measured comparison): one writer,
// like the single-threaded broker; copy-on-write pages, so a crash leaves the
// last committed transaction and there is no recovery log to replay; no
// background threads competing with the broker for its cores.
//
// Group commit: all writes of one broker loop turn go into one LMDB write
// transaction; Commit() makes them durable (fsync) before the server sends the
// turn's replies. Witnesses of at least `blob_threshold` bytes are written
// once to their own file (blobs/<job_seq>-<partition>), fsynced at Commit()
// before the transaction that references them; smaller ones are store values.
// Reads go through the open write transaction, so they see this turn's writes.
//
// Integrity: every record's value ends with a checksum (format 2: XXH3-64 of
// its database's name, key and payload); a record that does not match throws
// Error(kBadFormat) naming it, never handed on as data (journal_check.hpp
// checks a whole journal before a broker starts on it, and salvages
// what is intact). Every witness gets an XXH3-128 hash when it is written (database
// "witness_hashes", keyed like the witness), computed over the chunks as they
// are written; ReadWitness checks it, and the file's size, before it hands
// the witness out. A witness journaled before hashes existed (an older
// zkbroker) is checked for its size only.
//
// Failure: any LMDB or file error throws zkfleet::Error (kIo) in plain words:
// what happened (the disk is full, refused the write, reported an I/O error,
// the store reached its map size, ...), the data directory and the operation,
// e.g. "journal: the disk holding /var/lib/zkfleet/broker is full (ENOSPC)
// while committing". What was committed is intact. The caller then calls
// Abort(): the turn's transaction and the witness files it wrote go, and the
// journal is as last committed (BrokerServer then refuses new work until
// ProbeWritable() succeeds). job_seq and the epoch only move forward: a value
// taken in an aborted turn is not handed out again, and is persisted by the
// next commit that writes something (or by ProbeWritable); a commit with
// nothing else to write does not try on its own, so a disk that refuses does
// not fail every turn. After a failure LMDB declares fatal (MDB_PANIC) the
// environment is opened again at the next transaction.
//
// No socket library in sight: witnesses go in as byte chunks (the broker
// passes views of the frames it received) and come out as a StoredWitness
// (bytes, or a mapping of the witness file the caller may take over). Users:
// the broker (zkfleet_broker) and `zkctl journal` (read-only).
//
// Thread-safety: not thread-safe; owned by the broker thread (or by one
// inspecting thread when read_only).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "zkfleet/storage/etcd_tls.hpp"

#include "journal.pb.h"
#include "zkfleet/storage/record_store.hpp"

namespace zkfleet::storage {

// The job listings' indexes (ListJobs): jobs by state (as journaled: QUEUED
// while live), by circuit, by client.
enum class JobIndex { kState, kCircuit, kClient };

enum class SyncMode {
  kAlways,  // the server commits after every message that changed the journal
  kBatch,   // one commit (one fsync) per loop turn; replies wait for it
  kNone,    // commits without fsync: survives a broker crash, not a machine crash
};
const char* SyncModeName(SyncMode mode);
std::optional<SyncMode> ParseSyncMode(std::string_view name);

class EtcdLeadership;

// The journal in an etcd cluster instead of a data directory (etcd_store.hpp).
struct EtcdJournalOptions {
  std::vector<std::string> endpoints;  // "host:port" of the members
  EtcdTls tls;                         // TLS to them (none: plaintext)
  std::string prefix = "zkfleet/";     // every key of this fleet starts with it
  // The leadership every write is fenced with; not owned, outlives the
  // journal. Null: read-only inspection (zkctl).
  const EtcdLeadership* leadership = nullptr;
  // One etcd transaction's bounds (etcd's --max-txn-ops, default 128, and
  // --max-request-bytes, default 1.5 MiB, less room for the request's frame).
  uint32_t max_txn_ops = 128;
  uint64_t max_txn_bytes = 1u << 20;
  // Room kept for the next message's writes (the most one message writes:
  // the broker's largest SUBMIT): Journal::full() asks for a commit before a
  // message could take a transaction past its bounds, so one message's writes
  // are never split over two transactions.
  uint32_t reserve_ops = 0;
  uint64_t reserve_bytes = 0;
};

struct JournalOptions {
  // The LMDB journal's data directory; in etcd mode, the journal's etcd://
  // URL (names it in messages; no file is written).
  std::filesystem::path dir;
  SyncMode sync = SyncMode::kBatch;
  // Address space reserved for the store; the file grows only as it is used.
  uint64_t map_bytes = 1ull << 40;
  // Witnesses this large or larger are written to their own file.
  uint64_t blob_threshold = 1ull << 20;
  // Inspection (zkctl journal): reads only, and works while a broker has the
  // store open (LMDB readers never block its writer). Writes throw.
  bool read_only = false;
  // Set: the journal lives in etcd (zkbroker --journal etcd://...).
  std::optional<EtcdJournalOptions> etcd;
};

// A witness as the journal hands it back: its bytes copied out of the store
// (a small one), or a read-only mapping of its witness file (a large one; no
// copy). Move-only; a mapping still held is unmapped on destruction.
class StoredWitness {
 public:
  // Bytes held in memory.
  static StoredWitness Copied(std::string bytes);
  // `size` bytes of a read-only mmap at `base` (nullptr when size is 0), now owned.
  static StoredWitness Mapped(void* base, size_t size);
  StoredWitness(StoredWitness&& other) noexcept;
  StoredWitness& operator=(StoredWitness&& other) noexcept;
  StoredWitness(const StoredWitness&) = delete;
  StoredWitness& operator=(const StoredWitness&) = delete;
  ~StoredWitness();

  std::string_view bytes() const;
  uint64_t size() const { return bytes().size(); }
  bool mapped() const { return mapped_; }

  // Hands the mapping over (the caller munmaps it; nothing to unmap when its
  // size is 0); this object is then empty. Only when mapped().
  struct Mapping {
    void* base;
    size_t size;
  };
  Mapping ReleaseMapping();
  // The bytes held in memory, moved out. Only when !mapped().
  std::string TakeBytes() { return std::move(copy_); }

 private:
  StoredWitness() = default;
  void Unmap();

  bool mapped_ = false;
  std::string copy_;
  void* base_ = nullptr;
  size_t mapped_size_ = 0;
};

// "journal DIR: record KEY of 'DATABASE' is damaged ...": the text of a
// record whose checksum does not match, with the way out (zkctl journal salvage).
std::string DamagedRecord(const std::filesystem::path& dir, std::string_view database, std::string_view key);

class Journal {
 public:
  struct Stats {
    uint64_t commits = 0;
    uint64_t witness_bytes_written = 0;  // store values and blob files
    uint64_t blob_files_written = 0;
    double commit_seconds = 0;           // total time inside Commit()
  };

  // Opens (creating if needed) the environment in options.dir. Throws Error.
  static std::unique_ptr<Journal> Open(const JournalOptions& options);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Starts a new broker life: bumps the persisted epoch, removes blob files
  // no record references (a crash between writing one and committing), and
  // commits. Returns the new epoch.
  uint64_t BeginLife();
  uint64_t epoch() const { return meta_.epoch(); }

  // job_seq never repeats: the next one is persisted with the next Commit().
  uint64_t TakeJobSeq();
  uint64_t next_job_seq() const { return meta_.next_job_seq(); }

  // ---- writes (part of the current turn's transaction)
  void PutJob(const journal::Job& job);
  void PutItem(uint64_t job_seq, uint32_t partition, const journal::Item& item);
  void DeleteItem(uint64_t job_seq, uint32_t partition);
  void PutWitness(uint64_t job_seq, uint32_t partition, std::string_view bytes);
  // The same from the chunks (frames) it was received in, in order (written
  // with writev: no copy in user space for a blob file).
  void PutWitness(uint64_t job_seq, uint32_t partition, std::span<const std::string_view> chunks);
  void DeleteWitness(uint64_t job_seq, uint32_t partition);
  void PutRequest(const std::string& client_id, const std::string& request_id, const journal::Request& request);

  // Remembers a circuit a worker announced, and the owner (its key) that
  // announced it first (durable with this turn's commit).
  void RememberCircuit(const std::string& circuit_id, const std::string& owner = "");
  // Remembers a circuit a worker announced it computes witnesses for from
  // inputs (Ready.generates; durable with this turn's commit).
  void RememberGenerator(const std::string& circuit_id, const std::string& owner = "");

  // ---- reads (see this turn's writes)
  std::optional<journal::Job> GetJob(uint64_t job_seq);
  std::optional<journal::Item> GetItem(uint64_t job_seq, uint32_t partition);
  std::optional<journal::Stub> GetStub(uint64_t job_seq);
  std::optional<journal::Request> GetRequest(const std::string& client_id, const std::string& request_id);
  // The witness to send: a large one maps its blob file (no copy; the pages
  // are the ones written at submit, usually still cached), a small one is
  // copied out of the store.
  // nullopt when it cannot be served, with `*fault` saying why in plain
  // words: none is stored, its file is gone (a data directory restored from
  // an inconsistent copy), shorter or longer than recorded, or its bytes do
  // not match the hash recorded when it was written (a storage fault, never
  // the client's). The file's size is checked (fstat) before it is mapped, so
  // a truncated file is reported, not read past its end (SIGBUS); only a file
  // truncated by someone else in the milliseconds between that check and the
  // send could still be. Throws Error (kResourceExhausted) only when the
  // broker itself lacks file descriptors or address space.
  std::optional<StoredWitness> ReadWitness(uint64_t job_seq, uint32_t partition, std::string* fault);

  // Every circuit RememberCircuit() was given, in name order.
  std::vector<std::string> KnownCircuits();
  // Every circuit RememberGenerator() was given, in name order.
  std::vector<std::string> KnownGenerators();
  // The same with the owner each was remembered for ("" before owners were kept).
  std::vector<std::pair<std::string, std::string>> KnownCircuitOwners();
  std::vector<std::pair<std::string, std::string>> KnownGeneratorOwners();
  // Every job record in job_seq order (recovery, inspection).
  void ForEachJob(const std::function<void(const journal::Job&)>& visit);
  // Listings, newest first, from below job_seq `below` (0: the newest),
  // until `visit` returns false: the job_seqs under one index value (a
  // state's number as one byte: StateIndexValue; a circuit or client id), or
  // every job record. Jobs whose results expired (stubs) are not listed.
  void ScanJobIndex(JobIndex index, std::string_view value, uint64_t below, const std::function<bool(uint64_t)>& visit);
  void ScanJobsNewestFirst(uint64_t below, const std::function<bool(const journal::Job&)>& visit);
  static std::string StateIndexValue(int state) { return std::string(1, static_cast<char>(state)); }
  // A journal written by a zkbroker without the index gets it (once, at start).
  void RebuildJobIndexIfMissing();
  // Item records of one job that exist, by partition.
  std::vector<std::pair<uint32_t, journal::Item>> Items(uint64_t job_seq);
  // Every record of every database, in database then key order, from
  // database number `from_db` (0: "meta") after key `after` (empty: from its
  // first), as stored: `payload` is nullopt when its checksum does not match.
  // Witness bytes are visited as stored (their hashes are records). For the
  // whole-journal check and salvage (journal_check.hpp).
  struct RecordView {
    unsigned db;
    std::string_view database;
    std::string_view key;
    std::optional<std::string_view> payload;
  };
  void ForEachRecord(unsigned from_db, std::string_view after, const std::function<void(const RecordView&)>& visit);
  static unsigned database_count();
  static std::string_view database_name(unsigned db);
  // Salvage only (SalvageJournal, journal_check.hpp): stores a record read from another
  // journal as it was (a checksum added); "meta"'s "meta" becomes this
  // journal's meta. The job index is rebuilt from the jobs instead.
  void RestoreRecord(unsigned db, std::string_view key, std::string_view payload);
  // Every stub and request record (inspection).
  void ForEachStub(const std::function<void(uint64_t, const journal::Stub&)>& visit);
  size_t CountRequests();

  // Finished jobs whose results ended at or before `cutoff_unix_s` become
  // stubs (their items go). Looks at no more than `budget` records, oldest
  // job_seq first; returns how many jobs it turned into stubs.
  size_t ExpireResults(double cutoff_unix_s, size_t budget);
  // Stubs and request records of jobs submitted at or before `cutoff_unix_s`
  // go (the dedup window ended). Returns how many.
  size_t ExpireRequests(double cutoff_unix_s, size_t budget);

  // Makes this turn's writes durable (per the sync mode) and starts afresh
  // (read-only: ends the read transaction, so the next read sees new commits).
  // A no-op when nothing was written. Throws Error when the disk refuses; the
  // caller must then Abort().
  void Commit();
  bool dirty() const { return dirty_; }
  // Whether the turn's writes should be committed before the next message's
  // (the etcd store: a transaction has a size limit).
  bool full() const;

  // Drops the current turn: its transaction and the witness files it wrote
  // (unlinked, unless a committed record names them); deletions it asked for
  // do not happen. The journal is then as last committed. Never throws.
  void Abort();

  // Whether the journal can be written now: writes, syncs and deletes a probe
  // file of 1 MiB in the data directory, and puts and deletes a probe record
  // in one committed transaction (which also persists a job_seq or epoch
  // taken since the last successful commit). Call it with nothing of a turn
  // pending. false with `*why` (the error, in plain words) when not; the
  // journal is then as last committed.
  bool ProbeWritable(std::string* why);

  const Stats& stats() const { return stats_; }
  const JournalOptions& options() const { return options_; }
  // Bytes of the store file in use (pages below the high-water mark).
  uint64_t StoreBytes();

 private:
  explicit Journal(JournalOptions options);

  void Put(unsigned dbi, std::string_view key, std::string_view value);
  bool Del(unsigned dbi, std::string_view key);
  std::optional<std::string_view> Get(unsigned dbi, std::string_view key);
  // The payload of `value`, read under `key` of database `dbi`, its checksum
  // checked (format 2). Throws Error(kBadFormat, DamagedRecord(...)) when it
  // does not match.
  std::string_view Checked(unsigned dbi, std::string_view key, std::string_view value) const;
  // Format 1 (an older zkbroker, no checksums) opened for writing: every
  // record gets its checksum, in this turn.
  void SealRecords();
  // The names of the meta database's keys "<prefix><name>", in name order.
  std::vector<std::pair<std::string, std::string>> MetaEntries(std::string_view prefix);  // (name, value)
  std::filesystem::path BlobPath(uint64_t job_seq, uint32_t partition) const;
  // ProbeWritable's disk part (LMDB): writes, syncs and deletes a 1 MiB file.
  void ProbeDisk();
  // Throws Error(kIo): "journal: <ExplainStorageError(rc)> while <doing>".
  [[noreturn]] void Fail(const std::string& doing, int rc) const;

  JournalOptions options_;
  std::unique_ptr<RecordStore> store_;  // LMDB (options.dir) or etcd (options.etcd)
  int blob_dir_fd_ = -1;                // the LMDB journal's witness files ("blobs"); -1 in etcd
  journal::Meta meta_;
  journal::Meta committed_meta_;  // as the last successful commit left it
  bool sealed_ = true;  // values carry checksums (format 2); false: an older journal opened read-only
  bool meta_dirty_ = false;
  bool dirty_ = false;
  std::vector<int> blob_fds_to_sync_;                   // written this turn
  struct WrittenBlob {
    std::filesystem::path path;
    std::string key;
  };
  std::vector<WrittenBlob> blobs_written_;              // this turn: Abort() unlinks them
  std::vector<std::filesystem::path> blobs_to_unlink_;  // after this turn commits
  Stats stats_;
};

}  // namespace zkfleet::storage
