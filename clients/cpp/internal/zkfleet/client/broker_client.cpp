#include "zkfleet/client/broker_client.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "zkfleet/fleet/broker_endpoints.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/protocol.hpp"

namespace zkfleet::client::internal {
namespace {

ErrorCode CodeFor(proto::ErrorKind kind) {
  switch (kind) {
    case proto::ERROR_KIND_BAD_REQUEST: return ErrorCode::kInvalidArgument;
    case proto::ERROR_KIND_UNKNOWN_CIRCUIT:
    case proto::ERROR_KIND_UNKNOWN_JOB:
    case proto::ERROR_KIND_UNKNOWN_WORKER: return ErrorCode::kNotFound;
    case proto::ERROR_KIND_VERSION_MISMATCH: return ErrorCode::kMismatch;
    case proto::ERROR_KIND_TOO_LARGE:
    case proto::ERROR_KIND_BUSY: return ErrorCode::kResourceExhausted;
    case proto::ERROR_KIND_REQUEST_ID_REUSED:
    case proto::ERROR_KIND_FOREIGN_JOB: return ErrorCode::kMismatch;
    case proto::ERROR_KIND_UNAVAILABLE: return ErrorCode::kIo;
    case proto::ERROR_KIND_NOT_LEADER: return ErrorCode::kNotLeader;
    default: return ErrorCode::kInternal;
  }
}

void ThrowIfError(const proto::Envelope& envelope) {
  if (envelope.has_error()) {
    throw BrokerError(envelope.error().kind(), envelope.error().message(), envelope.error().retry_after_ms(),
                      envelope.error().leader());
  }
}

// The reply to request `id`. An ErrorReply with correlation id 0 answers a
// request the broker could not read (oversized or malformed), so it can only
// be the reply to the request we are waiting for.
// Longest a send may block (see SendBytes).
constexpr int kSendTimeoutMs = 10000;

bool IsReplyTo(const proto::Envelope& envelope, uint64_t id) {
  return envelope.correlation_id() == id || (envelope.has_error() && envelope.correlation_id() == 0);
}

// A standby's NOT_LEADER while no broker leads: ask again after its hint.
bool NoneLeads(const proto::ErrorReply& error) {
  return error.kind() == proto::ERROR_KIND_NOT_LEADER && error.leader().empty();
}

// The least wait before a request refused for now goes again.
constexpr auto kMinRetryWait = std::chrono::milliseconds(100);
// Following a list: how soon a request no connected broker could take is
// tried again (a handshake's connection may not be routable yet).
constexpr auto kUnsentRetry = std::chrono::milliseconds(100);

// "proof_json is not JSON: 'abc...'" for the message of an InvalidResultError.
std::string Excerpt(const std::string& text) {
  constexpr size_t kShown = 60;
  std::string shown = text.substr(0, kShown);
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return "'" + shown + (text.size() > kShown ? "...' (" + std::to_string(text.size()) + " bytes)" : "'");
}

}  // namespace

void CheckName(const std::string& what, const std::string& value, size_t max_bytes, const std::string& limit_name) {
  if (value.size() > max_bytes) {
    throw Error(ErrorCode::kInvalidArgument, what + " of " + std::to_string(value.size()) +
                                                 " bytes is longer than the broker's limit of " +
                                                 std::to_string(max_bytes) + " bytes (" + limit_name +
                                                 "); nothing was sent");
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const auto byte = static_cast<unsigned char>(value[i]);
    if (byte < 0x20 || byte == 0x7f) {
      throw Error(ErrorCode::kInvalidArgument, what + " holds a control byte (0x" + "0123456789abcdef"[byte >> 4] +
                                                   "0123456789abcdef"[byte & 15] + ") at offset " +
                                                   std::to_string(i) +
                                                   ", which the broker refuses; nothing was sent");
    }
  }
}

void CheckSubmitRequest(const proto::SubmitRequest& request) {
  CheckName("request id", request.request_id(), kMaxRequestIdBytes, "kMaxRequestIdBytes");
  CheckName("circuit id", request.circuit_id(), kMaxCircuitIdBytes, "kMaxCircuitIdBytes");
}

void CheckJobResult(const proto::JobResult& result) {
  if (result.state() != proto::JOB_STATE_SUCCEEDED) return;
  const std::string job = "job " + std::to_string(result.job_seq());
  if (result.partitions_size() == 0) {
    throw InvalidResultError(result.job_seq(), job + ": the broker's result is not a proof: it holds no partition");
  }
  for (const auto& p : result.partitions()) {
    for (const auto& [field, text] : {std::pair<const char*, const std::string*>{"proof_json", &p.proof_json()},
                                      std::pair<const char*, const std::string*>{"public_json", &p.public_json()}}) {
      // accept() runs the SAX parser without building a document: no
      // recursion, so a hostile nesting depth costs nothing but the scan.
      if (!nlohmann::json::accept(*text)) {
        throw InvalidResultError(result.job_seq(), job + ": the broker's result is not a proof: partition " +
                                                       std::to_string(p.partition()) + "'s " + field +
                                                       " is not JSON: " + Excerpt(*text));
      }
    }
  }
}

BrokerError::BrokerError(proto::ErrorKind kind, const std::string& message, uint32_t retry_after_ms,
                         std::string leader)
    : Error(CodeFor(kind), "broker: " + wire::ErrorKindName(kind) + ": " + message),
      kind_(kind),
      retry_after_ms_(retry_after_ms),
      leader_(std::move(leader)) {}

bool BrokerError::retryable() const {
  return kind_ == proto::ERROR_KIND_BUSY || kind_ == proto::ERROR_KIND_UNAVAILABLE ||
         (kind_ == proto::ERROR_KIND_NOT_LEADER && leader_.empty());
}

BrokerClient::BrokerClient(zmq::context_t& context, const std::string& endpoint, const fleet::ClientSecurity& security,
                           const fleet::SocketLimits& limits, std::string client_id)
    : endpoints_(fleet::ParseBrokerEndpoints(endpoint)),
      endpoint_(fleet::DescribeBrokerEndpoints(endpoints_)),
      following_(endpoints_.size() > 1),
      plaintext_(security.plaintext),
      limits_(limits),
      client_id_(std::move(client_id)) {
  security.CheckFits(endpoints_.size());
  static std::atomic<uint64_t> monitors{0};
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    zmq::socket_t& socket = sockets_.emplace_back(context, zmq::socket_type::dealer);
    ConfigureDealer(socket, limits_, /*linger_ms=*/0);
    socket.set(zmq::sockopt::sndtimeo, kSendTimeoutMs);
    // Following a list: requests only over completed connections (a send to
    // a broker not connected fails at once instead of waiting in a queue).
    if (following_) socket.set(zmq::sockopt::immediate, 1);
    const std::string address = "inproc://zkfleet-client-monitor-" + std::to_string(monitors++) + "-" +
                                std::to_string(reinterpret_cast<uintptr_t>(this));
    if (zmq_socket_monitor(socket.handle(), address.c_str(),
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0) {
      throw Error(ErrorCode::kInternal,
                  "cannot monitor the broker connection: " + std::string(zmq_strerror(zmq_errno())));
    }
    zmq::socket_t& monitor = monitors_.emplace_back(context, zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect(address);
    security.Apply(socket, i);  // CURVE takes the server key in force at connect()
    socket.connect(endpoints_[i]);
  }
}

bool BrokerClient::SendToBrokers(const std::string& bytes, fleet::Frames* frames, bool any) {
  auto send_to = [&](size_t i) {
    const bool more = frames && !frames->empty();
    if (!sockets_[i].send(zmq::buffer(bytes), zmq::send_flags::dontwait | (more ? zmq::send_flags::sndmore
                                                                                 : zmq::send_flags::none))) {
      return false;  // not connected (ZMQ_IMMEDIATE), or its queue is full
    }
    if (more) {
      fleet::Frames shared;
      shared.reserve(frames->size());
      for (zmq::message_t& frame : *frames) shared.push_back(fleet::ShareFrame(frame));
      fleet::SendFrames(sockets_[i], shared);
    }
    return true;
  };
  if (leader_) {
    if (send_to(*leader_)) return true;
    leader_.reset();  // its connection is gone
  }
  for (size_t k = 0; k < endpoints_.size(); ++k) {
    const size_t i = (cursor_ + k) % endpoints_.size();
    if (!any && standbys_.count(i)) continue;
    if (send_to(i)) {
      cursor_ = i;
      return true;
    }
  }
  return false;
}

BrokerClient::~BrokerClient() {
  for (zmq::socket_t& socket : sockets_) zmq_socket_monitor(socket.handle(), nullptr, 0);
}

bool BrokerClient::SendBytes(proto::Envelope& envelope, fleet::Frames* frames) {
  // A DEALER with no usable connection (e.g. refused at the CURVE handshake)
  // would block here for ever: the socket has a send timeout instead. Once
  // the first part is queued the whole message is.
  const bool more = frames && !frames->empty();
  if (following_) {
    if (SendToBrokers(wire::EncodeEnvelope(envelope), frames, /*any=*/true)) return true;
    // No broker can take it now: sent again on the next connection, or soon.
    unsent_ = true;
    if (!resend_at_) resend_at_ = Clock::now() + kUnsentRetry;
    return false;
  }
  zmq::socket_t& socket = sockets_.front();
  if (!socket.send(zmq::buffer(wire::EncodeEnvelope(envelope)), more ? zmq::send_flags::sndmore : zmq::send_flags::none)) {
    // A handshake that failed before the send left no connection to send on:
    // say why, as a wait for the reply would have (HandshakeProblem).
    OnMonitorEvents();
    if (!HandshakeProblem().empty()) throw NoReplyError(NoReplyMessage("reply", std::chrono::milliseconds(kSendTimeoutMs)));
    throw Error(ErrorCode::kIo, "cannot send to the broker at " + endpoint_ +
                                    ": no connection (refused at the handshake? check --curve-secret-key, "
                                    "--broker-public-key and the broker's allow-list)");
  }
  if (more) {
    fleet::Frames shared;
    shared.reserve(frames->size());
    for (zmq::message_t& frame : *frames) shared.push_back(fleet::ShareFrame(frame));
    fleet::SendFrames(socket, shared);
  }
  return true;
}

uint64_t BrokerClient::Send(proto::Envelope envelope, fleet::Frames frames) {
  uint64_t id = next_correlation_id_++;
  envelope.set_correlation_id(id);
  envelope.set_client_id(client_id_);
  SendBytes(envelope, &frames);
  if (envelope.has_submit()) {
    unanswered_submits_[id] = {std::move(envelope), std::move(frames)};
  } else if (envelope.has_await()) {
    awaited_jobs_[envelope.await().job_seq()] = id;
    delivered_jobs_.erase(envelope.await().job_seq());  // asked again: deliver again
  } else if (following_) {
    pending_calls_[id] = std::move(envelope);
  }
  return id;
}

bool BrokerClient::Track(const proto::Envelope& envelope) {
  const uint64_t id = envelope.correlation_id();
  pending_calls_.erase(id);
  if (envelope.has_submit_reply()) {
    unanswered_submits_.erase(id);
    const auto& reply = envelope.submit_reply();
    if (!reply.result_expired()) awaited_jobs_.try_emplace(reply.job_seq(), id);
  } else if (envelope.has_error()) {
    unanswered_submits_.erase(id);
    for (auto it = awaited_jobs_.begin(); it != awaited_jobs_.end(); ++it) {
      if (it->second != id || id == 0) continue;
      if (envelope.error().kind() == proto::ERROR_KIND_UNAVAILABLE || NoneLeads(envelope.error())) {
        // The broker could not write its journal in the turn that answered
        // this wait (its AWAIT, or the result pushed for its SUBMIT): nothing
        // of it stood. Or a standby answered while no broker leads. The wait
        // goes on: the job is AWAITed again, under the same correlation id,
        // after the broker's hint.
        const auto after = std::max<std::chrono::milliseconds>(
            std::chrono::milliseconds(envelope.error().retry_after_ms()), kMinRetryWait);
        reawait_at_[it->first] = Clock::now() + after;
        return false;
      }
      awaited_jobs_.erase(it);
      break;
    }
  } else if (envelope.has_job_result()) {
    const uint64_t job = envelope.job_result().job_seq();
    awaited_jobs_.erase(job);
    reawait_at_.erase(job);
    if (!delivered_jobs_.insert(job).second) {  // a copy (resent AWAIT): once only
      ++duplicate_results_dropped_;
      return false;
    }
  }
  return true;
}

std::string BrokerClient::HandshakeProblem() const {
  if (auth_refused_) {
    return "it refused this client's key at the CURVE handshake: is this key's public half in the broker's "
           "allow-list (zkbroker --allow-dir)?";
  }
  // One closed handshake may be a broker restarting mid-handshake; a few in
  // a row are not. A protocol failure (the two sides' mechanisms differ) is
  // final at once: libzmq does not even retry it.
  if (handshakes_failed_ == 0) return "";
  if (last_handshake_failure_ != HandshakeFailure::kProtocol && handshakes_failed_ < kHandshakeFailuresToGiveUp) {
    return "";
  }
  if (plaintext_) {
    return "the handshake failed: the broker there speaks CURVE, so this client needs --curve-secret-key and "
           "--broker-public-key instead of --insecure-plaintext";
  }
  if (last_handshake_failure_ == HandshakeFailure::kProtocol) {
    return "the CURVE handshake failed on the protocol: is the broker run with --insecure-plaintext, or is "
           "something else listening there?";
  }
  return "it closed the connection during the CURVE handshake " + std::to_string(handshakes_failed_) +
         " times in a row: is --broker-public-key the public key of the broker listening there (its broker.pub)?";
}

std::string BrokerClient::NoReplyMessage(const std::string& what, std::chrono::milliseconds timeout) const {
  if (std::string problem = HandshakeProblem(); !problem.empty()) {
    return "no " + what + " from the broker at " + endpoint_ + ": " + problem;
  }
  if (!last_not_leader_.empty()) {
    return "no " + what + " from the broker at " + endpoint_ + " within " + std::to_string(timeout.count()) +
           " ms: no broker of the list leads; the last standby to answer said: " + last_not_leader_;
  }
  return "no " + what + " from the broker at " + endpoint_ + " within " + std::to_string(timeout.count()) +
         " ms (is zkbroker running there?)";
}

void BrokerClient::OnMonitorEvents() {
  zmq::message_t event;
  zmq::message_t address;
  bool resend = false;
  for (size_t i = 0; i < monitors_.size(); ++i) {
    while (monitors_[i].recv(event, zmq::recv_flags::dontwait)) {
      if (event.more()) (void)monitors_[i].recv(address, zmq::recv_flags::none);
      if (event.size() < sizeof(uint16_t)) continue;
      uint16_t type = 0;
      std::memcpy(&type, event.data(), sizeof(type));
      if (type == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) auth_refused_ = true;
      if (type == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
        ++handshakes_failed_;
        last_handshake_failure_ = HandshakeFailure::kClosed;
      }
      if (type == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
        ++handshakes_failed_;
        last_handshake_failure_ = HandshakeFailure::kProtocol;
      }
      if (type == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        auth_refused_ = false;
        handshakes_failed_ = 0;
        live_.insert(i);
        standbys_.erase(i);  // a broker (re)started: it may lead now
        // Following a list, a new connection changes nothing while the
        // leader is known (a standby came back); else it may be the leader's.
        if (++handshakes_ > 1 || unsent_) resend = resend || !following_ || !leader_ || unsent_;
      }
      // Following a list, the leader's connection gone (or one while no
      // leader is known) while another lives: what it held goes again, to
      // the ones that live.
      if (type == ZMQ_EVENT_DISCONNECTED && live_.erase(i) > 0 && following_) {
        standbys_.erase(i);
        if (!leader_ || leader_ == i) {
          leader_.reset();
          resend = resend || !live_.empty();
        }
      }
    }
  }
  if (!resend) return;
  // A new connection: the broker may have restarted (or a standby now leads)
  // and know nothing of this one. Requests it may not have made durable go
  // again, as does every wait.
  ++reconnections_;
  ResendOutstanding();
}

proto::Envelope BrokerClient::MakeAwait(uint64_t job_seq, uint64_t id) const {
  proto::Envelope await;
  await.set_correlation_id(id);
  await.set_client_id(client_id_);
  await.mutable_await()->set_job_seq(job_seq);
  return await;
}

void BrokerClient::ResendOutstanding() {
  unsent_ = false;
  resend_at_.reset();
  // A send that fails (following a list, no broker leads) leaves the rest
  // for the next connection too.
  for (auto& [id, submit] : unanswered_submits_) {
    if (!SendBytes(submit.envelope, &submit.witnesses)) return;
  }
  for (const auto& [job_seq, id] : awaited_jobs_) {
    proto::Envelope await = MakeAwait(job_seq, id);
    if (!SendBytes(await)) return;
  }
  for (auto& [id, call] : pending_calls_) {
    if (!SendBytes(call)) return;
  }
}

void BrokerClient::OnNotLeader(size_t from, const proto::Envelope& envelope) {
  const proto::ErrorReply& error = envelope.error();
  last_not_leader_ = error.message();
  standbys_.insert(from);
  if (leader_ == from) leader_.reset();
  // The leader it names, when it is one of ours, is asked next.
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (!error.leader().empty() && endpoints_[i] == error.leader()) cursor_ = i;
  }
  const uint64_t id = envelope.correlation_id();
  if (id == 0) return;
  // To a broker not known to stand by; when every connected one has, the
  // requests wait for a new connection or the standby's hint.
  if (auto submit = unanswered_submits_.find(id); submit != unanswered_submits_.end()) {
    if (SendToBrokers(wire::EncodeEnvelope(submit->second.envelope), &submit->second.witnesses, /*any=*/false)) return;
  } else if (auto call = pending_calls_.find(id); call != pending_calls_.end()) {
    if (SendToBrokers(wire::EncodeEnvelope(call->second), nullptr, /*any=*/false)) return;
  } else {
    bool awaited = false;
    for (const auto& [job_seq, awaited_by] : awaited_jobs_) {
      if (awaited_by != id) continue;
      awaited = true;
      proto::Envelope await = MakeAwait(job_seq, id);
      if (SendToBrokers(wire::EncodeEnvelope(await), nullptr, /*any=*/false)) return;
      break;
    }
    if (!awaited) return;  // answered meanwhile
  }
  const auto after = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(error.retry_after_ms()),
                                                         kMinRetryWait * 5);
  if (!resend_at_) resend_at_ = Clock::now() + after;
}

void BrokerClient::SendDueAwaits() {
  const auto now = Clock::now();
  for (auto it = reawait_at_.begin(); it != reawait_at_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    if (auto awaited = awaited_jobs_.find(it->first); awaited != awaited_jobs_.end()) {
      proto::Envelope await = MakeAwait(it->first, awaited->second);
      SendBytes(await);
    }
    it = reawait_at_.erase(it);
  }
}

void BrokerClient::SendRaw(const std::string& bytes) {
  if (following_) {
    SendToBrokers(bytes, nullptr, /*any=*/true);
    return;
  }
  sockets_.front().send(zmq::buffer(bytes), zmq::send_flags::none);
}

std::optional<proto::Envelope> BrokerClient::ReceiveOne(Clock::time_point deadline) {
  for (;;) {
    SendDueAwaits();
    if (resend_at_ && Clock::now() >= *resend_at_) {
      standbys_.clear();  // they may lead now
      ResendOutstanding();
    }
    auto wake = deadline;
    for (const auto& [job_seq, at] : reawait_at_) wake = std::min(wake, at);
    if (resend_at_) wake = std::min(wake, *resend_at_);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now());
    if (left.count() < 0) left = std::chrono::milliseconds(0);
    std::vector<zmq::pollitem_t> items;
    for (zmq::socket_t& monitor : monitors_) items.push_back({monitor.handle(), 0, ZMQ_POLLIN, 0});
    for (zmq::socket_t& socket : sockets_) items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), left);
    const size_t n = sockets_.size();
    bool events = false;
    for (size_t i = 0; i < n; ++i) events = events || (items[i].revents & ZMQ_POLLIN);
    if (events) OnMonitorEvents();
    // Nothing will ever be answered over a handshake that keeps failing: say
    // so now rather than at the end of the timeout.
    if (!HandshakeProblem().empty()) return std::nullopt;
    std::optional<size_t> from;
    for (size_t i = 0; i < n && !from; ++i) {
      if (items[n + i].revents & ZMQ_POLLIN) from = i;
    }
    if (!from) {
      if (Clock::now() >= deadline) return std::nullopt;
      continue;
    }
    zmq::message_t frame;
    fleet::Frames extra;
    if (!fleet::ReceiveMultipart(sockets_[*from], frame, extra, zmq::recv_flags::dontwait)) continue;
    // The broker sends single-frame messages; anything else is not ours.
    if (!extra.empty()) continue;
    proto::Envelope envelope;
    if (wire::DecodeEnvelope(frame.data(), frame.size(), limits_.max_message_bytes, envelope) != wire::DecodeStatus::kOk) {
      continue;
    }
    if (following_) {
      if (envelope.has_error() && envelope.error().kind() == proto::ERROR_KIND_NOT_LEADER) {
        OnNotLeader(*from, envelope);
        continue;
      }
      leader_ = *from;
      cursor_ = *from;
      last_not_leader_.clear();
    }
    if (Track(envelope)) return envelope;
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

proto::Envelope BrokerClient::Call(proto::Envelope request, std::chrono::milliseconds timeout, fleet::Frames frames) {
  uint64_t id = Send(std::move(request), std::move(frames));
  auto reply = WaitFor([id](const proto::Envelope& e) { return IsReplyTo(e, id); }, Clock::now() + timeout);
  // Answered, accepted or refused: never resent after a reconnect. (Track()
  // has done this for a reply under `id`; an ErrorReply with id 0, for a
  // request the broker could not read, it cannot attribute.)
  if (reply) unanswered_submits_.erase(id);
  pending_calls_.erase(id);
  if (!reply) {
    throw NoReplyError(NoReplyMessage("reply", timeout));
  }
  ThrowIfError(*reply);
  return std::move(*reply);
}

proto::SubmitReply BrokerClient::Submit(const proto::SubmitRequest& request, const std::vector<std::string>& witnesses,
                                        std::chrono::milliseconds timeout) {
  fleet::Frames frames;
  for (const std::string& witness : witnesses) frames.push_back(fleet::FrameFromString(witness));
  return Submit(request, std::move(frames), timeout);
}

proto::SubmitReply BrokerClient::Submit(const proto::SubmitRequest& request, fleet::Frames witnesses,
                                        std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::mt19937 jitter(std::random_device{}());
  double backoff_s = 0;
  for (;;) {
    proto::Envelope envelope;
    *envelope.mutable_submit() = request;
    envelope.mutable_submit()->clear_witness_bytes();
    std::vector<fleet::WitnessFrames> chunked;  // the originals stay for a BUSY retry
    for (zmq::message_t& witness : witnesses) {
      envelope.mutable_submit()->add_witness_bytes(witness.size());
      chunked.push_back(fleet::ChunkWitness(fleet::ShareFrame(witness)));
    }
    fleet::Frames shared = fleet::FlattenWitnesses(std::move(chunked));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    try {
      auto reply = Call(std::move(envelope), std::max(left, std::chrono::milliseconds(1)), std::move(shared));
      if (!reply.has_submit_reply()) {
        throw Error(ErrorCode::kBadFormat, "broker answered SUBMIT with another message type");
      }
      return reply.submit_reply();
    } catch (const BrokerError& e) {
      if (!e.retryable()) throw;
      // Back off: the broker's hint, doubled per refusal (from 100 ms: an
      // UNAVAILABLE may come without a hint), capped, with jitter so that
      // many refused clients do not come back in step.
      backoff_s = std::min(30.0, std::max(e.retry_after_ms() / 1000.0, std::max(backoff_s * 2, 0.1)));
      double wait_s = backoff_s * std::uniform_real_distribution<double>(0.75, 1.25)(jitter);
      if (Clock::now() + std::chrono::duration<double>(wait_s) >= deadline) throw;
      if (busy_observer_) busy_observer_(e.what(), wait_s);
      std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
    }
  }
}

proto::JobResult BrokerClient::Await(uint64_t job_seq, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_await()->set_job_seq(job_seq);
  proto::Envelope reply;
  try {
    reply = Call(std::move(envelope), timeout);
  } catch (const NoReplyError&) {
    // The broker answers an AWAIT when the job ends: silence from a broker
    // this client is connected to is a job still running, not a broker gone.
    if (handshakes_ == 0 || !HandshakeProblem().empty()) throw;
    throw NoReplyError("job " + std::to_string(job_seq) + " did not end within " + std::to_string(timeout.count()) +
                       " ms; the broker at " + endpoint_ + " is connected and the job may still be queued or "
                       "running (zkctl job " + std::to_string(job_seq) + " shows it; a longer --wait-timeout waits)");
  }
  if (!reply.has_job_result()) throw Error(ErrorCode::kBadFormat, "broker answered AWAIT with another message type");
  CheckJobResult(reply.job_result());
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

proto::JobInfo BrokerClient::GetJob(uint64_t job_seq, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_get_job()->set_job_seq(job_seq);
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_job_info()) throw Error(ErrorCode::kBadFormat, "broker answered GET_JOB with another message type");
  return reply.job_info();
}

proto::JobInfo BrokerClient::RetryJob(uint64_t job_seq, uint32_t attempt, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_retry_job()->set_job_seq(job_seq);
  envelope.mutable_retry_job()->set_attempt(attempt);
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_job_info()) throw Error(ErrorCode::kBadFormat, "broker answered RETRY_JOB with another message type");
  return reply.job_info();
}

proto::ListJobsReply BrokerClient::ListJobs(const proto::ListJobsRequest& request, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  *envelope.mutable_list_jobs() = request;
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_list_jobs_reply()) {
    throw Error(ErrorCode::kBadFormat, "broker answered LIST_JOBS with another message type");
  }
  return reply.list_jobs_reply();
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
    pending_calls_.erase(id);
    if (!reply) {
      throw NoReplyError(NoReplyMessage(wait ? "drain completion" : "reply", timeout));
    }
    ThrowIfError(*reply);
    if (!reply->has_drain_worker_reply()) throw Error(ErrorCode::kBadFormat, "broker answered DRAIN with another message type");
    if (!wait || reply->drain_worker_reply().finished()) return reply->drain_worker_reply();
  }
}

proto::UndrainWorkerReply BrokerClient::Undrain(const std::string& worker_id, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  envelope.mutable_undrain_worker()->set_worker_id(worker_id);
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_undrain_worker_reply()) {
    throw Error(ErrorCode::kBadFormat, "broker answered UNDRAIN with another message type");
  }
  return reply.undrain_worker_reply();
}

proto::ReloadReply BrokerClient::Reload(const std::vector<std::string>& workers, std::chrono::milliseconds timeout) {
  proto::Envelope envelope;
  for (const std::string& id : workers) envelope.mutable_reload()->add_workers(id);
  envelope.mutable_reload();
  auto reply = Call(std::move(envelope), timeout);
  if (!reply.has_reload_reply()) throw Error(ErrorCode::kBadFormat, "broker answered RELOAD with another message type");
  return reply.reload_reply();
}

std::optional<proto::JobResult> BrokerClient::NextJobResult(std::chrono::milliseconds timeout) {
  auto envelope = WaitFor([](const proto::Envelope& e) { return e.has_job_result() || e.has_error(); },
                          Clock::now() + timeout);
  if (!envelope) return std::nullopt;
  ThrowIfError(*envelope);
  CheckJobResult(envelope->job_result());
  return envelope->job_result();
}

std::optional<proto::JobResult> BrokerClient::NextJobResult(uint64_t job_seq, std::chrono::milliseconds timeout) {
  // An ErrorReply to the request that asked for this job's result (its
  // SUBMIT or AWAIT, whose correlation id the job is tracked under) ends the wait.
  auto tracked = awaited_jobs_.find(job_seq);
  const uint64_t asked_by = tracked == awaited_jobs_.end() ? 0 : tracked->second;
  auto envelope = WaitFor(
      [job_seq, asked_by](const proto::Envelope& e) {
        return (e.has_job_result() && e.job_result().job_seq() == job_seq) ||
               (e.has_error() && asked_by != 0 && e.correlation_id() == asked_by);
      },
      Clock::now() + timeout);
  if (!envelope) return std::nullopt;
  ThrowIfError(*envelope);
  CheckJobResult(envelope->job_result());
  return envelope->job_result();
}

}  // namespace zkfleet::client::internal
