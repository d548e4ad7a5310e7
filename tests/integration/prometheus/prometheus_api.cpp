#include "prometheus_api.hpp"

#include <cstdio>

#include "unit/metrics/http_client.hpp"

namespace zkfleet::testing {

std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

nlohmann::json PrometheusApi::Get(const std::string& path) const {
  HttpResponse reply = HttpGet(port_, path);
  if (reply.status == 0) return {{"status", "transport-error"}, {"error", reply.error}};
  auto json = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return {{"status", "bad-json"}, {"error", reply.body.substr(0, 200)}};
  return json;
}

nlohmann::json PrometheusApi::Query(const std::string& promql) const {
  return Get("/api/v1/query?query=" + UrlEncode(promql));
}

std::optional<double> PrometheusApi::Scalar(const std::string& promql) const {
  auto json = Query(promql);
  if (json.value("status", "") != "success") return std::nullopt;
  const auto& result = json["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

std::map<std::string, double> PrometheusApi::ByLabel(const std::string& promql, const std::string& label) const {
  std::map<std::string, double> out;
  auto json = Query(promql);
  if (json.value("status", "") != "success") return out;
  for (const auto& series : json["data"]["result"]) {
    out[series["metric"].value(label, "")] = std::stod(series["value"][1].get<std::string>());
  }
  return out;
}

}  // namespace zkfleet::testing
