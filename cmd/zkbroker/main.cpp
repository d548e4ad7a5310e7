// zkbroker: the job broker. Clients connect to --clients, workers to
// --workers; see docs/protocol.md. Its journal lives in --data-dir
// (docs/operations.md: backing it up, moving it, inspecting it), or in an
// etcd cluster (--journal etcd://...), where brokers elect one leader and the
// others stand by (docs/operations.md, "Brokers on etcd"). With
// --metrics-listen it serves Prometheus metrics, /ready and /healthz over
// HTTP (docs/metrics.md). The flags are broker_flags.hpp's; this file only
// wires what they resolve to.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_flags.hpp"
#include "zkfleet/broker/broker_server.hpp"
#include "zkfleet/broker/stand_by.hpp"
#include "zkfleet/common/command_line.hpp"
#include "zkfleet/common/daemon_options.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"
#include "zkfleet/metrics/metrics_server.hpp"
#include "zkfleet/storage/etcd_leadership.hpp"
#include "zkfleet/storage/journal_check.hpp"

namespace {

// Exit status of a broker that lost its etcd leadership (EX_TEMPFAIL): the
// service manager starts it again, as a standby.
constexpr int kExitNotLeader = 75;

// Whether SIGINT or SIGTERM is waiting on the (blocked, non-blocking) signalfd.
bool StopRequested(int stop_fd) {
  pollfd fd{stop_fd, POLLIN, 0};
  if (poll(&fd, 1, 0) <= 0) return false;
  signalfd_siginfo info{};
  if (read(stop_fd, &info, sizeof(info)) != sizeof(info)) return false;
  return info.ssi_signo != SIGHUP;
}

}  // namespace

int main(int argc, char** argv) {
  zkfleet::broker::BrokerFlags flags;
  CLI::App app{"zkfleet broker: sequences proving jobs and leases them to workers"};
  zkfleet::broker::DeclareBrokerFlags(app, flags);
  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkbroker")) return *exit_code;
  if (flags.print_config) {
    zkfleet::cmd::PrintConfig(app);
    return 0;
  }
  zkfleet::cmd::InitLogging("zkbroker", flags.log);
  std::optional<zkfleet::broker::BrokerSetup> setup;
  try {
    setup = zkfleet::broker::ResolveBrokerFlags(flags);
  } catch (const zkfleet::broker::FlagError& e) {
    std::fprintf(stderr, "zkbroker: %s\n", e.what());
    return zkfleet::cmd::kExitUsage;
  }
  zkfleet::broker::BrokerOptions& options = setup->options;
  std::unique_ptr<zkfleet::storage::EtcdLeadership> leadership;

  // The journal is read whole before anything starts on it (in a child
  // process: a damaged store faults its reader, not this broker): a damaged
  // one is refused with the way out, and exit status 65 (EX_DATAERR), which
  // the systemd unit does not restart (no crash loop).
  // (An etcd journal has no pages here to read: etcd checks its own data.)
  if (!options.journal.etcd) {
    try {
      const zkfleet::storage::JournalCheck check = zkfleet::storage::CheckJournal(options.journal.dir);
      if (!check.ok()) {
        for (const std::string& problem : check.problems) spdlog::error("{}", problem);
        spdlog::error("the journal in {} is damaged ({} of {} records, or a part of its store, cannot be read); "
                      "nothing was started on it. Recovery: stop here, keep the directory, run `zkctl journal salvage "
                      "--data-dir {} --to NEW_DIR` (it copies every intact record and witness file into a new journal "
                      "and lists what was lost), then start zkbroker with --data-dir NEW_DIR (docs/operations.md, \"A "
                      "damaged journal\")",
                      options.journal.dir.string(), check.damaged, check.records, options.journal.dir.string());
        return 65;
      }
      if (check.exists) spdlog::info("journal {}: {} records checked", options.journal.dir.string(), check.records);
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 1;
    }
  }

  // SIGINT/SIGTERM are read from a signalfd in the poll loop; block them
  // before any thread (libzmq's I/O threads included) exists.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // reloads the allow-lists
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  int stop_fd = signalfd(-1, &signals, SFD_CLOEXEC);

  // The metrics server starts after the mask (its HTTP threads inherit it, so
  // none takes SIGTERM) and stops last: declared before everything it
  // observes, destroyed when main returns.
  zkfleet::metrics::MetricsServer metrics_server;
  zkfleet::metrics::BrokerMetrics metrics(metrics_server);
  try {
    if (!setup->metrics_listen.empty()) {
      metrics_server.Listen(setup->metrics_listen);
      spdlog::info("metrics on http://{}/metrics (port {})", setup->metrics_listen, metrics_server.port());
    }
    zmq::context_t context(options.io_threads);
    if (setup->leadership) {
      // Stand by until this broker leads, answering clients and workers "not
      // the leader, try X" where its ports are its own (stand_by.hpp).
      leadership = std::make_unique<zkfleet::storage::EtcdLeadership>(*setup->leadership);
      metrics.SetLeader(false);
      metrics_server.SetReadiness(false, "standing by");
      const bool leads = zkfleet::broker::StandBy(
          context, options, setup->self, *leadership, [&] { return StopRequested(stop_fd); },
          [&](const std::string& leader) {
            metrics_server.SetReadiness(false, leader.empty() ? std::string("standing by: no broker leads")
                                                              : "standing by: " + leader + " leads");
          });
      if (!leads) return 0;
      options.journal.etcd->leadership = leadership.get();
    }
    zkfleet::broker::BrokerServer server(context, options, &metrics);
    server.SetLeadership(leadership.get());
    server.Bind();
    metrics.SetLeader(true);
    metrics_server.SetReadiness(true, "serving");
    server.Run(stop_fd);
  } catch (const zkfleet::Error& e) {
    spdlog::error("{}", e.what());
    // Nothing of this life answered anyone after the loss: the service
    // manager starts the broker again, to stand by.
    return e.code() == zkfleet::ErrorCode::kNotLeader ? kExitNotLeader : 1;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  close(stop_fd);
  return 0;
}
