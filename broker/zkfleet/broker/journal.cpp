#include "zkfleet/broker/journal.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <sys/file.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/frames.hpp"

namespace zkfleet::broker {
namespace {

constexpr uint32_t kFormat = 1;
constexpr char kMetaKey[] = "meta";

enum Db : unsigned { kMeta, kJobs, kItems, kWitnesses, kWitnessFiles, kRequests, kStubs, kDbCount };
constexpr const char* kDbNames[kDbCount] = {"meta", "jobs", "items", "witnesses", "witness_files", "requests", "stubs"};

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

MDB_val Val(std::string_view bytes) { return {bytes.size(), const_cast<char*>(bytes.data())}; }
std::string_view View(const MDB_val& val) { return {static_cast<const char*>(val.mv_data), val.mv_size}; }

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

void Journal::Fail(const std::string& what, int rc) const {
  throw Error(ErrorCode::kIo, "journal " + options_.dir.string() + ": " + what + ": " + mdb_strerror(rc));
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
    if (db.lock_fd < 0) {
      throw Error(ErrorCode::kIo, "journal: cannot open " + lock_path.string() + ": " + std::strerror(errno));
    }
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
  int rc = mdb_env_create(&db.env);
  if (rc != 0) journal->Fail("mdb_env_create", rc);
  mdb_env_set_maxdbs(db.env, kDbCount);
  rc = mdb_env_set_mapsize(db.env, options.map_bytes);
  if (rc != 0) journal->Fail("cannot reserve a map of " + std::to_string(options.map_bytes) + " bytes", rc);
  unsigned flags = MDB_NOTLS;
  if (options.sync == SyncMode::kNone) flags |= MDB_NOSYNC;
  if (options.read_only) flags |= MDB_RDONLY;
  rc = mdb_env_open(db.env, dir.c_str(), flags, 0640);
  if (rc == MDB_INVALID || rc == MDB_CORRUPTED || rc == MDB_VERSION_MISMATCH) {
    journal->Fail("the store (data.mdb) is damaged or not an LMDB store of this version; nothing was changed: "
                  "restore the directory from a backup (docs/operations.md)",
                  rc);
  }
  if (rc != 0) journal->Fail("cannot open the store", rc);

  MDB_txn* txn = static_cast<MDB_txn*>(journal->Txn());
  for (unsigned i = 0; i < kDbCount; ++i) {
    rc = mdb_dbi_open(txn, kDbNames[i], options.read_only ? 0 : MDB_CREATE, &db.dbi[i]);
    if (rc != 0) journal->Fail(std::string("cannot open database ") + kDbNames[i], rc);
  }
  if (auto meta = Parse<journal::Meta>(journal->Get(kMeta, kMetaKey), "meta", dir)) {
    if (meta->format() != kFormat) {
      throw Error(ErrorCode::kUnsupported, "journal " + dir.string() + " has format " + std::to_string(meta->format()) +
                                               "; this zkbroker reads format " + std::to_string(kFormat));
    }
    journal->meta_ = *meta;
  } else if (options.read_only) {
    throw Error(ErrorCode::kBadFormat, "journal " + dir.string() + " has no meta record");
  } else {
    journal->meta_.set_format(kFormat);
    journal->meta_.set_next_job_seq(1);
    journal->meta_dirty_ = true;
  }
  journal->Commit();
  return journal;
}

void* Journal::Txn() {
  if (!lmdb_->txn) {
    int rc = mdb_txn_begin(lmdb_->env, nullptr, options_.read_only ? MDB_RDONLY : 0, &lmdb_->txn);
    if (rc != 0) Fail("cannot begin a write transaction", rc);
  }
  return lmdb_->txn;
}

void Journal::Put(unsigned dbi, std::string_view key, std::string_view value) {
  if (options_.read_only) Fail(std::string("put into ") + kDbNames[dbi] + " of a journal opened read-only", EACCES);
  MDB_val k = Val(key), v = Val(value);
  int rc = mdb_put(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[dbi], &k, &v, 0);
  if (rc != 0) Fail(std::string("put into ") + kDbNames[dbi], rc);
  dirty_ = true;
}

bool Journal::Del(unsigned dbi, std::string_view key) {
  if (options_.read_only) Fail(std::string("delete from ") + kDbNames[dbi] + " of a journal opened read-only", EACCES);
  MDB_val k = Val(key);
  int rc = mdb_del(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[dbi], &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != 0) Fail(std::string("delete from ") + kDbNames[dbi], rc);
  dirty_ = true;
  return true;
}

std::optional<std::string_view> Journal::Get(unsigned dbi, std::string_view key) {
  MDB_val k = Val(key), v{};
  int rc = mdb_get(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[dbi], &k, &v);
  if (rc == MDB_NOTFOUND) return std::nullopt;
  if (rc != 0) Fail(std::string("get from ") + kDbNames[dbi], rc);
  return View(v);
}

uint64_t Journal::BeginLife() {
  meta_.set_epoch(meta_.epoch() + 1);
  meta_dirty_ = true;
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

void Journal::PutJob(const journal::Job& job) { Put(kJobs, JobKey(job.job_seq()), job.SerializeAsString()); }

void Journal::PutItem(uint64_t job_seq, uint32_t partition, const journal::Item& item) {
  Put(kItems, ItemKey(job_seq, partition), item.SerializeAsString());
}

void Journal::DeleteItem(uint64_t job_seq, uint32_t partition) { Del(kItems, ItemKey(job_seq, partition)); }

std::filesystem::path Journal::BlobPath(uint64_t job_seq, uint32_t partition) const {
  return options_.dir / "blobs" / (std::to_string(job_seq) + "-" + std::to_string(partition));
}

void Journal::PutWitness(uint64_t job_seq, uint32_t partition, std::string_view bytes) {
  fleet::WitnessFrames witness;
  witness.chunks.emplace_back(const_cast<char*>(bytes.data()), bytes.size(), nullptr, nullptr);  // a view
  PutWitness(job_seq, partition, witness);
}

void Journal::PutWitness(uint64_t job_seq, uint32_t partition, const fleet::WitnessFrames& witness) {
  const uint64_t total = witness.size();
  stats_.witness_bytes_written += total;
  std::string key = ItemKey(job_seq, partition);
  if (total < options_.blob_threshold) {
    std::string bytes;
    bytes.reserve(total);
    for (const zmq::message_t& chunk : witness.chunks) bytes.append(fleet::FrameView(chunk));
    return Put(kWitnesses, key, bytes);
  }
  // A large witness is written once, from the received frames, to its own file.
  std::filesystem::path path = BlobPath(job_seq, partition);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) throw Error(ErrorCode::kIo, "journal: cannot create " + path.string() + ": " + std::strerror(errno));
  std::vector<iovec> left;
  for (const zmq::message_t& chunk : witness.chunks) {
    if (chunk.size() > 0) left.push_back({const_cast<void*>(chunk.data()), chunk.size()});
  }
  size_t first = 0;
  while (first < left.size()) {
    const int count = static_cast<int>(std::min<size_t>(left.size() - first, IOV_MAX));
    ssize_t n = writev(fd, left.data() + first, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      throw Error(ErrorCode::kIo, "journal: cannot write " + path.string() + ": " + std::strerror(err));
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
  std::string size;
  AppendBigEndian(size, total, 8);
  Put(kWitnessFiles, key, size);
}

void Journal::DeleteWitness(uint64_t job_seq, uint32_t partition) {
  std::string key = ItemKey(job_seq, partition);
  if (Del(kWitnesses, key)) return;
  if (Del(kWitnessFiles, key)) blobs_to_unlink_.push_back(BlobPath(job_seq, partition));
}

std::optional<fleet::WitnessFrames> Journal::ReadWitnessFrames(uint64_t job_seq, uint32_t partition,
                                                               std::string* fault) {
  *fault = "no witness is stored for it";
  std::string key = ItemKey(job_seq, partition);
  if (auto inline_bytes = Get(kWitnesses, key)) {
    fleet::WitnessFrames witness;
    witness.chunks.emplace_back(inline_bytes->data(), inline_bytes->size());
    return witness;
  }
  auto size_bytes = Get(kWitnessFiles, key);
  if (!size_bytes || size_bytes->size() != 8) return std::nullopt;
  const std::filesystem::path path = BlobPath(job_seq, partition);
  try {
    std::optional<zmq::message_t> whole = fleet::FrameFromFile(path, ReadBigEndian(size_bytes->data(), 8));
    if (!whole) return std::nullopt;
    return fleet::ChunkWitness(std::move(*whole));
  } catch (const Error& e) {
    throw Error(ErrorCode::kIo, std::string("journal: witness file: ") + e.what());
  }
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

void Journal::ForEachJob(const std::function<void(const journal::Job&)>& visit) {
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kJobs]);
  if (cursor.open_status() != 0) Fail("cursor over jobs", cursor.open_status());
  MDB_val key{}, value{};
  for (int rc = cursor.Get(&key, &value, MDB_FIRST); rc == 0; rc = cursor.Get(&key, &value, MDB_NEXT)) {
    visit(*Parse<journal::Job>(View(value), "job", options_.dir));
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
                       *Parse<journal::Item>(View(value), "item", options_.dir));
  }
  return items;
}

void Journal::ForEachStub(const std::function<void(uint64_t, const journal::Stub&)>& visit) {
  Cursor cursor(static_cast<MDB_txn*>(Txn()), lmdb_->dbi[kStubs]);
  if (cursor.open_status() != 0) Fail("cursor over stubs", cursor.open_status());
  MDB_val key{}, value{};
  for (int rc = cursor.Get(&key, &value, MDB_FIRST); rc == 0; rc = cursor.Get(&key, &value, MDB_NEXT)) {
    visit(ReadBigEndian(static_cast<const char*>(key.mv_data), 8), *Parse<journal::Stub>(View(value), "stub", options_.dir));
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
      journal::Job job = *Parse<journal::Job>(View(value), "job", options_.dir);
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
      journal::Stub stub = *Parse<journal::Stub>(View(value), "stub", options_.dir);
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
  if (meta_dirty_) {
    Put(kMeta, kMetaKey, meta_.SerializeAsString());
    meta_dirty_ = false;
  }
  if (!lmdb_->txn) return;
  auto started = std::chrono::steady_clock::now();
  bool sync = options_.sync != SyncMode::kNone;
  // Blob files first: the records that reference them must never be durable
  // before their bytes are.
  for (int fd : blob_fds_to_sync_) {
    if (sync && fdatasync(fd) != 0) {
      throw Error(ErrorCode::kIo, "journal: fdatasync of a witness file failed: " + std::string(std::strerror(errno)));
    }
    close(fd);
  }
  if (sync && !blob_fds_to_sync_.empty() && fsync(lmdb_->blob_dir_fd) != 0) {
    throw Error(ErrorCode::kIo, "journal: fsync of the blobs directory failed: " + std::string(std::strerror(errno)));
  }
  blob_fds_to_sync_.clear();
  MDB_txn* txn = lmdb_->txn;
  lmdb_->txn = nullptr;
  bool wrote = dirty_;
  int rc = mdb_txn_commit(txn);
  if (rc != 0) Fail("commit", rc);
  dirty_ = false;
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

uint64_t Journal::StoreBytes() {
  MDB_envinfo info{};
  MDB_stat stat{};
  mdb_env_info(lmdb_->env, &info);
  mdb_env_stat(lmdb_->env, &stat);
  return (static_cast<uint64_t>(info.me_last_pgno) + 1) * stat.ms_psize;
}

}  // namespace zkfleet::broker
