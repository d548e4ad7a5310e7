// Broker configuration (zkbroker's command line fills it in).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "zkfleet/broker/admission.hpp"
#include "zkfleet/broker/journal.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkfleet::broker {

struct BrokerOptions {
  std::string client_endpoint = "tcp://127.0.0.1:5555";  // ROUTER for clients (bind)
  std::string worker_endpoint = "tcp://127.0.0.1:5556";  // ROUTER for workers (bind)
  // Heartbeat period; a worker silent for `liveness` periods is dead. After a
  // restart, leases recovered from the journal wait as long for their worker.
  std::chrono::milliseconds heartbeat_interval{1000};
  int liveness = 3;
  // Started leases per work item before the job is dead-lettered.
  uint32_t max_attempts = 3;
  // How long finished jobs' results stay retrievable (AWAIT, duplicate SUBMIT).
  std::chrono::milliseconds result_ttl{std::chrono::minutes(10)};
  // How long a (client, request id) is remembered, from submission: a
  // resubmission within it never runs the job again. Durable.
  std::chrono::milliseconds dedup_window{std::chrono::hours(24)};
  // Accept jobs for circuits no registered worker has announced.
  bool accept_unrouted = false;
  uint32_t max_partitions = 1024;
  // Suggested wait before retrying a SUBMIT refused as BUSY.
  std::chrono::milliseconds busy_retry_after{1000};
  AdmissionLimits admission;
  JournalOptions journal;  // journal.dir is --data-dir (required)
  // CURVE on both ROUTERs with this keypair, peers checked against the
  // allow-lists in allow_dir (workers/, clients/) by the ZAP handler; or
  // plaintext (--insecure-plaintext, a trusted network only).
  struct Security {
    bool plaintext = false;
    fleet::CurveKeyPair server;
    std::filesystem::path allow_dir;
  } security;
  fleet::SocketLimits limits;
  // ZeroMQ I/O threads for zkbroker's context (transfers and CURVE
  // encryption run there). BrokerServer reads the count from the context it
  // is given: with 2 or more, the worker ROUTER's connections get the first
  // half and the client ROUTER's the rest, so encrypting JOBs never queues
  // behind decrypting SUBMITs.
  int io_threads = 4;
};

}  // namespace zkfleet::broker
