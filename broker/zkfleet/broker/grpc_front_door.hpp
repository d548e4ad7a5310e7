// The broker's gRPC front door (zkfleet.v1.Fleet, schema/grpc/zkfleet_v1.proto;
// docs/grpc.md): a gRPC server inside the broker process that turns each
// call into the request a ZeroMQ client would send, for the broker's one
// loop to handle like any other (BrokerCore: the same admission, journal,
// idempotency and ownership), and the loop's replies back into the call.
//
// Who calls: over TLS (the default), a caller must present a client
// certificate signed by --grpc-client-ca; its subject CN must be the NAME of
// a client key in the allow-list (DIR/clients/NAME), whose role it gets.
// So "alice" is one identity on both transports: her jobs are hers over
// gRPC and over ZeroMQ, and no one else's. Anything else is refused
// (UNAUTHENTICATED) and counted. With --grpc-insecure-plaintext (only with
// the broker's --insecure-plaintext) there is no TLS and the caller's
// metadata "zkfleet-client-id" names it, as Envelope.client_id does there.
//
// The bridge: a call's requests carry a routing identity no ZeroMQ peer can
// have ("\0grpc/" + call number: libzmq's own identities are 5 bytes from a
// zero byte, libzmq lets no socket set one that starts with a zero byte, and
// BrokerServer drops a client message that arrives with such an identity
// anyway: a peer with its own ZMTP stack could announce it), so the
// core's replies to it come back through BrokerServer, which hands replies
// to such identities to Deliver() instead of the ROUTER, after the turn's
// journal commit like every client reply.
//
// Thread-safety: the gRPC handlers run on gRPC's threads and queue
// requests (TakeRequests, wake_fd); TakeRequests and Deliver are called by
// the broker's loop thread. SetAllowList may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/broker/peer_allow_list.hpp"
#include "zkfleet/broker/broker_core.hpp"
#include "zkfleet/fleet/frames.hpp"

namespace grpc {
class Server;
}

namespace zkfleet::broker {

// One call's request for the broker's loop.
struct GrpcRequest {
  std::string identity;           // the call's routing identity (IsGrpcIdentity)
  Peer peer;                      // the authenticated caller
  proto::Envelope envelope;       // the request, as a ZeroMQ client would send it
  fleet::Frames frames;           // inline witnesses (SubmitJob)
};

// Whether a client identity is a gRPC call's (BrokerServer's replies).
bool IsGrpcIdentity(const std::string& identity);

class GrpcFrontDoor {
 public:
  // Starts serving on options.listen. Throws zkfleet::Error naming the file
  // or the address when the certificates cannot be read or it cannot bind.
  GrpcFrontDoor(GrpcOptions options, PeerAllowList allow_list, metrics::BrokerMetrics* metrics);
  ~GrpcFrontDoor();  // stops the server: open calls end with UNAVAILABLE
  GrpcFrontDoor(const GrpcFrontDoor&) = delete;
  GrpcFrontDoor& operator=(const GrpcFrontDoor&) = delete;

  // The port bound (options.listen may say :0).
  int port() const { return port_; }
  // Readable (eventfd) while requests wait; TakeRequests clears it.
  int wake_fd() const;
  std::vector<GrpcRequest> TakeRequests();
  // Requests taken but not handled (a storage fault stopped the turn): they
  // go back to the front of the queue, in order.
  void Requeue(std::vector<GrpcRequest> requests);
  // A reply of the core's to `identity` (a gRPC call's): completes or
  // continues the call; a call that has gone (cancelled, timed out) drops it.
  void Deliver(const std::string& identity, const proto::Envelope& reply);
  // The allow-list after a reload (SIGHUP): callers are looked up in it.
  void SetAllowList(PeerAllowList allow_list);

  // Used by the service (grpc_front_door.cpp).
  class Call;
  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
  // The service outlives the server (destroyed after it).
  std::unique_ptr<class FleetService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace zkfleet::broker
