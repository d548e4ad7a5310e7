// The broker's ZAP handler (ZeroMQ Authentication Protocol 1.0, RFC 27):
// decides at every CURVE handshake on the broker's ROUTERs whether the peer's
// public key may connect, and tells libzmq who it is.
//
// Wiring (done by the broker): construct one ZapHandler in the broker's
// zmq::context_t BEFORE binding the ROUTERs; give the worker ROUTER the ZAP
// domain kWorkerZapDomain and the client ROUTER kClientZapDomain; poll
// socket() in the broker loop and call HandleOne() when it is readable. A
// handshake waits (asynchronously, inside libzmq) for the reply, so the loop
// must poll it like any other socket; nothing else ever blocks on it.
//
// Policy, per request:
//   * mechanism CURVE: the client key must be in the allow-list AND of the
//     kind of the domain's endpoint (worker keys on the worker domain, client
//     keys on the client domain). Accepted: status 200, user id = the key's
//     NAME, metadata "Kind" = worker|client and, for clients, "Role" =
//     submit|observe|admin. The broker reads them from every message it
//     receives: zmq_msg_gets(msg, "User-Id"), zmq_msg_gets(msg, "Role"),
//     zmq_msg_gets(msg, "Kind"). Otherwise 400, reason unknown_key or
//     wrong_endpoint.
//   * mechanism NULL or PLAIN: 400 (reason mechanism) unless constructed with
//     allow_plaintext (--insecure-plaintext); then 200 with user id
//     "anonymous", Kind = the endpoint's kind and, on the client endpoint,
//     Role = admin (plaintext keeps today's everyone-may-do-everything).
//     Note that libzmq asks ZAP about NULL connections only when the socket
//     has a ZAP domain; a plaintext broker may simply not set the domains (no
//     ZAP, no User-Id on messages) - or set them and construct this with
//     allow_plaintext to get uniform "anonymous"/Role metadata.
//   * any other mechanism (GSSAPI): 400, reason mechanism.
//   * a domain that is neither of ours (including the empty domain: every
//     CURVE server socket in the context is sent here): 400, logged as an
//     error (a wiring bug), counted in other_rejections(), not per endpoint.
//   * a malformed request (not ZAP 1.0): 500 (libzmq never sends one).
//
// Rejections are counted per (endpoint, reason) (for the Prometheus counter
// zkfleet_broker_auth_rejected_total{endpoint,reason}; see also
// set_on_rejected) and logged at spdlog warn at most once per (endpoint, key)
// per log_interval, with the Z85 key and the peer address (for NULL/PLAIN:
// once per (endpoint, mechanism, address)).
//
// Reload swaps the allow-list snapshot (SIGHUP). ZAP runs only at handshake,
// so connected peers are unaffected; a removed key is refused at its next
// (re)connect.
//
// Ownership: owns its ZMQ_REP socket; the context must outlive the handler.
// Only one ZAP handler may be bound per context (libzmq's fixed endpoint).
// Thread-safety: not thread-safe; owned by the broker thread (the thread
// that polls its socket).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "zkfleet/broker/peer_allow_list.hpp"

namespace zkfleet::broker {

// The ZAP domains the broker sets (ZMQ_ZAP_DOMAIN) on its two ROUTERs.
inline constexpr char kWorkerZapDomain[] = "zkfleet-workers";
inline constexpr char kClientZapDomain[] = "zkfleet-clients";
// libzmq's fixed ZAP endpoint.
inline constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";

// The ZAP domain for an endpoint kind, and back (nullopt: not ours).
const char* ZapDomain(PeerKind endpoint);
std::optional<PeerKind> EndpointForZapDomain(std::string_view domain);

// Why a handshake was refused (the `reason` label).
enum class RejectReason {
  kUnknownKey,     // CURVE key in no allow-list
  kWrongEndpoint,  // a worker key on the client port, or the reverse
  kMechanism,      // NULL/PLAIN without --insecure-plaintext, or GSSAPI
};
inline constexpr size_t kRejectReasonCount = 3;
const char* RejectReasonName(RejectReason reason);  // "unknown_key", "wrong_endpoint", "mechanism"

struct ZapOptions {
  bool allow_plaintext = false;                          // --insecure-plaintext
  std::chrono::milliseconds log_interval = std::chrono::minutes(1);  // per key
  size_t max_log_entries = 4096;  // bound on remembered (endpoint, key) log times
};

class ZapHandler {
 public:
  // Binds a ZMQ_REP socket at kZapEndpoint in `context`. Throws Error
  // (kInvalidArgument) when the endpoint is taken (another handler).
  ZapHandler(zmq::context_t& context, PeerAllowList allow_list, ZapOptions options = {});
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // For the broker's poll set (ZMQ_POLLIN).
  zmq::socket_t& socket() { return socket_; }

  // Answers one pending ZAP request without blocking. Returns false when
  // none was pending.
  bool HandleOne();
  // Answers every pending request; returns how many.
  size_t HandleAll();

  // Replaces the allow-list; later handshakes use the new one.
  void Reload(PeerAllowList allow_list);
  const PeerAllowList& allow_list() const { return allow_list_; }

  // Handshakes refused on `endpoint` for `reason` since construction.
  uint64_t rejected(PeerKind endpoint, RejectReason reason) const;
  // Handshakes accepted on `endpoint` since construction.
  uint64_t accepted(PeerKind endpoint) const;
  // Requests refused for a domain that is not ours, or malformed.
  uint64_t other_rejections() const { return other_rejections_; }
  // Rejection log lines written (the rest were rate-limited).
  uint64_t rejection_logs() const { return rejection_logs_; }

  // Called on every counted rejection (after the counter moves), e.g. to
  // bump a Prometheus counter. Runs on the broker thread inside HandleOne.
  void set_on_rejected(std::function<void(PeerKind endpoint, RejectReason reason)> callback) {
    on_rejected_ = std::move(callback);
  }

 private:
  struct Verdict;
  Verdict Decide(std::string_view domain, std::string_view address, std::string_view mechanism,
                 const std::vector<zmq::message_t>& credentials);
  void CountRejection(PeerKind endpoint, RejectReason reason);
  bool ShouldLog(const std::string& what);

  zmq::socket_t socket_;
  PeerAllowList allow_list_;
  ZapOptions options_;
  std::array<std::array<uint64_t, kRejectReasonCount>, 2> rejected_{};
  std::array<uint64_t, 2> accepted_{};
  uint64_t other_rejections_ = 0;
  uint64_t rejection_logs_ = 0;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> last_logged_;
  std::chrono::steady_clock::time_point last_suppressed_summary_{};
  uint64_t suppressed_ = 0;
  std::function<void(PeerKind, RejectReason)> on_rejected_;
};

}  // namespace zkfleet::broker
