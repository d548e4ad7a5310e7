// The broker process's one thread: owns the client ROUTER and the worker
// ROUTER (two ports), polls both, decodes and checks every frame, feeds
// BrokerCore and sends what it produces. Malformed, wrong-version and
// oversized frames are dropped and counted; a client also gets an ErrorReply.
// The Prometheus metrics, when given, are updated by the core (BrokerCore).
//
// Thread-safety: construct, Bind() and Run() on one thread; the sockets never
// leave it. Nothing here may be called from another thread while Run() runs.
#pragma once

#include <memory>
#include <string>

#include <zmq.hpp>

#include "zkfleet/broker/broker_core.hpp"
#include "zkfleet/broker/options.hpp"
#include "zkfleet/broker/turn_timer.hpp"

namespace zkfleet::broker {

class BrokerServer {
 public:
  // Opens the journal in options.journal.dir and recovers it (throws
  // zkfleet::Error when it cannot). `metrics` may be null; otherwise not
  // owned, and it must outlive the server.
  BrokerServer(zmq::context_t& context, BrokerOptions options, metrics::BrokerMetrics* metrics = nullptr);

  // Binds both ROUTER sockets. Throws zkfleet::Error naming the endpoint.
  void Bind();
  // The endpoints actually bound (resolves "tcp://host:*").
  std::string client_endpoint() const;
  std::string worker_endpoint() const;

  // Serves until `stop_fd` (e.g. a signalfd for SIGINT/SIGTERM; -1 for none)
  // becomes readable.
  void Run(int stop_fd);

  const BrokerCore& core() const { return core_; }
  BrokerCore& core() { return core_; }

 private:
  // Receives up to `budget` messages from `socket`; returns how many.
  size_t DrainSocket(zmq::socket_t& socket, bool from_workers, int budget, Clock::time_point now);
  void HandleFrame(bool from_workers, const std::string& identity, const zmq::message_t& payload,
                   size_t frame_count, Clock::time_point now);
  // Commits the journal, then sends everything in the core's outbox; a worker
  // that cannot be reached is removed (its leases requeue) and dispatch runs
  // again.
  void Flush(Clock::time_point now);
  void Commit();

  BrokerOptions options_;
  metrics::BrokerMetrics* metrics_;  // not owned; may be null
  std::unique_ptr<Journal> journal_;
  BrokerCore core_;
  zmq::socket_t clients_;
  zmq::socket_t workers_;
  proto::Envelope scratch_;  // reused decode target
  TurnTimer turns_;
};

}  // namespace zkfleet::broker
