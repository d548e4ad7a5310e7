// Client side of the broker protocol, used by zkctl, the integration tests and
// the benchmark. One BrokerClient owns one DEALER socket connected to the
// broker's client endpoint.
//
// Surviving a broker restart: the client watches its connection (a ZeroMQ
// socket monitor). When it is re-established (a new handshake after the
// first), every SUBMIT still without a reply is sent again (same request id:
// the broker answers with the existing job if it had made it durable) and
// every job whose result this client still waits for is AWAITed again under
// the original correlation id. A job's JobResult is delivered once: copies
// that arrive after the first are dropped.
//
// Thread-safety: not thread-safe; one thread owns a BrokerClient (ZeroMQ
// sockets must not be shared). Several clients may share one zmq::context_t.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "zkfleet.pb.h"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::fleet {

// The broker answered with an ErrorReply.
class BrokerError : public Error {
 public:
  BrokerError(proto::ErrorKind kind, const std::string& message, uint32_t retry_after_ms = 0);
  proto::ErrorKind kind() const { return kind_; }
  // With BUSY: the broker's suggested wait before retrying.
  uint32_t retry_after_ms() const { return retry_after_ms_; }

 private:
  proto::ErrorKind kind_;
  uint32_t retry_after_ms_;
};

// A job as an application hands it over: the request and the bytes of each
// partition's witness (a .wtns file each).
struct JobSubmission {
  proto::SubmitRequest request;
  std::vector<std::string> witnesses;
};

// No reply (or no result) arrived within the timeout. Same code (kIo) and
// message as before it had a type of its own; the public client
// (zkfleet/client.h) reports it as kTimeout, or as kAuth when the broker
// refused this client's key at the CURVE handshake (auth_refused()).
class NoReplyError : public Error {
 public:
  explicit NoReplyError(const std::string& message) : Error(ErrorCode::kIo, message) {}
};

class BrokerClient {
 public:
  using Clock = std::chrono::steady_clock;

  // `security`: CURVE keys (or plaintext) for the connection. With CURVE the
  // broker knows the client by its key; `client_id` is stamped on every
  // request and counts only in plaintext mode, where it scopes request ids
  // and owns the jobs submitted ("" = the broker's "anonymous").
  BrokerClient(zmq::context_t& context, const std::string& endpoint, const ClientSecurity& security,
               const SocketLimits& limits = {}, std::string client_id = "");
  ~BrokerClient();

  const std::string& endpoint() const { return endpoint_; }
  const std::string& client_id() const { return client_id_; }
  // Times the connection to the broker was re-established (and requests resent).
  uint64_t reconnections() const { return reconnections_; }
  // JobResult copies dropped because the job's result was already delivered
  // (the broker answered both the original wait and a re-AWAIT).
  uint64_t duplicate_results_dropped() const { return duplicate_results_dropped_; }
  // True once a CURVE handshake was refused by the broker's authentication
  // (its ZAP handler: the key is in no allow-list), false again after a
  // handshake succeeds. Without a connection nothing is ever answered.
  bool auth_refused() const { return auth_refused_; }
  // Called before each wait on a BUSY refusal (what, seconds); for zkctl's message.
  void set_busy_observer(std::function<void(const std::string&, double)> observer) {
    busy_observer_ = std::move(observer);
  }

  // Assigns the next correlation id, stamps the version, sends the envelope
  // and then `frames` (a SUBMIT's witnesses; kept, without a copy, until the
  // SUBMIT is answered, to be resent after a reconnect). Returns the id.
  uint64_t Send(proto::Envelope envelope, Frames frames = {});
  // Sends raw bytes as one frame (tests use it for malformed frames).
  void SendRaw(const std::string& bytes);

  // Next envelope from the broker (already received and kept ones first).
  // nullopt on timeout. Frames that do not decode are skipped.
  std::optional<proto::Envelope> Receive(std::chrono::milliseconds timeout);

  // Sends `request` and waits for the first reply carrying its correlation id;
  // other messages that arrive meanwhile are kept for Receive()/NextJobResult().
  // Throws BrokerError on an ErrorReply and Error(kIo) on timeout.
  proto::Envelope Call(proto::Envelope request, std::chrono::milliseconds timeout, Frames frames = {});

  // Submits `request` with `witnesses` (one .wtns file per partition, sent in
  // frames of their own, cut into chunks; request.witness_bytes is set here). A BUSY refusal
  // is retried with the same request id after the broker's retry-after hint
  // (doubling, with jitter, capped at 30 s) until `timeout` ends; then the
  // BUSY BrokerError is thrown. No witnesses: looks the request id up.
  proto::SubmitReply Submit(const proto::SubmitRequest& request, Frames witnesses, std::chrono::milliseconds timeout);
  // The same with the witnesses' bytes (copied once into frames).
  proto::SubmitReply Submit(const proto::SubmitRequest& request, const std::vector<std::string>& witnesses,
                            std::chrono::milliseconds timeout);
  proto::SubmitReply Submit(const JobSubmission& job, std::chrono::milliseconds timeout) {
    return Submit(job.request, job.witnesses, timeout);
  }
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
  // The JobResult of `job_seq` (one this connection submitted or awaited);
  // results of other jobs that arrive meanwhile stay kept. nullopt on
  // timeout. Throws BrokerError when the broker answers the job's (re-)AWAIT
  // with an ErrorReply.
  std::optional<proto::JobResult> NextJobResult(uint64_t job_seq, std::chrono::milliseconds timeout);

 private:
  // Waits for the first envelope (kept ones first) for which `match` is true;
  // the others stay kept in arrival order.
  std::optional<proto::Envelope> WaitFor(const std::function<bool(const proto::Envelope&)>& match,
                                         Clock::time_point deadline);
  std::optional<proto::Envelope> ReceiveOne(Clock::time_point deadline);
  // Bookkeeping of what must be resent after a reconnect; false when the
  // envelope is a duplicate JobResult to drop.
  bool Track(const proto::Envelope& envelope);
  // Reads monitor events; on a re-established connection resends.
  void OnMonitorEvents();
  // Sends the envelope, then shared copies of `frames` (nullptr: none).
  void SendBytes(proto::Envelope& envelope, Frames* frames = nullptr);

  std::string endpoint_;
  SocketLimits limits_;
  std::string client_id_;
  zmq::socket_t socket_;
  zmq::socket_t monitor_;  // PAIR connected to socket_'s monitor
  uint64_t next_correlation_id_ = 1;
  uint64_t handshakes_ = 0;
  uint64_t reconnections_ = 0;
  uint64_t duplicate_results_dropped_ = 0;
  bool auth_refused_ = false;
  std::deque<proto::Envelope> kept_;  // received, not yet asked for
  struct PendingSubmit {
    proto::Envelope envelope;
    Frames witnesses;
  };
  std::map<uint64_t, PendingSubmit> unanswered_submits_;  // by correlation id
  std::map<uint64_t, uint64_t> awaited_jobs_;               // job_seq -> correlation id
  std::set<uint64_t> delivered_jobs_;                        // JobResult already handed out
  std::function<void(const std::string&, double)> busy_observer_;
};

}  // namespace zkfleet::fleet
