#include "zkfleet/broker/broker_flags.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include <unistd.h>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/broker/etcd_journal_bounds.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/fleet/curve_keys.hpp"

namespace zkfleet::broker {

void DeclareBrokerFlags(CLI::App& app, BrokerFlags& flags) {
  const BrokerOptions defaults;
  flags.heartbeat_ms = defaults.heartbeat_interval.count();
  flags.result_ttl_s = std::chrono::duration<double>(defaults.result_ttl).count();
  flags.dedup_window_s = std::chrono::duration<double>(defaults.dedup_window).count();
  flags.busy_retry_s = std::chrono::duration<double>(defaults.busy_retry_after).count();
  flags.lease_start_timeout_s = std::chrono::duration<double>(defaults.lease_start_timeout).count();
  flags.strike_window_s = std::chrono::duration<double>(defaults.strike_window).count();
  flags.verdict_wait_s = std::chrono::duration<double>(defaults.verdict_confirm_wait).count();
  flags.lease_overrun_min_s = std::chrono::duration<double>(defaults.lease_overrun_min).count();
  app.add_option("--data-dir", flags.data_dir,
                 "directory of the broker's journal (LMDB store + witness files); created if missing. Every "
                 "accepted job is there before its SUBMIT is answered, and a restarted broker resumes from it");
  app.add_option("--journal", flags.journal_url,
                 "keep the journal in an etcd cluster instead of --data-dir: etcd://HOST:PORT,HOST:PORT,.../PREFIX. "
                 "Brokers of one PREFIX elect a leader; the others stand by and take over when it is lost");
  app.add_option("--etcd-lease-ttl", flags.etcd_lease_ttl_s,
                 "seconds the etcd leader's lease lasts without a keep-alive: a standby takes over this long after "
                 "the leader is lost")
      ->capture_default_str()->check(CLI::Range(2, 60));
  // Hidden (tests): the etcd chaos test runs with it so that its faults
  // test the fence alone (docs/testing.md).
  app.add_flag("--etcd-fence-only", flags.etcd_fence_only,
               "tests only: a leader whose lease ended keeps running until a fenced commit stops it")
      ->group("");
  app.add_option("--etcd-max-txn-ops", flags.etcd_max_txn_ops,
                 "operations in one etcd transaction: at most the members' --max-txn-ops (etcd's default 128); more "
                 "per transaction, fewer round trips under load")
      ->capture_default_str()->check(CLI::Range(16u, 100000u));
  app.add_option("--etcd-max-txn-bytes", flags.etcd_max_txn_bytes,
                 "bytes in one etcd transaction: below the members' --max-request-bytes (etcd's default 1.5 MiB)")
      ->transform(cmd::ByteSize())
      ->capture_default_str()->check(CLI::Range(uint64_t{64} << 10, uint64_t{1} << 30));
  app.add_option("--etcd-ca", flags.etcd_tls.ca_file,
                 "with --journal etcd://: talk TLS to the members, whose certificates this CA (PEM) signs (etcd's "
                 "--cert-file); without it the broker talks plaintext (a private network only)");
  app.add_option("--etcd-cert", flags.etcd_tls.cert_file,
                 "this broker's client certificate (PEM) for members run with --client-cert-auth, with --etcd-key");
  app.add_option("--etcd-key", flags.etcd_tls.key_file, "the private key (PEM) of --etcd-cert");
  app.add_option("--advertise", flags.advertise,
                 "what standbys tell about this broker when it leads (default: its --clients endpoint and host)");
  // Where standbys send each kind of peer while this broker leads.
  struct Advertised {
    const char* flag;
    std::string* value;
    const char* what;
    const char* bound;
  };
  for (const Advertised& a : {Advertised{"--advertise-clients", &flags.advertise_clients, "clients", "--clients"},
                              Advertised{"--advertise-workers", &flags.advertise_workers, "workers", "--workers"},
                              Advertised{"--advertise-grpc", &flags.advertise_grpc, "gRPC callers", "--grpc-listen"}}) {
    app.add_option(a.flag, *a.value,
                   std::string("with --journal etcd://: the address standbys send ") + a.what +
                       " to while this broker leads (default: " + a.bound +
                       ", a wildcard host replaced by this host's name)");
  }
  flags.max_inline_job_bytes = app.add_option("--max-inline-job-bytes", flags.options.max_inline_job_bytes,
                 "inline witness and input bytes one SUBMIT may carry (0: no bound; with --journal etcd:// the "
                 "default is 786432: larger witnesses go by reference)")
      ->transform(cmd::ByteSize());
  app.add_option("--sync", flags.sync_mode,
                 "journal durability: batch = one fsync per loop turn, replies wait for it (default); always = one "
                 "fsync per message; none = no fsync (survives a broker crash, not a machine crash)")
      ->capture_default_str()->check(CLI::IsMember({"always", "batch", "none"}));
  app.add_option("--dedup-window", flags.dedup_window_s,
                 "seconds a (client, request id) is remembered from submission: a resubmission within it never "
                 "runs the job again")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-live-items", flags.options.admission.max_items,
                 "work items of live jobs the broker holds, all clients; a SUBMIT beyond gets BUSY")
      ->capture_default_str();
  app.add_option("--max-live-witness-bytes", flags.options.admission.max_witness_bytes,
                 "witness bytes of live jobs, all clients; a SUBMIT beyond gets BUSY")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--max-live-items-per-client", flags.options.admission.max_items_per_client,
                 "work items of live jobs per client")
      ->capture_default_str();
  app.add_option("--max-live-witness-bytes-per-client", flags.options.admission.max_witness_bytes_per_client,
                 "witness bytes of live jobs per client")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--busy-retry-after", flags.busy_retry_s, "seconds a BUSY refusal suggests waiting before a retry")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--curve-secret-key", flags.curve_secret_key,
                 "the broker's NAME.secret (zkctl keygen --out NAME); workers and clients need its NAME.pub");
  app.add_option("--allow-dir", flags.allow_dir,
                 "allow-lists: DIR/workers/*.pub may connect to --workers, DIR/clients/*.pub (with a 'role = "
                 "submit|observe|admin' line) to --clients; SIGHUP reloads them (docs/operations.md)");
  app.add_flag("--insecure-plaintext", flags.insecure_plaintext,
               "no CURVE, no allow-lists: anyone who reaches the ports may act as a client or a worker (a trusted "
               "network only)");
  app.add_option("--grpc-listen", flags.options.grpc.listen,
                 "serve the zkfleet.v1 gRPC API on HOST:PORT (docs/grpc.md): TLS, callers authenticated by client "
                 "certificates whose CN names a client of --allow-dir");
  app.add_option("--grpc-cert", flags.options.grpc.cert_file, "the gRPC server's certificate chain (PEM)");
  app.add_option("--grpc-key", flags.options.grpc.key_file, "the gRPC server's private key (PEM)");
  app.add_option("--grpc-client-ca", flags.options.grpc.client_ca_file,
                 "CA certificates (PEM) that sign the gRPC callers' client certificates");
  app.add_flag("--grpc-insecure-plaintext", flags.options.grpc.insecure_plaintext,
               "gRPC without TLS (only with --insecure-plaintext): callers name themselves in the metadata "
               "zkfleet-client-id");
  app.add_option("--grpc-max-inline-bytes", flags.options.grpc.max_inline_bytes,
                 "inline witness bytes a SubmitJob may carry, all partitions; larger jobs go by reference")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--grpc-max-calls-per-caller", flags.options.grpc.max_calls_per_caller,
                 "gRPC calls one caller may have open at once (AwaitJob streams included); more are refused "
                 "RESOURCE_EXHAUSTED")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--grpc-max-inflight-bytes-per-caller", flags.options.grpc.max_inflight_bytes_per_caller,
                 "inline witness bytes of one caller's unanswered SubmitJobs; more are refused RESOURCE_EXHAUSTED")
      ->transform(cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--witness-file-threshold", flags.options.journal.blob_threshold,
                 "witnesses of at least this many bytes are journaled as their own file, smaller ones in the store")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--clients", flags.options.client_endpoint, "ZeroMQ endpoint the client ROUTER binds")->capture_default_str();
  app.add_option("--workers", flags.options.worker_endpoint, "ZeroMQ endpoint the worker ROUTER binds")->capture_default_str();
  app.add_option("--heartbeat-ms", flags.heartbeat_ms, "heartbeat interval; a worker silent for --liveness intervals is dead")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-witness-bytes", flags.options.limits.max_witness_bytes,
                 "largest witness (.wtns) accepted; witnesses travel in frames of their own")
      ->transform(cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-input-bytes", flags.options.max_input_bytes,
                 "largest input.json accepted per partition of a job from inputs (SubmitRequest.inputs); they travel "
                 "inside the SUBMIT, so --max-message-bytes bounds them together too")
      ->transform(cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--io-threads", flags.options.io_threads,
                 "ZeroMQ I/O threads (transfers and CURVE encryption run there): half serve workers, half clients")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--liveness", flags.options.liveness, "heartbeat intervals of silence before a worker is dead")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-attempts", flags.options.max_attempts, "leases per work item before the job is dead-lettered")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--result-ttl", flags.result_ttl_s, "seconds finished jobs' results stay retrievable")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_flag("--accept-unrouted", flags.options.accept_unrouted,
               "accept jobs for circuits no registered worker has announced (they wait in the queue)");
  app.add_option("--known-circuit-grace", flags.known_circuit_grace_s,
                 "seconds after a start during which a SUBMIT for a circuit a worker announced in an earlier life "
                 "is queued although no worker has reconnected yet (0: 2 x --liveness x --heartbeat-ms)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-message-bytes", flags.options.limits.max_message_bytes,
                 "larger frames are dropped and counted (libzmq disconnects peers above twice this)")
      ->transform(cmd::ByteSize())
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-held-bytes-per-connection", flags.options.max_held_bytes_per_connection,
                 "bytes one client connection may have sent that the broker has not read (libzmq buffers a message "
                 "whole): above it the connection is cut; also the largest SUBMIT (0: --max-message-bytes + 2 x "
                 "--max-witness-bytes + 64 KiB)")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--max-held-bytes", flags.options.max_held_bytes,
                 "the same for all connections together: the one holding most is cut (0: twice the per-connection "
                 "bound)")
      ->transform(cmd::ByteSize())
      ->capture_default_str();
  app.add_option("--hwm", flags.options.limits.hwm, "messages queued per peer and direction")->capture_default_str();
  flags.max_partitions = app.add_option("--max-partitions", flags.options.max_partitions, "witnesses per SUBMIT")->capture_default_str();
  app.add_option("--verification-key", flags.verification_keys,
                 "CIRCUIT=verification_key.json[@sha256:HEX] (repeatable): every RESULT of CIRCUIT is verified by "
                 "the broker (proof and public signals) before it is stored; a SUBMIT for a circuit without a key "
                 "is refused (UNKNOWN_CIRCUIT) unless it is listed in --unverified-circuits");
  app.add_option("--verification-key-dir", flags.verification_key_dir,
                 "DIR of verification keys, one per circuit: CIRCUIT.json (snarkjs) or CIRCUIT.vk (bellperson); read "
                 "again on SIGHUP and `zkctl reload`, so circuits are added and removed without a restart")
      ->check(CLI::ExistingDirectory);
  app.add_option("--unverified-circuits", flags.unverified_circuits,
                 "circuits whose RESULTs are stored unchecked ('*' = every circuit without a key): benchmark "
                 "circuits whose workers do not prove (zkworker --instant) only, never in production")
      ->delimiter(',');
  app.add_option("--verify-threads", flags.options.verify_threads, "threads verifying RESULTs off the broker's loop")
      ->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--max-credit-per-worker", flags.options.max_credit_per_worker,
                 "JOBs one worker may hold unanswered, whatever capacity it announces")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  app.add_option("--lease-start-timeout", flags.lease_start_timeout_s,
                 "seconds a lease may wait for its worker's STARTED while that worker proves nothing; then it goes "
                 "back to the queue and counts against the worker")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lease-overrun-min", flags.lease_overrun_min_s,
                 "seconds a started lease may always run; beyond max(this, --lease-overrun-factor x its circuit's "
                 "smoothed proving time) it is taken back and counts against the worker")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lease-overrun-factor", flags.options.lease_overrun_factor, "see --lease-overrun-min")
      ->capture_default_str()->check(CLI::Range(1.0, 1e6));
  app.add_option("--strikes-to-fault", flags.options.strikes_to_fault,
                 "strikes (rejected RESULTs, reclaimed leases, started work lost to a disconnect, messages over a "
                 "bound) within --strike-window-s that make a worker FAULTED until zkctl undrain: that worker id when they "
                 "all came from it, its whole key when they came from several ids")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--strike-window-s", flags.strike_window_s, "seconds a strike counts (0: for ever)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--verdict-confirm-wait-s", flags.verdict_wait_s,
                 "seconds a worker's 'the client's fault' waits for a worker of another key to confirm or refute it "
                 "before it is final")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--metrics-listen", flags.metrics_listen,
                 "serve Prometheus /metrics, /ready and /healthz on host:port (empty: off)");
  cmd::AddLogFlags(app, &flags.log);
  cmd::AddConfigFile(app, &flags.print_config);
}

namespace {

std::string Hostname() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("?");
}

}  // namespace

BrokerSetup ResolveBrokerFlags(const BrokerFlags& flags) {
  BrokerSetup setup;
  BrokerOptions& options = setup.options;
  options = flags.options;
  options.heartbeat_interval = std::chrono::milliseconds(flags.heartbeat_ms);
  options.known_circuit_grace = cmd::MillisecondsOf(flags.known_circuit_grace_s);
  options.result_ttl = cmd::MillisecondsOf(flags.result_ttl_s);
  options.dedup_window = cmd::MillisecondsOf(flags.dedup_window_s);
  options.busy_retry_after = cmd::MillisecondsOf(flags.busy_retry_s);
  options.lease_start_timeout = cmd::MillisecondsOf(flags.lease_start_timeout_s);
  options.strike_window = cmd::MillisecondsOf(flags.strike_window_s);
  options.verdict_confirm_wait = cmd::MillisecondsOf(flags.verdict_wait_s);
  options.lease_overrun_min = cmd::MillisecondsOf(flags.lease_overrun_min_s);
  options.unverified_circuits = {flags.unverified_circuits.begin(), flags.unverified_circuits.end()};
  options.journal.sync = *ParseSyncMode(flags.sync_mode);  // checked by the option
  options.security.plaintext = flags.insecure_plaintext;
  options.security.allow_dir = flags.allow_dir;
  setup.metrics_listen = flags.metrics_listen;

  // The journal: on this host's disk, or in etcd with a leader among brokers.
  options.journal.dir = flags.data_dir;
  if (flags.data_dir.empty() == flags.journal_url.empty()) {
    throw FlagError("give --data-dir DIR (an LMDB journal on this host) or --journal etcd://... (a journal in etcd, "
                    "brokers on several hosts), exactly one");
  }
  if (!flags.journal_url.empty()) {
    storage::EtcdLeadershipOptions leadership;
    try {
      const storage::EtcdUrl url = storage::ParseEtcdUrl(flags.journal_url);
      leadership.client.endpoints = url.endpoints;
      leadership.client.tls = flags.etcd_tls;
      leadership.prefix = url.prefix;
      leadership.ttl = std::chrono::seconds(flags.etcd_lease_ttl_s);
      leadership.stop_on_lease_loss = !flags.etcd_fence_only;
      // A member that does not answer is left for the next well within the
      // lease: keep-alives must reach some member before the TTL runs out.
      leadership.client.call_timeout = std::min<std::chrono::milliseconds>(
          std::chrono::milliseconds(2000), std::chrono::milliseconds(leadership.ttl) / 4);
      setup.self.name = !flags.advertise.empty() ? flags.advertise : options.client_endpoint + " (" + Hostname() + ")";
      setup.self.clients = !flags.advertise_clients.empty() ? flags.advertise_clients
                                                            : AdvertisedEndpoint(options.client_endpoint, Hostname());
      setup.self.workers = !flags.advertise_workers.empty() ? flags.advertise_workers
                                                            : AdvertisedEndpoint(options.worker_endpoint, Hostname());
      if (!flags.options.grpc.listen.empty()) {
        setup.self.grpc = !flags.advertise_grpc.empty() ? flags.advertise_grpc
                                                        : AdvertisedGrpcAddress(flags.options.grpc.listen, Hostname());
      }
      leadership.name = setup.self.Encode();
      storage::EtcdJournalOptions etcd;
      etcd.endpoints = url.endpoints;
      etcd.tls = flags.etcd_tls;
      etcd.prefix = url.prefix;
      etcd.max_txn_ops = flags.etcd_max_txn_ops;
      etcd.max_txn_bytes = flags.etcd_max_txn_bytes;
      options.journal.etcd = etcd;
      options.journal.dir = flags.journal_url;  // names the journal in messages
    } catch (const std::exception& e) {
      throw FlagError(e.what());
    }
    const bool partitions_given = flags.max_partitions && flags.max_partitions->count() > 0;
    const bool inline_given = flags.max_inline_job_bytes && flags.max_inline_job_bytes->count() > 0;
    if (auto why = FitSubmitsToEtcdTransactions(options, partitions_given, inline_given)) throw FlagError(*why);
    setup.leadership = leadership;
  }

  // Verification keys, checked before the journal is opened: a bad key
  // changes nothing on disk.
  try {
    std::map<std::string, std::string> failed;
    std::vector<std::string> notes;
    auto keys = std::make_shared<VerificationKeys>(
        VerificationKeys::LoadAll(flags.verification_keys, flags.verification_key_dir, &failed, &notes));
    for (const std::string& note : notes) spdlog::info("--verification-key-dir: {}", note);
    if (!failed.empty()) {
      // At start a bad file is the operator's to fix now (at a reload it
      // costs only its circuit).
      throw FlagError("--verification-key-dir: " + failed.begin()->second);
    }
    options.verification_key_specs = flags.verification_keys;
    options.verification_key_dir = flags.verification_key_dir;
    for (const auto& key : *keys) {
      spdlog::info("verification key of circuit {}: {} (sha256 {}, {} public signals)", key.circuit, key.path,
                   key.sha256, key.n_public);
    }
    options.verification_keys = std::move(keys);
  } catch (const FlagError&) {
    throw;
  } catch (const std::exception& e) {
    throw FlagError(std::string("--verification-key: ") + e.what());
  }
  if (!options.unverified_circuits.empty()) {
    spdlog::warn("RESULTs of {} are stored WITHOUT verification (--unverified-circuits): benchmarks only",
                 options.unverified_circuits.count("*") ? std::string("every circuit without a key")
                                                        : fmt::format("{}", fmt::join(options.unverified_circuits, ", ")));
  }

  // CURVE, on unless --insecure-plaintext.
  if (!flags.insecure_plaintext) {
    if (flags.curve_secret_key.empty() || flags.allow_dir.empty()) {
      throw FlagError("CURVE is on by default: give --curve-secret-key (the broker's NAME.secret, from zkctl keygen) "
                      "and --allow-dir (workers/ and clients/ public keys), or --insecure-plaintext on a trusted "
                      "network");
    }
    try {
      options.security.server = fleet::ReadSecretKeyFile(flags.curve_secret_key);
    } catch (const std::exception& e) {
      throw FlagError(e.what());
    }
  }
  return setup;
}

}  // namespace zkfleet::broker
