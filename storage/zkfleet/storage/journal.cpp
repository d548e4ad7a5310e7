#include "zkfleet/storage/journal.hpp"

#include <fcntl.h>
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
#include "zkfleet/storage/etcd_store.hpp"
#include "zkfleet/storage/journal_detail.hpp"
#include "zkfleet/storage/lmdb_store.hpp"
#include "zkfleet/wire/public_digest.hpp"

namespace zkfleet::storage {
namespace {

// Format 2: every record's value carries a checksum (Seal); format 1 (an
// older zkbroker) is converted when a broker opens it for writing.
constexpr uint32_t kFormat = 2;
constexpr uint32_t kUnsealedFormat = 1;
constexpr char kMetaKey[] = "meta";

constexpr unsigned kDbCount = kJournalDbCount;
constexpr const auto& kDbNames = kJournalDbNames;
// Key of the record ProbeWritable() puts and deletes (database "meta").
constexpr char kProbeKey[] = "write-probe";
// Circuits a worker has announced, each a key "circuit:<id>" in the meta
// database (empty value): after a restart they are known before any worker
// has reconnected.
constexpr std::string_view kCircuitKeyPrefix = "circuit:";
// Circuits a worker announced it generates witnesses for (jobs from inputs),
// each a key "generates:<id>" in the meta database, likewise.
constexpr std::string_view kGeneratorKeyPrefix = "generates:";
constexpr size_t kProbeFileBytes = 1u << 20;

using detail::AppendBigEndian;
using detail::ItemKey;
using detail::JobKey;
using detail::ReadBigEndian;
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

Journal::Journal(JournalOptions options) : options_(std::move(options)) {}

Journal::~Journal() {
  store_.reset();  // an uncommitted turn is dropped: never acknowledged
  for (int fd : blob_fds_to_sync_) close(fd);
  if (blob_dir_fd_ >= 0) close(blob_dir_fd_);
}

void Journal::Fail(const std::string& doing, int rc) const {
  throw Error(ErrorCode::kIo, "journal: " + ExplainStorageError(options_.dir, rc, options_.map_bytes) + " while " + doing);
}

std::unique_ptr<Journal> Journal::Open(const JournalOptions& options) {
  std::unique_ptr<Journal> journal(new Journal(options));
  const auto& dir = options.dir;
  if (options.etcd) {
    // Witnesses stay out of etcd's log but for small inline ones (the broker
    // bounds them at submit): none is ever a file here.
    journal->options_.blob_threshold = UINT64_MAX;
    journal->store_ = EtcdStore::Open(*options.etcd, options.read_only);
  } else {
    std::error_code ec;
    if (!options.read_only) std::filesystem::create_directories(dir / "blobs", ec);
    if (ec) throw Error(ErrorCode::kIo, "journal: cannot create " + (dir / "blobs").string() + ": " + ec.message());
    auto store = LmdbStore::Open(options);
    journal->options_.map_bytes = store->map_bytes();
    journal->store_ = std::move(store);
    journal->blob_dir_fd_ = open((dir / "blobs").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (journal->blob_dir_fd_ < 0 && !options.read_only) {
      throw Error(ErrorCode::kIo, "journal: cannot open " + (dir / "blobs").string() + ": " + std::strerror(errno));
    }
  }
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

void Journal::Put(unsigned dbi, std::string_view key, std::string_view value) {
  if (options_.read_only) {
    throw Error(ErrorCode::kIo, "journal " + options_.dir.string() + " is open read-only: cannot put into " +
                                    kDbNames[dbi]);
  }
  if (sealed_ && IsSealed(dbi)) {
    store_->Put(dbi, key, Sealed(dbi, key, value));
  } else {
    store_->Put(dbi, key, value);
  }
  dirty_ = true;
}

bool Journal::Del(unsigned dbi, std::string_view key) {
  if (options_.read_only) {
    throw Error(ErrorCode::kIo, "journal " + options_.dir.string() + " is open read-only: cannot delete from " +
                                    kDbNames[dbi]);
  }
  if (!store_->Del(dbi, key)) return false;
  dirty_ = true;
  return true;
}

std::optional<std::string_view> Journal::Get(unsigned dbi, std::string_view key) {
  std::optional<std::string_view> value = store_->Get(dbi, key);
  if (!value) return std::nullopt;
  return Checked(dbi, key, *value);
}

std::string_view Journal::Checked(unsigned dbi, std::string_view key, std::string_view value) const {
  if (!sealed_ || !IsSealed(dbi)) return value;
  if (auto payload = Unsealed(dbi, key, value)) return *payload;
  throw Error(ErrorCode::kBadFormat, DamagedRecord(options_.dir, kDbNames[dbi], key));
}

std::string DamagedRecord(const std::filesystem::path& dir, std::string_view database, std::string_view key) {
  return "journal " + dir.string() + ": record " + wire::DigestHex(key) + " of '" + std::string(database) +
         "' is damaged (its checksum does not match): the store was changed outside zkbroker (a damaged disk?); "
         "`zkctl journal salvage --data-dir " + dir.string() +
         " --to NEW_DIR` copies every intact record into a new journal (docs/operations.md, \"A damaged journal\")";
}

void Journal::SealRecords() {
  size_t count = 0;
  for (unsigned dbi = 0; dbi < kDbCount; ++dbi) {
    if (!IsSealed(dbi) || !store_->has(dbi)) continue;
    // Copied first: a store's views end at the next write.
    std::vector<std::pair<std::string, std::string>> records;
    store_->Scan(dbi, "", ScanDirection::kForward, [&](std::string_view key, std::string_view value) {
      records.emplace_back(std::string(key), Sealed(dbi, key, value));
      return true;
    });
    for (const auto& [key, sealed] : records) store_->Put(dbi, key, sealed);
    count += records.size();
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
  for (const auto& entry : blob_dir_fd_ < 0 ? std::filesystem::directory_iterator()
                                            : std::filesystem::directory_iterator(options_.dir / "blobs")) {
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
  store_->Scan(kWitnessHashes, "", ScanDirection::kForward, [&](std::string_view key, std::string_view) {
    std::string k(key);
    if (!Get(kWitnesses, k) && !Get(kWitnessFiles, k)) stale.push_back(std::move(k));
    return true;
  });
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
  store_->Scan(kMeta, prefix, ScanDirection::kForward, [&](std::string_view name, std::string_view value) {
    if (name.substr(0, prefix.size()) != prefix) return false;
    names.emplace_back(name.substr(prefix.size()), std::string(Checked(kMeta, name, value)));
    return true;
  });
  return names;
}

void Journal::ForEachJob(const std::function<void(const journal::Job&)>& visit) {
  store_->Scan(kJobs, "", ScanDirection::kForward, [&](std::string_view key, std::string_view value) {
    visit(*Parse<journal::Job>(Checked(kJobs, key, value), "job", options_.dir));
    return true;
  });
}

std::vector<std::pair<uint32_t, journal::Item>> Journal::Items(uint64_t job_seq) {
  std::vector<std::pair<uint32_t, journal::Item>> items;
  const std::string prefix = JobKey(job_seq);
  store_->Scan(kItems, prefix, ScanDirection::kForward, [&](std::string_view key, std::string_view value) {
    if (key.size() != 12 || key.substr(0, 8) != prefix) return false;
    items.emplace_back(static_cast<uint32_t>(ReadBigEndian(key.data() + 8, 4)),
                       *Parse<journal::Item>(Checked(kItems, key, value), "item", options_.dir));
    return true;
  });
  return items;
}

void Journal::ForEachStub(const std::function<void(uint64_t, const journal::Stub&)>& visit) {
  store_->Scan(kStubs, "", ScanDirection::kForward, [&](std::string_view key, std::string_view value) {
    visit(ReadBigEndian(key.data(), 8), *Parse<journal::Stub>(Checked(kStubs, key, value), "stub", options_.dir));
    return true;
  });
}

size_t Journal::CountRequests() { return store_->Count(kRequests); }

size_t Journal::ExpireResults(double cutoff_unix_s, size_t budget) {
  std::vector<journal::Job> expired;
  size_t looked = 0;
  store_->Scan(kJobs, "", ScanDirection::kForward, [&](std::string_view key, std::string_view value) {
    if (looked++ >= budget) return false;
    journal::Job job = *Parse<journal::Job>(Checked(kJobs, key, value), "job", options_.dir);
    // Jobs are in submission order: later ones cannot have ended before the cutoff.
    if (job.submitted_unix_s() > cutoff_unix_s) return false;
    if (job.finished_unix_s() == 0 || job.finished_unix_s() > cutoff_unix_s) return true;  // live or recent
    expired.push_back(std::move(job));
    return true;
  });
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
  store_->Scan(kStubs, "", ScanDirection::kForward, [&](std::string_view key, std::string_view value) {
    if (expired.size() >= budget) return false;
    journal::Stub stub = *Parse<journal::Stub>(Checked(kStubs, key, value), "stub", options_.dir);
    if (stub.submitted_unix_s() > cutoff_unix_s) return false;
    expired.emplace_back(ReadBigEndian(key.data(), 8), std::move(stub));
    return true;
  });
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
    store_->Commit();  // ends the read transaction: the next read sees new commits
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
  if (sync && wrote_blobs && fsync(blob_dir_fd_) != 0) {
    Fail("syncing the directory " + (options_.dir / "blobs").string() + " before committing", errno);
  }
  bool wrote = dirty_;
  store_->Commit();
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

bool Journal::full() const { return store_->full(); }

void Journal::Abort() {
  store_->Abort();
  if (options_.read_only) return;
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
  store_->Abort();  // the lookups' transaction
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
    if (!options_.etcd) ProbeDisk();
    // The store takes a transaction (this also persists a job_seq or epoch
    // taken since the last commit that succeeded).
    Put(kMeta, kProbeKey, "probe");
    Del(kMeta, kProbeKey);
    Commit();
    why->clear();
    return true;
  } catch (const Error& e) {
    Abort();
    if (e.code() == ErrorCode::kNotLeader) throw;
    *why = e.what();
    return false;
  }
}

void Journal::ProbeDisk() {
  {
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
  }
}

uint64_t Journal::StoreBytes() { return store_->StoreBytes(); }

void Journal::ScanJobIndex(JobIndex index, std::string_view value, uint64_t below,
                           const std::function<bool(uint64_t)>& visit) {
  const std::string prefix = IndexPrefix(index, value);
  std::string start = prefix;
  AppendBigEndian(start, below == 0 ? UINT64_MAX : below, 8);
  // Newest first: the last key below `start`.
  store_->Scan(kJobIndex, start, ScanDirection::kBackward, [&](std::string_view key, std::string_view) {
    if (key.size() != prefix.size() + 8 || key.compare(0, prefix.size(), prefix) != 0) return false;
    return visit(ReadBigEndian(key.data() + prefix.size(), 8));
  });
}

void Journal::ScanJobsNewestFirst(uint64_t below, const std::function<bool(const journal::Job&)>& visit) {
  const std::string start = JobKey(below == 0 ? UINT64_MAX : below);
  store_->Scan(kJobs, start, ScanDirection::kBackward, [&](std::string_view key, std::string_view value) {
    return visit(*Parse<journal::Job>(Checked(kJobs, key, value), "job", options_.dir));
  });
}

void Journal::RebuildJobIndexIfMissing() {
  if (options_.read_only) return;
  if (store_->Count(kJobIndex) > 0 || store_->Count(kJobs) == 0) return;
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
  for (unsigned dbi = from_db; dbi < kDbCount; ++dbi) {
    const std::string start(dbi == from_db ? after : std::string_view());
    store_->Scan(dbi, start, ScanDirection::kForward, [&](std::string_view key, std::string_view value) {
      if (!start.empty() && key == start) return true;  // after it
      RecordView record{dbi, kDbNames[dbi], key, value};
      if (sealed_ && IsSealed(dbi)) record.payload = Unsealed(dbi, key, value);
      visit(record);
      return true;
    });
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
