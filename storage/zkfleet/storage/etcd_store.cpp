#include "zkfleet/storage/etcd_store.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/etcd_leadership.hpp"

namespace zkfleet::storage {
namespace {

// Records per Range page while loading.
constexpr int64_t kLoadPage = 2000;
// A put's frame beyond its key and value (field tags, lengths, the lease).
constexpr uint64_t kOpOverheadBytes = 32;

// The end of the range of keys that start with `prefix` (etcd's range_end).
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');
}

// A read-only journal's own client (a broker's shares its leadership's).
EtcdClientOptions ClientOptionsOf(const EtcdJournalOptions& options) {
  EtcdClientOptions client;
  client.endpoints = options.endpoints;
  client.tls = options.tls;
  return client;
}

}  // namespace

EtcdStore::EtcdStore(const EtcdJournalOptions& options, bool read_only)
    : options_(options),
      read_only_(read_only || options.leadership == nullptr),
      client_(options.leadership ? options.leadership->options().client : ClientOptionsOf(options)),
      journal_prefix_(options.prefix + "journal/") {}

std::unique_ptr<EtcdStore> EtcdStore::Open(const EtcdJournalOptions& options, bool read_only) {
  std::unique_ptr<EtcdStore> store(new EtcdStore(options, read_only));
  store->Load();
  return store;
}

std::string EtcdStore::EtcdKey(unsigned db, std::string_view key) const {
  std::string full = journal_prefix_;
  full += kJournalDbNames[db];
  full.push_back('/');
  full.append(key);
  return full;
}

void EtcdStore::Load() {
  const auto started = std::chrono::steady_clock::now();
  for (auto& records : records_) records.clear();
  stored_bytes_ = 0;
  uint64_t count = 0;
  int64_t revision = 0;
  std::string from = journal_prefix_;
  const std::string end = PrefixEnd(journal_prefix_);
  for (;;) {
    etcdserverpb::RangeRequest request;
    request.set_key(from);
    request.set_range_end(end);
    request.set_limit(kLoadPage);
    request.set_revision(revision);  // every page from the first page's revision
    const etcdserverpb::RangeResponse page = client_.Range(request, "reading the journal");
    if (revision == 0) revision = page.header().revision();
    for (const mvccpb::KeyValue& kv : page.kvs()) {
      std::string_view key = kv.key();
      key.remove_prefix(journal_prefix_.size());
      const size_t slash = key.find('/');
      unsigned db = kJournalDbCount;
      for (unsigned i = 0; i < kJournalDbCount && slash != std::string_view::npos; ++i) {
        if (key.substr(0, slash) == kJournalDbNames[i]) db = i;
      }
      if (db == kJournalDbCount) {
        spdlog::warn("journal {}: key {} is not a journal record; ignored", client_.url(), kv.key());
        continue;
      }
      records_[db].emplace(std::string(key.substr(slash + 1)), kv.value());
      stored_bytes_ += kv.key().size() + kv.value().size();
      ++count;
    }
    if (!page.more() || page.kvs_size() == 0) break;
    from = page.kvs(page.kvs_size() - 1).key();
    from.push_back('\0');  // the next key after the last one
  }
  reload_ = false;
  spdlog::info("journal {}: {} records ({} bytes) read at revision {} in {:.3f} s", client_.url(), count,
               stored_bytes_, revision,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

void EtcdStore::EnsureLoaded() {
  if (reload_) Load();
}

std::optional<std::string_view> EtcdStore::Get(unsigned db, std::string_view key) {
  EnsureLoaded();
  auto it = records_[db].find(key);
  if (it == records_[db].end()) return std::nullopt;
  return std::string_view(it->second);
}

void EtcdStore::Remember(unsigned db, std::string_view key) {
  auto [slot, inserted] = before_.try_emplace({db, std::string(key)});
  if (!inserted) return;
  auto it = records_[db].find(key);
  if (it != records_[db].end()) slot->second = it->second;
}

void EtcdStore::Put(unsigned db, std::string_view key, std::string_view value) {
  if (read_only_) {
    throw Error(ErrorCode::kIo, "journal " + client_.url() + " is open read-only: cannot put into " +
                                    kJournalDbNames[db]);
  }
  EnsureLoaded();
  Remember(db, key);
  auto it = records_[db].find(key);
  if (it == records_[db].end()) {
    records_[db].emplace(std::string(key), std::string(value));
  } else {
    it->second.assign(value);
  }
  pending_bytes_ += journal_prefix_.size() + key.size() + value.size() + kOpOverheadBytes;
}

bool EtcdStore::Del(unsigned db, std::string_view key) {
  if (read_only_) {
    throw Error(ErrorCode::kIo, "journal " + client_.url() + " is open read-only: cannot delete from " +
                                    kJournalDbNames[db]);
  }
  EnsureLoaded();
  auto it = records_[db].find(key);
  if (it == records_[db].end()) return false;
  Remember(db, key);
  records_[db].erase(it);
  pending_bytes_ += journal_prefix_.size() + key.size() + kOpOverheadBytes;
  return true;
}

void EtcdStore::Scan(unsigned db, std::string_view from, ScanDirection direction,
                     const std::function<bool(std::string_view, std::string_view)>& visit) {
  EnsureLoaded();
  const auto& records = records_[db];
  if (direction == ScanDirection::kForward) {
    for (auto it = records.lower_bound(from); it != records.end(); ++it) {
      if (!visit(it->first, it->second)) return;
    }
    return;
  }
  auto it = from.empty() ? records.end() : records.lower_bound(from);
  while (it != records.begin()) {
    --it;
    if (!visit(it->first, it->second)) return;
  }
}

uint64_t EtcdStore::Count(unsigned db) {
  EnsureLoaded();
  return records_[db].size();
}

bool EtcdStore::full() const {
  if (before_.empty()) return false;
  return before_.size() + options_.reserve_ops >= options_.max_txn_ops ||
         pending_bytes_ + options_.reserve_bytes >= options_.max_txn_bytes;
}

void EtcdStore::SendFenced(etcdserverpb::TxnRequest& request) {
  *request.add_compare() = options_.leadership->Fence();
  const etcdserverpb::TxnResponse response = client_.Txn(request, "a journal commit");
  if (!response.succeeded()) {
    throw Error(ErrorCode::kNotLeader,
                "journal " + client_.url() + ": another broker leads now (the leader key " +
                    options_.leadership->leader_key() + " is no longer the one this broker created at revision " +
                    std::to_string(options_.leadership->fence_revision()) +
                    "); nothing of this turn was written, and this broker stops");
  }
}

void EtcdStore::Commit() {
  if (read_only_ || before_.empty()) {
    before_.clear();
    pending_bytes_ = 0;
    return;
  }
  try {
    etcdserverpb::TxnRequest request;
    uint64_t request_bytes = 0;
    int parts = 0;
    for (const auto& [where, old] : before_) {
      const auto& [db, key] = where;
      auto it = records_[db].find(key);
      const uint64_t op_bytes = journal_prefix_.size() + key.size() + kOpOverheadBytes +
                                (it == records_[db].end() ? 0 : it->second.size());
      if (op_bytes > options_.max_txn_bytes) {
        throw Error(ErrorCode::kIo, "journal " + client_.url() + ": a record of " + std::to_string(op_bytes) +
                                        " bytes in '" + kJournalDbNames[db] + "' is larger than one etcd transaction "
                                        "takes (" + std::to_string(options_.max_txn_bytes) + " bytes)");
      }
      if (request.success_size() > 0 && (request.success_size() + 1 >= static_cast<int>(options_.max_txn_ops) ||
                                         request_bytes + op_bytes > options_.max_txn_bytes)) {
        SendFenced(request);
        request.Clear();
        request_bytes = 0;
        ++parts;
      }
      if (it == records_[db].end()) {
        request.add_success()->mutable_request_delete_range()->set_key(EtcdKey(db, key));
      } else {
        etcdserverpb::PutRequest* put = request.add_success()->mutable_request_put();
        put->set_key(EtcdKey(db, key));
        put->set_value(it->second);
      }
      request_bytes += op_bytes;
    }
    SendFenced(request);
    if (parts > 0) {
      spdlog::warn("journal {}: a turn of {} writes was committed as {} etcd transactions (raise etcd's "
                   "--max-txn-ops / --max-request-bytes and the broker's bounds together)",
                   client_.url(), before_.size(), parts + 1);
    }
  } catch (const Error&) {
    // Some or all of it may be in etcd (a transaction that timed out may have
    // been applied): after Abort() memory is read again from etcd.
    reload_ = true;
    throw;
  }
  for (const auto& [where, old] : before_) {
    auto it = records_[where.first].find(where.second);
    if (old) stored_bytes_ -= std::min<uint64_t>(stored_bytes_, old->size() + where.second.size());
    if (it != records_[where.first].end()) stored_bytes_ += it->second.size() + where.second.size();
  }
  before_.clear();
  pending_bytes_ = 0;
}

void EtcdStore::Abort() {
  for (auto& [where, old] : before_) {
    auto& records = records_[where.first];
    if (old) {
      records.insert_or_assign(where.second, std::move(*old));
    } else {
      records.erase(where.second);
    }
  }
  before_.clear();
  pending_bytes_ = 0;
}

}  // namespace zkfleet::storage
