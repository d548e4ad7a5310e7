#include "zkfleet/broker/grpc_core_log.hpp"

#include <grpc/grpc.h>
#include <grpc/support/log.h>

#include <atomic>
#include <mutex>

#include <spdlog/spdlog.h>

#include "zkfleet/metrics/broker_metrics.hpp"

namespace zkfleet::broker {
namespace {

// The metrics registry the hook counts into (the process's one, like the logger).
std::atomic<metrics::BrokerMetrics*> g_metrics{nullptr};

struct RefusalLog {
  std::mutex mutex;
  std::chrono::steady_clock::time_point next{};
  uint64_t since_last = 0;
};
RefusalLog g_refusals;

// The peer of the last socket read on this thread (the "tcp" tracer's lines).
thread_local std::string t_last_read_peer;

void OnGrpcLog(gpr_log_func_args* args) {
  const std::string_view message = args->message ? args->message : "";
  const std::string_view file = args->file ? args->file : "";
  if (args->severity != GPR_LOG_SEVERITY_ERROR && IsTcpTraceLine(file, message)) {
    if (auto peer = TcpTraceReadPeer(message)) t_last_read_peer = std::move(*peer);
    return;
  }
  if (auto reason = TlsRefusalReason(message)) {
    if (metrics::BrokerMetrics* metrics = g_metrics.load()) metrics->GrpcTlsRefused(*reason);
    std::lock_guard lock(g_refusals.mutex);
    ++g_refusals.since_last;
    const auto now = std::chrono::steady_clock::now();
    if (now < g_refusals.next) return;
    spdlog::warn("gRPC front door refused a TLS handshake ({}) from {}: {} ({} refused since the last such line; "
                 "zkfleet_broker_grpc_tls_refused_total counts them; the caller sees UNAVAILABLE)",
                 *reason, t_last_read_peer.empty() ? std::string("an unnamed peer") : t_last_read_peer, message,
                 g_refusals.since_last);
    g_refusals.since_last = 0;
    g_refusals.next = now + kRefusalLogInterval;
    return;
  }
  // gRPC's info lines were hidden by its default verbosity (errors only);
  // the tracer needs info, so they show at debug.
  const auto level = args->severity == GPR_LOG_SEVERITY_ERROR ? spdlog::level::err : spdlog::level::debug;
  spdlog::log(level, "gRPC core: {} ({}:{})", message, args->file ? args->file : "?", args->line);
}

}  // namespace

std::optional<std::string> TlsRefusalReason(std::string_view message) {
  if (message.find("Handshake failed with fatal error") == std::string_view::npos) return std::nullopt;
  if (message.find("peer did not return a certificate") != std::string_view::npos) return "no_certificate";
  if (message.find("certificate verify failed") != std::string_view::npos) return "certificate_not_trusted";
  return "other";
}

std::optional<std::string> TcpTraceReadPeer(std::string_view message) {
  constexpr std::string_view kRead = "READ 0x", kPeer = "(peer=";
  if (message.substr(0, kRead.size()) != kRead) return std::nullopt;
  const size_t start = message.find(kPeer);
  if (start == std::string_view::npos) return std::nullopt;
  const size_t end = message.find(')', start);
  if (end == std::string_view::npos || end == start + kPeer.size()) return std::nullopt;
  return std::string(message.substr(start + kPeer.size(), end - start - kPeer.size()));
}

bool IsTcpTraceLine(std::string_view file, std::string_view message) {
  // gRPC's iomgr/tcp_* sources (the endpoint, its server and its client),
  // and the endpoint's reference counts ("tcp:0x... ref 1 -> 2").
  if (file.find("iomgr/tcp_") != std::string_view::npos) return true;
  return file.find("ref_counted.h") != std::string_view::npos && message.substr(0, 4) == "tcp:";
}

void RouteGrpcCoreLog(metrics::BrokerMetrics* metrics, bool name_refused_peers) {
  g_metrics.store(metrics);
  gpr_set_log_function(OnGrpcLog);
  if (name_refused_peers) {
    gpr_set_log_verbosity(GPR_LOG_SEVERITY_INFO);  // the tracer writes at info
    grpc_tracer_set_enabled("tcp", 1);
  }
}

}  // namespace zkfleet::broker
