#include "zkfleet/broker/worker_registry.hpp"

namespace zkfleet::broker {

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
