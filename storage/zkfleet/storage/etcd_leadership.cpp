#include "zkfleet/storage/etcd_leadership.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"

namespace zkfleet::storage {
namespace {

// How often a standby looks whether the leader key went.
constexpr auto kCampaignPoll = std::chrono::milliseconds(200);

}  // namespace

EtcdLeadership::EtcdLeadership(EtcdLeadershipOptions options)
    : options_(std::move(options)), client_(options_.client), leader_key_(options_.prefix + "leader") {}

EtcdLeadership::~EtcdLeadership() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (keepalive_.joinable()) keepalive_.join();
  if (const int64_t lease = lease_.load(); lease != 0) {
    client_.LeaseRevoke(lease);
    if (fence_revision_ != 0 && !lost()) {
      spdlog::info("this broker stops leading (lease revoked): a standby leads at once");
    }
  }
}

std::optional<std::string> EtcdLeadership::lost() const {
  std::lock_guard lock(mutex_);
  return lost_;
}

void EtcdLeadership::MarkLost(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (!lost_) lost_ = why;
}

etcdserverpb::Compare EtcdLeadership::Fence() const {
  etcdserverpb::Compare compare;
  compare.set_key(leader_key_);
  compare.set_target(etcdserverpb::Compare::CREATE);
  compare.set_result(etcdserverpb::Compare::EQUAL);
  compare.set_create_revision(fence_revision_);
  return compare;
}

std::optional<std::string> EtcdLeadership::CurrentLeader(EtcdClient& client, const std::string& prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix + "leader");
  const etcdserverpb::RangeResponse response = client.Range(request, "reading the leader key");
  if (response.kvs_size() == 0) return std::nullopt;
  return response.kvs(0).value();
}

bool EtcdLeadership::Campaign(const std::function<bool()>& stop,
                              const std::function<void(const std::string&)>& on_standby) {
  lease_ = client_.LeaseGrant(options_.ttl.count());
  keepalive_ = std::thread([this] { KeepAlive(); });
  std::string seen;
  while (!stop()) {
    if (lost()) {
      // The lease ended while standing by (etcd unreachable past the TTL): a new one.
      std::lock_guard lock(mutex_);
      lost_.reset();
      lease_ = client_.LeaseGrant(options_.ttl.count());
    }
    // Create the leader key under our lease if nobody holds it.
    etcdserverpb::TxnRequest txn;
    etcdserverpb::Compare* absent = txn.add_compare();
    absent->set_key(leader_key_);
    absent->set_target(etcdserverpb::Compare::CREATE);
    absent->set_result(etcdserverpb::Compare::EQUAL);
    absent->set_create_revision(0);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(leader_key_);
    put->set_value(options_.name);
    put->set_lease(lease_.load());
    txn.add_failure()->mutable_request_range()->set_key(leader_key_);
    etcdserverpb::TxnResponse response;
    try {
      response = client_.Txn(txn, "a leader election");
    } catch (const Error& e) {
      spdlog::warn("leader election: {}; trying again", e.what());
      continue;
    }
    if (response.succeeded()) {
      fence_revision_ = response.header().revision();
      spdlog::info("this broker leads (etcd {}, key {} at revision {}, lease TTL {} s)", client_.url(), leader_key_,
                   fence_revision_, options_.ttl.count());
      return true;
    }
    std::string leader;
    if (response.responses_size() > 0 && response.responses(0).response_range().kvs_size() > 0) {
      const auto& kv = response.responses(0).response_range().kvs(0);
      leader = kv.value();
      // Our own key from a campaign whose answer was lost (a retried Txn).
      if (kv.lease() == lease_.load()) {
        fence_revision_ = kv.create_revision();
        spdlog::info("this broker leads (etcd {}, key {} at revision {})", client_.url(), leader_key_, fence_revision_);
        return true;
      }
    }
    if (leader != seen) {
      seen = leader;
      spdlog::info("standing by: {} leads (etcd {})", leader.empty() ? std::string("nobody") : leader, client_.url());
      if (on_standby) on_standby(leader);
    }
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, kCampaignPoll, [&] { return stopping_; });
  }
  return false;
}

void EtcdLeadership::KeepAlive() {
  const auto interval = std::max<std::chrono::milliseconds>(options_.ttl / 3, std::chrono::milliseconds(300));
  auto last_kept = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (wake_.wait_for(lock, interval, [&] { return stopping_; })) return;
    }
    const int64_t lease = lease_.load();
    try {
      const int64_t ttl = client_.LeaseKeepAlive(lease);
      if (ttl <= 0) {
        MarkLost("its etcd lease ended (paused or cut off from etcd for longer than the " +
                 std::to_string(options_.ttl.count()) + " s TTL)");
        continue;
      }
      last_kept = std::chrono::steady_clock::now();
    } catch (const Error& e) {
      // etcd itself ends the lease after the TTL: past it, assume it has.
      if (std::chrono::steady_clock::now() - last_kept > options_.ttl) {
        MarkLost("no etcd member kept its lease alive for longer than the " + std::to_string(options_.ttl.count()) +
                 " s TTL (" + e.what() + ")");
      }
    }
  }
}

}  // namespace zkfleet::storage
