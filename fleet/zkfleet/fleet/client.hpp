// Client side of the broker protocol, used by zkctl, the integration tests and
// the benchmark. One BrokerClient owns one DEALER socket connected to the
// broker's client endpoint.
//
// Thread-safety: not thread-safe; one thread owns a BrokerClient (ZeroMQ
// sockets must not be shared). Several clients may share one zmq::context_t.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "zkfleet.pb.h"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::fleet {

// The broker answered with an ErrorReply.
class BrokerError : public Error {
 public:
  BrokerError(proto::ErrorKind kind, const std::string& message);
  proto::ErrorKind kind() const { return kind_; }

 private:
  proto::ErrorKind kind_;
};

class BrokerClient {
 public:
  using Clock = std::chrono::steady_clock;

  BrokerClient(zmq::context_t& context, const std::string& endpoint, const SocketLimits& limits = {});

  const std::string& endpoint() const { return endpoint_; }

  // Assigns the next correlation id, stamps the version, sends. Returns the id.
  uint64_t Send(proto::Envelope envelope);
  // Sends raw bytes as one frame (tests use it for malformed frames).
  void SendRaw(const std::string& bytes);

  // Next envelope from the broker (already received and kept ones first).
  // nullopt on timeout. Frames that do not decode are skipped.
  std::optional<proto::Envelope> Receive(std::chrono::milliseconds timeout);

  // Sends `request` and waits for the first reply carrying its correlation id;
  // other messages that arrive meanwhile are kept for Receive()/NextJobResult().
  // Throws BrokerError on an ErrorReply and Error(kIo) on timeout.
  proto::Envelope Call(proto::Envelope request, std::chrono::milliseconds timeout);

  proto::SubmitReply Submit(const proto::SubmitRequest& request, std::chrono::milliseconds timeout);
  // Waits for the job to end (broker replies when it does).
  proto::JobResult Await(uint64_t job_seq, std::chrono::milliseconds timeout);
  proto::StatusReply Status(std::chrono::milliseconds timeout);
  proto::CancelReply Cancel(uint64_t job_seq, std::chrono::milliseconds timeout);
  // Asks the broker to drain `worker_id`. With `wait`, returns the second
  // reply (finished = true, with the phases) sent when the worker has left.
  proto::DrainWorkerReply Drain(const std::string& worker_id, bool wait, std::chrono::milliseconds timeout);

  // The next JobResult the broker pushed for a job this connection submitted
  // (or awaited). nullopt on timeout. Throws BrokerError on an ErrorReply.
  std::optional<proto::JobResult> NextJobResult(std::chrono::milliseconds timeout);

 private:
  // Waits for the first envelope (kept ones first) for which `match` is true;
  // the others stay kept in arrival order.
  std::optional<proto::Envelope> WaitFor(const std::function<bool(const proto::Envelope&)>& match,
                                         Clock::time_point deadline);
  std::optional<proto::Envelope> ReceiveOne(Clock::time_point deadline);

  std::string endpoint_;
  SocketLimits limits_;
  zmq::socket_t socket_;
  uint64_t next_correlation_id_ = 1;
  std::deque<proto::Envelope> kept_;  // received, not yet asked for
};

}  // namespace zkfleet::fleet
