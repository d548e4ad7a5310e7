// Which broker leads, through an etcd lease: one active broker per key
// prefix, the others standing by (zkbroker --journal etcd://...).
//
// A broker holds a lease of `ttl` seconds, kept alive from a thread of this
// class every ttl/3. It leads once it has created the key "<prefix>leader"
// (its value: the broker's name, e.g. its client endpoint) under that lease;
// the key goes when the lease ends (the broker stopped, was paused or was
// cut off from etcd for longer than the TTL), and a standby creates it anew.
//
// Fencing: the key's create revision is this leadership's number. Every
// journal transaction compares it (Fence()), so a broker that was paused
// past its lease and resumes can never write again, whatever it believes:
// etcd refuses the transaction, and the journal throws Error(kNotLeader).
// The keep-alive thread also notices the loss (lost()), so an idle ex-leader
// stops too.
//
// Thread-safety: Campaign() and the accessors on one thread; lost() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "zkfleet/storage/etcd_client.hpp"

namespace zkfleet::storage {

struct EtcdLeadershipOptions {
  EtcdClientOptions client;
  std::string prefix = "zkfleet/";
  std::string name;  // what standbys and `zkctl` are told about this broker
  std::chrono::seconds ttl{5};
  // False only in tests (zkbroker --etcd-fence-only): the broker does not
  // stop when lost() says its lease ended, so nothing but the transactions'
  // fence keeps an ex-leader from writing, and a test can show that it does.
  bool stop_on_lease_loss = true;
};

class EtcdLeadership {
 public:
  explicit EtcdLeadership(EtcdLeadershipOptions options);
  // Stops the keep-alive; a leader revokes its lease, so a standby takes
  // over at once instead of after the TTL.
  ~EtcdLeadership();
  EtcdLeadership(const EtcdLeadership&) = delete;
  EtcdLeadership& operator=(const EtcdLeadership&) = delete;

  // Waits until this broker leads (true) or `stop()` returns true (false).
  // `on_standby(leader)` is called whenever the leader seen changes while
  // waiting. Throws Error(kIo) only when etcd cannot be reached at all.
  bool Campaign(const std::function<bool()>& stop,
                const std::function<void(const std::string& leader)>& on_standby = {});

  // Set once this broker no longer leads (its lease ended): why, in words.
  std::optional<std::string> lost() const;
  bool leading() const { return fence_revision_ != 0 && !lost(); }

  // The comparison a leader's transactions carry.
  etcdserverpb::Compare Fence() const;
  int64_t fence_revision() const { return fence_revision_; }
  int64_t lease() const { return lease_.load(); }
  const std::string& leader_key() const { return leader_key_; }
  const EtcdLeadershipOptions& options() const { return options_; }
  EtcdClient& client() { return client_; }

  // Who leads the brokers of `prefix` now (the leader key's value), if any.
  static std::optional<std::string> CurrentLeader(EtcdClient& client, const std::string& prefix);

 private:
  void KeepAlive();
  void MarkLost(const std::string& why);

  EtcdLeadershipOptions options_;
  EtcdClient client_;
  std::string leader_key_;
  std::atomic<int64_t> lease_{0};
  int64_t fence_revision_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::optional<std::string> lost_;
  std::thread keepalive_;
};

}  // namespace zkfleet::storage
