// zkworker's command line: every flag declared on a CLI::App
// (DeclareWorkerFlags, --config and --print-config included), then checked
// and turned into what the worker runs with (ResolveWorkerFlags). zkworker's
// main only parses, resolves and wires the result; tests drive both halves
// directly (tests/unit/worker/worker_flags_test.cpp).
//
// Conventions (common/zkfleet/common/daemon_options.hpp): sizes take units
// (512MiB, 2GiB), TEST ONLY flags are hidden from --help and refused in a
// config file, a flag given overrides the file.
//
// Thread-safety: plain functions over values the caller owns.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "zkfleet/common/daemon_options.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/worker/circuit_flags.hpp"
#include "zkfleet/worker/circuit_set.hpp"
#include "zkfleet/worker/memory_source.hpp"
#include "zkfleet/worker/options.hpp"
#include "zkfleet/worker/worker_session.hpp"

namespace zkfleet::worker {

// The flags' values as parsed: options that map one to one are written into
// `options` and `connection` directly; the rest are kept as given (sizes as
// text, seconds as numbers) until ResolveWorkerFlags checks them.
struct WorkerFlags {
  WorkerOptions options;
  ConnectionOptions connection;
  CircuitFlags circuits;
  cmd::LogFlags log;
  std::string curve_secret_key, broker_public_key;
  bool insecure_plaintext = false;
  std::string witgen_cache;
  std::string witgen_memory = "16GiB";
  int64_t instant_delay_ms = 0;
  std::string backend = "auto";
  int threads = 0;
  std::string gpus;
  int64_t heartbeat_ms = 0;
  double drain_timeout_s = 0;
  int64_t start_delay_ms = 0;
  std::string pinned_budget = "64MiB";
  std::string memory_margin = "256MiB";
  std::string pool_chunk = "0";
  std::string pool_mode = "auto";
  std::string pool_ready = "0";
  double memory_wait_timeout_s = 600;
  std::string metrics_listen;
  std::string verify = "on";
  std::string key_check_cache;
  bool no_key_check = false;
  bool keep_decoded_params = false;
  std::string device_memory_budget = "0";
  int msm_tables = 16;
  int64_t fault_window_s = 0;
  unsigned fetch_attempts = 0;
  double fetch_timeout_s = 0;
  std::string max_fetch_bytes = "4GiB";
  // TEST ONLY
  int test_fake_devices = 0;
  std::string test_memory_limit, test_memory_ledger;
  int64_t test_release_pause_ms = 0, test_hold_started_ms = 0, test_hold_result_ms = 0;
  bool print_config = false;
};

// Declares every zkworker flag on `app`, writing into `flags` (whose
// defaults are the worker's), then --config and --print-config.
void DeclareWorkerFlags(CLI::App& app, WorkerFlags& flags);

// A flag whose value cannot be used (daemon_options.hpp).
using cmd::FlagError;

// What the worker runs with, the flags checked: every size parsed, the
// circuits' files found, the CURVE keys read, the devices resolved.
struct WorkerSetup {
  WorkerOptions options;
  ConnectionOptions connection;
  std::vector<CircuitSpec> specs;
  engine::EngineOptions engine;
  std::vector<Device> devices;
  std::chrono::milliseconds instant_delay{0};
  bool verify = true;
  std::string key_check_cache;  // engine::CheckedKeys::FromSetting's setting
  std::unique_ptr<MemorySource> memory;
  std::string metrics_listen;
};

// Checks `flags` and resolves them. Throws FlagError. Logs the warnings a
// valid but doubtful setting earns (--insecure-plaintext, a fetch that may
// outlive the broker's lease), so call it after logging is set up.
WorkerSetup ResolveWorkerFlags(const WorkerFlags& flags);

}  // namespace zkfleet::worker
