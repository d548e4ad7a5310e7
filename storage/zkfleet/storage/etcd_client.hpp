// A client of an etcd cluster's v3 gRPC API (KV and Lease), on the stubs
// generated from etcd's own .proto files (schema/CMakeLists.txt): the
// transport of the etcd journal (etcd_store.hpp) and of broker leadership
// (etcd_leadership.hpp).
//
// Members: one channel per endpoint. A call goes to the member that answered
// last; a member that does not answer within the call timeout, refuses
// (UNAVAILABLE: down, no quorum, a leader election) or is paused (SIGSTOP:
// the deadline passes) is left for the next, round the list, until
// `retry_for` has passed. A retried Txn may have been applied once already:
// callers send only transactions whose second application changes nothing
// (puts of the same values, deletes), as the journal's are.
//
// Every failure throws zkfleet::Error(kIo) in plain words naming the cluster,
// what was being done and what each member answered last.
//
// Thread-safety: thread-safe (gRPC stubs are; the current member is atomic).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "zkfleet/storage/etcd_tls.hpp"

#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace zkfleet::storage {

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // "host:port" of each member's client URL
  std::chrono::milliseconds call_timeout{2000};
  std::chrono::milliseconds retry_for{6000};
  EtcdTls tls;
};

// "etcd://h1:p1,h2:p2" -> {"h1:p1", "h2:p2"}; the part after a '/' is the
// key prefix (default "zkfleet/"). Throws Error(kInvalidArgument) with an
// example when `url` is not of that form.
struct EtcdUrl {
  std::vector<std::string> endpoints;
  std::string prefix;
};
EtcdUrl ParseEtcdUrl(const std::string& url);

class EtcdClient {
 public:
  explicit EtcdClient(EtcdClientOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  etcdserverpb::RangeResponse Range(const etcdserverpb::RangeRequest& request, const std::string& doing);
  etcdserverpb::TxnResponse Txn(const etcdserverpb::TxnRequest& request, const std::string& doing);
  // A new lease of `ttl_s` seconds; its id.
  int64_t LeaseGrant(int64_t ttl_s);
  // One keep-alive of `lease`: the TTL it has now, 0 or less when it is gone.
  // Throws Error(kIo) when no member answered in time.
  int64_t LeaseKeepAlive(int64_t lease);
  // Ends `lease` at once (its keys go); a failure is logged, not thrown.
  void LeaseRevoke(int64_t lease);

  // "etcd://h1:p1,h2:p2", for messages.
  const std::string& url() const { return url_; }

 private:
  struct Member;
  // Runs `call(member, context)` on members in turn until one answers with
  // a status that is not worth retrying elsewhere; returns that status.
  template <typename Call>
  void WithRetry(const std::string& doing, Call&& call);

  EtcdClientOptions options_;
  std::string url_;
  std::vector<std::unique_ptr<Member>> members_;
  std::atomic<size_t> current_{0};
};

}  // namespace zkfleet::storage
