// The broker process's one thread: owns the client ROUTER and the worker
// ROUTER (two ports), polls both, decodes and checks every frame, feeds
// BrokerCore and sends what it produces. Malformed, wrong-version and
// oversized frames are dropped and counted; a client also gets an ErrorReply.
// The Prometheus metrics, when given, are updated by the core (BrokerCore).
//
// Durability: the server owns the journal (options.journal, opened in the
// constructor). Each loop turn it commits the journal (one durable commit
// with --sync batch) and only then sends the turn's outbox, so a SUBMIT reply
// or a JobResult never leaves before what it reports is durable. With --sync
// always it commits after every message that wrote to the journal.
//
// Storage faults: a journal operation that fails inside a turn (zkfleet::Error
// from the core handling a message, Dispatch, Tick, or the commit: a full
// disk, a refused or failed write) does not stop the broker. The turn is
// dropped (Journal::Abort: the journal is as last committed), every client
// reply the turn held becomes ErrorReply UNAVAILABLE (retry_after_ms 1000,
// "nothing of this request was accepted; retry with the same request id"),
// and the core, whose memory no longer matches the journal, is rebuilt from
// it (reads only; workers register again). The broker then takes no new work
// (SUBMITs of new requests get UNAVAILABLE) and leases nothing, and probes the
// journal once a second (Journal::ProbeWritable); when a probe succeeds it
// serves normally again. zkfleet_broker_unavailable is 1 meanwhile and every
// fault counts in zkfleet_broker_storage_faults_total{kind="write"}. A broker
// that starts while the journal cannot be written (BeginLife cannot commit
// the new epoch) starts the same way, unavailable, with that epoch in memory
// (persisted by the first commit that succeeds). Only a journal that cannot
// be read (the rebuild fails) stops the broker, with the error.
//
// Leadership (--journal etcd://): a journal commit that etcd refuses because
// another broker leads (Error kNotLeader), or the leadership's keep-alive
// finding the lease gone (not with stop_on_lease_loss off: tests), ends Run()
// with that error before anything more is sent: the process exits and a
// standby serves (etcd_leadership.hpp).
//
// Security: unless options.security.plaintext, both ROUTERs are CURVE
// servers and a ZapHandler (polled in the same loop) admits only the keys of
// the allow-lists, worker keys on the worker port and client keys on the
// client port; each message carries its key's name and role (ZAP metadata),
// which the core uses as the peer's identity. Run() reloads the allow-lists
// on SIGHUP (when the signal fd delivers it) without dropping connections.
//
// Thread-safety: construct, Bind() and Run() on one thread; the sockets never
// leave it. Nothing here may be called from another thread while Run() runs.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>

#include <zmq.hpp>

#include "zkfleet/broker/broker_core.hpp"
#include "zkfleet/broker/grpc_front_door.hpp"
#include "zkfleet/broker/ingress_guard.hpp"
#include "zkfleet/broker/result_verifier.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/broker/options.hpp"
#include "zkfleet/broker/turn_timer.hpp"
#include "zkfleet/broker/zap_handler.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/etcd_leadership.hpp"

namespace zkfleet::broker {

class BrokerServer {
 public:
  // Sets the sockets up and loads the allow-lists (throws zkfleet::Error
  // when they cannot be read). `metrics` may be null; otherwise not owned,
  // and it must outlive the server.
  BrokerServer(zmq::context_t& context, BrokerOptions options, metrics::BrokerMetrics* metrics = nullptr);

  // Binds both ROUTER sockets (throws zkfleet::Error naming the endpoint),
  // then opens the journal in options.journal.dir and recovers it (throws
  // when it cannot): a broker whose flags fail leaves the journal untouched.
  void Bind();
  // The endpoints actually bound (resolves "tcp://host:*").
  std::string client_endpoint() const;
  std::string worker_endpoint() const;
  // The gRPC front door's port (0: none).
  int grpc_port() const { return grpc_ ? grpc_->port() : 0; }

  // Serves until `signal_fd` (a signalfd for SIGINT/SIGTERM, and SIGHUP,
  // which reloads: Reload(); -1 for none) delivers a stop signal.
  void Run(int signal_fd);
  // Re-reads the allow-lists and the verification keys (SIGHUP, zkctl
  // reload: broker_server_reload.cpp) and says what changed (also logged).
  // What fails to load keeps what is there: an allow-list directory that
  // fails keeps the current lists; a key file that fails keeps its
  // circuit's key as it was; a circuit with jobs not yet done keeps its key.
  proto::ReloadReply Reload();
  // Tells the core which keys the allow-lists admit now (CURVE only).
  void ApplyAllowList(const PeerAllowList& list);
  // Hands the core's verification tasks to the verifier and its verdicts
  // back to the core.
  void VerifyResults(Clock::time_point now);

  // A broker that leads through etcd (--journal etcd://): Run() throws
  // Error(kNotLeader) once `leadership` says it no longer leads, as it does
  // when a commit is fenced. Not owned; outlives the server. Before Bind().
  void SetLeadership(const storage::EtcdLeadership* leadership) { leadership_ = leadership; }

  // The current core: replaced (rebuilt from the journal) after a storage fault.
  const BrokerCore& core() const { return *core_; }
  BrokerCore& core() { return *core_; }

 private:
  // Reload's two halves; each fills its part of `reply`.
  void ReloadAllowLists(proto::ReloadReply& reply);
  void ReloadVerificationKeys(proto::ReloadReply& reply);
  // Receives up to `budget` messages from `socket`; returns how many.
  size_t DrainSocket(zmq::socket_t& socket, bool from_workers, int budget, Clock::time_point now);
  // `payload` is the Envelope frame (`has_payload` false: the message had
  // only the identity); `frames` are the frames after it.
  void HandleFrame(bool from_workers, const std::string& identity, const zmq::message_t& payload,
                   bool has_payload, fleet::Frames frames, const Peer& peer, Clock::time_point now);
  // The authenticated peer of a received message (ZAP metadata).
  Peer PeerOf(const zmq::message_t& payload) const;
  // Sends the core's messages to workers, commits the journal, then sends the
  // replies to clients; a worker that cannot be reached is removed (its
  // leases requeue) and dispatch runs again.
  void Flush(Clock::time_point now);
  // The workers a send found unroutable this turn (SendOutbox): reads what
  // the workers sent that is still queued first (their last RESULT, FAULTED,
  // handback or DISCONNECT), then removes those still registered. Returns
  // whether any was settled (its messages must go out in turn).
  bool SettleUnroutableWorkers(Clock::time_point now);
  // Sends the outbox (`workers_only`: only worker messages; client ones stay
  // queued, in order).
  void SendOutbox(bool workers_only, Clock::time_point now);
  void Commit();

  // The core of a new broker life (constructor). When its start cannot be
  // committed, the core is built from what the journal holds, unavailable.
  void StartCore();
  // A journal operation of this turn failed with `fault`: drops the turn,
  // answers its held client replies UNAVAILABLE, rebuilds the core, and
  // stops taking new work. Throws (the broker exits) only when the journal
  // cannot be read.
  void OnStorageFault(const Error& fault);
  // Marks the (new) core unavailable because of `fault` and schedules probes.
  void EnterUnavailable(const std::string& fault);
  // While unavailable: once a second, whether the journal can be written again.
  void ProbeJournal(Clock::time_point now);

  BrokerOptions options_;
  metrics::BrokerMetrics* metrics_;  // not owned; may be null
  std::unique_ptr<Journal> journal_;  // opened by Bind()
  const storage::EtcdLeadership* leadership_ = nullptr;  // not owned; null: LMDB
  std::unique_ptr<BrokerCore> core_;
  // Workers a send found unroutable, until SettleUnroutableWorkers.
  std::set<std::string> unroutable_workers_;
  std::optional<PeerAllowList> initial_allow_list_;  // loaded at construction, applied by Bind()
  // Checks RESULTs off the loop thread; the core queues the tasks, the loop
  // hands them over and feeds the verdicts back (VerifyResults).
  std::unique_ptr<ResultVerifier> verifier_;
  // The client message the core is handling (its reply, if a journal write
  // fails on the way, is an UNAVAILABLE from the server).
  std::optional<ReplyTo> handling_client_;
  // Storage faults: when the broker became unavailable, the next probe, and
  // logging of repeated faults (at most one line per interval).
  std::optional<Clock::time_point> unavailable_since_;
  Clock::time_point next_probe_{};
  Clock::time_point next_fault_log_{};
  uint64_t faults_not_logged_ = 0;
  std::unique_ptr<ZapHandler> zap_;  // null in plaintext mode
  // The gRPC front door (options.grpc.listen; null without). Its calls'
  // requests are fed to the core like the client ROUTER's, and the replies
  // to their identities go back to it (SendToClient).
  std::unique_ptr<GrpcFrontDoor> grpc_;
  void HandleGrpcRequests(Clock::time_point now);
  // A message to a client: the ROUTER, or the gRPC call it is for.
  fleet::SendStatus SendToClient(const std::string& identity, const proto::Envelope& envelope, const std::string& bytes,
                                 fleet::Frames* frames);
  // Handshakes that fail before ZAP is asked (a peer without CURVE, or not
  // ZMTP at all) are seen only by the guard's socket monitors.
  void OnHandshakeFailures();
  Clock::time_point next_mechanism_log_{};
  zmq::socket_t clients_;
  zmq::socket_t workers_;
  // Bounds what peers can make the broker hold unread (its own thread);
  // declared after the ROUTERs it monitors, so it stops before they close.
  std::unique_ptr<IngressGuard> guard_;
  proto::Envelope scratch_;  // reused decode target
  TurnTimer turns_;
};

}  // namespace zkfleet::broker
