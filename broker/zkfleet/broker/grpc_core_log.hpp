// gRPC core's own log lines (gpr_log) go to stderr in gRPC's format, where a
// JSON log reader and the metrics never see them; among them the only trace
// of a caller refused at the TLS handshake (no client certificate, an
// expired one, one of another CA), which never becomes a call.
// RouteGrpcCoreLog sends every such line through spdlog ("gRPC core: ..."),
// and counts each refused handshake in
// zkfleet_broker_grpc_tls_refused_total{reason}, logging the refusals at
// most once per kRefusalLogInterval with how many there were since.
// gRPC 1.51's refusal line does not name the peer. With `name_refused_peers`
// the hook turns on gRPC core's "tcp" tracer, whose lines it reads and drops
// (never logged): each read names its peer ("READ 0x... (peer=ipv4:...)"),
// and gRPC runs the TLS handshake in that read's callback on the same
// thread, so the last peer read on the refusing thread is the refused one.
// The cost is a formatted line per socket read and write (measured in
// docs/benchmarks.md, "gRPC front door"). The caller's side sees UNAVAILABLE
// with the TLS error.
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

void RouteGrpcCoreLog(metrics::BrokerMetrics* metrics, bool name_refused_peers = false);

// The reason label of a gRPC core log line reporting a refused TLS
// handshake ("no_certificate", "certificate_not_trusted", "other"), or
// nullopt for any other line.
std::optional<std::string> TlsRefusalReason(std::string_view message);

// The peer of a "tcp" tracer read line ("READ 0x55d0 (peer=ipv4:10.0.0.7:49314)
// error=OK" -> "ipv4:10.0.0.7:49314"), or nullopt for any other line.
std::optional<std::string> TcpTraceReadPeer(std::string_view message);

// Whether a line comes from the "tcp" tracer (its reads, writes, accepts and
// reference counts): lines the hook drops.
bool IsTcpTraceLine(std::string_view file, std::string_view message);

}  // namespace zkfleet::broker
