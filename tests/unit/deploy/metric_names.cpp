// zkfleet_metric_names: prints every series name a broker and a worker serve
// on /metrics (one per line, histograms as _bucket/_sum/_count), by starting
// both metric sets on loopback and scraping them. deploy_test.py checks the
// alert rules and the Grafana dashboard against this list, so they can only
// name metrics the code exports.
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "unit/metrics/http_client.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"
#include "zkfleet/metrics/worker_metrics.hpp"

namespace {

// Sample lines "name{labels} value" or "name value"; comments skipped.
void AddSeriesNames(const std::string& exposition, std::set<std::string>& names) {
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
}

}  // namespace

int main() {
  using namespace zkfleet::metrics;
  std::set<std::string> names;
  try {
    MetricsServer broker_server;
    BrokerMetrics broker(broker_server);
    broker.ForCircuit("example");
    broker_server.Listen("127.0.0.1:0");

    MetricsServer worker_server;
    WorkerMetrics worker(worker_server, {"example-worker", "cpu", "none"}, {"example"}, 60);
    worker_server.Listen("127.0.0.1:0");

    for (int port : {broker_server.port(), worker_server.port()}) {
      auto reply = zkfleet::testing::HttpGet(port, "/metrics");
      if (reply.status != 200) {
        std::cerr << "zkfleet_metric_names: scrape of port " << port << " failed: " << reply.error << '\n';
        return 1;
      }
      AddSeriesNames(reply.body, names);
    }
    for (const std::string& name : names) std::cout << name << '\n';
    std::cout.flush();
    // Skip the HTTP servers' shutdown (civetweb polls its stop flag every
    // 2 s): nothing is left to clean up in a process that ends here.
    std::_Exit(0);
  } catch (const std::exception& e) {
    std::cerr << "zkfleet_metric_names: " << e.what() << '\n';
    return 1;
  }
}
