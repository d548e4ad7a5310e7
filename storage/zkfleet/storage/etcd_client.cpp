#include "zkfleet/storage/etcd_client.hpp"

#include <fstream>
#include <sstream>

#include <thread>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"

namespace zkfleet::storage {
namespace {

// Range answers carry up to a page of records (etcd_store.cpp pages them);
// the default 4 MiB would cut a page of large records.
constexpr int kMaxReceiveBytes = 64 << 20;

// Worth another member: this one is down, paused, cut off from the quorum or
// between leaders. Anything else (a request etcd refuses, a lease it does not
// know) would be refused by every member.
bool Retryable(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN: return true;
    default: return false;
  }
}

std::string Describe(const grpc::Status& status) {
  std::string code;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE: code = "UNAVAILABLE"; break;
    case grpc::StatusCode::DEADLINE_EXCEEDED: code = "no answer in time"; break;
    case grpc::StatusCode::INVALID_ARGUMENT: code = "INVALID_ARGUMENT"; break;
    case grpc::StatusCode::NOT_FOUND: code = "NOT_FOUND"; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: code = "RESOURCE_EXHAUSTED"; break;
    default: code = "gRPC status " + std::to_string(static_cast<int>(status.error_code()));
  }
  return status.error_message().empty() ? code : code + ": " + status.error_message();
}

}  // namespace

struct EtcdClient::Member {
  std::string endpoint;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
};

EtcdUrl ParseEtcdUrl(const std::string& url) {
  constexpr std::string_view kScheme = "etcd://";
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument,
                 "--journal " + url + ": " + why +
                     "; expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX], e.g. "
                     "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/zkfleet/");
  };
  if (url.rfind(kScheme, 0) != 0) throw bad("not an etcd:// URL");
  std::string rest = url.substr(kScheme.size());
  EtcdUrl parsed;
  parsed.prefix = "zkfleet/";
  if (size_t slash = rest.find('/'); slash != std::string::npos) {
    parsed.prefix = rest.substr(slash + 1);
    rest.resize(slash);
    if (parsed.prefix.empty()) throw bad("an empty key prefix");
    if (parsed.prefix.back() != '/') parsed.prefix.push_back('/');
  }
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    std::string endpoint = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t colon = endpoint.rfind(':');
    if (endpoint.empty() || colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size() ||
        endpoint.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      throw bad("member '" + endpoint + "' is not HOST:PORT");
    }
    parsed.endpoints.push_back(endpoint);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parsed;
}

namespace {

std::string ReadPemFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf()) || text.str().find("-----BEGIN") == std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, std::string("etcd TLS: cannot read the ") + what + " " + path +
                                                 " (a PEM file is expected)");
  }
  return text.str();
}

std::shared_ptr<grpc::ChannelCredentials> Credentials(const EtcdTls& tls) {
  if (!tls.enabled()) {
    if (!tls.cert_file.empty() || !tls.key_file.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "etcd TLS: a client certificate needs the CA file too (--etcd-ca)");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "etcd TLS: give the client certificate and its key together");
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadPemFile(tls.ca_file, "CA file");
  if (!tls.cert_file.empty()) {
    ssl.pem_cert_chain = ReadPemFile(tls.cert_file, "client certificate");
    ssl.pem_private_key = ReadPemFile(tls.key_file, "client key");
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw Error(ErrorCode::kInvalidArgument, "etcd: no member endpoints");
  const std::shared_ptr<grpc::ChannelCredentials> credentials = Credentials(options_.tls);
  url_ = "etcd://";
  for (const std::string& endpoint : options_.endpoints) {
    if (url_.size() > 7) url_ += ",";
    url_ += endpoint;
    auto member = std::make_unique<Member>();
    member->endpoint = endpoint;
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
    // A member that went away is tried again soon after it is back.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    member->channel = grpc::CreateCustomChannel(endpoint, credentials, args);
    member->kv = etcdserverpb::KV::NewStub(member->channel);
    member->lease = etcdserverpb::Lease::NewStub(member->channel);
    members_.push_back(std::move(member));
  }
}

EtcdClient::~EtcdClient() = default;

template <typename Call>
void EtcdClient::WithRetry(const std::string& doing, Call&& call) {
  const auto give_up = std::chrono::steady_clock::now() + options_.retry_for;
  std::vector<std::string> last(members_.size());
  for (int attempt = 0;; ++attempt) {
    const size_t turn = current_.load();
    const size_t index = turn % members_.size();
    Member& member = *members_[index];
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
    const grpc::Status status = call(member, context);
    if (status.ok()) return;
    last[index] = Describe(status);
    if (!Retryable(status)) {
      throw Error(ErrorCode::kIo, "etcd " + url_ + ": member " + member.endpoint + " refused " + doing + " (" +
                                      last[index] + ")");
    }
    // The next member, unless another call moved on already.
    size_t expected = turn;
    current_.compare_exchange_strong(expected, turn + 1);
    if (std::chrono::steady_clock::now() >= give_up) {
      std::string answers;
      for (size_t i = 0; i < members_.size(); ++i) {
        answers += (answers.empty() ? "" : "; ") + members_[i]->endpoint + ": " +
                   (last[i].empty() ? std::string("not tried") : last[i]);
      }
      throw Error(ErrorCode::kIo, "etcd " + url_ + ": no member answered " + doing + " within " +
                                      std::to_string(options_.retry_for.count()) + " ms (" + answers +
                                      "); is a quorum of members up?");
    }
    // A round of the members without an answer: wait a little before the next.
    if ((attempt + 1) % members_.size() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

etcdserverpb::RangeResponse EtcdClient::Range(const etcdserverpb::RangeRequest& request, const std::string& doing) {
  etcdserverpb::RangeResponse response;
  WithRetry(doing, [&](Member& member, grpc::ClientContext& context) {
    response.Clear();
    return member.kv->Range(&context, request, &response);
  });
  return response;
}

etcdserverpb::TxnResponse EtcdClient::Txn(const etcdserverpb::TxnRequest& request, const std::string& doing) {
  etcdserverpb::TxnResponse response;
  WithRetry(doing, [&](Member& member, grpc::ClientContext& context) {
    response.Clear();
    return member.kv->Txn(&context, request, &response);
  });
  return response;
}

int64_t EtcdClient::LeaseGrant(int64_t ttl_s) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_s);
  etcdserverpb::LeaseGrantResponse response;
  WithRetry("a lease grant", [&](Member& member, grpc::ClientContext& context) {
    response.Clear();
    return member.lease->LeaseGrant(&context, request, &response);
  });
  if (!response.error().empty()) throw Error(ErrorCode::kIo, "etcd " + url_ + ": lease grant: " + response.error());
  return response.id();
}

int64_t EtcdClient::LeaseKeepAlive(int64_t lease) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse response;
  WithRetry("a lease keep-alive", [&](Member& member, grpc::ClientContext& context) {
    response.Clear();
    auto stream = member.lease->LeaseKeepAlive(&context);
    if (!stream->Write(request) || !stream->WritesDone() || !stream->Read(&response)) {
      grpc::Status status = stream->Finish();
      return status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the keep-alive stream ended") : status;
    }
    context.TryCancel();  // one answer is all this call needs
    (void)stream->Finish();
    return grpc::Status::OK;
  });
  return response.ttl();
}

void EtcdClient::LeaseRevoke(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  try {
    WithRetry("a lease revoke", [&](Member& member, grpc::ClientContext& context) {
      return member.lease->LeaseRevoke(&context, request, &response);
    });
  } catch (const Error& e) {
    spdlog::warn("{} (the lease ends by itself at its TTL)", e.what());
  }
}

}  // namespace zkfleet::storage
