#include "zkfleet/storage/journal.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/digest.hpp"

namespace zkfleet::storage {
namespace {

// Format 2: every record's value carries a checksum (Seal); format 1 (an
// older zkbroker) is converted when a broker opens it for writing.
constexpr uint32_t kFormat = 2;
constexpr uint32_t kUnsealedFormat = 1;
constexpr char kMetaKey[] = "meta";

enum Db : unsigned {
  kMeta, kJobs, kItems, kWitnesses, kWitnessFiles, kRequests, kStubs, kWitnessHashes, kJobIndex, kDbCount
};
constexpr const char* kDbNames[kDbCount] = {"meta",     "jobs",  "items",          "witnesses", "witness_files",
                                            "requests", "stubs", "witness_hashes", "job_index"};
// Databases an older zkbroker's journal lacks (a read-only open goes on without them).
constexpr bool kDbOptional[kDbCount] = {false, false, false, false, false, false, false, true, true};
// Key of the record ProbeWritable() puts and deletes (database "meta").
constexpr char kProbeKey[] = "write-probe";
// The smallest map OpenEnvironment() falls back to when the process cannot
// reserve options.map_bytes of address space.
constexpr uint64_t kSmallestMapBytes = 1ull << 30;
// What LMDB's lock file takes (its header and 126 reader slots of 64 bytes:
// 8 KiB), rounded up: reserved before LMDB maps it (OpenEnvironment).
constexpr off_t kLockFileBytes = 64 << 10;
// Circuits a worker has announced, each a key "circuit:<id>" in the meta
// database (empty value): after a restart they are known before any worker
// has reconnected.
constexpr std::string_view kCircuitKeyPrefix = "circuit:";
// Circuits a worker announced it generates witnesses for (jobs from inputs),
// each a key "generates:<id>" in the meta database, likewise.
constexpr std::string_view kGeneratorKeyPrefix = "generates:";
constexpr size_t kProbeFileBytes = 1u << 20;
constexpr size_t kHashBytes = 16;  // XXH3-128, canonical (big-endian) form

// Keys sort as the numbers they encode (LMDB compares bytes).
void AppendBigEndian(std::string& key, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) key.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
uint64_t ReadBigEndian(const char* p, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<unsigned char>(p[i]);
  return value;
}
std::string JobKey(uint64_t job_seq) {
  std::string key;
  AppendBigEndian(key, job_seq, 8);
  return key;
}
// Database "job_index" (ListJobs): an empty value under each of a job's
// keys, one per index, the job_seq last so that one value's jobs are
// contiguous and in job_seq order: 's' + state (1 byte), 'c' + circuit_id +
// '\0', 'l' + client_id + '\0' (ids hold no control bytes).
std::string IndexPrefix(JobIndex index, std::string_view value) {
  std::string key;
  switch (index) {
    case JobIndex::kState: key = "s" + std::string(value); break;
    case JobIndex::kCircuit: key = "c" + std::string(value) + '\0'; break;
    case JobIndex::kClient: key = "l" + std::string(value) + '\0'; break;
  }
  return key;
}
std::vector<std::string> IndexKeys(const journal::Job& job) {
  std::vector<std::string> keys = {IndexPrefix(JobIndex::kState, Journal::StateIndexValue(job.state())),
                                   IndexPrefix(JobIndex::kCircuit, job.circuit_id()),
                                   IndexPrefix(JobIndex::kClient, job.client_id())};
  for (std::string& key : keys) AppendBigEndian(key, job.job_seq(), 8);
  return keys;
}
std::string ItemKey(uint64_t job_seq, uint32_t partition) {
  std::string key = JobKey(job_seq);
  AppendBigEndian(key, partition, 4);
  return key;
}
std::string RequestKey(const std::string& client_id, const std::string& request_id) {
  std::string key = client_id;
  key.push_back('\0');
  key += request_id;
  return key;
}

// Record checksums: every value but a witness's bytes (which its own
// XXH3-128 in witness_hashes checks) ends with 8 bytes, the XXH3-64 of the
// database's name, the key and the payload (little-endian), so a changed
// byte anywhere (a record's field, its key, a value moved to another key)
// is seen when the record is read, not handed on as another job's circuit.
constexpr size_t kSealBytes = 8;
bool IsSealed(unsigned dbi) { return dbi != kWitnesses; }
uint64_t SealOf(unsigned dbi, std::string_view key, std::string_view payload) {
  const uint64_t named = XXH3_64bits(kDbNames[dbi], std::strlen(kDbNames[dbi]));
  const uint64_t keyed = XXH3_64bits_withSeed(key.data(), key.size(), named);
  return XXH3_64bits_withSeed(payload.data(), payload.size(), keyed);
}
std::string Sealed(unsigned dbi, std::string_view key, std::string_view payload) {
  std::string value;
  value.reserve(payload.size() + kSealBytes);
  value.append(payload);
  uint64_t seal = SealOf(dbi, key, payload);
  for (size_t i = 0; i < kSealBytes; ++i, seal >>= 8) value.push_back(static_cast<char>(seal & 0xff));
  return value;
}
// The payload of a sealed value; nullopt when its checksum does not match.
std::optional<std::string_view> Unsealed(unsigned dbi, std::string_view key, std::string_view value) {
  if (value.size() < kSealBytes) return std::nullopt;
  const std::string_view payload = value.substr(0, value.size() - kSealBytes);
  uint64_t stored = 0;
  for (size_t i = kSealBytes; i-- > 0;) stored = (stored << 8) | static_cast<unsigned char>(value[payload.size() + i]);
  if (stored != SealOf(dbi, key, payload)) return std::nullopt;
  return payload;
}

MDB_val Val(std::string_view bytes) { return {bytes.size(), const_cast<char*>(bytes.data())}; }
std::string_view View(const MDB_val& val) { return {static_cast<const char*>(val.mv_data), val.mv_size}; }

std::string Hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : bytes) {
    hex.push_back(digits[c >> 4]);
    hex.push_back(digits[c & 15]);
  }
  return hex;
}

// "a FIFO", "a directory", ... for a file that is not a regular one.
std::string FileTypeName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// The symbolic name of an errno value the journal explains.
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


template <typename Message>
std::optional<Message> Parse(std::optional<std::string_view> bytes, const char* what, const std::filesystem::path& dir) {
  if (!bytes) return std::nullopt;
  Message message;
  if (!message.ParseFromArray(bytes->data(), static_cast<int>(bytes->size()))) {
    throw Error(ErrorCode::kBadFormat, "journal " + dir.string() + ": a " + what + " record does not parse");
  }
  return message;
}

}  // namespace

const char* SyncModeName(SyncMode mode) {
  switch (mode) {
    case SyncMode::kAlways: return "always";
    case SyncMode::kBatch: return "batch";
    case SyncMode::kNone: return "none";
  }
  return "?";
}

std::optional<SyncMode> ParseSyncMode(std::string_view name) {
  if (name == "always") return SyncMode::kAlways;
  if (name == "batch") return SyncMode::kBatch;
  if (name == "none") return SyncMode::kNone;
  return std::nullopt;
}

struct Journal::Lmdb {
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;
  MDB_dbi dbi[kDbCount] = {};
  bool has_dbi[kDbCount] = {};
  int blob_dir_fd = -1;
  int lock_fd = -1;  // flock()ed while this broker owns the directory
};

Journal::Journal(JournalOptions options) : options_(std::move(options)), lmdb_(std::make_unique<Lmdb>()) {}

Journal::~Journal() {
  if (lmdb_->txn) mdb_txn_abort(lmdb_->txn);  // uncommitted: never acknowledged
  for (int fd : blob_fds_to_sync_) close(fd);
  if (lmdb_->blob_dir_fd >= 0) close(lmdb_->blob_dir_fd);
  if (lmdb_->env) mdb_env_close(lmdb_->env);
  if (lmdb_->lock_fd >= 0) close(lmdb_->lock_fd);  // releases the flock
}

std::string Journal::Explain(int rc) const {
  const std::string dir = options_.dir.string();
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
      return "the store in " + dir + " reached its map size of " + std::to_string(options_.map_bytes) +
             " bytes (MDB_MAP_FULL)";
    case MDB_TXN_FULL: return "one transaction changed too many pages of the store in " + dir + " (MDB_TXN_FULL)";
    case MDB_BAD_VALSIZE: return "a key or value is too large for the store in " + dir + " (MDB_BAD_VALSIZE)";
    case MDB_PANIC:
      return "the store in " + dir + " hit a fatal error earlier and must be opened again (MDB_PANIC)";
    case MDB_CORRUPTED: return "the store in " + dir + " is damaged (MDB_CORRUPTED)";
    default:
      return std::string(mdb_strerror(rc)) + (rc > 0 ? " (" + ErrnoName(rc) + ")" : "") + " in " + dir;
  }
}

void Journal::Fail(const std::string& doing, int rc) const {
  throw Error(ErrorCode::kIo, "journal: " + Explain(rc) + " while " + doing);
}

std::unique_ptr<Journal> Journal::Open(const JournalOptions& options) {
  std::unique_ptr<Journal> journal(new Journal(options));
  const auto& dir = options.dir;
  std::error_code ec;
  if (options.read_only && !std::filesystem::exists(dir / "data.mdb")) {
    throw Error(ErrorCode::kNotFound, "journal: " + dir.string() + " holds no broker journal (no data.mdb)");
  }
  if (!options.read_only) std::filesystem::create_directories(dir / "blobs", ec);
  if (ec) throw Error(ErrorCode::kIo, "journal: cannot create " + (dir / "blobs").string() + ": " + ec.message());
  Lmdb& db = *journal->lmdb_;
  if (!options.read_only) {
    // One broker per data directory: LMDB would let a second process write
    // too (its writers take turns), and two brokers' memories would disagree.
    const auto lock_path = dir / "broker.lock";
    db.lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    if (db.lock_fd < 0) journal->Fail("creating " + lock_path.string(), errno);
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
  db.blob_dir_fd = open((dir / "blobs").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (db.blob_dir_fd < 0 && !options.read_only) {
    throw Error(ErrorCode::kIo, "journal: cannot open " + (dir / "blobs").string() + ": " + std::strerror(errno));
  }
  journal->OpenEnvironment();
  journal->OpenDatabases();
  // The meta record says the format: sealed (2), or an older zkbroker's (1).
  journal->sealed_ = false;
  std::optional<std::string_view> raw_meta = journal->Get(kMeta, kMetaKey);
  journal->sealed_ = true;
  std::optional<journal::Meta> meta;
  if (raw_meta) {
    if (auto payload = Unsealed(kMeta, kMetaKey, *raw_meta)) {
      meta = Parse<journal::Meta>(payload, "meta", dir);
    } else {
      journal::Meta old;
      if (!old.ParseFromArray(raw_meta->data(), static_cast<int>(raw_meta->size())) ||
          old.format() != kUnsealedFormat) {
        throw Error(ErrorCode::kBadFormat, DamagedRecord(dir, "meta", kMetaKey));
      }
      meta = old;
    }
  }
  if (meta) {
    if (meta->format() != kFormat && meta->format() != kUnsealedFormat) {
      throw Error(ErrorCode::kUnsupported, "journal " + dir.string() + " has format " + std::to_string(meta->format()) +
                                               "; this zkbroker reads formats " + std::to_string(kUnsealedFormat) +
                                               " and " + std::to_string(kFormat));
    }
    journal->meta_ = *meta;
    if (meta->format() == kUnsealedFormat) {
      if (options.read_only) {
        journal->sealed_ = false;  // read as written: no checksums to check
      } else {
        journal->SealRecords();
      }
    }
  } else if (options.read_only) {
    throw Error(ErrorCode::kBadFormat, "journal " + dir.string() + " has no meta record");
  } else {
    journal->meta_.set_format(kFormat);
    journal->meta_.set_next_job_seq(1);
    journal->meta_dirty_ = true;
    journal->dirty_ = true;
  }
  journal->RebuildJobIndexIfMissing();
  journal->Commit();
  journal->committed_meta_ = journal->meta_;
  return journal;
}

void Journal::OpenEnvironment() {
  Lmdb& db = *lmdb_;
  if (!options_.read_only) {
    // LMDB maps its lock file and writes its reader table through the map: on
    // a full tmpfs (or any filesystem that allocates on write) that write was
    // a SIGBUS, not an error. Its blocks are reserved here first, so a full
    // disk is an error in words ("is full (ENOSPC)") and LMDB finds them there.
    const std::filesystem::path lock = options_.dir / "lock.mdb";
    int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (fd < 0) Fail("creating the store's lock file " + lock.string(), errno);
    const int err = posix_fallocate(fd, 0, kLockFileBytes);
    close(fd);
    if (err != 0 && err != EOPNOTSUPP && err != EINVAL) Fail("reserving the store's lock file " + lock.string(), err);
  }
  unsigned flags = MDB_NOTLS;
  if (options_.sync == SyncMode::kNone) flags |= MDB_NOSYNC;
  if (options_.read_only) flags |= MDB_RDONLY;
  int rc = 0;
  for (;;) {
    rc = mdb_env_create(&db.env);
    if (rc != 0) Fail("creating the LMDB environment", rc);
    mdb_env_set_maxdbs(db.env, kDbCount);
    rc = mdb_env_set_mapsize(db.env, options_.map_bytes);
    if (rc != 0) Fail("reserving a map of " + std::to_string(options_.map_bytes) + " bytes", rc);
    rc = mdb_env_open(db.env, options_.dir.c_str(), flags, 0640);
    // The map is address space only, but a process may not get that much of
    // it (a ulimit -v, a sanitizer's shadow memory): take a smaller one
    // rather than not start. A failed open leaves the environment unusable.
    if (rc != ENOMEM || options_.map_bytes <= kSmallestMapBytes) break;
    mdb_env_close(db.env);
    db.env = nullptr;
    const uint64_t smaller = std::max<uint64_t>(options_.map_bytes / 4, kSmallestMapBytes);
    spdlog::warn("journal {}: no address space for a map of {} bytes; trying {}", options_.dir.string(),
                 options_.map_bytes, smaller);
    options_.map_bytes = smaller;
  }
  if (rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_VERSION_MISMATCH) {
    throw Error(ErrorCode::kIo, "journal " + options_.dir.string() +
                                    ": the store (data.mdb) is damaged or not an LMDB store of this version (" +
                                    mdb_strerror(rc) +
                                    "); nothing was changed: restore the directory from a backup "
                                    "(docs/operations.md)");
  }
  if (rc != 0) Fail("opening the store", rc);
}

void Journal::OpenDatabases() {
  Lmdb& db = *lmdb_;
  // Handles opened in a transaction last beyond it only if it commits: Open()
  // commits this one at its end, a reopen here.
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(db.env, nullptr, options_.read_only ? MDB_RDONLY : 0, &txn);
  if (rc != 0) Fail("beginning a transaction", rc);
  for (unsigned i = 0; i < kDbCount; ++i) {
    rc = mdb_dbi_open(txn, kDbNames[i], options_.read_only ? 0 : MDB_CREATE, &db.dbi[i]);
    db.has_dbi[i] = rc == 0;
    if (rc == MDB_NOTFOUND && options_.read_only && kDbOptional[i]) continue;  // an older journal
    if (rc != 0) {
      mdb_txn_abort(txn);
      Fail(std::string("opening database ") + kDbNames[i], rc);
    }
  }
  lmdb_->txn = txn;
}

void* Journal::Txn() {
  if (!lmdb_->txn) {
    int rc = mdb_txn_begin(lmdb_->env, nullptr, options_.read_only ? MDB_RDONLY : 0, &lmdb_->txn);
    if (rc == MDB_PANIC && !options_.read_only) {
      // A write failed in a way LMDB cannot undo in place (its meta page):
      // the environment must be opened again. What was committed is intact.
      spdlog::warn("journal: the LMDB environment in {} is opened again after a fatal write error",
                   options_.dir.string());
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

void Journal::Put(unsigned dbi, std::string_view key, std::string_view value) {
  if (options_.read_only) {
    throw Error(ErrorCode::kIo, "journal " + options_.dir.string() + " is open read-only: cannot put into " +
                                    kDbNames[dbi]);
  }
  std::string sealed;
  if (sealed_ && IsSealed(dbi)) sealed = Sealed(dbi, key, value);
  MDB_val k = Val(key), v = Val(sealed_ && IsSealed(dbi) ? std::string_view(sealed) : value);
  int rc = mdb_put(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[dbi], &k, &v, 0);
  if (rc != 0) Fail(std::string("putting a record into ") + kDbNames[dbi], rc);
  dirty_ = true;
}

bool Journal::Del(unsigned dbi, std::string_view key) {
  if (options_.read_only) {
    throw Error(ErrorCode::kIo, "journal " + options_.dir.string() + " is open read-only: cannot delete from " +
                                    kDbNames[dbi]);
  }
  MDB_val k = Val(key);
  int rc = mdb_del(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[dbi], &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != 0) Fail(std::string("deleting a record from ") + kDbNames[dbi], rc);
  dirty_ = true;
  return true;
}

std::optional<std::string_view> Journal::Get(unsigned dbi, std::string_view key) {
  MDB_txn* txn = static_cast<MDB_txn*>(Txn());
  if (!lmdb_->has_dbi[dbi]) return std::nullopt;  // an older journal, opened read-only
  MDB_val k = Val(key), v{};
  int rc = mdb_get(txn, lmdb_->dbi[dbi], &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  if (rc != 0) Fail(std::string("reading a record of ") + kDbNames[dbi], rc);
  return Checked(dbi, key, View(v));
}

std::string_view Journal::Checked(unsigned dbi, std::string_view key, std::string_view value) const {
  if (!sealed_ || !IsSealed(dbi)) return value;
  if (auto payload = Unsealed(dbi, key, value)) return *payload;
  throw Error(ErrorCode::kBadFormat, DamagedRecord(options_.dir, kDbNames[dbi], key));
}

std::string DamagedRecord(const std::filesystem::path& dir, std::string_view database, std::string_view key) {
  return "journal " + dir.string() + ": record " + Hex(key) + " of '" + std::string(database) +
         "' is damaged (its checksum does not match): the store was changed outside zkbroker (a damaged disk?); "
         "`zkctl journal salvage --data-dir " + dir.string() +
         " --to NEW_DIR` copies every intact record into a new journal (docs/operations.md, \"A damaged journal\")";
}

void Journal::SealRecords() {
  MDB_txn* txn = static_cast<MDB_txn*>(Txn());
  size_t count = 0;
  for (unsigned dbi = 0; dbi < kDbCount; ++dbi) {
    if (!IsSealed(dbi) || !lmdb_->has_dbi[dbi]) continue;
    MDB_cursor* cursor = nullptr;
    int rc = mdb_cursor_open(txn, lmdb_->dbi[dbi], &cursor);
    if (rc != 0) Fail(std::string("opening a cursor over ") + kDbNames[dbi], rc);
    MDB_val key{}, value{};
    for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
      // Copies: the key and value point into the page this put rewrites.
      std::string k(View(key)), sealed = Sealed(dbi, View(key), View(value));
      MDB_val kv = Val(k), v = Val(sealed);
      rc = mdb_cursor_put(cursor, &kv, &v, MDB_CURRENT);
      if (rc != 0) break;
      ++count;
    }
    mdb_cursor_close(cursor);
    if (rc != 0 && rc != MDB_NOTFOUND) Fail(std::string("adding checksums to ") + kDbNames[dbi], rc);
  }
  meta_.set_format(kFormat);
  meta_dirty_ = true;
  dirty_ = true;
  spdlog::info("journal {}: {} records of an older zkbroker now carry checksums (format {})", options_.dir.string(),
               count, kFormat);
}

uint64_t Journal::BeginLife() {
  meta_.set_epoch(meta_.epoch() + 1);
  meta_dirty_ = true;
  dirty_ = true;
  // Blob files written by a turn that never committed are referenced by no record.
  size_t removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(options_.dir / "blobs")) {
    unsigned long long seq = 0;
    unsigned partition = 0;
    std::string name = entry.path().filename().string();
    bool ours = std::sscanf(name.c_str(), "%llu-%u", &seq, &partition) == 2;
    if (ours && Get(kWitnessFiles, ItemKey(seq, partition))) continue;
    std::error_code ec;
    std::filesystem::remove(entry.path(), ec);
    ++removed;
  }
  if (removed > 0) spdlog::warn("journal: removed {} witness files no committed job references", removed);
  // Hashes of witnesses that are gone (an older zkbroker deleted the witness
  // and left its hash, which it does not know).
  std::vector<std::string> stale;
  {
    MDB_cursor* cursor = nullptr;
    int rc = mdb_cursor_open(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kWitnessHashes], &cursor);
    if (rc != 0) Fail("opening a cursor over witness_hashes", rc);
    MDB_val key{}, value{};
    for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
      std::string k(View(key));
      if (!Get(kWitnesses, k) && !Get(kWitnessFiles, k)) stale.push_back(std::move(k));
    }
    mdb_cursor_close(cursor);
  }
  for (const std::string& k : stale) Del(kWitnessHashes, k);
  Commit();
  return meta_.epoch();
}

uint64_t Journal::TakeJobSeq() {
  uint64_t seq = meta_.next_job_seq();
  meta_.set_next_job_seq(seq + 1);
  meta_dirty_ = true;
  dirty_ = true;
  return seq;
}

StoredWitness StoredWitness::Copied(std::string bytes) {
  StoredWitness witness;
  witness.copy_ = std::move(bytes);
  return witness;
}

StoredWitness StoredWitness::Mapped(void* base, size_t size) {
  StoredWitness witness;
  witness.mapped_ = true;
  witness.base_ = base;
  witness.mapped_size_ = size;
  return witness;
}

StoredWitness::StoredWitness(StoredWitness&& other) noexcept
    : mapped_(other.mapped_), copy_(std::move(other.copy_)), base_(other.base_), mapped_size_(other.mapped_size_) {
  other.base_ = nullptr;
  other.mapped_size_ = 0;
}

StoredWitness& StoredWitness::operator=(StoredWitness&& other) noexcept {
  if (this != &other) {
    Unmap();
    mapped_ = other.mapped_;
    copy_ = std::move(other.copy_);
    base_ = other.base_;
    mapped_size_ = other.mapped_size_;
    other.base_ = nullptr;
    other.mapped_size_ = 0;
  }
  return *this;
}

StoredWitness::~StoredWitness() { Unmap(); }

void StoredWitness::Unmap() {
  if (base_ && mapped_size_ > 0) munmap(base_, mapped_size_);
  base_ = nullptr;
  mapped_size_ = 0;
}

std::string_view StoredWitness::bytes() const {
  if (mapped_) return {static_cast<const char*>(base_), mapped_size_};
  return copy_;
}

StoredWitness::Mapping StoredWitness::ReleaseMapping() {
  Mapping mapping{base_, mapped_size_};
  base_ = nullptr;
  mapped_size_ = 0;
  return mapping;
}

void Journal::PutJob(const journal::Job& job) {
  // The index follows the record: the old version's keys go (its state
  // changed), the new one's come.
  std::vector<std::string> keys = IndexKeys(job);
  if (auto old = GetJob(job.job_seq())) {
    for (const std::string& key : IndexKeys(*old)) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) Del(kJobIndex, key);
    }
  }
  Put(kJobs, JobKey(job.job_seq()), job.SerializeAsString());
  for (const std::string& key : keys) Put(kJobIndex, key, "");
}


void Journal::PutItem(uint64_t job_seq, uint32_t partition, const journal::Item& item) {
  Put(kItems, ItemKey(job_seq, partition), item.SerializeAsString());
}

void Journal::DeleteItem(uint64_t job_seq, uint32_t partition) { Del(kItems, ItemKey(job_seq, partition)); }

std::filesystem::path Journal::BlobPath(uint64_t job_seq, uint32_t partition) const {
  return options_.dir / "blobs" / (std::to_string(job_seq) + "-" + std::to_string(partition));
}

void Journal::PutWitness(uint64_t job_seq, uint32_t partition, std::string_view bytes) {
  PutWitness(job_seq, partition, std::span<const std::string_view>(&bytes, 1));
}

void Journal::PutWitness(uint64_t job_seq, uint32_t partition, std::span<const std::string_view> chunks) {
  uint64_t total = 0;
  for (std::string_view chunk : chunks) total += chunk.size();
  std::string key = ItemKey(job_seq, partition);
  // Over the received chunks, before they are written: what ReadWitness
  // checks the stored bytes against.
  const std::string hash = Digest128().Add(chunks).Finish();
  if (total < options_.blob_threshold) {
    std::string bytes;
    bytes.reserve(total);
    for (std::string_view chunk : chunks) bytes.append(chunk);
    Put(kWitnesses, key, bytes);
    Put(kWitnessHashes, key, hash);
    stats_.witness_bytes_written += total;
    return;
  }
  // A large witness is written once, from the received frames, to its own file.
  std::filesystem::path path = BlobPath(job_seq, partition);
  // O_NONBLOCK | O_NOFOLLOW: a FIFO in its place fails at once (ENXIO)
  // instead of blocking the broker's loop until a reader comes; a link is
  // not followed out of the blob directory.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0640);
  if (fd < 0) Fail("creating the witness file " + path.string(), errno);
  blobs_written_.push_back({path, key});  // Abort() removes it, even half written
  std::vector<iovec> left;
  for (std::string_view chunk : chunks) {
    if (chunk.size() > 0) left.push_back({const_cast<char*>(chunk.data()), chunk.size()});
  }
  size_t first = 0;
  while (first < left.size()) {
    const int count = static_cast<int>(std::min<size_t>(left.size() - first, IOV_MAX));
    ssize_t n = writev(fd, left.data() + first, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n == 0 ? ENOSPC : errno;  // no progress: nothing more fits
      close(fd);
      Fail("writing the witness file " + path.string(), err);
    }
    // Skip what was written: whole buffers, then part of the next.
    size_t done = static_cast<size_t>(n);
    while (first < left.size() && done >= left[first].iov_len) done -= left[first++].iov_len;
    if (done > 0) {
      left[first].iov_base = static_cast<char*>(left[first].iov_base) + done;
      left[first].iov_len -= done;
    }
  }
  // Start the writeback now: by the commit's fdatasync most of it is done.
  if (options_.sync != SyncMode::kNone) (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  blob_fds_to_sync_.push_back(fd);
  ++stats_.blob_files_written;
  stats_.witness_bytes_written += total;
  std::string size;
  AppendBigEndian(size, total, 8);
  Put(kWitnessFiles, key, size);
  Put(kWitnessHashes, key, hash);
}

void Journal::DeleteWitness(uint64_t job_seq, uint32_t partition) {
  std::string key = ItemKey(job_seq, partition);
  Del(kWitnessHashes, key);
  if (Del(kWitnesses, key)) return;
  if (Del(kWitnessFiles, key)) blobs_to_unlink_.push_back(BlobPath(job_seq, partition));
}

std::optional<StoredWitness> Journal::ReadWitness(uint64_t job_seq, uint32_t partition, std::string* fault) {
  fault->clear();
  std::string key = ItemKey(job_seq, partition);
  // Recorded when it was written; absent for a witness an older zkbroker wrote.
  std::optional<std::string> recorded_hash;
  if (auto hash = Get(kWitnessHashes, key)) {
    if (hash->size() != kHashBytes) {
      *fault = "its hash record in the journal is damaged (" + std::to_string(hash->size()) + " bytes, not " +
               std::to_string(kHashBytes) + ")";
      return std::nullopt;
    }
    recorded_hash = std::string(*hash);
  }
  auto mismatch = [&](const std::string& what, const std::string& read_hash) {
    *fault = what + " do not match the XXH3-128 hash recorded when it was written (recorded " + Hex(*recorded_hash) +
             ", read " + Hex(read_hash) + "): they changed on the disk after the broker accepted them";
  };
  if (auto inline_bytes = Get(kWitnesses, key)) {
    if (recorded_hash) {
      std::string read_hash = Digest128Of(inline_bytes->data(), inline_bytes->size());
      if (read_hash != *recorded_hash) {
        mismatch("the " + std::to_string(inline_bytes->size()) + " bytes stored for it in " +
                     (options_.dir / "data.mdb").string(),
                 read_hash);
        return std::nullopt;
      }
    }
    return StoredWitness::Copied(std::string(*inline_bytes));
  }
  auto size_bytes = Get(kWitnessFiles, key);
  if (!size_bytes) {
    *fault = "the journal holds no witness for it, neither in its store nor as a witness file";
    return std::nullopt;
  }
  if (size_bytes->size() != 8) {
    *fault = "its witness file record in the journal is damaged (" + std::to_string(size_bytes->size()) +
             " bytes, not 8)";
    return std::nullopt;
  }
  const uint64_t recorded_size = ReadBigEndian(size_bytes->data(), 8);
  const std::filesystem::path path = BlobPath(job_seq, partition);
  // Nothing that can block the broker's loop: a FIFO or a device put where a
  // witness file was opens at once (O_NONBLOCK) and is refused below, as is a
  // symbolic link (O_NOFOLLOW: ELOOP).
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) {
    const int err = errno;
    if (err == EMFILE || err == ENFILE || err == ENOMEM) {
      throw Error(ErrorCode::kResourceExhausted, "journal: " + Explain(err) + " while opening " + path.string());
    }
    *fault = err == ENOENT ? "its witness file " + path.string() +
                                 " is missing (deleted, or a data directory restored from an inconsistent copy)"
                           : "its witness file " + path.string() + " cannot be opened: " + std::strerror(err) + " (" +
                                 ErrnoName(err) + ")";
    return std::nullopt;
  }
  // The size first: a mapping past the end of the file would fault (SIGBUS)
  // on the first read there.
  auto size_fault = [&](const char* when) -> bool {
    struct stat st {};
    if (fstat(fd, &st) != 0) {
      *fault = "its witness file " + path.string() + " cannot be examined (fstat): " + std::strerror(errno);
      return true;
    }
    if (!S_ISREG(st.st_mode)) {
      *fault = "its witness file " + path.string() + " is not a regular file (" + FileTypeName(st.st_mode) +
               "): something other than the broker put it there";
      return true;
    }
    const auto actual = static_cast<uint64_t>(st.st_size);
    if (actual == recorded_size) return false;
    *fault = "its witness file " + path.string() + " is " + std::to_string(actual) + " bytes" + when + ", but " +
             std::to_string(recorded_size) + " were recorded when it was written (" +
             (actual < recorded_size ? "truncated" : "longer: overwritten or appended to") + ")";
    return true;
  };
  if (size_fault("")) {
    close(fd);
    return std::nullopt;
  }
  if (recorded_size == 0) {
    close(fd);
    return StoredWitness::Mapped(nullptr, 0);
  }
  void* base = mmap(nullptr, recorded_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    close(fd);
    if (err == ENOMEM) {
      throw Error(ErrorCode::kResourceExhausted, "journal: " + Explain(err) + " while mapping " + path.string());
    }
    *fault = "its witness file " + path.string() + " cannot be mapped: " + std::strerror(err);
    return std::nullopt;
  }
  // It is read to be sent anyway: checking it here costs one pass over pages
  // MAP_POPULATE has just brought in.
  if (recorded_hash) {
    std::string read_hash = Digest128Of(base, recorded_size);
    if (read_hash != *recorded_hash) {
      munmap(base, recorded_size);
      close(fd);
      mismatch("the bytes of its witness file " + path.string(), read_hash);
      return std::nullopt;
    }
  }
  // Truncated while it was being read: what was read may have been zeros.
  if (size_fault(" now")) {
    munmap(base, recorded_size);
    close(fd);
    return std::nullopt;
  }
  close(fd);
  return StoredWitness::Mapped(base, recorded_size);
}

void Journal::PutRequest(const std::string& client_id, const std::string& request_id, const journal::Request& request) {
  Put(kRequests, RequestKey(client_id, request_id), request.SerializeAsString());
}

std::optional<journal::Job> Journal::GetJob(uint64_t job_seq) {
  return Parse<journal::Job>(Get(kJobs, JobKey(job_seq)), "job", options_.dir);
}

std::optional<journal::Item> Journal::GetItem(uint64_t job_seq, uint32_t partition) {
  return Parse<journal::Item>(Get(kItems, ItemKey(job_seq, partition)), "item", options_.dir);
}

std::optional<journal::Stub> Journal::GetStub(uint64_t job_seq) {
  return Parse<journal::Stub>(Get(kStubs, JobKey(job_seq)), "stub", options_.dir);
}

std::optional<journal::Request> Journal::GetRequest(const std::string& client_id, const std::string& request_id) {
  return Parse<journal::Request>(Get(kRequests, RequestKey(client_id, request_id)), "request", options_.dir);
}

namespace {

// A cursor over one database of the write transaction, closed on scope exit.
class Cursor {
 public:
  Cursor(MDB_txn* txn, MDB_dbi dbi) { rc_ = mdb_cursor_open(txn, dbi, &cursor_); }
  ~Cursor() {
    if (cursor_) mdb_cursor_close(cursor_);
  }
  int open_status() const { return rc_; }
  int Get(MDB_val* key, MDB_val* value, MDB_cursor_op op) { return mdb_cursor_get(cursor_, key, value, op); }
  int Del() { return mdb_cursor_del(cursor_, 0); }

 private:
  MDB_cursor* cursor_ = nullptr;
  int rc_ = 0;
};

}  // namespace

void Journal::RememberCircuit(const std::string& circuit_id, const std::string& owner) {
  Put(kMeta, std::string(kCircuitKeyPrefix) + circuit_id, owner);
}

void Journal::RememberGenerator(const std::string& circuit_id, const std::string& owner) {
  Put(kMeta, std::string(kGeneratorKeyPrefix) + circuit_id, owner);
}

std::vector<std::string> Journal::KnownCircuits() {
  std::vector<std::string> names;
  for (auto& [name, owner] : MetaEntries(kCircuitKeyPrefix)) names.push_back(std::move(name));
  return names;
}

std::vector<std::string> Journal::KnownGenerators() {
  std::vector<std::string> names;
  for (auto& [name, owner] : MetaEntries(kGeneratorKeyPrefix)) names.push_back(std::move(name));
  return names;
}

std::vector<std::pair<std::string, std::string>> Journal::KnownCircuitOwners() { return MetaEntries(kCircuitKeyPrefix); }

std::vector<std::pair<std::string, std::string>> Journal::KnownGeneratorOwners() {
  return MetaEntries(kGeneratorKeyPrefix);
}

std::vector<std::pair<std::string, std::string>> Journal::MetaEntries(std::string_view prefix) {
  std::vector<std::pair<std::string, std::string>> names;
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kMeta]);
  if (cursor.open_status() != 0) Fail("cursor over meta", cursor.open_status());
  std::string first(prefix);
  MDB_val key{first.size(), first.data()}, value{};
  for (int rc = cursor.Get(&key, &value, MDB_SET_RANGE); rc == 0; rc = cursor.Get(&key, &value, MDB_NEXT)) {
    std::string_view name(static_cast<const char*>(key.mv_data), key.mv_size);
    if (name.substr(0, prefix.size()) != prefix) break;
    names.emplace_back(name.substr(prefix.size()), std::string(Checked(kMeta, name, View(value))));
  }
  return names;
}

void Journal::ForEachJob(const std::function<void(const journal::Job&)>& visit) {
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kJobs]);
  if (cursor.open_status() != 0) Fail("cursor over jobs", cursor.open_status());
  MDB_val key{}, value{};
  for (int rc = cursor.Get(&key, &value, MDB_FIRST); rc == 0; rc = cursor.Get(&key, &value, MDB_NEXT)) {
    visit(*Parse<journal::Job>(Checked(kJobs, View(key), View(value)), "job", options_.dir));
  }
}

std::vector<std::pair<uint32_t, journal::Item>> Journal::Items(uint64_t job_seq) {
  std::vector<std::pair<uint32_t, journal::Item>> items;
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kItems]);
  if (cursor.open_status() != 0) Fail("cursor over items", cursor.open_status());
  std::string prefix = JobKey(job_seq);
  MDB_val key = Val(prefix), value{};
  for (int rc = cursor.Get(&key, &value, MDB_SET_RANGE); rc == 0; rc = cursor.Get(&key, &value, MDB_NEXT)) {
    std::string_view k = View(key);
    if (k.size() != 12 || k.substr(0, 8) != prefix) break;
    items.emplace_back(static_cast<uint32_t>(ReadBigEndian(k.data() + 8, 4)),
                       *Parse<journal::Item>(Checked(kItems, k, View(value)), "item", options_.dir));
  }
  return items;
}

void Journal::ForEachStub(const std::function<void(uint64_t, const journal::Stub&)>& visit) {
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kStubs]);
  if (cursor.open_status() != 0) Fail("cursor over stubs", cursor.open_status());
  MDB_val key{}, value{};
  for (int rc = cursor.Get(&key, &value, MDB_FIRST); rc == 0; rc = cursor.Get(&key, &value, MDB_NEXT)) {
    visit(ReadBigEndian(static_cast<const char*>(key.mv_data), 8),
          *Parse<journal::Stub>(Checked(kStubs, View(key), View(value)), "stub", options_.dir));
  }
}

size_t Journal::CountRequests() {
  MDB_stat stat{};
  int rc = mdb_stat(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kRequests], &stat);
  if (rc != 0) Fail("stat of requests", rc);
  return stat.ms_entries;
}

size_t Journal::ExpireResults(double cutoff_unix_s, size_t budget) {
  std::vector<journal::Job> expired;
  {
    Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kJobs]);
    if (cursor.open_status() != 0) Fail("cursor over jobs", cursor.open_status());
    MDB_val key{}, value{};
    size_t looked = 0;
    for (int rc = cursor.Get(&key, &value, MDB_FIRST); rc == 0 && looked < budget;
         rc = cursor.Get(&key, &value, MDB_NEXT), ++looked) {
      journal::Job job = *Parse<journal::Job>(Checked(kJobs, View(key), View(value)), "job", options_.dir);
      // Jobs are in submission order: later ones cannot have ended before the cutoff.
      if (job.submitted_unix_s() > cutoff_unix_s) break;
      if (job.finished_unix_s() == 0 || job.finished_unix_s() > cutoff_unix_s) continue;  // live or recent
      expired.push_back(std::move(job));
    }
  }
  for (const journal::Job& job : expired) {
    journal::Stub stub;
    stub.set_client_id(job.client_id());
    stub.set_request_id(job.request_id());
    stub.set_state(job.state());
    stub.set_submitted_unix_s(job.submitted_unix_s());
    stub.set_finished_unix_s(job.finished_unix_s());
    Put(kStubs, JobKey(job.job_seq()), stub.SerializeAsString());
    for (uint32_t p = 0; p < job.partitions(); ++p) {
      Del(kItems, ItemKey(job.job_seq(), p));
      DeleteWitness(job.job_seq(), p);  // normally gone when the item ended
    }
    Del(kJobs, JobKey(job.job_seq()));
    for (const std::string& key : IndexKeys(job)) Del(kJobIndex, key);
  }
  return expired.size();
}

size_t Journal::ExpireRequests(double cutoff_unix_s, size_t budget) {
  std::vector<std::pair<uint64_t, journal::Stub>> expired;
  {
    Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kStubs]);
    if (cursor.open_status() != 0) Fail("cursor over stubs", cursor.open_status());
    MDB_val key{}, value{};
    for (int rc = cursor.Get(&key, &value, MDB_FIRST); rc == 0 && expired.size() < budget;
         rc = cursor.Get(&key, &value, MDB_NEXT)) {
      journal::Stub stub = *Parse<journal::Stub>(Checked(kStubs, View(key), View(value)), "stub", options_.dir);
      if (stub.submitted_unix_s() > cutoff_unix_s) break;
      expired.emplace_back(ReadBigEndian(static_cast<const char*>(key.mv_data), 8), std::move(stub));
    }
  }
  for (const auto& [job_seq, stub] : expired) {
    Del(kStubs, JobKey(job_seq));
    std::string request_key = RequestKey(stub.client_id(), stub.request_id());
    // The index may already point at a newer job of the same key (never, while
    // request ids are refused for reuse; checked anyway).
    if (auto request = Parse<journal::Request>(Get(kRequests, request_key), "request", options_.dir)) {
      if (request->job_seq() == job_seq) Del(kRequests, request_key);
    }
  }
  return expired.size();
}

void Journal::Commit() {
  if (options_.read_only) {
    // Committing (not aborting) a read-only transaction keeps the database
    // handles it opened.
    if (lmdb_->txn) mdb_txn_commit(lmdb_->txn);
    lmdb_->txn = nullptr;
    return;
  }
  // The meta record goes with a commit that writes: one left over from an
  // aborted turn does not make a commit of its own (while the disk refuses,
  // every turn would fail again); the next turn that writes, or the probe,
  // carries it.
  if (meta_dirty_ && dirty_) {
    Put(kMeta, kMetaKey, meta_.SerializeAsString());
    meta_dirty_ = false;
  }
  if (!lmdb_->txn) return;
  auto started = std::chrono::steady_clock::now();
  bool sync = options_.sync != SyncMode::kNone;
  // Blob files first: the records that reference them must never be durable
  // before their bytes are. Every descriptor is closed, whatever fails.
  int sync_error = 0;
  for (int fd : blob_fds_to_sync_) {
    if (sync && sync_error == 0 && fdatasync(fd) != 0) sync_error = errno;
    close(fd);
  }
  const bool wrote_blobs = !blob_fds_to_sync_.empty();
  blob_fds_to_sync_.clear();
  if (sync_error != 0) Fail("syncing a witness file (fdatasync) before committing", sync_error);
  if (sync && wrote_blobs && fsync(lmdb_->blob_dir_fd) != 0) {
    Fail("syncing the directory " + (options_.dir / "blobs").string() + " before committing", errno);
  }
  MDB_txn* txn = lmdb_->txn;
  lmdb_->txn = nullptr;
  bool wrote = dirty_;
  int rc = mdb_txn_commit(txn);  // frees the transaction, committed or not
  if (rc != 0) Fail("committing", rc);
  dirty_ = false;
  committed_meta_ = meta_;
  blobs_written_.clear();
  for (const auto& path : blobs_to_unlink_) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  blobs_to_unlink_.clear();
  if (wrote) {
    ++stats_.commits;
    stats_.commit_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
}

void Journal::Abort() {
  if (options_.read_only) {
    if (lmdb_->txn) mdb_txn_commit(lmdb_->txn);  // a reader: nothing to undo
    lmdb_->txn = nullptr;
    return;
  }
  if (lmdb_->txn) mdb_txn_abort(lmdb_->txn);
  lmdb_->txn = nullptr;
  for (int fd : blob_fds_to_sync_) close(fd);
  blob_fds_to_sync_.clear();
  blobs_to_unlink_.clear();  // their records stay, so do they
  dirty_ = false;
  // job_seq and the epoch never go back: what this turn took stays taken, and
  // the next commit that succeeds persists it.
  meta_dirty_ = meta_.SerializeAsString() != committed_meta_.SerializeAsString();
  std::vector<WrittenBlob> written;
  written.swap(blobs_written_);
  size_t removed = 0;
  for (const WrittenBlob& blob : written) {
    bool referenced = true;  // when in doubt a file stays; BeginLife removes it if nothing names it
    try {
      referenced = Get(kWitnessFiles, blob.key).has_value();
    } catch (const std::exception& e) {
      spdlog::warn("journal: cannot tell whether {} is referenced ({}); it stays", blob.path.string(), e.what());
    }
    if (referenced) continue;
    std::error_code ec;
    if (std::filesystem::remove(blob.path, ec)) ++removed;
  }
  if (lmdb_->txn) mdb_txn_abort(lmdb_->txn);  // the lookups' transaction
  lmdb_->txn = nullptr;
  spdlog::debug("journal: the turn's writes were dropped ({} witness files removed); the journal in {} is as last "
                "committed",
                removed, options_.dir.string());
}

bool Journal::ProbeWritable(std::string* why) {
  if (options_.read_only) {
    *why = "journal " + options_.dir.string() + " is open read-only";
    return false;
  }
  try {
    // The disk takes new bytes, and syncs them.
    const std::filesystem::path path = options_.dir / kProbeKey;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0640);
    if (fd < 0) Fail("creating the write probe " + path.string(), errno);
    const std::string block(64 << 10, '\0');
    int err = 0;
    for (size_t offset = 0; offset < kProbeFileBytes && err == 0;) {
      ssize_t n = pwrite(fd, block.data(), std::min(block.size(), kProbeFileBytes - offset), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) err = n == 0 ? ENOSPC : errno;
      else offset += static_cast<size_t>(n);
    }
    if (err == 0 && options_.sync != SyncMode::kNone && fdatasync(fd) != 0) err = errno;
    close(fd);
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (err != 0) Fail("writing the write probe " + path.string(), err);
    // The store takes a transaction (this also persists a job_seq or epoch
    // taken since the last commit that succeeded).
    Put(kMeta, kProbeKey, "probe");
    Del(kMeta, kProbeKey);
    Commit();
    why->clear();
    return true;
  } catch (const Error& e) {
    Abort();
    *why = e.what();
    return false;
  }
}

uint64_t Journal::StoreBytes() {
  MDB_envinfo info{};
  MDB_stat stat{};
  mdb_env_info(lmdb_->env, &info);
  mdb_env_stat(lmdb_->env, &stat);
  return (static_cast<uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
}

void Journal::ScanJobIndex(JobIndex index, std::string_view value, uint64_t below,
                           const std::function<bool(uint64_t)>& visit) {
  if (!lmdb_->has_dbi[kJobIndex]) return;  // an older journal, read-only
  const std::string prefix = IndexPrefix(index, value);
  std::string start = prefix;
  AppendBigEndian(start, below == 0 ? UINT64_MAX : below, 8);
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kJobIndex]);
  if (cursor.open_status() != 0) Fail("cursor over job_index", cursor.open_status());
  MDB_val key{start.size(), start.data()}, data{};
  // Newest first: the last key below `start`.
  int rc = cursor.Get(&key, &data, MDB_SET_RANGE);
  rc = cursor.Get(&key, &data, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
  for (; rc == 0; rc = cursor.Get(&key, &data, MDB_PREV)) {
    std::string_view k(static_cast<const char*>(key.mv_data), key.mv_size);
    if (k.size() != prefix.size() + 8 || k.compare(0, prefix.size(), prefix) != 0) break;
    if (!visit(ReadBigEndian(k.data() + prefix.size(), 8))) return;
  }
  if (rc != 0 && rc != MDB_NOTFOUND) Fail("reading job_index", rc);
}

void Journal::ScanJobsNewestFirst(uint64_t below, const std::function<bool(const journal::Job&)>& visit) {
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kJobs]);
  if (cursor.open_status() != 0) Fail("cursor over jobs", cursor.open_status());
  std::string start = JobKey(below == 0 ? UINT64_MAX : below);
  MDB_val key{start.size(), start.data()}, value{};
  int rc = cursor.Get(&key, &value, MDB_SET_RANGE);
  rc = cursor.Get(&key, &value, rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
  for (; rc == 0; rc = cursor.Get(&key, &value, MDB_PREV)) {
    if (!visit(*Parse<journal::Job>(Checked(kJobs, View(key), View(value)), "job", options_.dir))) return;
  }
  if (rc != 0 && rc != MDB_NOTFOUND) Fail("reading jobs", rc);
}

void Journal::RebuildJobIndexIfMissing() {
  if (options_.read_only) return;
  MDB_stat index{}, jobs{};
  MDB_txn* txn = static_cast<MDB_txn*>(Txn());
  if (mdb_stat(txn, lmdb_->dbi[kJobIndex], &index) != 0 || mdb_stat(txn, lmdb_->dbi[kJobs], &jobs) != 0) return;
  if (index.ms_entries > 0 || jobs.ms_entries == 0) return;
  // A journal of a zkbroker without the index: built once, in this turn.
  size_t count = 0;
  ForEachJob([&](const journal::Job& job) {
    for (const std::string& key : IndexKeys(job)) Put(kJobIndex, key, "");
    ++count;
  });
  spdlog::info("journal {}: indexed {} jobs for ListJobs", options_.dir.string(), count);
}

unsigned Journal::database_count() { return kDbCount; }
std::string_view Journal::database_name(unsigned db) { return db < kDbCount ? kDbNames[db] : "?"; }

void Journal::ForEachRecord(unsigned from_db, std::string_view after,
                            const std::function<void(const RecordView&)>& visit) {
  MDB_txn* txn = static_cast<MDB_txn*>(Txn());
  for (unsigned dbi = from_db; dbi < kDbCount; ++dbi) {
    if (!lmdb_->has_dbi[dbi]) continue;
    Cursor cursor(txn, lmdb_->dbi[dbi]);
    if (cursor.open_status() != 0) Fail(std::string("cursor over ") + kDbNames[dbi], cursor.open_status());
    std::string start(dbi == from_db ? after : std::string_view());
    MDB_val key{start.size(), start.data()}, value{};
    int rc = start.empty() ? cursor.Get(&key, &value, MDB_FIRST) : cursor.Get(&key, &value, MDB_SET_RANGE);
    if (rc == 0 && !start.empty() && View(key) == start) rc = cursor.Get(&key, &value, MDB_NEXT);
    for (; rc == 0; rc = cursor.Get(&key, &value, MDB_NEXT)) {
      RecordView record{dbi, kDbNames[dbi], View(key), View(value)};
      if (sealed_ && IsSealed(dbi)) record.payload = Unsealed(dbi, View(key), View(value));
      visit(record);
    }
    if (rc != MDB_NOTFOUND) Fail(std::string("reading ") + kDbNames[dbi], rc);
  }
}

void Journal::RestoreRecord(unsigned db, std::string_view key, std::string_view payload) {
  if (db >= kDbCount || db == kJobIndex) return;
  if (db == kMeta && key == kMetaKey) {
    journal::Meta meta;
    if (!meta.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) return;
    meta.set_format(kFormat);
    meta_ = meta;
    meta_dirty_ = true;
    dirty_ = true;
    return;
  }
  if ((db == kJobs || db == kStubs) && key.size() == 8) {
    // Without the old meta record, job_seq still never repeats.
    const uint64_t seq = ReadBigEndian(key.data(), 8);
    if (seq >= meta_.next_job_seq()) {
      meta_.set_next_job_seq(seq + 1);
      meta_dirty_ = true;
    }
  }
  Put(db, key, payload);
}

}  // namespace zkfleet::storage
