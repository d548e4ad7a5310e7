#include "zkfleet/fleet/sockets.hpp"

#include <cerrno>
#include <chrono>

#include "zkfleet/fleet/frames.hpp"

namespace zkfleet::fleet {

void ConfigureRouter(zmq::socket_t& socket, const SocketLimits& limits) {
  socket.set(zmq::sockopt::router_mandatory, 1);
  socket.set(zmq::sockopt::sndhwm, limits.hwm);
  socket.set(zmq::sockopt::rcvhwm, limits.hwm);
  socket.set(zmq::sockopt::maxmsgsize, limits.transport_max_bytes());
  socket.set(zmq::sockopt::linger, 0);
}

void ConfigureDealer(zmq::socket_t& socket, const SocketLimits& limits, int linger_ms) {
  socket.set(zmq::sockopt::sndhwm, limits.hwm);
  socket.set(zmq::sockopt::rcvhwm, limits.hwm);
  socket.set(zmq::sockopt::maxmsgsize, limits.transport_max_bytes());
  socket.set(zmq::sockopt::linger, linger_ms);
}

SendStatus SendToPeer(zmq::socket_t& router, const std::string& identity, const std::string& payload,
                      std::vector<zmq::message_t>* frames) {
  try {
    // With ROUTER_MANDATORY the identity frame is where an unknown peer
    // (EHOSTUNREACH) or a full pipe (EAGAIN) is reported.
    auto sent = router.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    if (!sent) return SendStatus::kFull;
    // Once the first part is queued the rest of the message always is.
    const bool more = frames && !frames->empty();
    router.send(zmq::buffer(payload), more ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                                           : zmq::send_flags::dontwait);
    if (more) SendFrames(router, *frames, zmq::send_flags::dontwait);
    return SendStatus::kOk;
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return SendStatus::kUnroutable;
    if (e.num() == EAGAIN) return SendStatus::kFull;
    throw;
  }
}

}  // namespace zkfleet::fleet
