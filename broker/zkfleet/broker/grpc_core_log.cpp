#include "zkfleet/broker/grpc_core_log.hpp"

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

void OnGrpcLog(gpr_log_func_args* args) {
  const std::string_view message = args->message ? args->message : "";
  if (auto reason = TlsRefusalReason(message)) {
    if (metrics::BrokerMetrics* metrics = g_metrics.load()) metrics->GrpcTlsRefused(*reason);
    std::lock_guard lock(g_refusals.mutex);
    ++g_refusals.since_last;
    const auto now = std::chrono::steady_clock::now();
    if (now < g_refusals.next) return;
    spdlog::warn("gRPC front door refused a TLS handshake ({}): {} ({} refused since the last such line; "
                 "zkfleet_broker_grpc_tls_refused_total counts them; the caller sees UNAVAILABLE)",
                 *reason, message, g_refusals.since_last);
    g_refusals.since_last = 0;
    g_refusals.next = now + kRefusalLogInterval;
    return;
  }
  const auto level = args->severity == GPR_LOG_SEVERITY_ERROR  ? spdlog::level::err
                     : args->severity == GPR_LOG_SEVERITY_INFO ? spdlog::level::info
                                                               : spdlog::level::debug;
  spdlog::log(level, "gRPC core: {} ({}:{})", message, args->file ? args->file : "?", args->line);
}

}  // namespace

std::optional<std::string> TlsRefusalReason(std::string_view message) {
  if (message.find("Handshake failed with fatal error") == std::string_view::npos) return std::nullopt;
  if (message.find("peer did not return a certificate") != std::string_view::npos) return "no_certificate";
  if (message.find("certificate verify failed") != std::string_view::npos) return "certificate_not_trusted";
  return "other";
}

void RouteGrpcCoreLog(metrics::BrokerMetrics* metrics) {
  g_metrics.store(metrics);
  gpr_set_log_function(OnGrpcLog);
}

}  // namespace zkfleet::broker
