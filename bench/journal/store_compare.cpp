// Standalone benchmark: LMDB vs RocksDB vs SQLite (WAL) on the broker journal's write workload.
//
// Not part of the CMake build; bench/journal/run.sh builds and runs it, docs/journal-store.md has results.
//
// Small-record mode (default): N jobs, grouped in "loop turns" of --batch jobs. Each turn is one durable
// commit (LMDB: one write txn, default sync; RocksDB: one WriteBatch, WriteOptions.sync = true; SQLite:
// one transaction, journal_mode = WAL, synchronous = FULL). In turn t:
//   accept   jobs of turn t:   put job record (160 B), put witness (--witness-bytes), put request index
//                               "client\0request-id" -> job_seq + 16-byte hash
//   started  jobs of turn t-1: put item record (job_seq, partition 0), 60 B
//   result   jobs of turn t-2: put item record (900 B proof), put job record (finished, 160 B),
//                               delete witness; retention: job s-K (K = --retain) expires: delete its
//                               item record, replace its job record by a 60 B stub
// Two drain turns follow the last accept.
//
// Large-witness mode (--witness-bytes > 1 MiB, e.g. 134217728 --jobs 8): one durable commit per job,
// MB/s of witness bytes for: the witness inline in the store; the witness in a "blob file" (write, fsync
// file and directory, then a durable put of a small reference); raw write+fsync of the same buffer.
//
// Single-threaded (like the broker). CPU = getrusage(RUSAGE_SELF) user+sys, which includes RocksDB's
// background flush/compaction threads. Disk usage = allocated blocks of the store directory after close.

#include <lmdb.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <sqlite3.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "store_compare: %s\n", msg.c_str());
  std::exit(1);
}

struct Config {
  std::string dir;
  uint64_t jobs = 200000;
  uint64_t batch = 256;
  uint64_t witness_bytes = 32;
  uint64_t retain = 20000;
  uint64_t map_size = 16ull << 30;  // LMDB map size (address space reservation; file grows as used)
  std::vector<std::string> stores = {"lmdb", "rocksdb", "sqlite"};
  bool large = false;
  int reps = 3;  // interleaved repetitions; the table shows medians
};

constexpr size_t kJobRec = 160, kStartedRec = 60, kProofRec = 900, kStubRec = 60, kHash = 16;

// Incompressible filler: values are slices of a pseudo-random pool at varying offsets.
struct Filler {
  std::vector<char> pool;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  explicit Filler(size_t n) : pool(n) {
    for (size_t i = 0; i < n; i += 8) {
      uint64_t v = next();
      std::memcpy(pool.data() + i, &v, std::min<size_t>(8, n - i));
    }
  }
  uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  std::string_view slice(size_t len) {
    if (len > pool.size()) die("filler pool too small");
    size_t off = next() % (pool.size() - len + 1);
    return {pool.data() + off, len};
  }
};

std::string seq_key(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(seq >> (56 - 8 * i));
  return k;
}
std::string item_key(uint64_t seq, uint32_t part) {
  std::string k = seq_key(seq);
  for (int i = 0; i < 4; ++i) k.push_back(static_cast<char>(part >> (24 - 8 * i)));
  return k;
}
std::string request_key(uint64_t seq) {
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "client-%03u", static_cast<unsigned>(seq % 97));
  std::string k(buf, n);
  k.push_back('\0');
  n = std::snprintf(buf, sizeof buf, "req-%016llx", static_cast<unsigned long long>(seq * 0x9E3779B1ull));
  k.append(buf, n);
  return k;
}

// RUSAGE_SELF: all threads (RocksDB's background flush/compaction included); RUSAGE_THREAD: this thread.
double cpu_seconds(int who = RUSAGE_SELF) {
  rusage ru{};
  getrusage(who, &ru);
  auto tv = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

uint64_t disk_bytes(const fs::path& p) {
  uint64_t total = 0;
  for (auto& e : fs::recursive_directory_iterator(p)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += uint64_t(st.st_blocks) * 512;
  }
  return total;
}

// Flush the previous run's deletions (ext4 here is mounted with online discard) and dirty pages before
// the clock starts, so one run's cleanup is not charged to the next run's fsyncs.
void settle() {
  ::sync();
  ::usleep(200 * 1000);
}

// One durable store with the journal's four keyspaces.
enum Space { kJobs = 0, kWitness = 1, kRequests = 2, kItems = 3 };

class Store {
 public:
  virtual ~Store() = default;
  virtual void begin() = 0;
  virtual void put(Space s, std::string_view k, std::string_view v) = 0;
  virtual void del(Space s, std::string_view k) = 0;
  virtual void commit() = 0;  // durable
  virtual void close() = 0;
};

// ---------------------------------------------------------------- LMDB
void lmdb_check(int rc, const char* what) {
  if (rc != 0) die(std::string("lmdb ") + what + ": " + mdb_strerror(rc));
}

class LmdbStore : public Store {
 public:
  LmdbStore(const fs::path& dir, uint64_t map_size) {
    fs::create_directories(dir);
    lmdb_check(mdb_env_create(&env_), "env_create");
    lmdb_check(mdb_env_set_maxdbs(env_, 4), "set_maxdbs");
    lmdb_check(mdb_env_set_mapsize(env_, map_size), "set_mapsize");
    lmdb_check(mdb_env_open(env_, dir.c_str(), 0, 0644), "env_open");  // default flags: durable commits
    MDB_txn* txn = nullptr;
    lmdb_check(mdb_txn_begin(env_, nullptr, 0, &txn), "txn_begin");
    const char* names[4] = {"jobs", "witness", "requests", "items"};
    for (int i = 0; i < 4; ++i) lmdb_check(mdb_dbi_open(txn, names[i], MDB_CREATE, &dbi_[i]), "dbi_open");
    lmdb_check(mdb_txn_commit(txn), "commit");
  }
  ~LmdbStore() override { close(); }
  void begin() override { lmdb_check(mdb_txn_begin(env_, nullptr, 0, &txn_), "txn_begin"); }
  void put(Space s, std::string_view k, std::string_view v) override {
    MDB_val key{k.size(), const_cast<char*>(k.data())}, val{v.size(), const_cast<char*>(v.data())};
    lmdb_check(mdb_put(txn_, dbi_[s], &key, &val, 0), "put");
  }
  void del(Space s, std::string_view k) override {
    MDB_val key{k.size(), const_cast<char*>(k.data())};
    int rc = mdb_del(txn_, dbi_[s], &key, nullptr);
    if (rc != MDB_NOTFOUND) lmdb_check(rc, "del");
  }
  void commit() override {
    lmdb_check(mdb_txn_commit(txn_), "commit");
    txn_ = nullptr;
  }
  void close() override {
    if (env_) mdb_env_close(env_);
    env_ = nullptr;
  }

 private:
  MDB_env* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
  MDB_dbi dbi_[4]{};
};

// ---------------------------------------------------------------- RocksDB
void rocks_check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) die(std::string("rocksdb ") + what + ": " + s.ToString());
}

class RocksStore : public Store {
 public:
  explicit RocksStore(const fs::path& dir) {
    rocksdb::Options opt;  // defaults (2 background jobs, default compression), as a broker would start
    opt.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    rocks_check(rocksdb::DB::Open(opt, dir.string(), &db), "open");
    db_.reset(db);
    wo_.sync = true;
  }
  ~RocksStore() override { close(); }
  void begin() override { batch_.Clear(); }
  // One column family; the keyspace is a one-byte key prefix.
  void put(Space s, std::string_view k, std::string_view v) override {
    key_.assign(1, char('0' + s));
    key_.append(k);
    batch_.Put(key_, rocksdb::Slice(v.data(), v.size()));
  }
  void del(Space s, std::string_view k) override {
    key_.assign(1, char('0' + s));
    key_.append(k);
    batch_.Delete(key_);
  }
  void commit() override { rocks_check(db_->Write(wo_, &batch_), "write"); }
  void close() override {
    if (db_) rocks_check(db_->Close(), "close");
    db_.reset();
  }

 private:
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions wo_;
  rocksdb::WriteBatch batch_;
  std::string key_;
};

// ---------------------------------------------------------------- SQLite
class SqliteStore : public Store {
 public:
  explicit SqliteStore(const fs::path& dir) {
    fs::create_directories(dir);
    if (sqlite3_open((dir / "journal.db").c_str(), &db_) != SQLITE_OK) die("sqlite open");
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=FULL");
    const char* tables[4] = {"jobs", "witness", "requests", "items"};
    for (int i = 0; i < 4; ++i) {
      exec(std::string("CREATE TABLE IF NOT EXISTS ") + tables[i] +
           " (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID");
      put_[i] = prepare(std::string("INSERT OR REPLACE INTO ") + tables[i] + " (k, v) VALUES (?1, ?2)");
      del_[i] = prepare(std::string("DELETE FROM ") + tables[i] + " WHERE k = ?1");
    }
    begin_ = prepare("BEGIN");
    commit_ = prepare("COMMIT");
  }
  ~SqliteStore() override { close(); }
  void begin() override { step(begin_); }
  void put(Space s, std::string_view k, std::string_view v) override {
    sqlite3_bind_blob(put_[s], 1, k.data(), int(k.size()), SQLITE_STATIC);
    sqlite3_bind_blob64(put_[s], 2, v.data(), v.size(), SQLITE_STATIC);
    step(put_[s]);
  }
  void del(Space s, std::string_view k) override {
    sqlite3_bind_blob(del_[s], 1, k.data(), int(k.size()), SQLITE_STATIC);
    step(del_[s]);
  }
  void commit() override { step(commit_); }
  void close() override {
    if (!db_) return;
    for (int i = 0; i < 4; ++i) {
      sqlite3_finalize(put_[i]);
      sqlite3_finalize(del_[i]);
    }
    sqlite3_finalize(begin_);
    sqlite3_finalize(commit_);
    if (sqlite3_close(db_) != SQLITE_OK) die("sqlite close");
    db_ = nullptr;
  }

 private:
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK)
      die("sqlite " + sql + ": " + (err ? err : "?"));
  }
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      die("sqlite prepare " + sql + ": " + sqlite3_errmsg(db_));
    return st;
  }
  void step(sqlite3_stmt* st) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) die(std::string("sqlite step: ") + sqlite3_errmsg(db_));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }
  sqlite3* db_ = nullptr;
  sqlite3_stmt *put_[4]{}, *del_[4]{}, *begin_ = nullptr, *commit_ = nullptr;
};

std::unique_ptr<Store> open_store(const std::string& name, const fs::path& dir, const Config& cfg) {
  if (name == "lmdb") return std::make_unique<LmdbStore>(dir, cfg.map_size);
  if (name == "rocksdb") return std::make_unique<RocksStore>(dir);
  if (name == "sqlite") return std::make_unique<SqliteStore>(dir);
  die("unknown store " + name);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * double(v.size() - 1) + 0.5));
  return v[i];
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// ---------------------------------------------------------------- small-record workload
struct SmallResult {
  std::string store;
  double wall_s, cpu_s, cpu_main_s, p50_ms, p99_ms, max_ms;
  uint64_t turns, disk;
};

SmallResult run_small(const std::string& name, const Config& cfg, Filler& fill) {
  fs::path dir = fs::path(cfg.dir) / ("small-" + name);
  fs::remove_all(dir);
  settle();
  const double cpu0 = cpu_seconds(), cpu_main0 = cpu_seconds(RUSAGE_THREAD);
  const auto t0 = Clock::now();
  auto store = open_store(name, dir, cfg);

  const uint64_t accept_turns = (cfg.jobs + cfg.batch - 1) / cfg.batch;
  std::vector<double> lat;
  lat.reserve(accept_turns + 2);
  auto range = [&](uint64_t turn, uint64_t& lo, uint64_t& hi) {
    lo = turn * cfg.batch;
    hi = std::min(cfg.jobs, lo + cfg.batch);
  };
  for (uint64_t t = 0; t < accept_turns + 2; ++t) {
    const auto tt = Clock::now();
    store->begin();
    uint64_t lo, hi;
    if (t < accept_turns) {  // accept
      range(t, lo, hi);
      for (uint64_t s = lo; s < hi; ++s) {
        const std::string k = seq_key(s);
        store->put(kJobs, k, fill.slice(kJobRec));
        store->put(kWitness, k, fill.slice(cfg.witness_bytes));
        std::string v = k;
        v.append(fill.slice(kHash));
        store->put(kRequests, request_key(s), v);
      }
    }
    if (t >= 1 && t - 1 < accept_turns) {  // started
      range(t - 1, lo, hi);
      for (uint64_t s = lo; s < hi; ++s) store->put(kItems, item_key(s, 0), fill.slice(kStartedRec));
    }
    if (t >= 2) {  // result + retention
      range(t - 2, lo, hi);
      for (uint64_t s = lo; s < hi; ++s) {
        const std::string k = seq_key(s);
        store->put(kItems, item_key(s, 0), fill.slice(kProofRec));
        store->put(kJobs, k, fill.slice(kJobRec));
        store->del(kWitness, k);
        if (s >= cfg.retain) {
          const uint64_t old = s - cfg.retain;
          store->del(kItems, item_key(old, 0));
          store->put(kJobs, seq_key(old), fill.slice(kStubRec));
        }
      }
    }
    store->commit();
    lat.push_back(ms_since(tt));
  }
  store->close();
  SmallResult r;
  r.store = name;
  r.wall_s = ms_since(t0) / 1000;
  r.cpu_s = cpu_seconds() - cpu0;
  r.cpu_main_s = cpu_seconds(RUSAGE_THREAD) - cpu_main0;
  r.p50_ms = percentile(lat, 0.50);
  r.p99_ms = percentile(lat, 0.99);
  r.max_ms = percentile(lat, 1.0);
  r.turns = lat.size();
  r.disk = disk_bytes(dir);
  store.reset();
  fs::remove_all(dir);
  return r;
}

// ---------------------------------------------------------------- large-witness workload
struct LargeResult {
  std::string variant;
  double wall_s, cpu_s, p50_ms, max_ms;
  uint64_t disk;
};

void write_all_fsync(const fs::path& p, std::string_view buf) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open " + p.string());
  size_t off = 0;
  while (off < buf.size()) {
    ssize_t n = ::write(fd, buf.data() + off, buf.size() - off);
    if (n < 0) die("write " + p.string());
    off += size_t(n);
  }
  if (::fsync(fd) != 0) die("fsync " + p.string());
  ::close(fd);
}

void fsync_dir(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0 || ::fsync(fd) != 0) die("fsync dir " + p.string());
  ::close(fd);
}

// variant: "<store>" (inline), "<store>+blobfile", or "raw".
LargeResult run_large(const std::string& variant, const Config& cfg, std::string_view witness, Filler& fill) {
  fs::path dir = fs::path(cfg.dir) / ("large-" + variant);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const bool raw = variant == "raw";
  const auto plus = variant.find('+');
  const bool blob = plus != std::string::npos;
  const std::string name = blob ? variant.substr(0, plus) : variant;
  const fs::path blobs = dir / "blobs";
  fs::create_directories(blobs);
  settle();

  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();
  std::unique_ptr<Store> store;
  if (!raw) store = open_store(name, dir / "store", cfg);
  std::vector<double> lat;
  for (uint64_t s = 0; s < cfg.jobs; ++s) {
    const auto tt = Clock::now();
    const std::string k = seq_key(s);
    if (raw || blob) {
      char fname[32];
      std::snprintf(fname, sizeof fname, "%016llx.wit", static_cast<unsigned long long>(s));
      write_all_fsync(blobs / fname, witness);
      fsync_dir(blobs);  // the new file's directory entry must be durable too
    }
    if (!raw) {
      store->begin();
      store->put(kJobs, k, fill.slice(kJobRec));
      if (blob) {
        std::string ref = k;  // reference: job_seq + length + hash
        uint64_t len = witness.size();
        ref.append(reinterpret_cast<const char*>(&len), 8);
        ref.append(fill.slice(kHash));
        store->put(kWitness, k, ref);
      } else {
        store->put(kWitness, k, witness);
      }
      store->commit();
    }
    lat.push_back(ms_since(tt));
  }
  if (store) store->close();
  LargeResult r;
  r.variant = variant;
  r.wall_s = ms_since(t0) / 1000;
  r.cpu_s = cpu_seconds() - cpu0;
  r.p50_ms = percentile(lat, 0.5);
  r.max_ms = percentile(lat, 1.0);
  r.disk = disk_bytes(dir);
  store.reset();
  fs::remove_all(dir);
  return r;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void usage() {
  std::puts(
      "usage: store_compare --dir DIR [--jobs N=200000] [--batch B=256] [--witness-bytes W=32]\n"
      "                     [--retain K=20000] [--stores lmdb,rocksdb,sqlite] [--map-size BYTES=16GiB]\n"
      "                     [--large] [--reps R=3]\n"
      "  --witness-bytes > 1 MiB (or --large) selects the large-witness mode: one durable commit per\n"
      "  job, witness inline vs blob file + reference vs raw write+fsync (after one unreported raw\n"
      "  warm-up pass). Stores/variants run round-robin R times, order rotated; tables show the median of each column.");
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--dir") cfg.dir = val();
    else if (a == "--jobs") cfg.jobs = std::stoull(val());
    else if (a == "--batch") cfg.batch = std::stoull(val());
    else if (a == "--witness-bytes") cfg.witness_bytes = std::stoull(val());
    else if (a == "--retain") cfg.retain = std::stoull(val());
    else if (a == "--map-size") cfg.map_size = std::stoull(val());
    else if (a == "--stores") cfg.stores = split(val());
    else if (a == "--large") cfg.large = true;
    else if (a == "--reps") cfg.reps = std::max(1, std::stoi(val()));
    else if (a == "-h" || a == "--help") { usage(); return 0; }
    else { usage(); die("unknown argument " + a); }
  }
  if (cfg.dir.empty()) { usage(); die("--dir is required"); }
  if (cfg.batch == 0 || cfg.jobs == 0) die("--jobs and --batch must be > 0");
  if (cfg.witness_bytes > (1u << 20)) cfg.large = true;
  fs::create_directories(cfg.dir);

  if (!cfg.large) {
    Filler fill(std::max<size_t>(1 << 20, 2 * cfg.witness_bytes));
    std::printf("journal workload: %llu jobs, %llu jobs/turn, witness %llu B, retention K = %llu\n\n",
                (unsigned long long)cfg.jobs, (unsigned long long)cfg.batch,
                (unsigned long long)cfg.witness_bytes, (unsigned long long)cfg.retain);
    std::printf("| store | jobs/s (min–max) | CPU µs/job | main-thread CPU µs/job | turn p50 (ms) | turn p99 (ms) | turn max (ms) | turns | disk (MiB) |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    std::fflush(stdout);
    std::vector<std::vector<SmallResult>> res(cfg.stores.size());
    for (int rep = 0; rep < cfg.reps; ++rep)
      for (size_t j = 0; j < cfg.stores.size(); ++j) {
        const size_t i = (j + size_t(rep)) % cfg.stores.size();  // rotate the order each repetition
        res[i].push_back(run_small(cfg.stores[i], cfg, fill));
        const SmallResult& r = res[i].back();
        std::fprintf(stderr, "  rep %d %s: %.0f jobs/s\n", rep + 1, r.store.c_str(), double(cfg.jobs) / r.wall_s);
      }
    for (size_t i = 0; i < cfg.stores.size(); ++i) {
      auto med = [&](auto f) {
        std::vector<double> v;
        for (const auto& r : res[i]) v.push_back(f(r));
        return percentile(v, 0.5);
      };
      auto rate = [&](const SmallResult& r) { return double(cfg.jobs) / r.wall_s; };
      std::vector<double> rates;
      for (const auto& r : res[i]) rates.push_back(rate(r));
      std::printf("| %s | %.0f (%.0f–%.0f) | %.1f | %.1f | %.2f | %.2f | %.2f | %llu | %.1f |\n", cfg.stores[i].c_str(),
                  med(rate), *std::min_element(rates.begin(), rates.end()),
                  *std::max_element(rates.begin(), rates.end()),
                  med([&](const SmallResult& r) { return 1e6 * r.cpu_s / double(cfg.jobs); }),
                  med([&](const SmallResult& r) { return 1e6 * r.cpu_main_s / double(cfg.jobs); }),
                  med([](const SmallResult& r) { return r.p50_ms; }), med([](const SmallResult& r) { return r.p99_ms; }),
                  med([](const SmallResult& r) { return r.max_ms; }), (unsigned long long)res[i][0].turns,
                  med([](const SmallResult& r) { return double(r.disk) / (1 << 20); }));
    }
  } else {
    Filler fill(1 << 20);
    std::string witness(cfg.witness_bytes, '\0');
    {
      Filler wf(1 << 20);
      for (size_t i = 0; i < witness.size(); i += 8) {
        uint64_t v = wf.next();
        std::memcpy(witness.data() + i, &v, std::min<size_t>(8, witness.size() - i));
      }
    }
    std::printf("large-witness workload: %llu jobs, witness %llu B each, one durable commit per job\n\n",
                (unsigned long long)cfg.jobs, (unsigned long long)cfg.witness_bytes);
    std::printf("| variant | MB/s (min–max) | CPU s/GB | p50 per job (ms) | max per job (ms) | disk (MiB) |\n");
    std::printf("|---|---:|---:|---:|---:|---:|\n");
    std::fflush(stdout);
    std::vector<std::string> variants{"raw"};
    for (const auto& s : cfg.stores) {
      variants.push_back(s);
      if (s != "sqlite") variants.push_back(s + "+blobfile");
    }
    const double gb = double(cfg.jobs) * double(cfg.witness_bytes) / 1e9;
    (void)run_large("raw", cfg, witness, fill);  // warm-up, not reported
    std::vector<std::vector<LargeResult>> res(variants.size());
    for (int rep = 0; rep < cfg.reps; ++rep)
      for (size_t j = 0; j < variants.size(); ++j) {
        const size_t i = (j + size_t(rep)) % variants.size();  // rotate the order each repetition
        res[i].push_back(run_large(variants[i], cfg, witness, fill));
        std::fprintf(stderr, "  rep %d %s: %.0f MB/s\n", rep + 1, variants[i].c_str(),
                     gb * 1000 / res[i].back().wall_s);
      }
    for (size_t i = 0; i < variants.size(); ++i) {
      auto med = [&](auto f) {
        std::vector<double> v;
        for (const auto& r : res[i]) v.push_back(f(r));
        return percentile(v, 0.5);
      };
      std::vector<double> rates;
      for (const auto& r : res[i]) rates.push_back(gb * 1000 / r.wall_s);
      std::printf("| %s | %.0f (%.0f–%.0f) | %.2f | %.0f | %.0f | %.1f |\n", variants[i].c_str(),
                  percentile(rates, 0.5), *std::min_element(rates.begin(), rates.end()),
                  *std::max_element(rates.begin(), rates.end()), med([&](const LargeResult& r) { return r.cpu_s / gb; }),
                  med([](const LargeResult& r) { return r.p50_ms; }), med([](const LargeResult& r) { return r.max_ms; }),
                  med([](const LargeResult& r) { return double(r.disk) / (1 << 20); }));
      std::fflush(stdout);
    }
  }
  return 0;
}
