// gRPC core's own log lines (gpr_log) go to stderr in gRPC's format, where a
// JSON log reader and the metrics never see them; among them the only trace
// of a caller refused at the TLS handshake (no client certificate, an
// expired one, one of another CA), which never becomes a call.
// RouteGrpcCoreLog sends every such line through spdlog ("gRPC core: ..."),
// and counts each refused handshake in
// zkfleet_broker_grpc_tls_refused_total{reason}, logging the refusals at
// most once per kRefusalLogInterval with how many there were since.
// gRPC 1.51 does not say who the peer was at that point (the failure is
// reported before the connection has a peer address); the caller's side
// sees UNAVAILABLE with the TLS error.
//
// Thread-safety: process-wide (gpr_set_log_function); call it before the
// gRPC server starts, and with null before `metrics` (may be null) goes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace zkfleet::metrics {
class BrokerMetrics;
}

namespace zkfleet::broker {

inline constexpr std::chrono::seconds kRefusalLogInterval{10};

void RouteGrpcCoreLog(metrics::BrokerMetrics* metrics);

// The reason label of a gRPC core log line reporting a refused TLS
// handshake ("no_certificate", "certificate_not_trusted", "other"), or
// nullopt for any other line.
std::optional<std::string> TlsRefusalReason(std::string_view message);

}  // namespace zkfleet::broker
