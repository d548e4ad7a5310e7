#include "zkfleet/worker/worker_flags.hpp"

#include <cmath>
#include <optional>

#include <spdlog/spdlog.h>

#include "zkfleet/common/byte_size.hpp"
#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/fetch/fetcher.hpp"
#include "zkfleet/fleet/broker_endpoints.hpp"
#include "zkfleet/worker/backend.hpp"
#include "zkfleet/worker/pinned_pool.hpp"
#include "zkfleet/worker/worker_core.hpp"

namespace zkfleet::worker {

void DeclareWorkerFlags(CLI::App& app, WorkerFlags& flags) {
  WorkerOptions& options = flags.options;
  ConnectionOptions& connection = flags.connection;
  flags.heartbeat_ms = connection.heartbeat_interval.count();
  flags.drain_timeout_s = std::chrono::duration<double>(options.drain_timeout).count();
  flags.key_check_cache = engine::CheckedKeys::DefaultDir().string();
  flags.fault_window_s = options.fault_window.count();
  flags.witgen_cache = options.witgen.cache_dir.string();
  flags.fetch_attempts = options.fetch.max_attempts;
  flags.fetch_timeout_s = static_cast<double>(options.fetch.total_timeout.count());

  app.add_option("--broker", connection.broker_endpoint,
                 "the broker's worker endpoint, or every broker's, comma-separated (brokers on etcd: the worker "
                 "follows the leader)")
      ->capture_default_str();
  app.add_option("--curve-secret-key", flags.curve_secret_key,
                 "this worker's NAME.secret (zkctl keygen); its NAME.pub must be in the broker's allow-dir workers/");
  app.add_option("--broker-public-key", flags.broker_public_key,
                 "the broker's NAME.pub, or one per --broker endpoint, comma-separated");
  app.add_flag("--insecure-plaintext", flags.insecure_plaintext,
               "no CURVE: unauthenticated, unencrypted (only against a broker run with --insecure-plaintext)");
  app.add_option("--id", options.worker_id, "worker id (default: host-pid)");
  AddCircuitFlags(app, flags.circuits);
  app.add_option("--witgen-threads", options.witgen_threads,
                 "witnesses computed from inputs at once, each a child process on one core (while the GPU proves)")
      ->capture_default_str();
  app.add_option("--witgen-cache", flags.witgen_cache,
                 "directory of compiled witness generators, by the wasm's BLAKE2b-256 (default: $ZKFLEET_WITGEN_CACHE, "
                 "else ${XDG_CACHE_HOME:-~/.cache}/zkfleet/witgen)");
  app.add_option("--witgen-cpu-seconds", options.witgen.limits.cpu_seconds, "CPU-time limit of one witness generation")
      ->capture_default_str();
  app.add_option("--witgen-memory", flags.witgen_memory, "memory limit of one witness generation (its process)")
      ->capture_default_str();
  app.add_option("--witgen-wall-seconds", options.witgen.limits.wall_seconds,
                 "wall-clock limit of one witness generation")
      ->capture_default_str();
  app.add_option("--instant-delay-ms", flags.instant_delay_ms, "benchmark mode: pretend each proof takes this long")
      ->capture_default_str();
  app.add_option("--backend", flags.backend, "cpu, cuda or auto")->capture_default_str();
  app.add_option("--threads", flags.threads, "CPU prover threads (0 = all cores)")->capture_default_str();
  app.add_option("--gpus", flags.gpus,
                 "CUDA devices to prove on, each with its own copy of every key and its own --pipeline-depth lanes: "
                 "all, or a list like 0,1 (default: device 0 only); items go to the least-loaded device, and a "
                 "device that faults leaves the set while the others go on");
  cmd::TestOnly(app.add_option("--test-fake-devices", flags.test_fake_devices,
                               "TEST ONLY: on the CPU backend, behave as if N devices were present (N CPU copies of "
                               "every key, labelled fake0..), so --gpus and per-device faults can be tested without GPUs")
                    ->check(CLI::Range(1, 16)));
  app.add_option("--capacity", options.capacity,
                 "work items held at once (queued + proving), per device: the worker holds this times its devices")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--heartbeat-ms", flags.heartbeat_ms, "heartbeat interval (match the broker's)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--liveness", connection.liveness, "broker heartbeat intervals of silence before reconnecting")
      ->capture_default_str();
  app.add_option("--drain-timeout", flags.drain_timeout_s,
                 "seconds a drain waits for the running proof before aborting it")
      ->capture_default_str();
  cmd::TestOnly(app.add_option("--dispatch-start-delay-ms", flags.start_delay_ms,
                               "testing aid: wait this long after loading before proving the first item")
                    ->capture_default_str());
  app.add_option("--max-message-bytes", connection.limits.max_message_bytes, "largest message accepted")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--pipeline-depth", options.pipeline_depth,
                 "items proved at once: 2 overlaps one item's host work with another's device work "
                 "(0 = 2 on cuda, 1 on cpu)")
      ->capture_default_str()
      ->check(CLI::Range(0, 8));
  app.add_option("--max-witness-bytes", connection.limits.max_witness_bytes, "largest witness frame accepted")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--pinned-budget", flags.pinned_budget,
                 "pinned host pool for job buffers, allocated once at start: bytes (512MiB, 2GiB) or a share of "
                 "the available memory (25%); 0 = none")
      ->capture_default_str();
  app.add_option("--memory-margin", flags.memory_margin, "memory that must stay free besides the pool (memory gate)")
      ->capture_default_str();
  app.add_option("--memory-wait-timeout", flags.memory_wait_timeout_s,
                 "seconds to wait in WAITING_FOR_MEMORY before giving up")
      ->capture_default_str();
  app.add_option("--pool-chunk", flags.pool_chunk,
                 "pool allocation and release step (0 = 1GiB for huge-page and mmap pools, 64MiB for cudaHostAlloc)")
      ->capture_default_str();
  app.add_option("--pool-mode", flags.pool_mode,
                 "how the pool is pinned: auto (huge pages + cudaHostRegister where transparent huge pages are on, "
                 "else cudaHostAlloc), hugepage, cuda-host, mmap")
      ->capture_default_str();
  app.add_option("--pool-ready", flags.pool_ready,
                 "pool bytes pinned before READY (0 = all); the pool is pinned while the keys load, and a smaller value "
                 "pins the rest while the worker proves")
      ->capture_default_str();
  cmd::TestOnly(app.add_option("--test-memory-limit", flags.test_memory_limit,
                               "TEST ONLY: pretend the workers sharing --test-memory-ledger live in a cgroup of this "
                               "size"));
  cmd::TestOnly(app.add_option("--test-release-pause-ms", flags.test_release_pause_ms,
                               "TEST ONLY: pause between pool chunks while RELEASING, so tests can observe that state"));
  cmd::TestOnly(app.add_option("--test-hold-started-ms", flags.test_hold_started_ms,
                               "TEST ONLY: withhold STARTED this long after an item starts, so tests can kill the "
                               "broker before its journal records the start"));
  cmd::TestOnly(app.add_option("--test-hold-result-ms", flags.test_hold_result_ms,
                               "TEST ONLY: pause between an item's run ending and its result being sent"));
  cmd::TestOnly(app.add_option("--test-memory-ledger", flags.test_memory_ledger,
                               "TEST ONLY: directory where those workers record their pools"));
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "serve Prometheus /metrics, /ready and /healthz on host:port (empty: off)");
  cmd::AddLogFlags(app, &flags.log);
  app.add_option("--verify", flags.verify,
                 "verify every proof against its key's verification key before sending it (on); off: benchmarks only")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--key-check-cache", flags.key_check_cache,
                 "directory remembering the keys whose points passed the check on this host (a .zkey by a BLAKE2b "
                 "digest of its content, shared with zkprove; a bellperson .params file by its identity: device, "
                 "inode, size, mtime, ctime), so a restart skips it; \"\" or off = check at every start")
      ->capture_default_str();
  app.add_flag("--keep-decoded-params", flags.keep_decoded_params,
               "bellperson circuits: keep each .params file's decoded points as an image in the --key-check-cache "
               "directory (as much disk again as the file) once the file passed its check; a restart maps the image "
               "instead of decoding the file");
  app.add_flag("--no-key-check", flags.no_key_check,
               "skip the point checks of each .zkey or .params at load (on curve, in subgroup, < q); benchmarks only");
  app.add_option("--device-memory-budget", flags.device_memory_budget,
                 "CUDA, bellperson circuits: the most device memory a key may hold (e.g. 24GiB); points that do not "
                 "fit stream from pinned host memory. 0 = the device's free memory")
      ->capture_default_str();
  app.add_option("--msm-tables", flags.msm_tables,
                 "CUDA: up to N precomputed copies of each key's MSM points, built at load, while they fit in half "
                 "the free device memory: faster proofs for more memory (1 = none)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--fault-threshold", options.fault_threshold,
                 "engine faults (proofs that failed verification; re-proved on the CPU) within --fault-window that "
                 "turn the worker FAULTED; 0 = never")
      ->capture_default_str();
  app.add_option("--fault-window", flags.fault_window_s, "seconds over which --fault-threshold counts engine faults")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // Witnesses by reference (docs/operations.md, "Witnesses by reference").
  app.add_option("--fetch-allow", options.fetch.allow,
                 "URL prefix the worker may fetch witnesses by reference from (repeatable), e.g. "
                 "https://store.internal/witnesses/ or file:///mnt/witnesses/; none = no references");
  app.add_option("--fetch-threads", options.fetch_threads, "witnesses fetched at once (while the GPU proves)")
      ->check(CLI::Range(1u, 256u))
      ->capture_default_str();
  app.add_option("--fetch-ca-bundle", options.fetch.ca_bundle,
                 "PEM file of the CAs that sign the witness store's certificate (default: the system's)");
  app.add_option("--fetch-client-cert", options.fetch.client_cert,
                 "PEM client certificate for the witness store (mTLS)");
  app.add_option("--fetch-client-key", options.fetch.client_key, "PEM private key of --fetch-client-cert");
  app.add_option("--fetch-attempts", flags.fetch_attempts,
                 "tries of a fetch that fails transiently (network, 5xx, truncated, too slow), with back-off")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--max-fetch-bytes", flags.max_fetch_bytes,
                 "largest witness by reference taken (its buffer is allocated before the bytes arrive); larger "
                 "ones fail as the client's error")
      ->capture_default_str();
  app.add_option("--fetch-timeout", flags.fetch_timeout_s, "seconds one fetch attempt may take")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd::AddConfigFile(app, &flags.print_config);
}

namespace {

// A size flag's bytes; `positive`: 0 is refused too.
uint64_t SizeOf(const std::string& flag, const std::string& text, const std::string& example, bool positive = false) {
  const std::optional<uint64_t> bytes = ParseByteSize(text);
  if (!bytes || (positive && *bytes == 0)) throw FlagError(flag + " " + text + " is not a size (e.g. " + example + ")");
  return *bytes;
}

}  // namespace

WorkerSetup ResolveWorkerFlags(const WorkerFlags& flags) {
  WorkerSetup setup;
  WorkerOptions& options = setup.options;
  options = flags.options;
  setup.connection = flags.connection;

  options.test_release_pause = std::chrono::milliseconds(flags.test_release_pause_ms);
  options.test_hold_started = std::chrono::milliseconds(flags.test_hold_started_ms);
  options.test_hold_result = std::chrono::milliseconds(flags.test_hold_result_ms);
  options.fault_window = std::chrono::seconds(flags.fault_window_s);
  options.drain_timeout = cmd::MillisecondsOf(flags.drain_timeout_s);
  options.dispatch_start_delay = std::chrono::milliseconds(flags.start_delay_ms);
  options.memory_wait_timeout = cmd::MillisecondsOf(flags.memory_wait_timeout_s);
  setup.connection.heartbeat_interval = std::chrono::milliseconds(flags.heartbeat_ms);
  if (options.worker_id.empty()) options.worker_id = DefaultWorkerId();

  // Witnesses by reference.
  options.fetch.max_attempts = flags.fetch_attempts;
  options.max_fetch_bytes = SizeOf("--max-fetch-bytes", flags.max_fetch_bytes, "4GiB", /*positive=*/true);
  if (static_cast<double>(flags.fetch_attempts) * flags.fetch_timeout_s > 480) {
    // A fetch is started work: the broker takes a lease back after
    // --lease-overrun-min (10 min by default) and counts it against the worker.
    spdlog::warn("--fetch-attempts x --fetch-timeout = {} s: keep it below the broker's --lease-overrun-min",
                 static_cast<double>(flags.fetch_attempts) * flags.fetch_timeout_s);
  }
  options.fetch.total_timeout = std::chrono::seconds(static_cast<int64_t>(std::ceil(flags.fetch_timeout_s)));
  if (!options.fetch.allow.empty()) {
    try {
      fetch::FetchConfig check(options.fetch);  // the worker builds its own; this names a bad flag now
    } catch (const std::exception& e) {
      throw FlagError(e.what());
    }
  }

  // Memory: the pinned pool and the gate.
  const std::optional<MemoryBudget> budget = ParseMemoryBudget(flags.pinned_budget);
  if (!budget) throw FlagError("--pinned-budget " + flags.pinned_budget + " is not a size (e.g. 2GiB) or a share (25%)");
  options.pinned_budget = *budget;
  options.memory_margin = SizeOf("--memory-margin", flags.memory_margin, "256MiB");
  options.pool_chunk_bytes = SizeOf("--pool-chunk", flags.pool_chunk, "1GiB");
  options.pool_ready_bytes = SizeOf("--pool-ready", flags.pool_ready, "4GiB");
  const std::optional<PoolModeRequest> mode = ParsePoolModeRequest(flags.pool_mode);
  if (!mode) throw FlagError("--pool-mode " + flags.pool_mode + ": expected auto, hugepage, cuda-host or mmap");
  options.pool_mode = *mode;
  if (!flags.test_memory_limit.empty() || !flags.test_memory_ledger.empty()) {
    const std::optional<uint64_t> limit = ParseByteSize(flags.test_memory_limit);
    if (!limit || flags.test_memory_ledger.empty()) {
      throw FlagError("--test-memory-limit and --test-memory-ledger go together");
    }
    setup.memory = std::make_unique<SimulatedMemorySource>(*limit, flags.test_memory_ledger);
  } else {
    setup.memory = std::make_unique<SystemMemorySource>();
  }

  // The broker connection.
  try {
    setup.connection.security =
        fleet::ClientSecurity::Load(flags.insecure_plaintext, flags.curve_secret_key, flags.broker_public_key);
    setup.connection.security.CheckFits(fleet::ParseBrokerEndpoints(setup.connection.broker_endpoint).size());
  } catch (const std::exception& e) {
    throw FlagError(e.what());
  }
  if (flags.insecure_plaintext) {
    spdlog::warn("--insecure-plaintext: the broker connection is neither authenticated nor encrypted");
  }

  // Circuits, witness generation, the engine and its devices.
  try {
    setup.specs = CircuitSpecsOf(flags.circuits);
  } catch (const std::invalid_argument& e) {
    throw FlagError(e.what());
  }
  options.witgen.cache_dir = flags.witgen_cache;
  options.witgen.limits.memory_bytes = SizeOf("--witgen-memory", flags.witgen_memory, "16GiB", /*positive=*/true);
  try {
    setup.engine.backend = engine::ParseBackend(flags.backend);
  } catch (const std::exception& e) {
    throw FlagError(std::string("--backend: ") + e.what());
  }
  setup.engine.threads = flags.threads;
  setup.engine.validate_key = !flags.no_key_check;
  setup.engine.keep_decoded_params = flags.keep_decoded_params;
  setup.engine.cuda_msm_copies = flags.msm_tables;
  setup.engine.device_memory_budget =
      SizeOf("--device-memory-budget", flags.device_memory_budget, "24GiB; 0 = the device's free memory");
  std::string device_problem;
  auto devices = ResolveDevices(setup.specs, setup.engine, flags.gpus, flags.test_fake_devices, &device_problem);
  if (!devices) throw FlagError(device_problem);
  setup.devices = std::move(*devices);
  options.device_label = DevicesLabel(setup.devices);
  setup.instant_delay = std::chrono::milliseconds(flags.instant_delay_ms);
  setup.verify = flags.verify == "on";
  setup.key_check_cache = flags.key_check_cache;
  setup.metrics_listen = flags.metrics_listen;
  return setup;
}

}  // namespace zkfleet::worker
