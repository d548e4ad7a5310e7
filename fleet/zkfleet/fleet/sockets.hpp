// Socket setup shared by the broker, the worker and the clients, and the
// non-blocking ROUTER send the broker uses. Every zkfleet socket gets bounded
// high-water marks and a transport-level maximum message size.
//
// Thread-safety: a zmq::socket_t must only be used by the thread that owns it;
// these helpers do not change that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <zmq.hpp>

namespace zkfleet::fleet {

struct SocketLimits {
  // Messages queued per peer in each direction. A full queue makes a ROUTER
  // send fail (never block): the broker counts it and moves on.
  int hwm = 20000;
  // Application limit: larger frames are dropped and counted (and a client
  // gets an ErrorReply). 64 MiB holds a partitioned job of large witnesses.
  size_t max_message_bytes = 64ull << 20;

  // libzmq's own limit (ZMQ_MAXMSGSIZE), twice the application limit: a peer
  // sending more is disconnected by libzmq before the frame is buffered, so a
  // hostile frame never costs more than this much memory.
  int64_t transport_max_bytes() const { return static_cast<int64_t>(max_message_bytes) * 2 + (1 << 20); }
};

// ROUTER_MANDATORY (unroutable sends fail instead of vanishing), HWMs,
// ZMQ_MAXMSGSIZE and linger 0.
void ConfigureRouter(zmq::socket_t& socket, const SocketLimits& limits);

// HWMs, ZMQ_MAXMSGSIZE and the given linger (how long close() may wait to
// flush, e.g. so a worker's DISCONNECT reaches the broker).
void ConfigureDealer(zmq::socket_t& socket, const SocketLimits& limits, int linger_ms);

enum class SendStatus {
  kOk,
  kUnroutable,  // no such peer (disconnected); ROUTER_MANDATORY reports it
  kFull,        // the peer's queue is at its HWM
};

// Sends [identity][payload] on a ROUTER without ever blocking.
SendStatus SendToPeer(zmq::socket_t& router, const std::string& identity, const std::string& payload);

// Wall-clock seconds since the Unix epoch (for timestamps in messages).
double UnixNow();

}  // namespace zkfleet::fleet
