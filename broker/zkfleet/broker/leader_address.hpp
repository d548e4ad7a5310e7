// Where a broker on etcd can be reached, as it tells the others: the value of
// the leader key (etcd_leadership.hpp) while it leads. A standby reads it to
// answer clients and workers "not the leader, try X" (standby_responder.hpp).
//
// The value is JSON: {"name": ..., "clients": "tcp://...", "workers": "tcp://...",
// "grpc": "host:port"}.
// A value that is not (a broker from before the endpoints were advertised)
// reads as a name alone.
//
// Thread-safety: plain values.
#pragma once

#include <string>

namespace zkfleet::broker {

struct LeaderAddress {
  std::string name;     // for people: --advertise, or the client endpoint and host
  std::string clients;  // the client endpoint others should connect to ("" unknown)
  std::string workers;  // the worker endpoint others should connect to ("" unknown)
  std::string grpc;     // the gRPC front door's host:port ("" none)

  std::string Encode() const;
  static LeaderAddress Decode(const std::string& value);
  // "NAME (clients tcp://..., workers tcp://...)", or the name alone.
  std::string Describe() const;
  bool operator==(const LeaderAddress&) const = default;
};

// The endpoint others reach a bound endpoint at: a wildcard host ("*",
// "0.0.0.0", "[::]", "::") replaced by `host`; anything else as it is.
std::string AdvertisedEndpoint(const std::string& bound, const std::string& host);

// Whether the endpoint names a fixed TCP port (not "*", not "!"/ephemeral):
// only then can a standby hold it while another broker leads.
bool HasFixedPort(const std::string& endpoint);

// The same for a gRPC listen address (host:port, no scheme): a wildcard
// host ("", "0.0.0.0", "[::]", "::", "*") replaced by `host`; a fixed port.
std::string AdvertisedGrpcAddress(const std::string& listen, const std::string& host);
bool HasFixedGrpcPort(const std::string& listen);

}  // namespace zkfleet::broker
