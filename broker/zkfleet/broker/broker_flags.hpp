// zkbroker's command line: every flag declared on a CLI::App
// (DeclareBrokerFlags, --config and --print-config included), then checked
// and turned into what the broker runs with (ResolveBrokerFlags): its
// options, its journal (LMDB or etcd, with the leadership it campaigns for),
// its verification keys and its CURVE key. zkbroker's main only parses,
// resolves and wires the result; tests drive both halves directly
// (tests/unit/broker/broker_flags_test.cpp).
//
// Conventions (common/zkfleet/common/daemon_options.hpp): sizes take units
// (512MiB, 2GiB), a flag given overrides the config file.
//
// Thread-safety: plain functions over values the caller owns.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/broker/broker_server.hpp"
#include "zkfleet/broker/leader_address.hpp"
#include "zkfleet/common/daemon_options.hpp"
#include "zkfleet/storage/etcd_leadership.hpp"

namespace zkfleet::broker {

// The flags' values as parsed: options that map one to one are written into
// `options` directly; the rest are kept as given until ResolveBrokerFlags.
struct BrokerFlags {
  BrokerOptions options;
  cmd::LogFlags log;
  std::string metrics_listen;
  std::string data_dir;
  std::string journal_url;
  std::string sync_mode = "batch";
  int64_t heartbeat_ms = 0;
  double result_ttl_s = 0, dedup_window_s = 0, busy_retry_s = 0, known_circuit_grace_s = 0;
  double lease_start_timeout_s = 0, strike_window_s = 0, verdict_wait_s = 0, lease_overrun_min_s = 0;
  int64_t etcd_lease_ttl_s = 5;
  bool etcd_fence_only = false;
  uint32_t etcd_max_txn_ops = 128;
  uint64_t etcd_max_txn_bytes = 1u << 20;
  storage::EtcdTls etcd_tls;
  std::string advertise, advertise_clients, advertise_workers, advertise_grpc;
  std::string curve_secret_key, allow_dir;
  bool insecure_plaintext = false;
  std::vector<std::string> verification_keys;
  std::string verification_key_dir;
  std::vector<std::string> unverified_circuits;
  bool print_config = false;
  // Given on the command line or in the file (their etcd defaults differ).
  const CLI::Option* max_partitions = nullptr;
  const CLI::Option* max_inline_job_bytes = nullptr;
};

// Declares every zkbroker flag on `app`, writing into `flags` (whose
// defaults are the broker's), then --config and --print-config.
void DeclareBrokerFlags(CLI::App& app, BrokerFlags& flags);

// A flag whose value cannot be used (daemon_options.hpp).
using cmd::FlagError;

// What the broker runs with, the flags checked: the journal named (exactly
// one of --data-dir and --journal etcd://), the SUBMIT bounds fitted to etcd's
// transactions, the verification keys read, the CURVE key read.
struct BrokerSetup {
  BrokerOptions options;
  // With --journal etcd://: what the broker campaigns with (its `name` is
  // `self` encoded: what standbys tell clients and workers while it leads).
  std::optional<storage::EtcdLeadershipOptions> leadership;
  // With --journal etcd://: this broker's name (--advertise, else the client
  // endpoint and this host) and the endpoints others reach it at
  // (--advertise-clients/--advertise-workers, else the bound ones with a
  // wildcard host replaced by this host's name).
  LeaderAddress self;
  std::string metrics_listen;
};

// Checks `flags` and resolves them. Throws FlagError. Logs what it loaded
// (each verification key) and the warnings a valid but doubtful setting
// earns (--unverified-circuits), so call it after logging is set up.
BrokerSetup ResolveBrokerFlags(const BrokerFlags& flags);

}  // namespace zkfleet::broker
