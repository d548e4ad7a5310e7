#include "zkfleet/storage/lmdb_store.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/journal.hpp"

namespace zkfleet::storage {
namespace {

// Databases an older zkbroker's journal lacks (a read-only open goes on without them).
constexpr bool kDbOptional[kJournalDbCount] = {false, false, false, false, false, false, false, true, true};
// The smallest map OpenEnvironment() falls back to when the process cannot
// reserve options.map_bytes of address space.
constexpr uint64_t kSmallestMapBytes = 1ull << 30;
// What LMDB's lock file takes (its header and 126 reader slots of 64 bytes:
// 8 KiB), rounded up: reserved before LMDB maps it (OpenEnvironment).
constexpr off_t kLockFileBytes = 64 << 10;

MDB_val Val(std::string_view bytes) { return {bytes.size(), const_cast<char*>(bytes.data())}; }
std::string_view View(const MDB_val& val) { return {static_cast<const char*>(val.mv_data), val.mv_size}; }

// A cursor over one database of a transaction, closed on scope exit.
class Cursor {
 public:
  Cursor(MDB_txn* txn, MDB_dbi dbi) { rc_ = mdb_cursor_open(txn, dbi, &cursor_); }
  ~Cursor() {
    if (cursor_) mdb_cursor_close(cursor_);
  }
  int open_status() const { return rc_; }
  int Get(MDB_val* key, MDB_val* value, MDB_cursor_op op) { return mdb_cursor_get(cursor_, key, value, op); }

 private:
  MDB_cursor* cursor_ = nullptr;
  int rc_ = 0;
};

}  // namespace

std::string ErrnoName(int err) {
  switch (err) {
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EIO: return "EIO";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case EFBIG: return "EFBIG";
    case ENOMEM: return "ENOMEM";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENXIO: return "ENXIO";
    case ELOOP: return "ELOOP";
    default: return "errno " + std::to_string(err);
  }
}

std::string ExplainStorageError(const std::filesystem::path& directory, int rc, uint64_t map_bytes) {
  const std::string dir = directory.string();
  switch (rc) {
    case ENOSPC: return "the disk holding " + dir + " is full (ENOSPC)";
    case EDQUOT: return "the disk quota of zkbroker's user is used up on " + dir + " (EDQUOT)";
    case EIO: return "the disk holding " + dir + " reported an I/O error (EIO; the kernel log, dmesg, says more)";
    case EACCES: return "zkbroker may not write in " + dir + " (EACCES: check the owner and mode of the directory)";
    case EPERM:
      return "writing in " + dir + " is not permitted (EPERM: an immutable file, or a security policy refuses it)";
    case EROFS:
      return "the filesystem holding " + dir +
             " is read-only (EROFS; the kernel remounts a filesystem read-only after disk errors)";
    case EFBIG: return "a file in " + dir + " would pass the largest file size allowed (EFBIG)";
    case ENOMEM: return "the broker is out of memory (ENOMEM) for the journal in " + dir;
    case EMFILE:
    case ENFILE: return "the broker has too many open files (" + ErrnoName(rc) + ") for the journal in " + dir;
    case ENXIO:
    case ELOOP:
      return "a FIFO, device or symbolic link sits where the journal writes a file in " + dir + " (" +
             ErrnoName(rc) + "): something other than the broker put it there";
    case MDB_MAP_FULL:
      return "the store in " + dir + " reached its map size of " + std::to_string(map_bytes) + " bytes (MDB_MAP_FULL)";
    case MDB_TXN_FULL: return "one transaction changed too many pages of the store in " + dir + " (MDB_TXN_FULL)";
    case MDB_BAD_VALSIZE: return "a key or value is too large for the store in " + dir + " (MDB_BAD_VALSIZE)";
    case MDB_PANIC:
      return "the store in " + dir + " hit a fatal error earlier and must be opened again (MDB_PANIC)";
    case MDB_CORRUPTED: return "the store in " + dir + " is damaged (MDB_CORRUPTED)";
    default:
      return std::string(mdb_strerror(rc)) + (rc > 0 ? " (" + ErrnoName(rc) + ")" : "") + " in " + dir;
  }
}

struct LmdbStore::Lmdb {
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;
  MDB_dbi dbi[kJournalDbCount] = {};
  bool has_dbi[kJournalDbCount] = {};
  int lock_fd = -1;  // flock()ed while this broker owns the directory
};

LmdbStore::LmdbStore(const JournalOptions& options)
    : dir_(options.dir),
      read_only_(options.read_only),
      no_sync_(options.sync == SyncMode::kNone),
      map_bytes_(options.map_bytes),
      lmdb_(std::make_unique<Lmdb>()) {}

LmdbStore::~LmdbStore() {
  if (lmdb_->txn) mdb_txn_abort(lmdb_->txn);  // uncommitted: never acknowledged
  if (lmdb_->env) mdb_env_close(lmdb_->env);
  if (lmdb_->lock_fd >= 0) close(lmdb_->lock_fd);  // releases the flock
}

void LmdbStore::Fail(const std::string& doing, int rc) const {
  throw Error(ErrorCode::kIo, "journal: " + ExplainStorageError(dir_, rc, map_bytes_) + " while " + doing);
}

std::unique_ptr<LmdbStore> LmdbStore::Open(const JournalOptions& options) {
  std::unique_ptr<LmdbStore> store(new LmdbStore(options));
  const auto& dir = options.dir;
  if (options.read_only && !std::filesystem::exists(dir / "data.mdb")) {
    throw Error(ErrorCode::kNotFound, "journal: " + dir.string() + " holds no broker journal (no data.mdb)");
  }
  Lmdb& db = *store->lmdb_;
  if (!options.read_only) {
    // One broker per data directory: LMDB would let a second process write
    // too (its writers take turns), and two brokers' memories would disagree.
    const auto lock_path = dir / "broker.lock";
    db.lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (db.lock_fd < 0) store->Fail("creating " + lock_path.string(), errno);
    if (flock(db.lock_fd, LOCK_EX | LOCK_NB) != 0) {
      char owner[32] = {};
      ssize_t n = pread(db.lock_fd, owner, sizeof(owner) - 1, 0);
      throw Error(ErrorCode::kIo, "journal: " + dir.string() + " is in use by another zkbroker" +
                                      (n > 0 ? " (pid " + std::string(owner, static_cast<size_t>(n)) + ")" : "") +
                                      "; one broker per --data-dir");
    }
    std::string pid = std::to_string(getpid());
    if (ftruncate(db.lock_fd, 0) == 0 && pwrite(db.lock_fd, pid.data(), pid.size(), 0) < 0) {
      spdlog::debug("journal: could not write the pid into {}", lock_path.string());
    }
  }
  store->OpenEnvironment();
  store->OpenDatabases();
  return store;
}

void LmdbStore::OpenEnvironment() {
  Lmdb& db = *lmdb_;
  if (!read_only_) {
    // LMDB maps its lock file and writes its reader table through the map: on
    // a full tmpfs (or any filesystem that allocates on write) that write was
    // a SIGBUS, not an error. Its blocks are reserved here first, so a full
    // disk is an error in words ("is full (ENOSPC)") and LMDB finds them there.
    const std::filesystem::path lock = dir_ / "lock.mdb";
    int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd < 0) Fail("creating the store's lock file " + lock.string(), errno);
    const int err = posix_fallocate(fd, 0, kLockFileBytes);
    close(fd);
    if (err != 0 && err != EOPNOTSUPP && err != EINVAL) Fail("reserving the store's lock file " + lock.string(), err);
  }
  unsigned flags = MDB_NOTLS;
  if (no_sync_) flags |= MDB_NOSYNC;
  if (read_only_) flags |= MDB_RDONLY;
  int rc = 0;
  for (;;) {
    rc = mdb_env_create(&db.env);
    if (rc != 0) Fail("creating the LMDB environment", rc);
    mdb_env_set_maxdbs(db.env, kJournalDbCount);
    rc = mdb_env_set_mapsize(db.env, map_bytes_);
    if (rc != 0) Fail("reserving a map of " + std::to_string(map_bytes_) + " bytes", rc);
    rc = mdb_env_open(db.env, dir_.c_str(), flags, 0640);
    // The map is address space only, but a process may not get that much of
    // it (a ulimit -v, a sanitizer's shadow memory): take a smaller one
    // rather than not start. A failed open leaves the environment unusable.
    if (rc != ENOMEM || map_bytes_ <= kSmallestMapBytes) break;
    mdb_env_close(db.env);
    db.env = nullptr;
    const uint64_t smaller = std::max<uint64_t>(map_bytes_ / 4, kSmallestMapBytes);
    spdlog::warn("journal {}: no address space for a map of {} bytes; trying {}", dir_.string(), map_bytes_, smaller);
    map_bytes_ = smaller;
  }
  if (rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_VERSION_MISMATCH) {
    throw Error(ErrorCode::kIo, "journal " + dir_.string() +
                                    ": the store (data.mdb) is damaged or not an LMDB store of this version (" +
                                    mdb_strerror(rc) +
                                    "); nothing was changed: restore the directory from a backup "
                                    "(docs/operations.md)");
  }
  if (rc != 0) Fail("opening the store", rc);
}

void LmdbStore::OpenDatabases() {
  Lmdb& db = *lmdb_;
  // Handles opened in a transaction last beyond it only if it commits: the
  // Journal's first Commit() commits this one, a reopen in Txn().
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(db.env, nullptr, read_only_ ? MDB_RDONLY : 0, &txn);
  if (rc != 0) Fail("beginning a transaction", rc);
  for (unsigned i = 0; i < kJournalDbCount; ++i) {
    rc = mdb_dbi_open(txn, kJournalDbNames[i], read_only_ ? 0 : MDB_CREATE, &db.dbi[i]);
    db.has_dbi[i] = rc == 0;
    if (rc == MDB_NOTFOUND && read_only_ && kDbOptional[i]) continue;  // an older journal
    if (rc != 0) {
      mdb_txn_abort(txn);
      Fail(std::string("opening database ") + kJournalDbNames[i], rc);
    }
  }
  lmdb_->txn = txn;  // the database handles are kept only if this commits
}

void* LmdbStore::Txn() {
  if (!lmdb_->txn) {
    int rc = mdb_txn_begin(lmdb_->env, nullptr, read_only_ ? MDB_RDONLY : 0, &lmdb_->txn);
    if (rc == MDB_PANIC && !read_only_) {
      // A write failed in a way LMDB cannot undo in place (its meta page):
      // the environment must be opened again. What was committed is intact.
      spdlog::warn("journal: the LMDB environment in {} is opened again after a fatal write error", dir_.string());
      mdb_env_close(lmdb_->env);
      lmdb_->env = nullptr;
      lmdb_->txn = nullptr;
      OpenEnvironment();
      OpenDatabases();
      rc = mdb_txn_commit(lmdb_->txn);  // keeps the database handles
      lmdb_->txn = nullptr;
      if (rc != 0) Fail("opening the databases again", rc);
      rc = mdb_txn_begin(lmdb_->env, nullptr, 0, &lmdb_->txn);
    }
    if (rc != 0) {
      lmdb_->txn = nullptr;
      Fail("beginning a transaction", rc);
    }
  }
  return lmdb_->txn;
}

bool LmdbStore::has(unsigned db) {
  Txn();
  return lmdb_->has_dbi[db];
}

void LmdbStore::Put(unsigned db, std::string_view key, std::string_view value) {
  if (read_only_) {
    throw Error(ErrorCode::kIo, "journal " + dir_.string() + " is open read-only: cannot put into " +
                                    kJournalDbNames[db]);
  }
  MDB_val k = Val(key), v = Val(value);
  int rc = mdb_put(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[db], &k, &v, 0);
  if (rc != 0) Fail(std::string("putting a record into ") + kJournalDbNames[db], rc);
}

bool LmdbStore::Del(unsigned db, std::string_view key) {
  if (read_only_) {
    throw Error(ErrorCode::kIo, "journal " + dir_.string() + " is open read-only: cannot delete from " +
                                    kJournalDbNames[db]);
  }
  MDB_val k = Val(key);
  int rc = mdb_del(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[db], &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != 0) Fail(std::string("deleting a record from ") + kJournalDbNames[db], rc);
  return true;
}

std::optional<std::string_view> LmdbStore::Get(unsigned db, std::string_view key) {
  MDB_txn* txn = static_cast<MDB_txn*>(Txn());
  if (!lmdb_->has_dbi[db]) return std::nullopt;  // an older journal, opened read-only
  MDB_val k = Val(key), v{};
  int rc = mdb_get(txn, lmdb_->dbi[db], &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  if (rc != 0) Fail(std::string("reading a record of ") + kJournalDbNames[db], rc);
  return View(v);
}

void LmdbStore::Scan(unsigned db, std::string_view from, ScanDirection direction,
                     const std::function<bool(std::string_view, std::string_view)>& visit) {
  MDB_txn* txn = static_cast<MDB_txn*>(Txn());
  if (!lmdb_->has_dbi[db]) return;
  Cursor cursor(txn, lmdb_->dbi[db]);
  if (cursor.open_status() != 0) Fail(std::string("opening a cursor over ") + kJournalDbNames[db], cursor.open_status());
  std::string start(from);
  MDB_val key{start.size(), start.data()}, value{};
  int rc = 0;
  MDB_cursor_op step = MDB_NEXT;
  if (direction == ScanDirection::kForward) {
    rc = start.empty() ? cursor.Get(&key, &value, MDB_FIRST) : cursor.Get(&key, &value, MDB_SET_RANGE);
  } else {
    // The last key below `from`: the one before the first >= it, or the last.
    rc = start.empty() ? MDB_NOTFOUND : cursor.Get(&key, &value, MDB_SET_RANGE);
    rc = cursor.Get(&key, &value, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
    step = MDB_PREV;
  }
  for (; rc == 0; rc = cursor.Get(&key, &value, step)) {
    if (!visit(View(key), View(value))) return;
  }
  if (rc != MDB_NOTFOUND) Fail(std::string("reading ") + kJournalDbNames[db], rc);
}

uint64_t LmdbStore::Count(unsigned db) {
  MDB_txn* txn = static_cast<MDB_txn*>(Txn());
  if (!lmdb_->has_dbi[db]) return 0;
  MDB_stat stat{};
  int rc = mdb_stat(txn, lmdb_->dbi[db], &stat);
  if (rc != 0) Fail(std::string("counting the records of ") + kJournalDbNames[db], rc);
  return stat.ms_entries;
}

void LmdbStore::Commit() {
  MDB_txn* txn = lmdb_->txn;
  lmdb_->txn = nullptr;
  if (!txn) return;
  // Committing (not aborting) a read-only transaction keeps the database
  // handles it opened.
  int rc = mdb_txn_commit(txn);  // frees the transaction, committed or not
  if (rc != 0 && !read_only_) Fail("committing", rc);
}

void LmdbStore::Abort() {
  if (lmdb_->txn) {
    if (read_only_) {
      mdb_txn_commit(lmdb_->txn);  // a reader: nothing to undo
    } else {
      mdb_txn_abort(lmdb_->txn);
    }
  }
  lmdb_->txn = nullptr;
}

uint64_t LmdbStore::StoreBytes() {
  MDB_envinfo info{};
  MDB_stat stat{};
  mdb_env_info(lmdb_->env, &info);
  mdb_env_stat(lmdb_->env, &stat);
  return (static_cast<uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
}

}  // namespace zkfleet::storage
