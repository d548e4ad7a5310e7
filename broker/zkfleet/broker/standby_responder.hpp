// A standby broker's answer (brokers on etcd): "not the leader, try X".
//
// While another broker leads, a standby whose own endpoints differ from the
// leader's binds its client and worker ports and answers every message from
// an authenticated peer, and does nothing else: a client request gets
// ErrorReply NOT_LEADER under its correlation id, naming the leader's client
// endpoint; a worker's message gets DISCONNECT{not_leader}, naming the
// leader's worker endpoint; with --grpc-listen, a gRPC call gets UNAVAILABLE
// with the trailer "zkfleet-leader" naming the leader's gRPC address (the
// same TLS and client certificates as the leader's front door). Clients and
// workers that know every broker's
// address go to the leader at once (broker_client.hpp, worker_session.hpp);
// one given only this broker's address is told where the leader is. Peers
// are authenticated as by the leader (CURVE, a ZAP handler over the same
// allow-lists): a key in no allow-list hears nothing.
//
// When the ports stay unbound: until a leader elsewhere is seen (one that
// already answers goes on while none leads, saying so), while the leader
// advertises this broker's own endpoints
// (brokers sharing one address, a floating IP or a Service: answering there
// would turn the leader's followers away), and when an endpoint has no fixed
// port. A port that cannot be bound is logged and tried again later; the
// standby goes on standing by.
//
// Ownership: owns its sockets and its ZapHandler, in the caller's context.
// Only one ZAP handler may exist per context: destroy this (or Close()) before
// the BrokerServer that takes over is constructed in the same context.
// Thread-safety: not thread-safe; one thread constructs, serves and closes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "zkfleet/broker/grpc_front_door.hpp"
#include "zkfleet/broker/leader_address.hpp"
#include "zkfleet/broker/options.hpp"
#include "zkfleet/broker/zap_handler.hpp"

namespace zkfleet::broker {

class StandbyResponder {
 public:
  using Clock = std::chrono::steady_clock;

  // Loads the allow-lists (throws zkfleet::Error when they cannot be read,
  // as the broker would). Binds nothing yet.
  StandbyResponder(zmq::context_t& context, const BrokerOptions& options, LeaderAddress self);
  ~StandbyResponder();
  StandbyResponder(const StandbyResponder&) = delete;
  StandbyResponder& operator=(const StandbyResponder&) = delete;

  // The leader seen now (nullopt: none leads). Binds or closes the ports as
  // the rules above say.
  void SetLeader(const std::optional<LeaderAddress>& leader);
  // Waits up to `timeout` for messages and answers them.
  void Serve(std::chrono::milliseconds timeout);
  // Closes the ports and the ZAP handler: this broker leads now, or stops.
  void Close();

  bool bound() const { return bound_; }
  // Messages answered "not the leader" (clients + workers).
  uint64_t answered() const { return answered_; }

 private:
  bool ShouldBind() const;
  void Bind();
  void Unbind();
  void AnswerClients();
  void AnswerWorkers();
  void AnswerGrpcCallers();
  bool ShouldServeGrpc() const;
  std::string Hint() const;

  zmq::context_t& context_;
  BrokerOptions options_;
  LeaderAddress self_;
  std::optional<LeaderAddress> leader_;
  PeerAllowList allow_list_;  // empty in plaintext
  std::unique_ptr<ZapHandler> zap_;
  std::optional<zmq::socket_t> clients_, workers_;
  std::unique_ptr<GrpcFrontDoor> grpc_;  // while bound, with --grpc-listen
  bool bound_ = false;
  Clock::time_point next_bind_try_{};
  uint64_t answered_ = 0;
};

}  // namespace zkfleet::broker
