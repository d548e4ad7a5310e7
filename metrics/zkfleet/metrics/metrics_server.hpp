// MetricsServer: the process's Prometheus registry and the HTTP server that
// exposes it. One per process (broker or worker), created first in main()
// and destroyed last, so /metrics answers from start until exit, also while
// the worker is DRAINING and RELEASING.
//
// HTTP endpoints on --metrics-listen (docs/operations.md has the contract):
//   /metrics  Prometheus text format: the registry plus the added collectables
//   /ready    200 "READY" when SetReadiness(true), else 503 with the reason
//             (the Kubernetes readiness probe of a worker)
//   /healthz  200 "ok" while the process serves (liveness)
//
// Rebinding: civetweb (prometheus-cpp's HTTP server) sets SO_REUSEADDR on its
// listening sockets on Linux, so a restarted process binds the same port at
// once even while connections of the previous one sit in TIME_WAIT
// (tests/unit/metrics/metrics_server_test.cpp checks both).
//
// Thread-safety: Listen() and AddCollectable() from one thread at start.
// registry(), SetReadiness() and the metrics themselves are thread-safe; the
// HTTP server's own threads read them while the process updates them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

namespace prometheus {
class Exposer;
}

namespace zkfleet::metrics {

class MetricsServer {
 public:
  // Creates the registry and zkfleet_build_info. Serves nothing until Listen().
  MetricsServer();
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  prometheus::Registry& registry() { return *registry_; }

  // Exports `collectable` next to the registry (values computed at scrape
  // time). The server keeps it alive.
  void AddCollectable(std::shared_ptr<prometheus::Collectable> collectable);

  // Starts the HTTP server on `address`: "host:port", "[v6]:port" or "port"
  // (all interfaces); port 0 picks a free one (see port()). Throws
  // zkfleet::Error(kInvalidArgument / kIo) naming the address when it cannot.
  void Listen(const std::string& address);
  bool listening() const { return exposer_ != nullptr; }
  // The bound TCP port; 0 before Listen().
  int port() const { return port_; }

  // What /ready answers. `reason` is shown when not ready (e.g. "DRAINING").
  void SetReadiness(bool ready, const std::string& reason);

  // Everything /metrics would serve now; for tests and debugging.
  std::vector<prometheus::MetricFamily> Collect() const;

  struct Readiness;  // shared with the HTTP handler; defined in the .cpp

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::shared_ptr<Readiness> readiness_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace zkfleet::metrics
