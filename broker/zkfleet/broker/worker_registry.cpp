#include "zkfleet/broker/worker_registry.hpp"

#include <algorithm>
#include <cctype>

namespace zkfleet::broker {

namespace {

// "scheme://host[:port]" of `url` in lower case, without userinfo, and the
// rest (the path, from its '/'); false when `url` has no "://".
bool SplitUrl(const std::string& url, std::string* origin, std::string* path) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return false;
  const size_t authority = scheme_end + 3;
  const size_t path_at = std::min(url.find('/', authority), url.size());
  std::string host = url.substr(authority, path_at - authority);
  if (const size_t at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  *origin = url.substr(0, authority) + host;
  std::transform(origin->begin(), origin->end(), origin->begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  *path = url.substr(path_at);
  return true;
}

}  // namespace

bool FetchPrefixCovers(const std::string& prefix, const std::string& url) {
  std::string prefix_origin, prefix_path, url_origin, url_path;
  if (!SplitUrl(prefix, &prefix_origin, &prefix_path) || !SplitUrl(url, &url_origin, &url_path)) return false;
  if (prefix_origin != url_origin) return false;
  if (prefix_path.empty() || prefix_path.back() != '/') prefix_path += '/';  // a directory
  return url_path.compare(0, prefix_path.size(), prefix_path) == 0;
}

WorkerRecord* WorkerRegistry::Find(const std::string& identity) {
  auto it = workers_.find(identity);
  return it == workers_.end() ? nullptr : &it->second;
}

WorkerRecord* WorkerRegistry::FindByWorkerId(const std::string& worker_id) {
  auto it = by_worker_id_.find(worker_id);
  return it == by_worker_id_.end() ? nullptr : Find(it->second);
}

WorkerRecord& WorkerRegistry::Add(const std::string& identity, const std::string& worker_id) {
  WorkerRecord& worker = workers_[identity];
  worker.identity = identity;
  worker.worker_id = worker_id;
  by_worker_id_[worker_id] = identity;
  return worker;
}

void WorkerRegistry::Remove(const std::string& identity) {
  auto it = workers_.find(identity);
  if (it == workers_.end()) return;
  auto index = by_worker_id_.find(it->second.worker_id);
  if (index != by_worker_id_.end() && index->second == identity) by_worker_id_.erase(index);
  workers_.erase(it);
}

bool WorkerRegistry::AnyGenerates(const std::string& circuit) const {
  for (const auto& [identity, worker] : workers_) {
    if (worker.generates.count(circuit)) return true;
  }
  return false;
}

bool WorkerRegistry::AnyHolds(const std::string& circuit) const {
  for (const auto& [identity, worker] : workers_) {
    if (worker.circuits.count(circuit)) return true;
  }
  return false;
}

}  // namespace zkfleet::broker
