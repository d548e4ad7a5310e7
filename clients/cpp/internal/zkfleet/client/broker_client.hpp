// Client side of the broker protocol: the engine of the public C++ client
// (zkfleet/client.h, hence zkctl), internal to zkfleet_client (not
// installed); the integration tests and the benchmark use it directly to
// send what the public client would refuse. One BrokerClient owns one DEALER
// socket connected to the broker's client endpoint, or one per endpoint of a
// list of brokers sharing an etcd journal (fleet/broker_endpoints.hpp).
//
// Surviving a broker restart: the client watches its connection (a ZeroMQ
// socket monitor). When it is re-established (a new handshake after the
// first), every SUBMIT still without a reply is sent again (same request id:
// the broker answers with the existing job if it had made it durable) and
// every job whose result this client still waits for is AWAITed again under
// the original correlation id. A job's JobResult is delivered once: copies
// that arrive after the first are dropped. A wait the broker answers
// UNAVAILABLE (its journal could not be written in the turn that held the
// job's result or the AWAIT's answer) goes on: the job is AWAITed again after
// the broker's retry hint.
//
// Following the leader of a list of brokers: one DEALER per endpoint, each
// with ZMQ_IMMEDIATE (a send to a broker not connected fails at once), and
// each request goes to one broker: the one that last answered (the leader),
// else the next connected one not known to stand by. A standby answers
// NOT_LEADER (standby_responder.hpp) and the request goes on to the next
// broker, to the leader it names first; when every connected broker stood by,
// the requests wait and are asked again after the standby's hint (none leads
// for a moment). Standbys that share the leader's address bind nothing; their
// connections just never complete. Unanswered SUBMITs, waits and the call in
// progress go again on every new connection while no leader is known and
// whenever a connection drops (a paused ex-leader that held requests exits
// when it resumes: they go again, to the leader). A request sent while no
// broker can take it waits for the next connection.
//
// Given one endpoint, a standby's NOT_LEADER is the answer: a BrokerError
// naming the leader (a SUBMIT refused while none leads is tried again, as
// after UNAVAILABLE).
//
// A request the broker answered,
// accepted or refused (BAD_REQUEST, TOO_LARGE, FORBIDDEN, REQUEST_ID_REUSED,
// also with correlation id 0: a request it could not read), is never resent.
//
// What it refuses itself: a SUCCEEDED JobResult whose proof or public
// signals are not JSON (InvalidResultError). It sends any request it is
// given (tests use it for hostile ones); the public client (zkfleet/client.h,
// hence zkctl) checks names against the broker's bounds first (CheckName,
// CheckSubmitRequest below).
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
#include "zkfleet/client.h"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::client::internal {

// The bounds the broker puts on names (kMaxRequestIdBytes, ...) are
// zkfleet/client.h's, in the enclosing namespace zkfleet::client.

// Error(kInvalidArgument) when `value` (the `what`, e.g. "request id") is
// longer than `max_bytes` (the constant `limit_name`) or holds a control
// byte (below 0x20, or 0x7f), as the broker would refuse it. Empty passes.
void CheckName(const std::string& what, const std::string& value, size_t max_bytes, const std::string& limit_name);
// CheckName of a SUBMIT's request id and circuit id.
void CheckSubmitRequest(const proto::SubmitRequest& request);

// A SUCCEEDED JobResult that is not a proof: a partition whose proof_json or
// public_json is not JSON, or no partition at all. Code kBadFormat.
class InvalidResultError : public Error {
 public:
  InvalidResultError(uint64_t job_seq, const std::string& message)
      : Error(ErrorCode::kBadFormat, message), job_seq_(job_seq) {}
  uint64_t job_seq() const { return job_seq_; }

 private:
  uint64_t job_seq_;
};

// Throws InvalidResultError unless `result` is fit to hand out: a SUCCEEDED
// result needs at least one partition, each with proof_json and public_json
// that parse as JSON (checked without building a document: no recursion,
// whatever the nesting). Other states pass as they are.
void CheckJobResult(const proto::JobResult& result);

// The broker answered with an ErrorReply.
class BrokerError : public Error {
 public:
  BrokerError(proto::ErrorKind kind, const std::string& message, uint32_t retry_after_ms = 0,
              std::string leader = "");
  proto::ErrorKind kind() const { return kind_; }
  // With BUSY (and UNAVAILABLE): the broker's suggested wait before retrying.
  uint32_t retry_after_ms() const { return retry_after_ms_; }
  // With NOT_LEADER: the leader's client endpoint ("" while none leads).
  const std::string& leader() const { return leader_; }
  // Nothing was accepted and the same request may be: BUSY, UNAVAILABLE, or
  // NOT_LEADER while no broker leads.
  bool retryable() const;

 private:
  proto::ErrorKind kind_;
  uint32_t retry_after_ms_;
  std::string leader_;
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
  // and owns the jobs submitted ("" = the broker's "anonymous"). Nothing is
  // checked against the broker's bounds here (see CheckName).
  // `endpoint`: one endpoint or a comma-separated list (throws Error
  // kInvalidArgument on a bad one, or on a key count that does not fit it).
  BrokerClient(zmq::context_t& context, const std::string& endpoint, const fleet::ClientSecurity& security,
               const fleet::SocketLimits& limits = {}, std::string client_id = "");
  ~BrokerClient();

  // The endpoint, or "any of A, B" for a list (for messages).
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
  // Why the connection cannot work, in words after "the broker at X: " ("" while it may): the broker
  // refused this client's key (auth_refused()), or the CURVE handshake failed
  // kHandshakeFailuresToGiveUp times in a row with no success (a wrong broker
  // public key), or failed on the protocol once (one side plaintext, the
  // other CURVE: libzmq does not retry that). Waits for a reply end early then,
  // and the NoReplyError says this.
  std::string HandshakeProblem() const;
  static constexpr uint64_t kHandshakeFailuresToGiveUp = 3;
  // Called before each wait on a BUSY or UNAVAILABLE refusal (what, seconds); for zkctl's message.
  void set_busy_observer(std::function<void(const std::string&, double)> observer) {
    busy_observer_ = std::move(observer);
  }

  // Assigns the next correlation id, stamps the version, sends the envelope
  // and then `frames` (a SUBMIT's witnesses; kept, without a copy, until the
  // SUBMIT is answered, to be resent after a reconnect). Returns the id.
  uint64_t Send(proto::Envelope envelope, fleet::Frames frames = {});
  // Sends raw bytes as one frame (tests use it for malformed frames).
  void SendRaw(const std::string& bytes);

  // Next envelope from the broker (already received and kept ones first).
  // nullopt on timeout. Frames that do not decode are skipped.
  std::optional<proto::Envelope> Receive(std::chrono::milliseconds timeout);

  // Sends `request` and waits for the first reply carrying its correlation id
  // (or an ErrorReply with id 0: the broker could not read it); other messages
  // that arrive meanwhile are kept for Receive()/NextJobResult(). Once
  // answered, a SUBMIT is never resent. Throws BrokerError on an ErrorReply
  // and NoReplyError (kIo) on timeout.
  proto::Envelope Call(proto::Envelope request, std::chrono::milliseconds timeout, fleet::Frames frames = {});

  // Submits `request` with `witnesses` (one .wtns file per partition, sent in
  // frames of their own, cut into chunks; request.witness_bytes is set here).
  // A BUSY or UNAVAILABLE refusal (nothing accepted: over a limit, or the
  // broker cannot write its journal) is retried with the same request id
  // after the broker's retry-after hint (doubling from at least 100 ms, with
  // jitter, capped at 30 s) until `timeout` ends; then that BrokerError is
  // thrown. No witnesses: looks the request id up.
  proto::SubmitReply Submit(const proto::SubmitRequest& request, fleet::Frames witnesses,
                            std::chrono::milliseconds timeout);
  // The same with the witnesses' bytes (copied once into frames).
  proto::SubmitReply Submit(const proto::SubmitRequest& request, const std::vector<std::string>& witnesses,
                            std::chrono::milliseconds timeout);
  proto::SubmitReply Submit(const JobSubmission& job, std::chrono::milliseconds timeout) {
    return Submit(job.request, job.witnesses, timeout);
  }
  // Waits for the job to end (broker replies when it does). Throws
  // InvalidResultError for a SUCCEEDED result that is not a proof.
  proto::JobResult Await(uint64_t job_seq, std::chrono::milliseconds timeout);
  proto::StatusReply Status(std::chrono::milliseconds timeout);
  proto::CancelReply Cancel(uint64_t job_seq, std::chrono::milliseconds timeout);
  proto::JobInfo GetJob(uint64_t job_seq, std::chrono::milliseconds timeout);
  proto::JobInfo RetryJob(uint64_t job_seq, uint32_t attempt, std::chrono::milliseconds timeout);
  proto::ListJobsReply ListJobs(const proto::ListJobsRequest& request, std::chrono::milliseconds timeout);
  // Asks the broker to drain `worker_id`. With `wait`, returns the second
  // reply (finished = true, with the phases) sent when the worker has left.
  proto::DrainWorkerReply Drain(const std::string& worker_id, bool wait, std::chrono::milliseconds timeout);
  // Lets a worker the broker holds DRAINING or FAULTED take work again
  // (admin). The reply says its state now. A broker older than UNDRAIN
  // cannot read the request: BrokerError BAD_REQUEST.
  proto::UndrainWorkerReply Undrain(const std::string& worker_id, std::chrono::milliseconds timeout);
  // Admin: the broker reads its allow-lists and verification keys again.
  // `workers`: ids (or "*") also told to read their circuits again.
  proto::ReloadReply Reload(const std::vector<std::string>& workers, std::chrono::milliseconds timeout);

  // The next JobResult the broker pushed for a job this connection submitted
  // (or awaited). nullopt on timeout. Throws BrokerError on an ErrorReply,
  // InvalidResultError for a SUCCEEDED result that is not a proof (both
  // NextJobResult overloads).
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
  // "no <what> ...": the handshake problem if there is one, else the timeout.
  std::string NoReplyMessage(const std::string& what, std::chrono::milliseconds timeout) const;
  // Reads monitor events; on a re-established connection resends.
  void OnMonitorEvents();
  // Sends every unanswered SUBMIT and every wait again.
  void ResendOutstanding();
  // Sends the AWAITs whose time in reawait_at_ has come.
  void SendDueAwaits();
  // Sends the envelope, then shared copies of `frames` (nullptr: none).
  // Throws when nothing can be sent, except while following a list of
  // brokers: then it notes that the request waits for a connection and
  // returns false.
  bool SendBytes(proto::Envelope& envelope, fleet::Frames* frames = nullptr);
  // Following a list: sends to the leader, else to the next connected broker
  // not known to stand by (`any`: to one that stood by too). False: none took it.
  bool SendToBrokers(const std::string& bytes, fleet::Frames* frames, bool any);
  // Following a list: a standby (endpoints_[from]) answered request `id`.
  void OnNotLeader(size_t from, const proto::Envelope& envelope);
  // The AWAIT of `job_seq` under correlation id `id` (a wait sent again).
  proto::Envelope MakeAwait(uint64_t job_seq, uint64_t id) const;

  std::vector<std::string> endpoints_;
  std::string endpoint_;  // DescribeBrokerEndpoints(endpoints_)
  bool following_ = false;  // several endpoints: ZMQ_IMMEDIATE, follow the leader
  bool unsent_ = false;     // a request could not be sent: send it on the next connection
  std::set<size_t> live_;  // endpoints (indices) with a completed handshake
  // Following a list: the broker that last answered with anything but
  // NOT_LEADER, where the next request without one goes, the brokers that
  // answered NOT_LEADER since the connections last changed, and when the
  // requests go again after every connected broker stood by.
  std::optional<size_t> leader_;
  size_t cursor_ = 0;
  std::set<size_t> standbys_;
  std::optional<Clock::time_point> resend_at_;
  std::string last_not_leader_;  // what a standby said last, for NoReplyError
  // Following a list: requests other than SUBMIT and AWAIT not yet answered
  // (the call in progress), by correlation id, to go again to another broker.
  std::map<uint64_t, proto::Envelope> pending_calls_;
  bool plaintext_ = false;  // no CURVE on this side
  fleet::SocketLimits limits_;
  std::string client_id_;
  std::vector<zmq::socket_t> sockets_;   // one per endpoint
  std::vector<zmq::socket_t> monitors_;  // PAIRs connected to each socket's monitor
  uint64_t next_correlation_id_ = 1;
  uint64_t handshakes_ = 0;
  uint64_t reconnections_ = 0;
  uint64_t duplicate_results_dropped_ = 0;
  bool auth_refused_ = false;
  enum class HandshakeFailure { kClosed, kProtocol };
  uint64_t handshakes_failed_ = 0;  // in a row, since the last success
  HandshakeFailure last_handshake_failure_ = HandshakeFailure::kClosed;
  std::deque<proto::Envelope> kept_;  // received, not yet asked for
  struct PendingSubmit {
    proto::Envelope envelope;
    fleet::Frames witnesses;
  };
  std::map<uint64_t, PendingSubmit> unanswered_submits_;  // by correlation id
  std::map<uint64_t, uint64_t> awaited_jobs_;               // job_seq -> correlation id
  std::set<uint64_t> delivered_jobs_;                        // JobResult already handed out
  std::map<uint64_t, Clock::time_point> reawait_at_;         // job_seq -> AWAIT again then (after UNAVAILABLE)
  std::function<void(const std::string&, double)> busy_observer_;
};

}  // namespace zkfleet::client::internal
