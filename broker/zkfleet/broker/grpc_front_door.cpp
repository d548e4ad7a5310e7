// GrpcFrontDoor (grpc_front_door.hpp): the zkfleet.v1.Fleet service on
// gRPC's callback API (no thread per open call: a thousand AwaitJob streams
// are a thousand small objects), and the queue to and from the broker loop.
#include "zkfleet/broker/grpc_front_door.hpp"
#include "zkfleet/broker/grpc_core_log.hpp"
#include "zkfleet/broker/public_api.hpp"
#include "zkfleet/common/mailbox.hpp"

#include <fstream>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include <openssl/bio.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "grpc/zkfleet_v1.grpc.pb.h"
#include "zkfleet/common/error.hpp"
#include "zkfleet/wire/protocol.hpp"

namespace zkfleet::broker {
namespace {

const std::string kGrpcPrefix("\0grpc/", 6);
constexpr const char* kClientIdMetadata = "zkfleet-client-id";

std::string ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kNotFound, std::string("cannot read the gRPC ") + what + " " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The broker's ErrorReply as a gRPC status (docs/grpc.md, "Status codes").
// Enums between the two schemas, by their values' names (public_api.hpp).
v1::JobState ToPublic(proto::JobState state) {
  v1::JobState out = v1::JOB_STATE_UNSPECIFIED;
  v1::JobState_Parse(proto::JobState_Name(state), &out);
  return out;
}
proto::Priority ToInternal(v1::Priority priority) {
  proto::Priority out = proto::PRIORITY_UNSPECIFIED;
  if (!proto::Priority_Parse(v1::Priority_Name(priority), &out)) {
    // A number this broker's public schema does not name: passed on, so the
    // broker refuses it as it refuses any unknown priority.
    out = static_cast<proto::Priority>(priority);
  }
  return out;
}

grpc::Status StatusOf(const proto::ErrorReply& error) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (error.kind()) {
    case proto::ERROR_KIND_BAD_REQUEST:
    case proto::ERROR_KIND_TOO_LARGE: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case proto::ERROR_KIND_UNKNOWN_CIRCUIT:
    case proto::ERROR_KIND_RESULT_EXPIRED:
    case proto::ERROR_KIND_NOT_RETRYABLE: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case proto::ERROR_KIND_UNKNOWN_JOB:
    case proto::ERROR_KIND_UNKNOWN_WORKER:
    case proto::ERROR_KIND_FOREIGN_JOB: code = grpc::StatusCode::NOT_FOUND; break;
    case proto::ERROR_KIND_BUSY: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case proto::ERROR_KIND_REQUEST_ID_REUSED: code = grpc::StatusCode::ALREADY_EXISTS; break;
    case proto::ERROR_KIND_UNAVAILABLE:
    case proto::ERROR_KIND_NOT_LEADER: code = grpc::StatusCode::UNAVAILABLE; break;
    case proto::ERROR_KIND_FORBIDDEN: code = grpc::StatusCode::PERMISSION_DENIED; break;
    default: break;
  }
  return grpc::Status(code, error.message());
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "INTERNAL";
  }
}

}  // namespace

bool IsGrpcIdentity(const std::string& identity) {
  return identity.size() > kGrpcPrefix.size() && identity.compare(0, kGrpcPrefix.size(), kGrpcPrefix) == 0;
}

// A call in flight, as the loop's replies see it. `OnReply` handles one
// reply and says whether the call is finished; the registry then forgets it.
class GrpcFrontDoor::Call {
 public:
  virtual ~Call() = default;
  virtual bool OnReply(const proto::Envelope& reply) = 0;
  virtual void Abort(const grpc::Status& status) = 0;
};

// One registered call: its reactor, until gRPC is done with it. The lock is
// recursive: a reactor's reaction may run on the thread that finished it.
struct CallHandle {
  std::recursive_mutex mutex;
  GrpcFrontDoor::Call* call = nullptr;  // null once the reactor is gone
};

struct GrpcFrontDoor::Shared {
  GrpcOptions options;
  metrics::BrokerMetrics* metrics = nullptr;
  Mailbox<GrpcRequest> requests{"gRPC front door"};  // to the broker loop
  std::mutex mutex;  // guards everything below
  PeerAllowList allow_list;
  std::map<uint64_t, std::shared_ptr<CallHandle>> calls;
  // What each caller holds (GrpcOptions' per-caller bounds), and which
  // caller and bytes each open call counts against.
  struct CallerUse {
    uint32_t calls = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, CallerUse> use;
  std::map<uint64_t, std::pair<std::string, uint64_t>> charged;
  uint64_t next_call = 1;
  uint64_t next_correlation = 1;
  bool stopping = false;

  // The common-name count of each client certificate seen (CommonNameCount):
  // parsing a PEM certificate with OpenSSL 3 costs more than the rest of a
  // SubmitJob, and a caller sends the same one on every call. Keyed by the
  // certificate's bytes, so an entry is only ever that certificate's answer;
  // emptied when it holds kMaxCertificates.
  static constexpr size_t kMaxCertificates = 4096;
  std::mutex certificates_mutex;
  std::unordered_map<std::string, int> common_names;

  void Count(const char* method, grpc::StatusCode code) {
    if (metrics) metrics->GrpcAnswered(method, CodeName(code));
  }
  // A new call's routing identity and its handle, charged to `caller` with
  // `bytes` of inline witnesses. ("", nullptr) once the front door is
  // stopping (the caller finishes the call UNAVAILABLE: no loop will answer
  // it), or when the caller is over a bound: then `*over` says which.
  std::pair<std::string, std::shared_ptr<CallHandle>> Register(Call* call, const std::string& caller, uint64_t bytes,
                                                               std::string* over) {
    auto handle = std::make_shared<CallHandle>();
    handle->call = call;
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping) return {std::string(), nullptr};
    CallerUse& mine = use[caller];
    if (mine.calls >= options.max_calls_per_caller) {
      *over = "caller '" + caller + "' has " + std::to_string(mine.calls) +
              " calls open, the most one caller may (--grpc-max-calls-per-caller): finish or cancel some first";
    } else if (bytes > 0 && mine.bytes + bytes > options.max_inflight_bytes_per_caller) {
      *over = "caller '" + caller + "' has " + std::to_string(mine.bytes) + " bytes of inline witnesses in flight; " +
              std::to_string(bytes) + " more would pass --grpc-max-inflight-bytes-per-caller (" +
              std::to_string(options.max_inflight_bytes_per_caller) + "): wait for answers, or send references";
    }
    if (!over->empty()) {
      if (mine.calls == 0 && mine.bytes == 0) use.erase(caller);
      return {std::string(), nullptr};
    }
    ++mine.calls;
    mine.bytes += bytes;
    const uint64_t id = next_call++;
    calls[id] = handle;
    charged[id] = {caller, bytes};
    return {kGrpcPrefix + std::to_string(id), handle};
  }
  void Forget(const std::string& identity) {
    std::lock_guard<std::mutex> lock(mutex);
    const uint64_t id = std::strtoull(identity.c_str() + kGrpcPrefix.size(), nullptr, 10);
    calls.erase(id);
    auto it = charged.find(id);
    if (it == charged.end()) return;
    auto mine = use.find(it->second.first);
    if (mine != use.end()) {
      --mine->second.calls;
      mine->second.bytes -= it->second.second;
      if (mine->second.calls == 0) use.erase(mine);  // no entry per caller that has gone
    }
    charged.erase(it);
  }
  // Queues `envelope` for the loop under the call's identity.
  void Send(const std::string& identity, const Peer& peer, proto::Envelope envelope, fleet::Frames frames = {}) {
    envelope.set_version(wire::kProtocolVersion);
    // Posted under the lock: the loop sees requests in correlation order.
    std::lock_guard<std::mutex> lock(mutex);
    envelope.set_correlation_id(next_correlation++);
    requests.Post({identity, peer, std::move(envelope), std::move(frames)});
  }
};

namespace {

using Shared = GrpcFrontDoor::Shared;

// A call's place in the registry: taken by Join (false: the front door is
// stopping), given up by Leave (the reactor's OnDone).
struct Registration {
  std::string identity;
  std::shared_ptr<CallHandle> handle;

  // nullopt when joined; else the status to finish the call with.
  std::optional<grpc::Status> Join(Shared& shared, GrpcFrontDoor::Call* call, const std::string& caller,
                                   uint64_t bytes = 0) {
    std::string over;
    std::tie(identity, handle) = shared.Register(call, caller, bytes, &over);
    if (handle) return std::nullopt;
    if (!over.empty()) return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, over);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the broker is stopping: call again");
  }
  void Leave(Shared& shared) {
    if (handle) {
      std::lock_guard<std::recursive_mutex> lock(handle->mutex);
      handle->call = nullptr;
    }
    if (!identity.empty()) shared.Forget(identity);
  }
};

// The caller's declared name in plaintext mode (metadata zkfleet-client-id).
std::string ClientIdOf(grpc::CallbackServerContext* context) {
  auto it = context->client_metadata().find(kClientIdMetadata);
  return it == context->client_metadata().end() ? std::string() : std::string(it->second.data(), it->second.size());
}

// The name a caller's bounds are kept under: its key, or its plaintext id.
std::string CallerOf(const Peer& peer, grpc::CallbackServerContext* context) {
  return peer.authenticated ? "key " + peer.key_name : "client " + ClientIdOf(context);
}

// The common names in the subject of the PEM certificate `pem`; -1 when it
// does not parse. gRPC reports one x509_common_name even for a subject that
// holds two (CN=alice, CN=nobody): which one names the caller is ambiguous.
int CommonNameCount(const grpc::string_ref& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return -1;
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (!cert) return -1;
  int count = 0;
  const X509_NAME* subject = X509_get_subject_name(cert);
  for (int at = -1; (at = X509_NAME_get_index_by_NID(subject, NID_commonName, at)) >= 0;) ++count;
  X509_free(cert);
  return count;
}

// Who is calling: the certificate's CN, looked up in the allow-list.
std::optional<Peer> Authenticate(Shared& shared, grpc::CallbackServerContext* context, std::string* why) {
  Peer peer;
  if (shared.options.insecure_plaintext) {
    // As Envelope.client_id in the broker's plaintext mode: declared, not proved.
    peer.authenticated = false;
    return peer;
  }
  std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
  std::vector<grpc::string_ref> names;
  if (auth && auth->IsPeerAuthenticated()) names = auth->FindPropertyValues("x509_common_name");
  if (names.size() != 1) {
    *why = "no client certificate with a common name (mTLS is required)";
    return std::nullopt;
  }
  const std::string name(names[0].data(), names[0].size());
  const std::vector<grpc::string_ref> pems = auth->FindPropertyValues("x509_pem_cert");
  int common_names = -1;
  if (pems.size() == 1) {
    std::string pem(pems[0].data(), pems[0].size());
    {
      std::lock_guard<std::mutex> lock(shared.certificates_mutex);
      if (auto it = shared.common_names.find(pem); it != shared.common_names.end()) common_names = it->second;
    }
    if (common_names < 0) {
      common_names = CommonNameCount(pems[0]);
      std::lock_guard<std::mutex> lock(shared.certificates_mutex);
      if (shared.common_names.size() >= Shared::kMaxCertificates) shared.common_names.clear();
      shared.common_names.emplace(std::move(pem), common_names);
    }
  }
  if (common_names != 1) {
    *why = common_names < 0 ? "the client certificate cannot be read"
                            : "the client certificate's subject holds " + std::to_string(common_names) +
                                  " common names; exactly one names the caller";
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(shared.mutex);
  for (const AllowedPeer& allowed : shared.allow_list.peers()) {
    if (allowed.kind == PeerKind::kClient && allowed.name == name) {
      peer.authenticated = true;
      peer.key_name = name;
      peer.role = allowed.role;
      return peer;
    }
  }
  *why = "the certificate's common name '" + name + "' is not a client in the broker's allow-list";
  return std::nullopt;
}

// A unary call: one request to the loop (two for some), finished by the
// reply `answer` turns into a response or a status.
template <typename Response>
class UnaryCall final : public grpc::ServerUnaryReactor, public GrpcFrontDoor::Call {
 public:
  // Returns the status to finish with, or nullopt to wait for another reply.
  using Answer = std::function<std::optional<grpc::Status>(const proto::Envelope& reply, Response* response)>;

  UnaryCall(Shared& shared, const char* method, Response* response, Answer answer)
      : shared_(shared), method_(method), response_(response), answer_(std::move(answer)) {}

  // Registers the call and sends `request` (after Authenticate).
  void Start(grpc::CallbackServerContext* context, proto::Envelope request, fleet::Frames frames = {}) {
    std::string why;
    std::optional<Peer> peer = Authenticate(shared_, context, &why);
    if (!peer) return FinishWith(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why));
    if (!peer->authenticated) request.set_client_id(ClientIdOf(context));
    context_ = context;
    uint64_t bytes = 0;
    for (const auto& frame : frames) bytes += frame.size();
    if (auto refused = reg_.Join(shared_, this, CallerOf(*peer, context), bytes)) return FinishWith(*refused);
    shared_.Send(reg_.identity, *peer, std::move(request), std::move(frames));
  }
  // Finishes the call: answered, refused, or before anything reached the
  // loop (a bad request, UNIMPLEMENTED). Its place among the caller's calls
  // is given back now, before the caller can see the answer, not when gRPC
  // is done with the reactor (OnDone): a caller that calls again at once
  // must find its place free.
  void FinishWith(const grpc::Status& status) {
    if (!reg_.identity.empty()) shared_.Forget(reg_.identity);
    shared_.Count(method_, status.error_code());
    Finish(status);
  }

  bool OnReply(const proto::Envelope& reply) override {
    if (reply.has_error() && reply.error().retry_after_ms() > 0 && context_) {
      // BUSY and UNAVAILABLE: when a retry (same request id) is likely to be taken.
      context_->AddTrailingMetadata("retry-after-ms", std::to_string(reply.error().retry_after_ms()));
    }
    if (reply.has_error() && !reply.error().leader().empty() && context_) {
      // NOT_LEADER from a standby: where the leader's front door is.
      context_->AddTrailingMetadata("zkfleet-leader", reply.error().leader());
    }
    std::optional<grpc::Status> status =
        reply.has_error() ? std::optional<grpc::Status>(StatusOf(reply.error())) : answer_(reply, response_);
    if (!status) return false;
    FinishWith(*status);
    return true;
  }
  void Abort(const grpc::Status& status) override { FinishWith(status); }

  void OnCancel() override {
    if (!reg_.handle) return;
    std::lock_guard<std::recursive_mutex> lock(reg_.handle->mutex);
    if (reg_.handle->call && !finished_) {
      finished_ = true;
      reg_.handle->call = nullptr;
      shared_.Forget(reg_.identity);
      shared_.Count(method_, grpc::StatusCode::CANCELLED);
      Finish(grpc::Status::CANCELLED);
    }
  }
  void OnDone() override {
    reg_.Leave(shared_);
    delete this;
  }

 private:
  Shared& shared_;
  const char* method_;
  Response* response_;
  Answer answer_;
  Registration reg_;
  grpc::CallbackServerContext* context_ = nullptr;  // gRPC's, valid until OnDone
  bool finished_ = false;
};

// AwaitJob: the job's state now (a GetJob), then its JobResult (an AWAIT),
// written one after the other; the stream ends after the result. The AWAIT
// goes first, so that its refusal (the role, another client's job) is the
// answer; a result that comes before the state waits for it.
class AwaitCall final : public grpc::ServerWriteReactor<v1::JobUpdate>, public GrpcFrontDoor::Call {
 public:
  explicit AwaitCall(Shared& shared) : shared_(shared) {}

  void Start(grpc::CallbackServerContext* context, uint64_t job_seq) {
    job_seq_ = job_seq;
    std::string why;
    std::optional<Peer> peer = Authenticate(shared_, context, &why);
    if (!peer) return End(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, why));
    if (auto refused = reg_.Join(shared_, this, CallerOf(*peer, context))) return End(*refused);
    proto::Envelope get, await;
    if (!peer->authenticated) {
      get.set_client_id(ClientIdOf(context));
      await.set_client_id(get.client_id());
    }
    get.mutable_get_job()->set_job_seq(job_seq);
    await.mutable_await()->set_job_seq(job_seq);
    shared_.Send(reg_.identity, *peer, std::move(await));
    shared_.Send(reg_.identity, *peer, std::move(get));
  }

  bool OnReply(const proto::Envelope& reply) override {
    if (ended_) return true;
    if (reply.has_error()) {
      End(StatusOf(reply.error()));
      return true;
    }
    // Never another job's state or result on this stream.
    if ((reply.has_job_info() && reply.job_info().job_seq() != job_seq_) ||
        (reply.has_job_result() && reply.job_result().job_seq() != job_seq_)) {
      End(grpc::Status(grpc::StatusCode::INTERNAL, "a reply for another job"));
      return true;
    }
    v1::JobUpdate update;
    if (reply.has_job_info()) {
      public_api::CopyByName(reply.job_info(), update.mutable_state());
      pending_.push_back(std::move(update));
      got_state_ = true;
      if (held_result_) {
        pending_.push_back(std::move(*held_result_));
        held_result_.reset();
        result_queued_ = true;
      }
    } else if (reply.has_job_result()) {
      public_api::CopyByName(reply.job_result(), update.mutable_result());
      if (got_state_) {
        pending_.push_back(std::move(update));
        result_queued_ = true;
      } else {
        held_result_ = std::move(update);  // the state first
      }
    } else {
      End(grpc::Status(grpc::StatusCode::INTERNAL, "unexpected reply to AwaitJob"));
      return true;
    }
    WriteNext();
    return result_queued_;
  }
  void Abort(const grpc::Status& status) override { End(status); }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::recursive_mutex> lock(Lock());
    writing_ = false;
    if (ended_) return Finish(final_status_);  // End waited for this write
    if (!ok) return End(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
    WriteNext();
  }
  void OnCancel() override {
    std::lock_guard<std::recursive_mutex> lock(Lock());
    End(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    reg_.Leave(shared_);
    delete this;
  }

 private:
  std::recursive_mutex& Lock() { return reg_.handle ? reg_.handle->mutex : own_mutex_; }
  void WriteNext() {
    if (ended_ || writing_) return;
    if (!pending_.empty()) {
      current_ = std::move(pending_.front());
      pending_.pop_front();
      writing_ = true;
      StartWrite(&current_);
      return;
    }
    if (result_queued_) End(grpc::Status::OK);
  }
  // Finishes the stream, or has OnWriteDone finish it once the write in
  // flight is done (no Finish while a write is outstanding).
  void End(const grpc::Status& status) {
    if (ended_) return;
    ended_ = true;
    final_status_ = status;
    if (!reg_.identity.empty()) shared_.Forget(reg_.identity);  // as UnaryCall::FinishWith
    shared_.Count("AwaitJob", status.error_code());
    if (!writing_) Finish(status);
  }

  Shared& shared_;
  Registration reg_;
  std::recursive_mutex own_mutex_;
  std::deque<v1::JobUpdate> pending_;
  v1::JobUpdate current_;
  grpc::Status final_status_;
  std::optional<v1::JobUpdate> held_result_;
  uint64_t job_seq_ = 0;
  bool writing_ = false, result_queued_ = false, ended_ = false, got_state_ = false;
};

}  // namespace

class FleetService final : public v1::Fleet::CallbackService {
 public:
  explicit FleetService(Shared& shared) : shared_(shared) {}

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context, const v1::SubmitJobRequest* request,
                                      v1::SubmitJobReply* response) override {
    auto* call = new UnaryCall<v1::SubmitJobReply>(
        shared_, "SubmitJob", response, [](const proto::Envelope& reply, v1::SubmitJobReply* out)
                                            -> std::optional<grpc::Status> {
          if (!reply.has_submit_reply()) return grpc::Status(grpc::StatusCode::INTERNAL, "unexpected reply");
          out->set_job_seq(reply.submit_reply().job_seq());
          out->set_duplicate(reply.submit_reply().duplicate());
          out->set_state(ToPublic(reply.submit_reply().state()));
          return grpc::Status::OK;
        });
    const int kinds = (request->inputs_size() > 0) + (request->witness_refs_size() > 0) + (request->witnesses_size() > 0);
    if (kinds > 1) {
      call->FinishWith(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                    "a job carries inputs, witness references or witnesses, not several kinds"));
      return call;
    }
    uint64_t inline_bytes = 0;
    for (const std::string& w : request->witnesses()) inline_bytes += w.size();
    if (inline_bytes > shared_.options.max_inline_bytes) {
      call->FinishWith(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          std::to_string(inline_bytes) + " bytes of inline witnesses exceed this broker's --grpc-max-inline-bytes (" +
              std::to_string(shared_.options.max_inline_bytes) +
              "): submit them by reference (witness_refs: a URL, its size and SHA-256), or as inputs"));
      return call;
    }
    proto::Envelope envelope;
    proto::SubmitRequest& submit = *envelope.mutable_submit();
    submit.set_request_id(request->request_id());
    submit.set_circuit_id(request->circuit_id());
    submit.set_priority(ToInternal(request->priority()));
    submit.set_deadline_unix_s(request->deadline_unix_s());
    for (const std::string& input : request->inputs()) submit.add_inputs(input);
    for (const v1::WitnessRef& ref : request->witness_refs()) public_api::CopyByName(ref, submit.add_witness_refs());
    for (const std::string& digest : request->public_signals_sha256()) submit.add_public_signals_sha256(digest);
    std::vector<fleet::WitnessFrames> witnesses;
    for (const std::string& w : request->witnesses()) {
      submit.add_witness_bytes(w.size());
      witnesses.push_back(fleet::ChunkWitness(zmq::message_t(w.data(), w.size())));
    }
    call->Start(context, std::move(envelope), fleet::FlattenWitnesses(std::move(witnesses)));
    return call;
  }

  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context, const v1::GetJobRequest* request,
                                   v1::JobInfo* response) override {
    proto::Envelope envelope;
    envelope.mutable_get_job()->set_job_seq(request->job_seq());
    return Forward(context, "GetJob", std::move(envelope), response, &proto::Envelope::has_job_info,
                   &proto::Envelope::job_info);
  }

  grpc::ServerWriteReactor<v1::JobUpdate>* AwaitJob(grpc::CallbackServerContext* context,
                                                    const v1::AwaitJobRequest* request) override {
    auto* call = new AwaitCall(shared_);
    call->Start(context, request->job_seq());
    return call;
  }

  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context, const v1::CancelJobRequest* request,
                                      v1::CancelReply* response) override {
    proto::Envelope envelope;
    envelope.mutable_cancel()->set_job_seq(request->job_seq());
    return Forward(context, "CancelJob", std::move(envelope), response, &proto::Envelope::has_cancel_reply,
                   &proto::Envelope::cancel_reply);
  }

  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context, const v1::ListJobsRequest* request,
                                     v1::ListJobsReply* response) override {
    proto::Envelope envelope;
    public_api::CopyByName(*request, envelope.mutable_list_jobs());
    return Forward(context, "ListJobs", std::move(envelope), response, &proto::Envelope::has_list_jobs_reply,
                   &proto::Envelope::list_jobs_reply);
  }

  grpc::ServerUnaryReactor* RetryJob(grpc::CallbackServerContext* context, const v1::RetryJobRequest* request,
                                     v1::JobInfo* response) override {
    proto::Envelope envelope;
    public_api::CopyByName(*request, envelope.mutable_retry_job());
    return Forward(context, "RetryJob", std::move(envelope), response, &proto::Envelope::has_job_info,
                   &proto::Envelope::job_info);
  }

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const v1::GetStatusRequest*,
                                      v1::StatusReply* response) override {
    proto::Envelope envelope;
    envelope.mutable_status();
    return Forward(context, "GetStatus", std::move(envelope), response, &proto::Envelope::has_status_reply,
                   &proto::Envelope::status_reply);
  }

  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context, const v1::ListWorkersRequest*,
                                        v1::ListWorkersReply* response) override {
    auto* call = new UnaryCall<v1::ListWorkersReply>(
        shared_, "ListWorkers", response,
        [](const proto::Envelope& reply, v1::ListWorkersReply* out) -> std::optional<grpc::Status> {
          if (!reply.has_status_reply()) return grpc::Status(grpc::StatusCode::INTERNAL, "unexpected reply");
          for (const proto::WorkerInfo& w : reply.status_reply().workers()) {
            public_api::CopyByName(w, out->add_workers());
          }
          return grpc::Status::OK;
        });
    proto::Envelope envelope;
    envelope.mutable_status();
    call->Start(context, std::move(envelope));
    return call;
  }

  grpc::ServerUnaryReactor* DrainWorker(grpc::CallbackServerContext* context,
                                        const v1::DrainWorkerRequest* request,
                                        v1::DrainWorkerReply* response) override {
    const bool wait = request->wait();
    auto* call = new UnaryCall<v1::DrainWorkerReply>(
        shared_, "DrainWorker", response,
        [wait](const proto::Envelope& reply, v1::DrainWorkerReply* out) -> std::optional<grpc::Status> {
          if (!reply.has_drain_worker_reply()) return grpc::Status(grpc::StatusCode::INTERNAL, "unexpected reply");
          // With wait, the broker answers twice: accepted, then gone.
          if (wait && !reply.drain_worker_reply().finished()) return std::nullopt;
          public_api::CopyByName(reply.drain_worker_reply(), out);
          return grpc::Status::OK;
        });
    proto::Envelope envelope;
    public_api::CopyByName(*request, envelope.mutable_drain_worker());
    call->Start(context, std::move(envelope));
    return call;
  }

 private:
  // The usual call: `request` to the loop, and the reply's body (has/get:
  // the Envelope's accessors of that body) as the public `Response`.
  template <typename Response, typename Internal>
  grpc::ServerUnaryReactor* Forward(grpc::CallbackServerContext* context, const char* method, proto::Envelope request,
                                    Response* response, bool (proto::Envelope::*has)() const,
                                    const Internal& (proto::Envelope::*get)() const) {
    auto* call = new UnaryCall<Response>(
        shared_, method, response,
        [has, get](const proto::Envelope& reply, Response* out) -> std::optional<grpc::Status> {
          if (!(reply.*has)()) return grpc::Status(grpc::StatusCode::INTERNAL, "unexpected reply");
          public_api::CopyByName((reply.*get)(), out);
          return grpc::Status::OK;
        });
    call->Start(context, std::move(request));
    return call;
  }

  Shared& shared_;
};

GrpcFrontDoor::GrpcFrontDoor(GrpcOptions options, PeerAllowList allow_list, metrics::BrokerMetrics* metrics)
    : shared_(std::make_shared<Shared>()) {
  shared_->options = std::move(options);
  shared_->metrics = metrics;
  shared_->allow_list = std::move(allow_list);

  const GrpcOptions& o = shared_->options;
  // gRPC core's lines (refused TLS handshakes among them) into the broker's log and metrics.
  RouteGrpcCoreLog(metrics, /*name_refused_peers=*/!o.insecure_plaintext);
  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (o.insecure_plaintext) {
    credentials = grpc::InsecureServerCredentials();
  } else {
    if (o.cert_file.empty() || o.key_file.empty() || o.client_ca_file.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the gRPC front door needs --grpc-cert, --grpc-key and --grpc-client-ca (mTLS), or "
                  "--grpc-insecure-plaintext");
    }
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = ReadPem(o.client_ca_file, "client CA");
    ssl.pem_key_cert_pairs.push_back({ReadPem(o.key_file, "key"), ReadPem(o.cert_file, "certificate")});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  service_ = std::make_unique<FleetService>(*shared_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, credentials, &port_);
  builder.RegisterService(service_.get());
  // Inline witnesses plus the request's other fields.
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<uint64_t>(o.max_inline_bytes + (1u << 20), INT32_MAX)));
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    throw Error(ErrorCode::kIo, "the gRPC front door cannot listen on " + o.listen);
  }
  // Health per service too (a load balancer or a Kubernetes gRPC probe may
  // ask for "zkfleet.v1.Fleet"; "" is the server as a whole).
  if (auto* health = server_->GetHealthCheckService()) health->SetServingStatus("zkfleet.v1.Fleet", true);
  spdlog::info("gRPC front door (zkfleet.v1.Fleet) on port {} ({})", port_,
               o.insecure_plaintext ? "PLAINTEXT: callers are not authenticated" : "TLS, client certificates required");
}

GrpcFrontDoor::~GrpcFrontDoor() {
  std::vector<std::shared_ptr<CallHandle>> open;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stopping = true;
    for (auto& [id, handle] : shared_->calls) open.push_back(handle);
  }
  for (auto& handle : open) {
    std::lock_guard<std::recursive_mutex> lock(handle->mutex);
    if (handle->call) {
      Call* call = handle->call;
      handle->call = nullptr;
      call->Abort(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the broker is stopping: call again"));
    }
  }
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  RouteGrpcCoreLog(nullptr);  // the metrics may go with this front door
}

void GrpcFrontDoor::Requeue(std::vector<GrpcRequest> requests) { shared_->requests.PutBack(std::move(requests)); }

std::vector<GrpcRequest> GrpcFrontDoor::TakeRequests() {
  std::deque<GrpcRequest> taken = shared_->requests.TakeAll();
  return {std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end())};
}

int GrpcFrontDoor::wake_fd() const { return shared_->requests.fd(); }

void GrpcFrontDoor::Deliver(const std::string& identity, const proto::Envelope& reply) {
  std::shared_ptr<CallHandle> handle;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    auto it = shared_->calls.find(std::strtoull(identity.c_str() + kGrpcPrefix.size(), nullptr, 10));
    if (it == shared_->calls.end()) return;  // the call has gone
    handle = it->second;
  }
  std::lock_guard<std::recursive_mutex> lock(handle->mutex);
  if (!handle->call) return;
  if (handle->call->OnReply(reply)) handle->call = nullptr;
}

void GrpcFrontDoor::SetAllowList(PeerAllowList allow_list) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->allow_list = std::move(allow_list);
}

}  // namespace zkfleet::broker
