// IngressGuard: bounds the bytes a peer can make the broker hold before the
// broker has read them.
//
// Why: libzmq hands a multipart message to the application only when its last
// frame has arrived, and buffers it whole until then. ZMQ_MAXMSGSIZE bounds
// one frame and the HWMs count whole messages, so nothing in libzmq bounds a
// message of many frames: one SUBMIT announcing a 1.2 GB witness in 300 frames
// of 4 MiB made a broker with --max-witness-bytes 100000 hold 1.2 GB before
// it could answer TOO_LARGE (issue 27).
//
// How: for each TCP connection of the two ROUTERs, what the kernel has
// received on it (TCP_INFO's tcpi_bytes_received) less what the broker loop
// has read from it (Taken(), keyed by ZMQ_SRCFD and counted as the ZMTP/CURVE
// bytes those frames took on the wire) is what libzmq and the kernel hold for
// that peer. The guard thread measures it, often enough that a peer at
// loopback speed cannot get far past the bound between two looks, and when a
// connection holds more than its bound, or all of them together more than
// the total bound (then the one holding most), it shuts the connection down
// (shutdown(2)). libzmq then drops the half-received message, frees it, and
// the peer may reconnect. The count is exact: the wire size of every frame is
// known (WireBytes), so only the handshake's few hundred bytes are held
// forever, and an honest peer's estimate does not drift.
//
// The guard also owns the ROUTERs' socket monitors (libzmq allows one per
// socket): connections opening and closing feed the guard, and handshakes
// that fail before authentication are queued for the loop
// (TakeHandshakeFailures, wake_fd()).
//
// Connections that are not TCP (ipc://) cannot be measured: they are not
// guarded (logged once).
//
// Thread-safety: construct and destroy on the broker loop's thread (it owns
// the ROUTERs); Taken(), TakeHandshakeFailures() and wake_fd() may be called
// from that thread while the guard's own thread runs. The monitor sockets
// are used only by the guard's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "zkfleet/broker/peer_allow_list.hpp"
#include "zkfleet/broker/options.hpp"
#include "zkfleet/common/mailbox.hpp"

namespace zkfleet::metrics {
class BrokerMetrics;
}

namespace zkfleet::broker {

// A handshake that failed before ZAP was asked (no CURVE, a wrong broker
// key, not ZMTP), as a socket monitor reported it.
struct HandshakeFailure {
  PeerKind endpoint;
  std::string address;
};

class IngressGuard {
 public:
  // Monitors `clients` and `workers` (ROUTERs of `context`, not yet bound).
  // `curve`: whether the ROUTERs are CURVE servers (frames' wire size).
  // `metrics` may be null; not owned, it must outlive the guard.
  IngressGuard(zmq::context_t& context, zmq::socket_t& clients, zmq::socket_t& workers, IngressBounds bounds,
               bool curve, metrics::BrokerMetrics* metrics);
  ~IngressGuard();  // stops and joins the guard's thread
  IngressGuard(const IngressGuard&) = delete;
  IngressGuard& operator=(const IngressGuard&) = delete;

  // The loop read frames of `wire_bytes` in all (WireBytes of each, the
  // routing id not counted) from connection `fd` (ZMQ_SRCFD of a frame).
  void Taken(int fd, uint64_t wire_bytes);

  // The bytes a frame of `payload_bytes` takes on the wire: ZMTP's frame
  // header (2 bytes, or 9 above 255), and under CURVE the MESSAGE command's
  // name, nonce, flags and MAC (33 bytes) around the payload.
  static uint64_t WireBytes(size_t payload_bytes, bool curve);

  // Closes connection `fd` (ZMQ_SRCFD of a frame the loop just read from
  // `endpoint`) about kCutGrace later, so the replies of this turn leave
  // first, unless the connection closed meanwhile (its fd then belongs to
  // another; `peer_ip` (the frame's Peer-Address) must match too). For a key
  // removed from the allow-list: its old connection would otherwise stay, and
  // every message on it be answered (issue 47). `why` is logged.
  void CutConnection(int fd, PeerKind endpoint, std::string peer_ip, std::string why);
  static constexpr std::chrono::milliseconds kCutGrace{200};

  // Readable (an eventfd) while handshake failures wait to be taken.
  int wake_fd() const { return failures_.fd(); }
  std::vector<HandshakeFailure> TakeHandshakeFailures();

  const IngressBounds& bounds() const { return bounds_; }
  bool curve() const { return curve_; }
  uint64_t connections_cut() const { return connections_cut_.load(); }
  // What all guarded connections held at the guard's last look.
  uint64_t held_bytes() const { return held_bytes_.load(); }

 private:
  struct Watched {
    PeerKind endpoint;
    uint64_t received = 0;  // the kernel's count at the last look
    uint64_t held = 0;      // what it held then
    std::chrono::steady_clock::time_point next_look{};
    bool measurable = true;
    uint64_t serial = 0;    // which connection had this fd (ACCEPTED events counted)
  };
  struct CutRequest {
    int fd;
    PeerKind endpoint;
    std::string peer_ip;
    std::string why;
    std::chrono::steady_clock::time_point due{};
    uint64_t serial = 0;  // watched_[fd].serial when the guard took the request
  };

  void Run();
  void OnMonitorEvents(zmq::socket_t& monitor, PeerKind endpoint);
  // Looks at the connections that are due; returns when the next one is.
  std::chrono::steady_clock::time_point LookAtConnections();
  // Shuts `fd` down unless it is no longer the connection measured (its
  // kernel count went back: the number was reused).
  void Cut(int fd, const Watched& watched, uint64_t held, bool over_total);
  // Takes the loop's CutConnection requests and closes those due; returns
  // when the next one is (or `next`).
  std::chrono::steady_clock::time_point CutRequested(std::chrono::steady_clock::time_point next);

  IngressBounds bounds_;
  bool curve_;
  metrics::BrokerMetrics* metrics_;
  zmq::socket_t client_monitor_;
  zmq::socket_t worker_monitor_;
  int stop_fd_ = -1;  // eventfd: the destructor asks the thread to stop
  Mailbox<HandshakeFailure> failures_{"ingress guard"};  // to the broker loop

  // The guard thread's own view of the open connections, by fd.
  std::unordered_map<int, Watched> watched_;
  uint64_t accepted_ = 0;               // ACCEPTED events seen: Watched::serial
  std::vector<CutRequest> cuts_;        // taken from cut_requests_, waiting for their grace
  bool warned_unmeasurable_ = false;
  std::chrono::steady_clock::time_point next_cut_log_[2]{};  // clients, workers

  std::mutex mutex_;
  std::unordered_map<int, uint64_t> taken_;  // guarded by mutex_: wire bytes the loop read, by fd
  std::vector<CutRequest> cut_requests_;     // guarded by mutex_

  std::atomic<uint64_t> connections_cut_{0};
  std::atomic<uint64_t> held_bytes_{0};
  std::thread thread_;
};

}  // namespace zkfleet::broker
