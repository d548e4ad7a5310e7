// zkworker: loads its circuits, registers with the broker, proves the jobs it
// is sent. SIGINT/SIGTERM drain it (hand back unstarted work, finish the
// running item, release, leave); SIGHUP reads the circuit flags again. See
// docs/protocol.md. With --metrics-listen it serves Prometheus metrics,
// /ready and /healthz over HTTP from start to exit, DRAINING and RELEASING
// included (docs/metrics.md). The flags are worker_flags.hpp's; this file
// only wires what they resolve to.
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "zkfleet/common/command_line.hpp"
#include "zkfleet/common/daemon_options.hpp"
#include "zkfleet/engine/checked_keys.hpp"
#include "zkfleet/metrics/metrics_server.hpp"
#include "zkfleet/metrics/worker_metrics.hpp"
#include "zkfleet/worker/worker_core.hpp"
#include "zkfleet/worker/worker_flags.hpp"
#include "zkfleet/worker/worker_session.hpp"

namespace worker = zkfleet::worker;

int main(int argc, char** argv) {
  worker::WorkerFlags flags;
  CLI::App app{"zkfleet worker: proves the jobs the broker sends it"};
  worker::DeclareWorkerFlags(app, flags);
  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkworker")) return *exit_code;
  if (flags.print_config) {
    zkfleet::cmd::PrintConfig(app);
    return 0;
  }
  zkfleet::cmd::InitLogging("zkworker", flags.log);
  std::optional<worker::WorkerSetup> setup;
  try {
    setup = worker::ResolveWorkerFlags(flags);
  } catch (const worker::FlagError& e) {
    std::fprintf(stderr, "zkworker: %s\n", e.what());
    return zkfleet::cmd::kExitUsage;
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

  worker::WorkerOptions& options = setup->options;
  auto circuits = std::make_unique<worker::CircuitSet>(
      std::move(setup->specs), setup->engine, setup->instant_delay, setup->verify,
      zkfleet::engine::CheckedKeys::FromSetting(setup->key_check_cache), setup->devices);

  // The metrics server starts after the mask (its HTTP threads inherit it, so
  // none takes SIGTERM) and stops last: declared before the worker, it serves
  // through DRAINING, RELEASING and GONE until main returns (on the _Exit
  // path below it is simply not destroyed: nothing to flush).
  zkfleet::metrics::MetricsServer metrics_server;
  const std::string backend_name = circuits->backend_name();
  // The gpu label of zkfleet_worker_info: the device, or the devices
  // comma-separated ("none" on the CPU backend).
  std::vector<std::string> device_labels;
  for (const auto& device : setup->devices) device_labels.push_back(device.label);
  // The pool the memory gate will allocate, resolved as it will be (a share
  // of the memory available now).
  const uint64_t pool_bytes = options.pinned_budget.Resolve(setup->memory->Read().available_bytes);
  zkfleet::metrics::WorkerMetrics metrics(
      metrics_server, {options.worker_id, backend_name, options.device_label, device_labels}, circuits->circuit_ids(),
      worker::DrainBudgetSeconds(options.drain_timeout, pool_bytes,
                                 worker::PinnedPool::ChooseKind(backend_name == "cuda", options.pool_mode)));
  circuits->set_load_progress([&metrics](const std::string& circuit_id, uint64_t done, uint64_t total) {
    metrics.SetKeyLoadBytes(circuit_id, done, total);
  });
  if (!setup->metrics_listen.empty()) {
    try {
      metrics_server.Listen(setup->metrics_listen);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 1;
    }
    spdlog::info("metrics on http://{}/metrics (port {})", setup->metrics_listen, metrics_server.port());
  }

  int code = 0;
  {
    worker::WorkerSession session(setup->connection, options, std::move(circuits), std::move(setup->memory),
                                  &metrics);
    session.set_circuit_reader([args = std::vector<std::string>(argv, argv + argc)] {
      return worker::ReadCircuitSpecsAgain(args);
    });
    try {
      code = session.Run(signal_fd);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      code = 1;
    }
    // An aborted proof still runs on a lane: unwinding would wait for it,
    // so leave now.
    if (session.pipeline_abandoned()) {
      spdlog::default_logger()->flush();
      std::_Exit(code);
    }
  }
  close(signal_fd);
  return code;
}
