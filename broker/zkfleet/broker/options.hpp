// Broker configuration (zkbroker's command line fills it in).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::broker {

struct BrokerOptions {
  std::string client_endpoint = "tcp://127.0.0.1:5555";  // ROUTER for clients (bind)
  std::string worker_endpoint = "tcp://127.0.0.1:5556";  // ROUTER for workers (bind)
  // Heartbeat period; a worker silent for `liveness` periods is dead.
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;
  // Leases per work item before the job is dead-lettered.
  uint32_t max_attempts = 3;
  // How long finished jobs (results, request ids) stay retrievable.
  std::chrono::milliseconds result_ttl{std::chrono::minutes(10)};
  // Accept jobs for circuits no registered worker has announced.
  bool accept_unrouted = false;
  uint32_t max_partitions = 1024;
  fleet::SocketLimits limits;
};

}  // namespace zkfleet::broker
