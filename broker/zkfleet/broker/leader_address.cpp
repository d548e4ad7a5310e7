#include "zkfleet/broker/leader_address.hpp"

#include <nlohmann/json.hpp>

namespace zkfleet::broker {

std::string LeaderAddress::Encode() const {
  return nlohmann::json{{"name", name}, {"clients", clients}, {"workers", workers}, {"grpc", grpc}}.dump();
}

LeaderAddress LeaderAddress::Decode(const std::string& value) {
  LeaderAddress address;
  const nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    address.name = value;
    return address;
  }
  auto text = [&](const char* field) {
    auto it = parsed.find(field);
    return it != parsed.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  address.name = text("name");
  address.clients = text("clients");
  address.workers = text("workers");
  address.grpc = text("grpc");
  return address;
}

std::string LeaderAddress::Describe() const {
  if (clients.empty() && workers.empty()) return name;
  return name + " (clients " + (clients.empty() ? "?" : clients) + ", workers " + (workers.empty() ? "?" : workers) +
         (grpc.empty() ? "" : ", gRPC " + grpc) + ")";
}

std::string AdvertisedEndpoint(const std::string& bound, const std::string& host) {
  const size_t scheme = bound.find("://");
  if (scheme == std::string::npos) return bound;
  const size_t start = scheme + 3;
  const size_t colon = bound.rfind(':');
  if (colon == std::string::npos || colon < start) return bound;
  const std::string bound_host = bound.substr(start, colon - start);
  if (bound_host != "*" && bound_host != "0.0.0.0" && bound_host != "[::]" && bound_host != "::") return bound;
  return bound.substr(0, start) + host + bound.substr(colon);
}

bool HasFixedPort(const std::string& endpoint) {
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon + 1 >= endpoint.size()) return false;
  for (size_t i = colon + 1; i < endpoint.size(); ++i) {
    if (endpoint[i] < '0' || endpoint[i] > '9') return false;
  }
  return endpoint.substr(colon + 1) != "0";
}

std::string AdvertisedGrpcAddress(const std::string& listen, const std::string& host) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return listen;
  const std::string listen_host = listen.substr(0, colon);
  if (!listen_host.empty() && listen_host != "*" && listen_host != "0.0.0.0" && listen_host != "[::]" &&
      listen_host != "::") {
    return listen;
  }
  return host + listen.substr(colon);
}

bool HasFixedGrpcPort(const std::string& listen) { return HasFixedPort("tcp://" + listen); }

}  // namespace zkfleet::broker
