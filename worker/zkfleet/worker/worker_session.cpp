// The worker's session with the broker: socket, heartbeats, liveness,
// receive, poll loop (see worker_session.hpp).
#include "zkfleet/worker/worker_session.hpp"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/fleet/broker_endpoints.hpp"
#include "zkfleet/wire/protocol.hpp"

namespace zkfleet::worker {
namespace {

// Linger on the final close, so DISCONNECT reaches the broker.
constexpr int kCloseLingerMs = 2000;
// Longest a send to the broker may block (see Flush).
constexpr int kSendTimeoutMs = 1000;
// Longest wait between reconnect attempts while the broker stays silent.
constexpr auto kMaxSilence = std::chrono::seconds(32);

metrics::DropReason DropReasonOf(wire::DecodeStatus status) {
  switch (status) {
    case wire::DecodeStatus::kOversized: return metrics::DropReason::kOversized;
    case wire::DecodeStatus::kWrongVersion: return metrics::DropReason::kVersion;
    default: return metrics::DropReason::kMalformed;
  }
}

}  // namespace

WorkerSession::WorkerSession(ConnectionOptions connection, WorkerOptions options,
                             std::unique_ptr<CircuitSet> circuits, std::unique_ptr<MemorySource> memory,
                             metrics::WorkerMetrics* metrics)
    : connection_(std::move(connection)),
      endpoints_(fleet::ParseBrokerEndpoints(connection_.broker_endpoint)),
      metrics_(metrics),
      core_(std::move(options), std::move(circuits), std::move(memory), metrics, Clock::now()) {}

void WorkerSession::Connect() {
  dealer_ = zmq::socket_t(broker_context_, zmq::socket_type::dealer);
  fleet::ConfigureDealer(dealer_, connection_.limits, kCloseLingerMs);
  dealer_.set(zmq::sockopt::sndtimeo, kSendTimeoutMs);
  connection_.security.CheckFits(endpoints_.size());
  connection_.security.Apply(dealer_, current_);
  dealer_.connect(endpoints_[current_]);
  broker_last_seen_ = Clock::now();
}

void WorkerSession::Reconnect(const std::string& why, bool next) {
  ReconnectTo(why, next ? (current_ + 1) % endpoints_.size() : current_);
}

void WorkerSession::ReconnectTo(const std::string& why, size_t to) {
  const std::string from = endpoints_[current_];
  current_ = to;
  if (endpoints_[current_] == from) {
    spdlog::warn("reconnecting to the broker at {}: {}", from, why);
  } else {
    spdlog::warn("the broker at {}: {}; trying the broker at {}", from, why, endpoints_[current_]);
  }
  retry_registration_.reset();
  dealer_.set(zmq::sockopt::linger, 0);
  dealer_.close();
  Connect();
  core_.OnConnected(/*reconnect=*/true, Clock::now());
  Flush();
}

void WorkerSession::Flush() {
  // DEALER sends block only at the HWM, which credit flow keeps us far from,
  // or when the connection is gone for good (refused at the CURVE
  // handshake): then the send times out and the message is dropped; the
  // silence that follows makes us reconnect, and a drain still ends.
  for (proto::Envelope& envelope : core_.outbox()) {
    if (dealer_.send(zmq::buffer(wire::EncodeEnvelope(envelope)), zmq::send_flags::none)) continue;
    auto now = Clock::now();
    if (now >= next_send_failure_log_) {  // at most one line a minute
      next_send_failure_log_ = now + std::chrono::minutes(1);
      spdlog::warn("could not send to the broker at {} within {} ms (no connection: is our key in its "
                   "allow-list, is --broker-public-key right?); messages are dropped until it answers",
                   endpoints_[current_], kSendTimeoutMs);
    }
  }
  core_.outbox().clear();
}

void WorkerSession::ReloadCircuits() {
  if (!circuit_reader_) {
    spdlog::warn("SIGHUP: this worker has no way to read its circuits again; nothing changes");
    return;
  }
  std::vector<CircuitSpec> specs;
  try {
    specs = circuit_reader_();
  } catch (const std::exception& e) {
    spdlog::error("SIGHUP: circuits not reloaded (nothing changes): {}", e.what());
    return;
  }
  core_.ReloadCircuits(std::move(specs), Clock::now());
}

int WorkerSession::Run(int signal_fd) {
  silence_limit_ = connection_.heartbeat_interval * connection_.liveness;
  Connect();
  core_.OnConnected(/*reconnect=*/false, Clock::now());  // registers as STARTING; the pipeline reports its progress
  Flush();
  const size_t devices = core_.devices().size();
  spdlog::info("worker {} connecting to {} with capacity {}{}, circuits: {}", core_.options().worker_id,
               fleet::DescribeBrokerEndpoints(endpoints_), core_.ledger().capacity(),
               devices > 1 ? fmt::format(" ({} per device, {} devices)", core_.options().capacity, devices)
                           : std::string(),
               fmt::format("{}", fmt::join(core_.circuits().circuit_ids(), ",")));
  core_.StartPipeline();

  auto next_heartbeat = Clock::now() + connection_.heartbeat_interval;
  auto next_tick = Clock::time_point::max();
  while (!core_.finished()) {
    zmq::pollitem_t items[3] = {
        {dealer_.handle(), 0, ZMQ_POLLIN, 0},
        {nullptr, core_.mailbox().fd(), ZMQ_POLLIN, 0},
        {nullptr, signal_fd, ZMQ_POLLIN, 0},
    };
    const auto wake = std::min(next_heartbeat, next_tick);
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now());
    if (wait.count() < 0) wait = std::chrono::milliseconds(0);
    zmq::poll(items, signal_fd >= 0 ? 3 : 2, wait);

    if (signal_fd >= 0 && (items[2].revents & ZMQ_POLLIN)) {
      signalfd_siginfo info{};
      if (read(signal_fd, &info, sizeof(info)) != sizeof(info)) {
        // nothing read
      } else if (info.ssi_signo == SIGHUP) {
        ReloadCircuits();
      } else {
        core_.BeginDrain(std::string("signal ") + strsignal(static_cast<int>(info.ssi_signo)), Clock::now());
      }
    }
    if (items[1].revents & ZMQ_POLLIN) {
      for (PipelineEvent& event : core_.mailbox().TakeAll()) core_.OnPipelineEvent(event, Clock::now());
      core_.FlushStarted(Clock::now());
    }
    Flush();
    ReceiveAll();
    if (core_.finished()) break;

    auto now = Clock::now();
    if (now >= next_heartbeat) {
      core_.SendHeartbeat();
      Flush();
      next_heartbeat = now + connection_.heartbeat_interval;
    }
    if (now - broker_last_seen_ > silence_limit_) {
      Reconnect("no message for " +
                    std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silence_limit_).count()) +
                    " ms (" + std::to_string(connection_.liveness) + " heartbeat intervals, doubled per silent retry)",
                /*next=*/true);
      // A list is tried round by round before the wait grows.
      if (current_ == 0) silence_limit_ = std::min<Clock::duration>(silence_limit_ * 2, kMaxSilence);
    }
    if (retry_registration_ && now >= retry_registration_->at) {
      const RetryAt retry = *retry_registration_;  // Reconnect clears it
      ReconnectTo(retry.why, retry.to);
    }
    next_tick = core_.Tick(now);
    Flush();
  }

  core_.StopPipeline();
  // Closing the socket and terminating its context waits (up to the linger)
  // until DISCONNECT is out.
  dealer_.close();
  broker_context_.close();
  return core_.exit_code();
}

void WorkerSession::ReceiveAll() {
  zmq::message_t payload;
  fleet::Frames frames;  // a JOB's witness follows its envelope, in chunks
  proto::Envelope message;
  while (!core_.finished() && fleet::ReceiveMultipart(dealer_, payload, frames, zmq::recv_flags::dontwait)) {
    broker_last_seen_ = Clock::now();  // any message counts as liveness
    silence_limit_ = connection_.heartbeat_interval * connection_.liveness;
    wire::DecodeStatus status =
        wire::DecodeEnvelope(payload.data(), payload.size(), connection_.limits.max_message_bytes, message);
    if (status != wire::DecodeStatus::kOk) {
      spdlog::warn("dropped a {} message from the broker", wire::DecodeStatusName(status));
      if (metrics_) metrics_->MessageDropped(DropReasonOf(status));
      continue;
    }
    OnMessage(message, frames);
    Flush();
  }
}

void WorkerSession::OnMessage(proto::Envelope& message, fleet::Frames& frames) {
  const auto now = Clock::now();
  if (message.body_case() == proto::Envelope::kJob) {
    if (message.job().has_witness_ref() || !message.job().input_json().empty()) {
      // A witness by reference (the core fetches it) or from inputs (the core
      // computes it): no frame follows.
      if (!frames.empty() || message.job().witness_bytes() != 0 ||
          (message.job().has_witness_ref() && !message.job().input_json().empty())) {
        core_.OnUnreadableJob(message.job(), "a JOB with a witness reference or inputs must carry no witness frames "
                                             "and not both");
        return;
      }
      core_.OnBrokerMessage(message, {}, now);
      return;
    }
    std::string why;
    auto witness = fleet::SplitWitnesses(std::move(frames), {message.job().witness_bytes()}, &why);
    if (!witness) {
      // A JOB is leased to us: the core answers it (failed, with the reason)
      // rather than leave its lease hanging until this worker goes away.
      core_.OnUnreadableJob(message.job(), why);
      return;
    }
    core_.OnBrokerMessage(message, fleet::ByteSpans(witness->front()), now);
    return;
  }
  if (!frames.empty()) {
    spdlog::warn("dropped a broker message of type {}: frames after a message that has none",
                 static_cast<int>(message.body_case()));
    if (metrics_) metrics_->MessageDropped(metrics::DropReason::kMalformed);
    return;
  }
  if (message.body_case() == proto::Envelope::kDisconnect) {
    if (message.disconnect().not_leader()) {
      OnNotLeader(message.disconnect());
    } else {
      OnDisconnect(message.disconnect().reason());
    }
    return;
  }
  if (message.body_case() == proto::Envelope::kReloadCommand) {
    // An admin's `zkctl reload --workers`: as SIGHUP (the session reads the circuits).
    spdlog::info("the broker asks this worker to read its circuits again (an admin's reload)");
    ReloadCircuits();
    return;
  }
  core_.OnBrokerMessage(message, {}, now);
}

void WorkerSession::OnDisconnect(const std::string& reason) {
  const proto::WorkerState state = core_.state();
  if (state == proto::WORKER_STATE_RELEASING || state == proto::WORKER_STATE_GONE) return;
  if (retry_registration_) return;  // already waiting to register again
  if (reason.rfind("registration refused", 0) == 0) {
    spdlog::error("the broker refused our registration: {}; trying again in {} ms", reason,
                  connection_.heartbeat_interval.count());
    retry_registration_ = RetryAt{Clock::now() + connection_.heartbeat_interval, "the broker said: " + reason, current_};
    return;
  }
  Reconnect("the broker said: " + reason);
}

void WorkerSession::OnNotLeader(const proto::Disconnect& disconnect) {
  const proto::WorkerState state = core_.state();
  if (state == proto::WORKER_STATE_RELEASING || state == proto::WORKER_STATE_GONE) return;
  if (retry_registration_) return;  // already moving on
  // The leader named, when it is in our list: there at once.
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    if (i != current_ && !disconnect.leader().empty() && endpoints_[i] == disconnect.leader()) {
      ReconnectTo(disconnect.reason(), i);
      return;
    }
  }
  // Otherwise the next broker of the list (the same one, alone), a heartbeat
  // later: none may lead for a moment (the standby that answered may be next).
  const size_t next = (current_ + 1) % endpoints_.size();
  const auto now = Clock::now();
  if (endpoints_.size() == 1 && now >= next_not_leader_log_) {
    next_not_leader_log_ = now + std::chrono::minutes(1);
    spdlog::error("{}{}; this worker was given only that broker's address, and asks it again every heartbeat (give "
                  "--broker every broker's worker endpoint, comma-separated, to follow the leader)",
                  disconnect.reason(),
                  disconnect.leader().empty() ? std::string() : " (its worker endpoint: " + disconnect.leader() + ")");
  }
  retry_registration_ = RetryAt{now + connection_.heartbeat_interval, disconnect.reason(), next};
}

}  // namespace zkfleet::worker
