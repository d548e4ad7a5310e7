#include "zkfleet/fleet/client.hpp"

#include "zkfleet/fleet/names.hpp"
#include "zkfleet/fleet/protocol.hpp"

namespace zkfleet::fleet {
namespace {

ErrorCode CodeFor(proto::ErrorKind kind) {
  switch (kind) {
    case proto::ERROR_KIND_BAD_REQUEST: return ErrorCode::kInvalidArgument;
    case proto::ERROR_KIND_UNKNOWN_CIRCUIT:
    case proto::ERROR_KIND_UNKNOWN_JOB:
    case proto::ERROR_KIND_UNKNOWN_WORKER: return ErrorCode::kNotFound;
    case proto::ERROR_KIND_VERSION_MISMATCH: return ErrorCode::kMismatch;
    case proto::ERROR_KIND_TOO_LARGE: return ErrorCode::kResourceExhausted;
    default: return ErrorCode::kInternal;
  }
}

void ThrowIfError(const proto::Envelope& envelope) {
  if (envelope.has_error()) throw BrokerError(envelope.error().kind(), envelope.error().message());
}

// The reply to request `id`. An ErrorReply with correlation id 0 answers a
// request the broker could not read (oversized or malformed), so it can only
// be the reply to the request we are waiting for.
bool IsReplyTo(const proto::Envelope& envelope, uint64_t id) {
  return envelope.correlation_id() == id || (envelope.has_error() && envelope.correlation_id() == 0);
}

}  // namespace

BrokerError::BrokerError(proto::ErrorKind kind, const std::string& message)
    : Error(CodeFor(kind), "broker: " + ErrorKindName(kind) + ": " + message), kind_(kind) {}

BrokerClient::BrokerClient(zmq::context_t& context, const std::string& endpoint, const SocketLimits& limits)
    : endpoint_(endpoint), limits_(limits), socket_(context, zmq::socket_type::dealer) {
  ConfigureDealer(socket_, limits_, /*linger_ms=*/0);
  socket_.connect(endpoint_);
}

uint64_t BrokerClient::Send(proto::Envelope envelope) {
  uint64_t id = next_correlation_id_++;
  envelope.set_correlation_id(id);
  socket_.send(zmq::buffer(EncodeEnvelope(envelope)), zmq::send_flags::none);
  return id;
}

void BrokerClient::SendRaw(const std::string& bytes) {
  socket_.send(zmq::buffer(bytes), zmq::send_flags::none);
}

std::optional<proto::Envelope> BrokerClient::ReceiveOne(Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, left);
    if (!(item.revents & ZMQ_POLLIN)) {
      if (Clock::now() >= deadline) return std::nullopt;
      continue;
    }
    zmq::message_t frame;
    if (!socket_.recv(frame, zmq::recv_flags::dontwait)) continue;
    // The broker sends single-frame messages; anything else is not ours.
    bool extra = frame.more();
    while (frame.more()) {
      if (!socket_.recv(frame, zmq::recv_flags::none)) break;
    }
    if (extra) continue;
    proto::Envelope envelope;
    if (DecodeEnvelope(frame.data(), frame.size(), limits_.max_message_bytes, envelope) == DecodeStatus::kOk) {
      return envelope;
    }
  }
}

std::optional<proto::Envelope> BrokerClient::Receive(std::chrono::milliseconds timeout) {
  if (!kept_.empty()) {
    proto::Envelope first = std::move(kept_.front());
    kept_.pop_front();
    return first;
  }
  return ReceiveOne(Clock::now() + timeout);
}

std::optional<proto::Envelope> BrokerClient::WaitFor(const std::function<bool(const proto::Envelope&)>& match,
                                                     Clock::time_point deadline) {
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (match(*it)) {
      proto::Envelope found = std::move(*it);
      kept_.erase(it);
      return found;
    }
  }
  for (;;) {
    auto envelope = ReceiveOne(deadline);
    if (!envelope) return std::nullopt;
    if (match(*envelope)) return envelope;
    kept_.push_back(std::move(*envelope));
  }
}

proto::Envelope BrokerClient::Call(proto::Envelope request, std::chrono::milliseconds timeout) {
  uint64_t id = Send(std::move(request));
  auto reply = WaitFor([id](const proto::Envelope& e) { return IsReplyTo(e, id); }, Clock::now() + timeout);
  if (!reply) {
    throw Error(ErrorCode::kIo, "no reply from the broker at " + endpoint_ + " within " +
                                    std::to_string(timeout.count()) + " ms (is zkbroker running there?)");
  }
  ThrowIfError(*reply);
  return std::move(*reply);
}

proto::SubmitReply BrokerClient::Submit(const proto::SubmitRequest& request, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  *envelope.mutable_submit() = request;
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_submit_reply()) throw Error(ErrorCode::kBadFormat, "broker answered SUBMIT with another message type");
  return reply.submit_reply();
}

proto::JobResult BrokerClient::Await(uint64_t job_seq, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_await()->set_job_seq(job_seq);
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_job_result()) throw Error(ErrorCode::kBadFormat, "broker answered AWAIT with another message type");
  return reply.job_result();
}

proto::StatusReply BrokerClient::Status(std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_status();
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_status_reply()) throw Error(ErrorCode::kBadFormat, "broker answered STATUS with another message type");
  return reply.status_reply();
}

proto::CancelReply BrokerClient::Cancel(uint64_t job_seq, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_cancel()->set_job_seq(job_seq);
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_cancel_reply()) throw Error(ErrorCode::kBadFormat, "broker answered CANCEL with another message type");
  return reply.cancel_reply();
}

proto::DrainWorkerReply BrokerClient::Drain(const std::string& worker_id, bool wait,
                                            std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_drain_worker()->set_worker_id(worker_id);
  envelope.mutable_drain_worker()->set_wait(wait);
  auto deadline = Clock::now() + timeout;
  uint64_t id = Send(std::move(envelope));
  for (;;) {
    auto reply = WaitFor([id](const proto::Envelope& e) { return IsReplyTo(e, id); }, deadline);
    if (!reply) {
      throw Error(ErrorCode::kIo, "no " + std::string(wait ? "drain completion" : "reply") + " from the broker at " +
                                      endpoint_ + " within " + std::to_string(timeout.count()) + " ms");
    }
    ThrowIfError(*reply);
    if (!reply->has_drain_worker_reply()) throw Error(ErrorCode::kBadFormat, "broker answered DRAIN with another message type");
    if (!wait || reply->drain_worker_reply().finished()) return reply->drain_worker_reply();
  }
}

std::optional<proto::JobResult> BrokerClient::NextJobResult(std::chrono::milliseconds timeout) {
  auto envelope = WaitFor([](const proto::Envelope& e) { return e.has_job_result() || e.has_error(); },
                          Clock::now() + timeout);
  if (!envelope) return std::nullopt;
  ThrowIfError(*envelope);
  return envelope->job_result();
}

}  // namespace zkfleet::fleet
