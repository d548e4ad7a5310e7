// zkbroker: the job broker. Clients connect to --clients, workers to
// --workers; see docs/protocol.md. Its journal lives in --data-dir
// (docs/operations.md: backing it up, moving it, inspecting it), or in an
// etcd cluster (--journal etcd://...), where brokers elect one leader and the
// others stand by (docs/operations.md, "Brokers on etcd"). With --metrics-listen it serves Prometheus
// metrics, /ready and /healthz over HTTP (docs/metrics.md).
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "zkfleet/common/daemon_options.hpp"
#include "zkfleet/common/command_line.hpp"
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_server.hpp"
#include "zkfleet/broker/etcd_journal_bounds.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/common/logging.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"
#include "zkfleet/metrics/metrics_server.hpp"
#include "zkfleet/storage/etcd_leadership.hpp"
#include "zkfleet/storage/journal_check.hpp"

namespace {
// Exit status of a broker that lost its etcd leadership (EX_TEMPFAIL): the
// service manager starts it again, as a standby.
constexpr int kExitNotLeader = 75;
}  // namespace

namespace {
std::string Hostname() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("?");
}
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
  zkfleet::broker::BrokerOptions options;
  CLI::App app{"zkfleet broker: sequences proving jobs and leases them to workers"};
  int64_t heartbeat_ms = options.heartbeat_interval.count();
  double result_ttl_s = std::chrono::duration<double>(options.result_ttl).count();
  zkfleet::cmd::LogFlags log_flags;
  std::string metrics_listen;
  std::string data_dir;
  std::string sync_mode = "batch";
  double dedup_window_s = std::chrono::duration<double>(options.dedup_window).count();
  double busy_retry_s = std::chrono::duration<double>(options.busy_retry_after).count();
  std::string journal_url;
  int64_t etcd_lease_ttl_s = 5;
  std::string advertise;
  app.add_option("--data-dir", data_dir,
                 "directory of the broker's journal (LMDB store + witness files); created if missing. Every "
                 "accepted job is there before its SUBMIT is answered, and a restarted broker resumes from it");
  app.add_option("--journal", journal_url,
                 "keep the journal in an etcd cluster instead of --data-dir: etcd://HOST:PORT,HOST:PORT,.../PREFIX. "
                 "Brokers of one PREFIX elect a leader; the others stand by and take over when it is lost");
  app.add_option("--etcd-lease-ttl", etcd_lease_ttl_s,
                 "seconds the etcd leader's lease lasts without a keep-alive: a standby takes over this long after "
                 "the leader is lost")
      ->capture_default_str()->check(CLI::Range(2, 60));
  uint32_t etcd_max_txn_ops = 128;
  uint64_t etcd_max_txn_bytes = 1u << 20;
  app.add_option("--etcd-max-txn-ops", etcd_max_txn_ops,
                 "operations in one etcd transaction: at most the members' --max-txn-ops (etcd's default 128); more "
                 "per transaction, fewer round trips under load")
      ->capture_default_str()->check(CLI::Range(16u, 100000u));
  app.add_option("--etcd-max-txn-bytes", etcd_max_txn_bytes,
                 "bytes in one etcd transaction: below the members' --max-request-bytes (etcd's default 1.5 MiB)")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str()->check(CLI::Range(uint64_t{64} << 10, uint64_t{1} << 30));
  zkfleet::storage::EtcdTls etcd_tls;
  app.add_option("--etcd-ca", etcd_tls.ca_file,
                 "with --journal etcd://: talk TLS to the members, whose certificates this CA (PEM) signs (etcd's "
                 "--cert-file); without it the broker talks plaintext (a private network only)");
  app.add_option("--etcd-cert", etcd_tls.cert_file,
                 "this broker's client certificate (PEM) for members run with --client-cert-auth, with --etcd-key");
  app.add_option("--etcd-key", etcd_tls.key_file, "the private key (PEM) of --etcd-cert");
  app.add_option("--advertise", advertise,
                 "what standbys tell about this broker when it leads (default: its --clients endpoint and host)");
  app.add_option("--max-inline-job-bytes", options.max_inline_job_bytes,
                 "inline witness and input bytes one SUBMIT may carry (0: no bound; with --journal etcd:// the "
                 "default is 786432: larger witnesses go by reference)")
      ->transform(zkfleet::cmd::ByteSize());
  app.add_option("--sync", sync_mode,
                 "journal durability: batch = one fsync per loop turn, replies wait for it (default); always = one "
                 "fsync per message; none = no fsync (survives a broker crash, not a machine crash)")
      ->capture_default_str()->check(CLI::IsMember({"always", "batch", "none"}));
  app.add_option("--dedup-window", dedup_window_s,
                 "seconds a (client, request id) is remembered from submission: a resubmission within it never "
                 "runs the job again")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-live-items", options.admission.max_items,
                 "work items of live jobs the broker holds, all clients; a SUBMIT beyond gets BUSY")
      ->capture_default_str();
  app.add_option("--max-live-witness-bytes", options.admission.max_witness_bytes,
                 "witness bytes of live jobs, all clients; a SUBMIT beyond gets BUSY")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--max-live-items-per-client", options.admission.max_items_per_client,
                 "work items of live jobs per client")
      ->capture_default_str();
  app.add_option("--max-live-witness-bytes-per-client", options.admission.max_witness_bytes_per_client,
                 "witness bytes of live jobs per client")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--busy-retry-after", busy_retry_s, "seconds a BUSY refusal suggests waiting before a retry")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  std::string curve_secret_key, allow_dir;
  bool insecure_plaintext = false;
  app.add_option("--curve-secret-key", curve_secret_key,
                 "the broker's NAME.secret (zkctl keygen --out NAME); workers and clients need its NAME.pub");
  app.add_option("--allow-dir", allow_dir,
                 "allow-lists: DIR/workers/*.pub may connect to --workers, DIR/clients/*.pub (with a 'role = "
                 "submit|observe|admin' line) to --clients; SIGHUP reloads them (docs/operations.md)");
  app.add_flag("--insecure-plaintext", insecure_plaintext,
               "no CURVE, no allow-lists: anyone who reaches the ports may act as a client or a worker (a trusted "
               "network only)");
  app.add_option("--grpc-listen", options.grpc.listen,
                 "serve the zkfleet.v1 gRPC API on HOST:PORT (docs/grpc.md): TLS, callers authenticated by client "
                 "certificates whose CN names a client of --allow-dir");
  app.add_option("--grpc-cert", options.grpc.cert_file, "the gRPC server's certificate chain (PEM)");
  app.add_option("--grpc-key", options.grpc.key_file, "the gRPC server's private key (PEM)");
  app.add_option("--grpc-client-ca", options.grpc.client_ca_file,
                 "CA certificates (PEM) that sign the gRPC callers' client certificates");
  app.add_flag("--grpc-insecure-plaintext", options.grpc.insecure_plaintext,
               "gRPC without TLS (only with --insecure-plaintext): callers name themselves in the metadata "
               "zkfleet-client-id");
  app.add_option("--grpc-max-inline-bytes", options.grpc.max_inline_bytes,
                 "inline witness bytes a SubmitJob may carry, all partitions; larger jobs go by reference")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--grpc-max-calls-per-caller", options.grpc.max_calls_per_caller,
                 "gRPC calls one caller may have open at once (AwaitJob streams included); more are refused "
                 "RESOURCE_EXHAUSTED")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--grpc-max-inflight-bytes-per-caller", options.grpc.max_inflight_bytes_per_caller,
                 "inline witness bytes of one caller's unanswered SubmitJobs; more are refused RESOURCE_EXHAUSTED")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--witness-file-threshold", options.journal.blob_threshold,
                 "witnesses of at least this many bytes are journaled as their own file, smaller ones in the store")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--clients", options.client_endpoint, "ZeroMQ endpoint the client ROUTER binds")->capture_default_str();
  app.add_option("--workers", options.worker_endpoint, "ZeroMQ endpoint the worker ROUTER binds")->capture_default_str();
  app.add_option("--heartbeat-ms", heartbeat_ms, "heartbeat interval; a worker silent for --liveness intervals is dead")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-witness-bytes", options.limits.max_witness_bytes,
                 "largest witness (.wtns) accepted; witnesses travel in frames of their own")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-input-bytes", options.max_input_bytes,
                 "largest input.json accepted per partition of a job from inputs (SubmitRequest.inputs); they travel "
                 "inside the SUBMIT, so --max-message-bytes bounds them together too")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--io-threads", options.io_threads,
                 "ZeroMQ I/O threads (transfers and CURVE encryption run there): half serve workers, half clients")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--liveness", options.liveness, "heartbeat intervals of silence before a worker is dead")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-attempts", options.max_attempts, "leases per work item before the job is dead-lettered")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--result-ttl", result_ttl_s, "seconds finished jobs' results stay retrievable")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_flag("--accept-unrouted", options.accept_unrouted,
               "accept jobs for circuits no registered worker has announced (they wait in the queue)");
  double known_circuit_grace_s = 0;
  app.add_option("--known-circuit-grace", known_circuit_grace_s,
                 "seconds after a start during which a SUBMIT for a circuit a worker announced in an earlier life "
                 "is queued although no worker has reconnected yet (0: 2 x --liveness x --heartbeat-ms)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-message-bytes", options.limits.max_message_bytes,
                 "larger frames are dropped and counted (libzmq disconnects peers above twice this)")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-held-bytes-per-connection", options.max_held_bytes_per_connection,
                 "bytes one client connection may have sent that the broker has not read (libzmq buffers a message "
                 "whole): above it the connection is cut; also the largest SUBMIT (0: --max-message-bytes + 2 x "
                 "--max-witness-bytes + 64 KiB)")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--max-held-bytes", options.max_held_bytes,
                 "the same for all connections together: the one holding most is cut (0: twice the per-connection "
                 "bound)")
      ->transform(zkfleet::cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--hwm", options.limits.hwm, "messages queued per peer and direction")->capture_default_str();
  app.add_option("--max-partitions", options.max_partitions, "witnesses per SUBMIT")->capture_default_str();
  std::vector<std::string> verification_keys;
  std::vector<std::string> unverified_circuits;
  double lease_start_timeout_s = std::chrono::duration<double>(options.lease_start_timeout).count();
  double strike_window_s = std::chrono::duration<double>(options.strike_window).count();
  double verdict_wait_s = std::chrono::duration<double>(options.verdict_confirm_wait).count();
  double lease_overrun_min_s = std::chrono::duration<double>(options.lease_overrun_min).count();
  app.add_option("--verification-key", verification_keys,
                 "CIRCUIT=verification_key.json[@sha256:HEX] (repeatable): every RESULT of CIRCUIT is verified by "
                 "the broker (proof and public signals) before it is stored; a SUBMIT for a circuit without a key "
                 "is refused (UNKNOWN_CIRCUIT) unless it is listed in --unverified-circuits");
  std::string verification_key_dir;
  app.add_option("--verification-key-dir", verification_key_dir,
                 "DIR of verification keys, one per circuit: CIRCUIT.json (snarkjs) or CIRCUIT.vk (bellperson); read "
                 "again on SIGHUP and `zkctl reload`, so circuits are added and removed without a restart")
      ->check(CLI::ExistingDirectory);
  app.add_option("--unverified-circuits", unverified_circuits,
                 "circuits whose RESULTs are stored unchecked ('*' = every circuit without a key): benchmark "
                 "circuits whose workers do not prove (zkworker --instant) only, never in production")
      ->delimiter(',');
  app.add_option("--verify-threads", options.verify_threads, "threads verifying RESULTs off the broker's loop")
      ->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--max-credit-per-worker", options.max_credit_per_worker,
                 "JOBs one worker may hold unanswered, whatever capacity it announces")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--lease-start-timeout", lease_start_timeout_s,
                 "seconds a lease may wait for its worker's STARTED while that worker proves nothing; then it goes "
                 "back to the queue and counts against the worker")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lease-overrun-min", lease_overrun_min_s,
                 "seconds a started lease may always run; beyond max(this, --lease-overrun-factor x its circuit's "
                 "smoothed proving time) it is taken back and counts against the worker")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lease-overrun-factor", options.lease_overrun_factor, "see --lease-overrun-min")
      ->capture_default_str()->check(CLI::Range(1.0, 1e6));
  app.add_option("--strikes-to-fault", options.strikes_to_fault,
                 "strikes (rejected RESULTs, reclaimed leases, started work lost to a disconnect, messages over a "
                 "bound) within --strike-window-s that make a worker FAULTED until zkctl undrain: that worker id when they "
                 "all came from it, its whole key when they came from several ids")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--strike-window-s", strike_window_s, "seconds a strike counts (0: for ever)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--verdict-confirm-wait-s", verdict_wait_s,
                 "seconds a worker's 'the client's fault' waits for a worker of another key to confirm or refute it "
                 "before it is final")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--metrics-listen", metrics_listen,
                 "serve Prometheus /metrics, /ready and /healthz on host:port (empty: off)");
  zkfleet::cmd::AddLogFlags(app, &log_flags);
  bool print_config = false;
  zkfleet::cmd::AddConfigFile(app, &print_config);
  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkbroker")) return *exit_code;
  if (print_config) {
    zkfleet::cmd::PrintConfig(app);
    return 0;
  }
  options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
  options.known_circuit_grace = std::chrono::milliseconds(static_cast<int64_t>(known_circuit_grace_s * 1000));
  options.result_ttl = std::chrono::milliseconds(static_cast<int64_t>(result_ttl_s * 1000));
  options.dedup_window = std::chrono::milliseconds(static_cast<int64_t>(dedup_window_s * 1000));
  options.busy_retry_after = std::chrono::milliseconds(static_cast<int64_t>(busy_retry_s * 1000));
  options.journal.dir = data_dir;
  if (data_dir.empty() == journal_url.empty()) {
    std::fprintf(stderr, "zkbroker: give --data-dir DIR (an LMDB journal on this host) or --journal etcd://... (a "
                         "journal in etcd, brokers on several hosts), exactly one\n");
    return 2;
  }
  std::unique_ptr<zkfleet::storage::EtcdLeadership> leadership;
  zkfleet::storage::EtcdLeadershipOptions leadership_options;
  if (!journal_url.empty()) {
    try {
      const zkfleet::storage::EtcdUrl url = zkfleet::storage::ParseEtcdUrl(journal_url);
      leadership_options.client.endpoints = url.endpoints;
      leadership_options.client.tls = etcd_tls;
      leadership_options.prefix = url.prefix;
      leadership_options.ttl = std::chrono::seconds(etcd_lease_ttl_s);
      // A member that does not answer is left for the next well within the
      // lease: keep-alives must reach some member before the TTL runs out.
      leadership_options.client.call_timeout =
          std::min<std::chrono::milliseconds>(std::chrono::milliseconds(2000),
                                              std::chrono::milliseconds(leadership_options.ttl) / 4);
      zkfleet::storage::EtcdJournalOptions etcd;
      etcd.endpoints = url.endpoints;
      etcd.tls = etcd_tls;
      etcd.prefix = url.prefix;
      etcd.max_txn_ops = etcd_max_txn_ops;
      etcd.max_txn_bytes = etcd_max_txn_bytes;
      options.journal.etcd = etcd;
      options.journal.dir = journal_url;  // names the journal in messages
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zkbroker: %s\n", e.what());
      return 2;
    }
    if (auto why = zkfleet::broker::FitSubmitsToEtcdTransactions(options, app.count("--max-partitions") > 0,
                                                                  app.count("--max-inline-job-bytes") > 0)) {
      std::fprintf(stderr, "zkbroker: %s\n", why->c_str());
      return 2;
    }
  }
  options.lease_start_timeout = std::chrono::milliseconds(static_cast<int64_t>(lease_start_timeout_s * 1000));
  options.strike_window = std::chrono::milliseconds(static_cast<int64_t>(strike_window_s * 1000));
  options.verdict_confirm_wait = std::chrono::milliseconds(static_cast<int64_t>(verdict_wait_s * 1000));
  options.lease_overrun_min = std::chrono::milliseconds(static_cast<int64_t>(lease_overrun_min_s * 1000));
  options.unverified_circuits = {unverified_circuits.begin(), unverified_circuits.end()};
  options.journal.sync = *zkfleet::broker::ParseSyncMode(sync_mode);
  options.security.plaintext = insecure_plaintext;
  options.security.allow_dir = allow_dir;

  zkfleet::cmd::InitLogging("zkbroker", log_flags);
  // Checked before the journal is opened: a bad key changes nothing on disk.
  try {
    std::map<std::string, std::string> failed;
    std::vector<std::string> notes;
    auto keys = std::make_shared<zkfleet::broker::VerificationKeys>(
        zkfleet::broker::VerificationKeys::LoadAll(verification_keys, verification_key_dir, &failed, &notes));
    for (const std::string& note : notes) spdlog::info("--verification-key-dir: {}", note);
    if (!failed.empty()) {
      // At start a bad file is the operator's to fix now (at a reload it
      // costs only its circuit).
      std::fprintf(stderr, "zkbroker: --verification-key-dir: %s\n", failed.begin()->second.c_str());
      return 2;
    }
    options.verification_key_specs = verification_keys;
    options.verification_key_dir = verification_key_dir;
    for (const auto& key : *keys) {
      spdlog::info("verification key of circuit {}: {} (sha256 {}, {} public signals)", key.circuit, key.path,
                   key.sha256, key.n_public);
    }
    options.verification_keys = std::move(keys);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkbroker: --verification-key: %s\n", e.what());
    return 2;
  }
  if (!options.unverified_circuits.empty()) {
    spdlog::warn("RESULTs of {} are stored WITHOUT verification (--unverified-circuits): benchmarks only",
                 options.unverified_circuits.count("*") ? std::string("every circuit without a key")
                                                        : fmt::format("{}", fmt::join(options.unverified_circuits, ", ")));
  }
  if (!insecure_plaintext) {
    if (curve_secret_key.empty() || allow_dir.empty()) {
      std::fprintf(stderr,
                   "zkbroker: CURVE is on by default: give --curve-secret-key (the broker's NAME.secret, from zkctl "
                   "keygen) and --allow-dir (workers/ and clients/ public keys), or --insecure-plaintext on a "
                   "trusted network\n");
      return 2;
    }
    try {
      options.security.server = zkfleet::fleet::ReadSecretKeyFile(curve_secret_key);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zkbroker: %s\n", e.what());
      return 2;
    }
  }

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
    if (!metrics_listen.empty()) {
      metrics_server.Listen(metrics_listen);
      spdlog::info("metrics on http://{}/metrics (port {})", metrics_listen, metrics_server.port());
    }
    if (options.journal.etcd) {
      // Stand by until this broker leads: only the leader binds the ports.
      leadership_options.name = !advertise.empty() ? advertise : options.client_endpoint + " (" + Hostname() + ")";
      leadership = std::make_unique<zkfleet::storage::EtcdLeadership>(leadership_options);
      metrics.SetLeader(false);
      metrics_server.SetReadiness(false, "standing by");
      const bool leads = leadership->Campaign([&] { return StopRequested(stop_fd); },
                                              [&](const std::string& leader) {
                                                metrics_server.SetReadiness(false, "standing by: " + leader + " leads");
                                              });
      if (!leads) return 0;
      options.journal.etcd->leadership = leadership.get();
    }
    zmq::context_t context(options.io_threads);
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
