#include "zkfleet/fleet/broker_endpoints.hpp"

#include <algorithm>

#include "zkfleet/common/error.hpp"

namespace zkfleet::fleet {
namespace {

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string> ParseBrokerEndpoints(std::string_view list, std::string_view what) {
  const std::string option(what);
  if (TrimBlanks(list).empty()) {
    throw Error(ErrorCode::kInvalidArgument, option + " is empty: give the broker's endpoint (tcp://HOST:PORT), or "
                                                      "every broker's, comma-separated");
  }
  std::vector<std::string> endpoints;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view entry = TrimBlanks(list.substr(start, comma - start));
    const size_t number = endpoints.size() + 1;
    if (entry.empty()) {
      throw Error(ErrorCode::kInvalidArgument, option + " \"" + std::string(list) + "\": entry " +
                                                   std::to_string(number) +
                                                   " is empty (a list is ENDPOINT,ENDPOINT,... with no empty entries)");
    }
    const size_t scheme = entry.find("://");
    if (scheme == std::string_view::npos || scheme == 0 || scheme + 3 == entry.size()) {
      throw Error(ErrorCode::kInvalidArgument, option + ": \"" + std::string(entry) +
                                                   "\" is not an endpoint: expected TRANSPORT://ADDRESS, e.g. "
                                                   "tcp://broker-1:5555");
    }
    if (std::find(endpoints.begin(), endpoints.end(), entry) != endpoints.end()) {
      throw Error(ErrorCode::kInvalidArgument, option + ": \"" + std::string(entry) + "\" is given twice");
    }
    endpoints.emplace_back(entry);
    if (endpoints.size() > kMaxBrokerEndpoints) {
      throw Error(ErrorCode::kInvalidArgument, option + " lists more than " + std::to_string(kMaxBrokerEndpoints) +
                                                   " brokers (a fleet runs two or three)");
    }
    start = comma + 1;
  }
  return endpoints;
}

std::string DescribeBrokerEndpoints(const std::vector<std::string>& endpoints) {
  if (endpoints.size() == 1) return endpoints.front();
  std::string text = "any of ";
  for (size_t i = 0; i < endpoints.size(); ++i) text += (i ? ", " : "") + endpoints[i];
  return text;
}

}  // namespace zkfleet::fleet
