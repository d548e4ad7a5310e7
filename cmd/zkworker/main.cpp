// zkworker: loads its circuits, registers with the broker, proves the jobs it
// is sent. SIGINT/SIGTERM drain it (hand back unstarted work, finish the
// running item, release, leave). See docs/protocol.md. With --metrics-listen
// it serves Prometheus metrics, /ready and /healthz over HTTP from start to
// exit, DRAINING and RELEASING included (docs/metrics.md).
#include <algorithm>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <string>

#include <CLI/CLI.hpp>

#include "../daemon_options.hpp"
#include "../parse_command_line.hpp"
#include "circuit_flags.hpp"
#include <spdlog/spdlog.h>

#include "zkfleet/common/error.hpp"
#include "zkfleet/common/logging.hpp"
#include "zkfleet/fetch/fetcher.hpp"
#include "zkfleet/fleet/broker_endpoints.hpp"
#include "zkfleet/engine/types.hpp"
#include "zkfleet/metrics/metrics_server.hpp"
#include "zkfleet/metrics/worker_metrics.hpp"
#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/worker/backend.hpp"
#include "zkfleet/worker/worker_session.hpp"


int main(int argc, char** argv) {
  zkfleet::worker::WorkerOptions options;
  zkfleet::worker::ConnectionOptions connection;
  CLI::App app{"zkfleet worker: proves the jobs the broker sends it"};
  int64_t instant_delay_ms = 0;
  std::string backend = "auto";
  int threads = 0;
  int64_t heartbeat_ms = connection.heartbeat_interval.count();
  double drain_timeout_s = std::chrono::duration<double>(options.drain_timeout).count();
  int64_t start_delay_ms = 0;
  zkfleet::cmd::LogFlags log_flags;
  std::string metrics_listen;
  std::string pinned_budget = "64MiB";
  std::string memory_margin = "256MiB";
  std::string pool_chunk = "0";
  std::string pool_mode = "auto";
  std::string pool_ready = "0";
  double memory_wait_timeout_s = 600;
  std::string verify = "on";
  bool no_key_check = false;
  int msm_tables = 16;
  std::string key_check_cache = zkfleet::engine::CheckedKeys::DefaultDir().string();
  int64_t fault_window_s = options.fault_window.count();
  std::string gpus;
  int test_fake_devices = 0;
  std::string test_memory_limit;
  std::string test_memory_ledger;
  app.add_option("--broker", connection.broker_endpoint,
                 "the broker's worker endpoint, or every broker's, comma-separated (brokers on etcd: the worker "
                 "follows the leader)")
      ->capture_default_str();
  std::string curve_secret_key, broker_public_key;
  bool insecure_plaintext = false;
  app.add_option("--curve-secret-key", curve_secret_key,
                 "this worker's NAME.secret (zkctl keygen); its NAME.pub must be in the broker's allow-dir workers/");
  app.add_option("--broker-public-key", broker_public_key,
                 "the broker's NAME.pub, or one per --broker endpoint, comma-separated");
  app.add_flag("--insecure-plaintext", insecure_plaintext,
               "no CURVE: unauthenticated, unencrypted (only against a broker run with --insecure-plaintext)");
  app.add_option("--id", options.worker_id, "worker id (default: host-pid)");
  zkworker::CircuitFlags circuit_flags;
  zkworker::AddCircuitFlags(app, circuit_flags);
  app.add_option("--witgen-threads", options.witgen_threads,
                 "witnesses computed from inputs at once, each a child process on one core (while the GPU proves)")
      ->capture_default_str();
  std::string witgen_cache = options.witgen.cache_dir.string();
  app.add_option("--witgen-cache", witgen_cache,
                 "directory of compiled witness generators, by the wasm's BLAKE2b-256 (default: $ZKFLEET_WITGEN_CACHE, "
                 "else ${XDG_CACHE_HOME:-~/.cache}/zkfleet/witgen)");
  app.add_option("--witgen-cpu-seconds", options.witgen.limits.cpu_seconds, "CPU-time limit of one witness generation")
      ->capture_default_str();
  std::string witgen_memory = "16GiB";
  app.add_option("--witgen-memory", witgen_memory, "memory limit of one witness generation (its process)")
      ->capture_default_str();
  app.add_option("--witgen-wall-seconds", options.witgen.limits.wall_seconds,
                 "wall-clock limit of one witness generation")
      ->capture_default_str();
  app.add_option("--instant-delay-ms", instant_delay_ms, "benchmark mode: pretend each proof takes this long")
      ->capture_default_str();
  app.add_option("--backend", backend, "cpu, cuda or auto")->capture_default_str();
  app.add_option("--threads", threads, "CPU prover threads (0 = all cores)")->capture_default_str();
  app.add_option("--gpus", gpus,
                 "CUDA devices to prove on, each with its own copy of every key and its own --pipeline-depth lanes: "
                 "all, or a list like 0,1 (default: device 0 only); items go to the least-loaded device, and a "
                 "device that faults leaves the set while the others go on");
  zkfleet::cmd::TestOnly(app.add_option("--test-fake-devices", test_fake_devices,
                 "TEST ONLY: on the CPU backend, behave as if N devices were present (N CPU copies of every key, "
                 "labelled fake0..), so --gpus and per-device faults can be tested without GPUs")
      ->check(CLI::Range(1, 16)));
  app.add_option("--capacity", options.capacity,
                 "work items held at once (queued + proving), per device: the worker holds this times its devices")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval (match the broker's)")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--liveness", connection.liveness, "broker heartbeat intervals of silence before reconnecting")
      ->capture_default_str();
  app.add_option("--drain-timeout", drain_timeout_s, "seconds a drain waits for the running proof before aborting it")
      ->capture_default_str();
  zkfleet::cmd::TestOnly(app.add_option("--dispatch-start-delay-ms", start_delay_ms,
                 "testing aid: wait this long after loading before proving the first item")
      ->capture_default_str());
  app.add_option("--max-message-bytes", connection.limits.max_message_bytes, "largest message accepted")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--pipeline-depth", options.pipeline_depth,
                 "items proved at once: 2 overlaps one item's host work with another's device work "
                 "(0 = 2 on cuda, 1 on cpu)")
      ->capture_default_str()->check(CLI::Range(0, 8));
  app.add_option("--max-witness-bytes", connection.limits.max_witness_bytes, "largest witness frame accepted")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--pinned-budget", pinned_budget,
                 "pinned host pool for job buffers, allocated once at start: bytes (512MiB, 2GiB) or a share of "
                 "the available memory (25%); 0 = none")
      ->capture_default_str();
  app.add_option("--memory-margin", memory_margin, "memory that must stay free besides the pool (memory gate)")
      ->capture_default_str();
  app.add_option("--memory-wait-timeout", memory_wait_timeout_s,
                 "seconds to wait in WAITING_FOR_MEMORY before giving up")
      ->capture_default_str();
  app.add_option("--pool-chunk", pool_chunk, "pool allocation and release step (0 = 1GiB for huge-page and mmap "
                 "pools, 64MiB for cudaHostAlloc)")->capture_default_str();
  app.add_option("--pool-mode", pool_mode,
                 "how the pool is pinned: auto (huge pages + cudaHostRegister where transparent huge pages are on, "
                 "else cudaHostAlloc), hugepage, cuda-host, mmap")
      ->capture_default_str();
  app.add_option("--pool-ready", pool_ready,
                 "pool bytes pinned before READY (0 = all); the pool is pinned while the keys load, and a smaller value "
                 "pins the rest while the worker proves")
      ->capture_default_str();
  zkfleet::cmd::TestOnly(app.add_option("--test-memory-limit", test_memory_limit,
                 "TEST ONLY: pretend the workers sharing --test-memory-ledger live in a cgroup of this size"));
  int64_t test_release_pause_ms = 0;
  zkfleet::cmd::TestOnly(app.add_option("--test-release-pause-ms", test_release_pause_ms,
                 "TEST ONLY: pause between pool chunks while RELEASING, so tests can observe that state"));
  int64_t test_hold_started_ms = 0;
  zkfleet::cmd::TestOnly(app.add_option("--test-hold-started-ms", test_hold_started_ms,
                 "TEST ONLY: withhold STARTED this long after an item starts, so tests can kill the broker before "
                 "its journal records the start"));
  int64_t test_hold_result_ms = 0;
  zkfleet::cmd::TestOnly(app.add_option("--test-hold-result-ms", test_hold_result_ms,
                 "TEST ONLY: pause between an item's run ending and its result being sent"));
  zkfleet::cmd::TestOnly(app.add_option("--test-memory-ledger", test_memory_ledger, "TEST ONLY: directory where those workers record their pools"));
  app.add_option("--metrics-listen", metrics_listen,
                 "serve Prometheus /metrics, /ready and /healthz on host:port (empty: off)");
  zkfleet::cmd::AddLogFlags(app, &log_flags);
  app.add_option("--verify", verify,
                 "verify every proof against its key's verification key before sending it (on); off: benchmarks only")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--key-check-cache", key_check_cache,
                 "directory remembering the keys whose points passed the check on this host (a .zkey by a BLAKE2b "
                 "digest of its content, shared with zkprove; a bellperson .params file by its identity: device, "
                 "inode, size, mtime, ctime), so a restart skips it; \"\" or off = check at every start")
      ->capture_default_str();
  app.add_flag("--no-key-check", no_key_check,
               "skip the point checks of each .zkey or .params at load (on curve, in subgroup, < q); benchmarks only");
  std::string device_memory_budget = "0";
  app.add_option("--device-memory-budget", device_memory_budget,
                 "CUDA, bellperson circuits: the most device memory a key may hold (e.g. 24GiB); points that do not "
                 "fit stream from pinned host memory. 0 = the device's free memory")
      ->capture_default_str();
  app.add_option("--msm-tables", msm_tables,
                 "CUDA: up to N precomputed copies of each key's MSM points, built at load, while they fit in half "
                 "the free device memory: faster proofs for more memory (1 = none)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--fault-threshold", options.fault_threshold,
                 "engine faults (proofs that failed verification; re-proved on the CPU) within --fault-window that "
                 "turn the worker FAULTED; 0 = never")
      ->capture_default_str();
  app.add_option("--fault-window", fault_window_s, "seconds over which --fault-threshold counts engine faults")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // Witnesses by reference (docs/operations.md, "Witnesses by reference").
  unsigned fetch_attempts = options.fetch.max_attempts;
  double fetch_timeout_s = static_cast<double>(options.fetch.total_timeout.count());
  app.add_option("--fetch-allow", options.fetch.allow,
                 "URL prefix the worker may fetch witnesses by reference from (repeatable), e.g. "
                 "https://store.internal/witnesses/ or file:///mnt/witnesses/; none = no references");
  app.add_option("--fetch-threads", options.fetch_threads, "witnesses fetched at once (while the GPU proves)")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  app.add_option("--fetch-ca-bundle", options.fetch.ca_bundle,
                 "PEM file of the CAs that sign the witness store's certificate (default: the system's)");
  app.add_option("--fetch-client-cert", options.fetch.client_cert, "PEM client certificate for the witness store (mTLS)");
  app.add_option("--fetch-client-key", options.fetch.client_key, "PEM private key of --fetch-client-cert");
  app.add_option("--fetch-attempts", fetch_attempts,
                 "tries of a fetch that fails transiently (network, 5xx, truncated, too slow), with back-off")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  std::string max_fetch_bytes = "4GiB";
  app.add_option("--max-fetch-bytes", max_fetch_bytes,
                 "largest witness by reference taken (its buffer is allocated before the bytes arrive); larger "
                 "ones fail as the client's error")
      ->capture_default_str();
  app.add_option("--fetch-timeout", fetch_timeout_s, "seconds one fetch attempt may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bool print_config = false;
  zkfleet::cmd::AddConfigFile(app, &print_config);
  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkworker")) return *exit_code;
  if (print_config) {
    zkfleet::cmd::PrintConfig(app);
    return 0;
  }
  options.test_release_pause = std::chrono::milliseconds(test_release_pause_ms);
  options.test_hold_started = std::chrono::milliseconds(test_hold_started_ms);
  options.test_hold_result = std::chrono::milliseconds(test_hold_result_ms);
  options.fault_window = std::chrono::seconds(fault_window_s);
  options.fetch.max_attempts = fetch_attempts;
  if (auto bytes = zkfleet::ParseByteSize(max_fetch_bytes); bytes && *bytes > 0) {
    options.max_fetch_bytes = *bytes;
  } else {
    std::fprintf(stderr, "zkworker: --max-fetch-bytes %s is not a size (e.g. 4GiB)\n", max_fetch_bytes.c_str());
    return 2;
  }
  if (static_cast<double>(fetch_attempts) * fetch_timeout_s > 480) {
    // A fetch is started work: the broker takes a lease back after
    // --lease-overrun-min (10 min by default) and counts it against the worker.
    spdlog::warn("--fetch-attempts x --fetch-timeout = {} s: keep it below the broker's --lease-overrun-min",
                 static_cast<double>(fetch_attempts) * fetch_timeout_s);
  }
  options.fetch.total_timeout = std::chrono::seconds(static_cast<int64_t>(std::ceil(fetch_timeout_s)));
  if (!options.fetch.allow.empty()) {
    try {
      zkfleet::fetch::FetchConfig check(options.fetch);  // the worker builds its own; this names a bad flag now
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zkworker: %s\n", e.what());
      return 2;
    }
  }
  auto budget = zkfleet::worker::ParseMemoryBudget(pinned_budget);
  auto margin = zkfleet::ParseByteSize(memory_margin);
  auto chunk = zkfleet::ParseByteSize(pool_chunk);
  auto ready = zkfleet::ParseByteSize(pool_ready);
  if (!budget || !margin || !chunk || !ready) {
    std::fprintf(stderr, "zkworker: --pinned-budget, --memory-margin, --pool-chunk, --pool-ready: expected sizes "
                         "like 512MiB, 2GiB (and a share like 25%% for the budget)\n");
    return 2;
  }
  auto mode = zkfleet::worker::ParsePoolModeRequest(pool_mode);
  if (!mode) {
    std::fprintf(stderr, "zkworker: --pool-mode %s: expected auto, hugepage, cuda-host or mmap\n", pool_mode.c_str());
    return 2;
  }
  const std::optional<uint64_t> device_memory_budget_bytes = zkfleet::ParseByteSize(device_memory_budget);
  if (!device_memory_budget_bytes) {
    std::fprintf(stderr, "zkworker: --device-memory-budget %s is not a size (e.g. 24GiB; 0 = the device's free memory)\n",
                 device_memory_budget.c_str());
    return 2;
  }
  options.pinned_budget = *budget;
  options.memory_margin = *margin;
  options.pool_chunk_bytes = *chunk;
  options.pool_ready_bytes = *ready;
  options.pool_mode = *mode;
  options.memory_wait_timeout = std::chrono::milliseconds(static_cast<int64_t>(memory_wait_timeout_s * 1000));
  std::unique_ptr<zkfleet::worker::MemorySource> memory;
  if (!test_memory_limit.empty() || !test_memory_ledger.empty()) {
    auto limit = zkfleet::ParseByteSize(test_memory_limit);
    if (!limit || test_memory_ledger.empty()) {
      std::fprintf(stderr, "zkworker: --test-memory-limit and --test-memory-ledger go together\n");
      return 2;
    }
    memory = std::make_unique<zkfleet::worker::SimulatedMemorySource>(*limit, test_memory_ledger);
  } else {
    memory = std::make_unique<zkfleet::worker::SystemMemorySource>();
  }
  connection.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  options.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(drain_timeout_s * 1000));
  options.dispatch_start_delay = std::chrono::milliseconds(start_delay_ms);
  if (options.worker_id.empty()) options.worker_id = zkfleet::worker::DefaultWorkerId();

  zkfleet::cmd::InitLogging("zkworker", log_flags);
  try {
    connection.security = zkfleet::fleet::ClientSecurity::Load(insecure_plaintext, curve_secret_key, broker_public_key);
    connection.security.CheckFits(zkfleet::fleet::ParseBrokerEndpoints(connection.broker_endpoint).size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkworker: %s\n", e.what());
    return 2;
  }
  if (insecure_plaintext) spdlog::warn("--insecure-plaintext: the broker connection is neither authenticated nor encrypted");

  std::vector<zkfleet::worker::CircuitSpec> specs;
  try {
    specs = zkworker::CircuitSpecsOf(circuit_flags);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "zkworker: %s\n", e.what());
    return 2;
  }
  options.witgen.cache_dir = witgen_cache;
  if (auto bytes = zkfleet::ParseByteSize(witgen_memory); bytes && *bytes > 0) {
    options.witgen.limits.memory_bytes = *bytes;
  } else {
    std::fprintf(stderr, "zkworker: --witgen-memory %s is not a size (e.g. 16GiB)\n", witgen_memory.c_str());
    return 2;
  }

  // SIGINT/SIGTERM/SIGHUP are read from a signalfd by the session's thread; block
  // them before any thread exists so none of them takes the signal.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // reads the circuit flags (and --config) again
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  int signal_fd = signalfd(-1, &signals, SFD_CLOEXEC);

  zkfleet::engine::EngineOptions engine_options;
  try {
    engine_options.backend = zkfleet::engine::ParseBackend(backend);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkworker: --backend: %s\n", e.what());
    return 2;
  }
  engine_options.threads = threads;
  engine_options.validate_key = !no_key_check;
  engine_options.cuda_msm_copies = msm_tables;
  engine_options.device_memory_budget = *device_memory_budget_bytes;
  std::string device_problem;
  auto devices = zkfleet::worker::ResolveDevices(specs, engine_options, gpus, test_fake_devices, &device_problem);
  if (!devices) {
    std::fprintf(stderr, "zkworker: %s\n", device_problem.c_str());
    return 2;
  }
  auto circuits = std::make_unique<zkfleet::worker::CircuitSet>(
      std::move(specs), engine_options, std::chrono::milliseconds(instant_delay_ms), verify == "on",
      zkfleet::engine::CheckedKeys::FromSetting(key_check_cache), *devices);

  // The metrics server starts after the mask (its HTTP threads inherit it, so
  // none takes SIGTERM) and stops last: declared before the worker, it serves
  // through DRAINING, RELEASING and GONE until main returns (on the _Exit
  // path below it is simply not destroyed: nothing to flush).
  zkfleet::metrics::MetricsServer metrics_server;
  std::string backend_name = circuits->backend_name();
  // The gpu label of zkfleet_worker_info: the device, or the devices
  // comma-separated ("none" on the CPU backend).
  std::vector<std::string> device_labels;
  for (const auto& device : *devices) device_labels.push_back(device.label);
  options.device_label = zkfleet::worker::DevicesLabel(*devices);
  // The pool the memory gate will allocate, resolved as it will be (a share
  // of the memory available now).
  uint64_t pool_bytes = options.pinned_budget.Resolve(memory->Read().available_bytes);
  zkfleet::metrics::WorkerMetrics metrics(
      metrics_server,
      {options.worker_id, backend_name, options.device_label, device_labels},
      circuits->circuit_ids(),
      zkfleet::worker::DrainBudgetSeconds(
          options.drain_timeout, pool_bytes,
          zkfleet::worker::PinnedPool::ChooseKind(backend_name == "cuda", options.pool_mode)));
  circuits->set_load_progress([&metrics](const std::string& circuit_id, uint64_t done, uint64_t total) {
    metrics.SetKeyLoadBytes(circuit_id, done, total);
  });
  if (!metrics_listen.empty()) {
    try {
      metrics_server.Listen(metrics_listen);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 1;
    }
    spdlog::info("metrics on http://{}/metrics (port {})", metrics_listen, metrics_server.port());
  }

  int code = 0;
  bool abandoned = false;
  {
    zkfleet::worker::WorkerSession worker(connection, options, std::move(circuits), std::move(memory), &metrics);
    worker.set_circuit_reader([args = std::vector<std::string>(argv, argv + argc)] {
      return zkworker::ReadCircuitSpecsAgain(args);
    });
    try {
      code = worker.Run(signal_fd);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      code = 1;
    }
    abandoned = worker.pipeline_abandoned();
    // An aborted proof still runs on a lane: unwinding would wait for it,
    // so leave now.
    if (abandoned) {
      spdlog::default_logger()->flush();
      std::_Exit(code);
    }
  }
  close(signal_fd);
  return code;
}
