#include "zkfleet/broker/standby_responder.hpp"

#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/wire/protocol.hpp"

namespace zkfleet::broker {
namespace {

// Messages answered per socket per Serve() call, so neither side starves.
constexpr int kAnswerBudget = 256;
// How soon a port that could not be bound is tried again.
constexpr auto kBindRetry = std::chrono::seconds(5);
// What a client is told to wait while no broker leads (a standby takes over
// within the leader's lease TTL).
constexpr uint32_t kNoLeaderRetryAfterMs = 1000;

}  // namespace

StandbyResponder::StandbyResponder(zmq::context_t& context, const BrokerOptions& options, LeaderAddress self)
    : context_(context), options_(options), self_(std::move(self)) {
  if (options_.security.plaintext) return;
  auto loaded = PeerAllowList::Load(options_.security.allow_dir);
  allow_list_ = loaded.list;
  zap_ = std::make_unique<ZapHandler>(context_, std::move(loaded.list));
}

StandbyResponder::~StandbyResponder() { Close(); }

bool StandbyResponder::ShouldBind() const {
  if (!leader_) return bound_;  // none leads: keep answering as we were
  if (!HasFixedPort(options_.client_endpoint) || !HasFixedPort(options_.worker_endpoint)) return false;
  // The leader at our own address (a shared address): its followers must
  // find nothing here but the leader.
  if (leader_->clients == self_.clients || leader_->workers == self_.workers) return false;
  return true;
}

bool StandbyResponder::ShouldServeGrpc() const {
  // The leader's front door would refuse the same mismatch at start.
  return !options_.grpc.listen.empty() && HasFixedGrpcPort(options_.grpc.listen) &&
         options_.grpc.insecure_plaintext == options_.security.plaintext && leader_ && leader_->grpc != self_.grpc;
}

void StandbyResponder::SetLeader(const std::optional<LeaderAddress>& leader) {
  leader_ = leader;
  const bool want = ShouldBind();
  if (want && !bound_ && Clock::now() >= next_bind_try_) Bind();
  if (!want && bound_) Unbind();
}

void StandbyResponder::Bind() {
  next_bind_try_ = Clock::now() + kBindRetry;
  try {
    clients_.emplace(context_, zmq::socket_type::router);
    workers_.emplace(context_, zmq::socket_type::router);
    fleet::ConfigureRouter(*clients_, options_.limits);
    fleet::ConfigureRouter(*workers_, options_.limits);
    if (zap_) {
      fleet::ConfigureCurveServer(*clients_, options_.security.server, kClientZapDomain);
      fleet::ConfigureCurveServer(*workers_, options_.security.server, kWorkerZapDomain);
    }
    clients_->bind(options_.client_endpoint);
    workers_->bind(options_.worker_endpoint);
  } catch (const zmq::error_t& e) {
    spdlog::warn("standing by: cannot bind {} and {} to answer \"not the leader\" ({}); clients and workers that "
                 "reach this host find nothing there (tried again in {} s)",
                 options_.client_endpoint, options_.worker_endpoint, e.what(),
                 std::chrono::duration_cast<std::chrono::seconds>(kBindRetry).count());
    clients_.reset();
    workers_.reset();
    return;
  }
  bound_ = true;
  if (ShouldServeGrpc()) {
    try {
      grpc_ = std::make_unique<GrpcFrontDoor>(options_.grpc, allow_list_, nullptr);
    } catch (const Error& e) {
      spdlog::warn("standing by: gRPC callers on {} are not answered: {}", options_.grpc.listen, e.what());
    }
  }
  spdlog::info("standing by: clients on {} and workers on {}{} are told that {} leads", options_.client_endpoint,
               options_.worker_endpoint, grpc_ ? " and gRPC callers on " + options_.grpc.listen : std::string(),
               leader_ ? leader_->Describe() : std::string("no broker"));
}

void StandbyResponder::Unbind() {
  grpc_.reset();     // open calls end UNAVAILABLE; the port is free after
  clients_.reset();  // linger 0 (ConfigureRouter): closed at once
  workers_.reset();
  if (bound_) spdlog::info("standing by: the client and worker ports are closed");
  bound_ = false;
}

void StandbyResponder::Close() {
  Unbind();
  zap_.reset();
}

std::string StandbyResponder::Hint() const {
  if (!leader_) return "no broker leads now; one will within the leader lease's TTL: try again";
  return leader_->Describe() + " leads";
}

void StandbyResponder::Serve(std::chrono::milliseconds timeout) {
  zmq::pollitem_t items[4] = {
      {zap_ ? zap_->socket().handle() : nullptr, -1, ZMQ_POLLIN, 0},
      {bound_ ? clients_->handle() : nullptr, -1, ZMQ_POLLIN, 0},
      {bound_ ? workers_->handle() : nullptr, -1, ZMQ_POLLIN, 0},
      {nullptr, grpc_ ? grpc_->wake_fd() : -1, ZMQ_POLLIN, 0},
  };
  zmq::poll(items, 4, timeout);
  if (zap_ && (items[0].revents & ZMQ_POLLIN)) {
    while (zap_->HandleOne()) {
    }
  }
  if (!bound_) return;
  if (items[1].revents & ZMQ_POLLIN) AnswerClients();
  if (items[2].revents & ZMQ_POLLIN) AnswerWorkers();
  if (grpc_ && (items[3].revents & ZMQ_POLLIN)) AnswerGrpcCallers();
}

void StandbyResponder::AnswerGrpcCallers() {
  for (GrpcRequest& request : grpc_->TakeRequests()) {
    proto::Envelope reply = wire::MakeErrorReply(
        proto::ERROR_KIND_NOT_LEADER,
        "the broker at " + self_.grpc + " stands by and did nothing with this call: " + Hint(),
        request.envelope.correlation_id());
    proto::ErrorReply& error = *reply.mutable_error();
    if (leader_) error.set_leader(leader_->grpc);
    error.set_standby(self_.grpc);
    if (!leader_) error.set_retry_after_ms(kNoLeaderRetryAfterMs);
    grpc_->Deliver(request.identity, reply);
    ++answered_;
  }
}

void StandbyResponder::AnswerClients() {
  zmq::message_t identity;
  for (int i = 0; i < kAnswerBudget; ++i) {
    fleet::Frames frames;  // the envelope, then a SUBMIT's witnesses (dropped)
    if (!fleet::ReceiveMultipart(*clients_, identity, frames, zmq::recv_flags::dontwait)) return;
    uint64_t correlation_id = 0;
    proto::Envelope request;
    if (!frames.empty() && wire::DecodeEnvelope(frames.front().data(), frames.front().size(),
                                                options_.limits.max_message_bytes, request) == wire::DecodeStatus::kOk) {
      correlation_id = request.correlation_id();
    }
    proto::Envelope reply = wire::MakeErrorReply(
        proto::ERROR_KIND_NOT_LEADER,
        "the broker at " + self_.clients + " stands by and did nothing with this request: " + Hint(), correlation_id);
    proto::ErrorReply& error = *reply.mutable_error();
    if (leader_) error.set_leader(leader_->clients);
    error.set_standby(self_.clients);
    if (!leader_) error.set_retry_after_ms(kNoLeaderRetryAfterMs);
    (void)fleet::SendToPeer(*clients_, identity.to_string(), wire::EncodeEnvelope(reply));
    ++answered_;
  }
}

void StandbyResponder::AnswerWorkers() {
  zmq::message_t identity;
  for (int i = 0; i < kAnswerBudget; ++i) {
    fleet::Frames frames;
    if (!fleet::ReceiveMultipart(*workers_, identity, frames, zmq::recv_flags::dontwait)) return;
    proto::Envelope reply;
    reply.set_version(proto::PROTOCOL_VERSION_CURRENT);
    proto::Disconnect& disconnect = *reply.mutable_disconnect();
    disconnect.set_not_leader(true);
    disconnect.set_reason("the broker at " + self_.workers + " stands by: " + Hint());
    if (leader_) disconnect.set_leader(leader_->workers);
    (void)fleet::SendToPeer(*workers_, identity.to_string(), wire::EncodeEnvelope(reply));
    ++answered_;
  }
}

}  // namespace zkfleet::broker
