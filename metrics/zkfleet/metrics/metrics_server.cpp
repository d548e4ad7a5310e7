#include "zkfleet/metrics/metrics_server.hpp"

#include <CivetServer.h>
#include <civetweb.h>

#include <cstring>
#include <map>
#include <mutex>

#include <prometheus/exposer.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/metrics/build_info.hpp"

namespace zkfleet::metrics {

struct MetricsServer::Readiness {
  std::mutex mutex;
  bool ready = false;
  std::string reason = "starting";
};

namespace {

// civetweb's begin_request callback has no user pointer we can set through
// prometheus::Exposer, so the handler finds the server's readiness by the
// port the request came in on. Guarded by RegistryMutex(). Both are leaked on
// purpose: a MetricsServer may itself be a static, destroyed at exit after
// function-local statics created later than it would already be gone.
std::mutex& RegistryMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::map<int, std::weak_ptr<MetricsServer::Readiness>>& ReadinessByPort() {
  static auto* by_port = new std::map<int, std::weak_ptr<MetricsServer::Readiness>>;
  return *by_port;
}

int Reply(mg_connection* conn, int status, const char* status_text, const std::string& body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\n\r\n",
            status, status_text, body.size());
  mg_write(conn, body.data(), body.size());
  return status;  // 1..999: handled here, civetweb logs this status
}

// /ready and /healthz; 0 lets civetweb route everything else (/metrics) to
// prometheus-cpp's handlers.
int BeginRequest(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info == nullptr || info->local_uri == nullptr) return 0;
  if (std::strcmp(info->local_uri, "/healthz") == 0) return Reply(conn, 200, "OK", "ok\n");
  if (std::strcmp(info->local_uri, "/ready") != 0) return 0;

  std::shared_ptr<MetricsServer::Readiness> readiness;
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    auto it = ReadinessByPort().find(info->server_port);
    if (it != ReadinessByPort().end()) readiness = it->second.lock();
  }
  if (!readiness) return Reply(conn, 503, "Service Unavailable", "starting\n");
  std::lock_guard<std::mutex> lock(readiness->mutex);
  if (readiness->ready) return Reply(conn, 200, "OK", "READY\n");
  return Reply(conn, 503, "Service Unavailable", readiness->reason + "\n");
}

}  // namespace

MetricsServer::MetricsServer()
    : registry_(std::make_shared<prometheus::Registry>()), readiness_(std::make_shared<Readiness>()) {
  AddBuildInfo(*registry_);
}

MetricsServer::~MetricsServer() {
  exposer_.reset();  // joins the HTTP threads: no handler runs after this
  if (port_ != 0) {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    ReadinessByPort().erase(port_);
  }
}

void MetricsServer::AddCollectable(std::shared_ptr<prometheus::Collectable> collectable) {
  collectables_.push_back(collectable);
  if (exposer_) exposer_->RegisterCollectable(collectable);
}

void MetricsServer::Listen(const std::string& address) {
  if (exposer_) throw Error(ErrorCode::kInvalidArgument, "metrics: already listening on port " + std::to_string(port_));
  if (address.empty() || address.find(',') != std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument,
                "metrics: --metrics-listen: expected host:port, [v6]:port or port, found '" + address + "'");
  }
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c;  // zero-initialised by its constructor
    c.begin_request = BeginRequest;
    return c;
  }();
  try {
    // Two HTTP threads: a scrape is cheap, and probes must not queue behind it.
    exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", address, "num_threads", "2"}, &callbacks);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kIo, "metrics: cannot listen on '" + address +
                                    "' (port in use, or not host:port?): " + e.what());
  }
  std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    ReadinessByPort()[port_] = readiness_;
  }
  exposer_->RegisterCollectable(registry_);
  for (const auto& collectable : collectables_) exposer_->RegisterCollectable(collectable);
}

void MetricsServer::SetReadiness(bool ready, const std::string& reason) {
  std::lock_guard<std::mutex> lock(readiness_->mutex);
  readiness_->ready = ready;
  readiness_->reason = reason;
}

std::vector<prometheus::MetricFamily> MetricsServer::Collect() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (const auto& collectable : collectables_) {
    for (auto& family : collectable->Collect()) families.push_back(std::move(family));
  }
  return families;
}

}  // namespace zkfleet::metrics
