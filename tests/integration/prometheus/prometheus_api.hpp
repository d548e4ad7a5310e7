// Queries a Prometheus server's HTTP API (/api/v1/query) for the integration
// test. Values come back as doubles; "NaN" parses as NaN.
//
// Thread-safety: stateless apart from the port.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace zkfleet::testing {

class PrometheusApi {
 public:
  explicit PrometheusApi(int port) : port_(port) {}

  // GET `path` and parse the JSON body; {"status": "transport-error", ...}
  // when the server did not answer.
  nlohmann::json Get(const std::string& path) const;
  // Instant query; the whole API response.
  nlohmann::json Query(const std::string& promql) const;
  // The value of a query that returns exactly one series; nullopt otherwise.
  std::optional<double> Scalar(const std::string& promql) const;
  // Values by the value of `label`, for a query returning several series.
  std::map<std::string, double> ByLabel(const std::string& promql, const std::string& label) const;

 private:
  int port_;
};

std::string UrlEncode(const std::string& text);

}  // namespace zkfleet::testing
