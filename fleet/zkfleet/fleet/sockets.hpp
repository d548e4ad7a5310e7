// Socket setup shared by the broker, the worker and the clients, and the
// non-blocking ROUTER send the broker uses. Every zkfleet socket gets bounded
// high-water marks and a transport-level maximum message size.
//
// Thread-safety: a zmq::socket_t must only be used by the thread that owns it;
// these helpers do not change that.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <zmq.hpp>

namespace zkfleet::fleet {

struct SocketLimits {
  // Messages queued per peer in each direction. A full queue makes a ROUTER
  // send fail (never block): the broker counts it and moves on.
  int hwm = 20000;
  // Application limit on the Envelope frame: larger ones are dropped and
  // counted (and a client gets an ErrorReply). Witnesses travel in frames of
  // their own and are not counted here. The largest Envelope the fields'
  // bounds allow is a RESULT with a 4 MiB public.json; 8 MiB leaves room
  // and keeps what one connection can make the broker hold small.
  size_t max_message_bytes = 8ull << 20;
  // Application limit on one witness frame (one .wtns file): a SUBMIT with a
  // larger one is refused as TOO_LARGE. 1 GiB holds a 2^25-signal witness.
  size_t max_witness_bytes = 1ull << 30;

  // libzmq's own per-frame limit (ZMQ_MAXMSGSIZE): twice the Envelope limit
  // or a witness chunk (16 MiB, frames.hpp), whichever is larger, plus 1 MiB.
  // A peer sending more is disconnected by libzmq before the frame is
  // buffered. It bounds one frame only; the broker's IngressGuard bounds a
  // message of many.
  int64_t transport_max_bytes() const {
    return static_cast<int64_t>(std::max<size_t>(max_message_bytes * 2, 16u << 20)) + (1 << 20);
  }
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

// Sends [identity][payload][frames...] on a ROUTER without ever blocking
// (the frames are consumed: pass shared copies to keep them).
SendStatus SendToPeer(zmq::socket_t& router, const std::string& identity, const std::string& payload,
                      std::vector<zmq::message_t>* frames = nullptr);

}  // namespace zkfleet::fleet
