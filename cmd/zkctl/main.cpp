// zkctl: command-line client of the zkfleet broker.
//   zkctl submit --circuit ID [--priority P] [--request-id R] [--deadline S] [--wait] [--out DIR] WITNESS...
//   zkctl submit --circuit ID --witness-url URL [--sha256 HEX --size N] [--public-signals F | --n-public N] ...
//   zkctl submit --circuit ID --input input.json [--public-signals F] ...
//   zkctl await JOB [--out DIR] [--out-proof FILE] | status | workers | cancel JOB | drain WORKER [--wait] | undrain WORKER | reload
//   zkctl journal --data-dir DIR [--job N] [--limit N]   (reads the broker's journal; no broker needed)
//   zkctl keygen --out NAME   (writes a CURVE keypair NAME.pub, NAME.secret; no broker needed)
// Tables by default, --json for machines. Exit codes: see commands.hpp.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "zkfleet/common/command_line.hpp"

#include "commands.hpp"
#include "zkfleet/common/error.hpp"

namespace {

// ZKFLEET_CLIENT_ID, else "<user>@<hostname>". (Counts only in plaintext
// mode: with CURVE the broker knows the client by its key.)
std::string EnvOr(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string DefaultClientId() {
  if (const char* env = std::getenv("ZKFLEET_CLIENT_ID"); env && *env) return env;
  std::string user;
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) user = pw->pw_name;
  if (user.empty()) {
    const char* env_user = std::getenv("USER");
    user = env_user && *env_user ? env_user : "uid" + std::to_string(geteuid());
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return user;
  return user + "@" + host;
}

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

namespace zkctl {
// keygen.cpp: writes NAME.pub and NAME.secret (mode 0600); never overwrites.
int Keygen(const std::string& out, bool json);
}  // namespace zkctl

int main(int argc, char** argv) {
  CLI::App app{"zkctl: submit proving jobs to a zkfleet broker and inspect it"};
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the subcommand
  std::string endpoint = EnvOr("ZKFLEET_BROKER");
  if (endpoint.empty()) endpoint = "tcp://127.0.0.1:5555";
  std::string client_id = DefaultClientId();
  bool json = false;
  double timeout_s = 10;
  double wait_timeout_s = 0;
  app.add_option("--broker", endpoint, "the broker's client endpoint, or every broker's (comma-separated: brokers on etcd; zkctl follows the "
                 "leader) (default: $ZKFLEET_BROKER, else this)")
      ->capture_default_str();
  std::string curve_secret_key = EnvOr("ZKFLEET_CURVE_SECRET_KEY");
  std::string broker_public_key = EnvOr("ZKFLEET_BROKER_PUBLIC_KEY");
  bool insecure_plaintext = false;
  app.add_option("--curve-secret-key", curve_secret_key,
                 "this client's NAME.secret (zkctl keygen); the broker knows the client by this key "
                 "(default: $ZKFLEET_CURVE_SECRET_KEY)");
  app.add_option("--broker-public-key", broker_public_key,
                 "the broker's NAME.pub, or one per --broker endpoint, comma-separated (default: "
                 "$ZKFLEET_BROKER_PUBLIC_KEY)");
  app.add_flag("--insecure-plaintext", insecure_plaintext,
               "no CURVE: unauthenticated, unencrypted (only against a broker run with --insecure-plaintext)");
  app.add_option("--client-id", client_id,
                 "plaintext mode only: client identity, scopes request ids and owns the jobs submitted (default: $ZKFLEET_CLIENT_ID, "
                 "else <user>@<hostname>)")
      ->capture_default_str();
  app.add_flag("--json", json, "machine-readable JSON output");
  app.add_option("--timeout", timeout_s, "seconds to wait for the broker's reply")->capture_default_str();
  app.add_option("--wait-timeout", wait_timeout_s, "seconds to wait for a job's result (0 = no limit)")
      ->capture_default_str();

  zkctl::SubmitArgs submit_args;
  auto* submit = app.add_subcommand(
      "submit", "submit a job: one witness (or --witness-url, or --input input.json) per partition");
  submit->add_option("witnesses", submit_args.witness_files,
                     ".wtns files, one per partition (none: only look up an existing --request-id)")
      ->check(CLI::ExistingFile);
  submit->add_option("--circuit", submit_args.circuit, "circuit id (as the workers announce it)")->required();
  submit->add_option("--priority", submit_args.priority, "low, normal, high or critical")->capture_default_str();
  submit->add_option("--request-id", submit_args.request_id, "idempotency key (default: random)");
  submit->add_option("--deadline", submit_args.deadline_s,
                     "seconds from now after which the broker expires the job instead of proving it (0 = none)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  submit->add_option("--busy-timeout", submit_args.busy_timeout_s,
                     "seconds to keep retrying while the broker answers BUSY (over its queue limits) or "
                     "UNAVAILABLE (it cannot write its journal)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  auto* public_option =
      submit->add_option("--public,--public-signals", submit_args.public_files,
                         "the public.json each witness's proof must carry (one per witness or --witness-url, in "
                         "order): the broker refuses a witness committing to other public signals; repeat it, one "
                         "file each")
          ->check(CLI::ExistingFile)
          ->allow_extra_args(false);  // `--public P W.wtns`: W.wtns is a witness
  submit->add_option("--witness-url", submit_args.refs.urls,
                     "instead of witness files: a URL the workers fetch the partition's .wtns from (file://, http://, "
                     "https://); repeat it, one per partition, in order. zkctl prints it redacted")
      ->allow_extra_args(false);
  submit->add_option("--input", submit_args.input_files,
                     "instead of witness files or --witness-url: a circom input.json (a JSON object) the workers "
                     "compute the partition's witness from; repeat it, one per partition, in order. Only workers that "
                     "generate the circuit's witnesses get the job")
      ->allow_extra_args(false);
  submit->add_option("--sha256", submit_args.refs.sha256_hex,
                     "SHA-256 (64 hex digits) of the --witness-url in the same position; with --size, required for "
                     "http(s) URLs (a readable file:// URL without them is hashed here)")
      ->allow_extra_args(false);
  submit->add_option("--size", submit_args.refs.sizes, "exact size in bytes of the --witness-url in the same position")
      ->allow_extra_args(false);
  auto* n_public_option =
      submit->add_option("--n-public", submit_args.refs.n_public,
                         "with file:// --witness-url hashed here: read the expected public signals w[1..N] from each "
                         "witness (N: the circuit's nPublic, in its verification_key.json) instead of --public-signals");
  submit->add_flag("--wait", submit_args.wait, "wait for the result and print it");
  submit->add_option("--out", submit_args.out_dir, "write proof_<p>.json/public_<p>.json here (implies --wait)");
  submit->add_option("--out-proof", submit_args.out_proof,
                     "a bellman circuit's job: write its proof here, the partitions' 192-byte proofs concatenated in "
                     "partition order (bellperson's multi-partition form; implies --wait)");

  uint64_t job_seq = 0;
  std::string out_dir;
  auto* await = app.add_subcommand("await", "wait for a job's result");
  await->add_option("job", job_seq, "job id (job_seq)")->required();
  await->add_option("--out", out_dir, "write proof_<p>.json/public_<p>.json here");
  std::string out_proof;
  await->add_option("--out-proof", out_proof,
                    "a bellman circuit's job: write its proof here (the partitions' 192-byte proofs, concatenated)");

  app.add_subcommand("status", "queues by priority, workers, counters");
  app.add_subcommand("workers", "registered workers");

  auto* cancel = app.add_subcommand("cancel", "cancel a job");
  cancel->add_option("job", job_seq, "job id (job_seq)")->required();

  auto* job = app.add_subcommand("job", "one job's state: live, ended, or past its result's retention");
  job->add_option("job", job_seq, "job id (job_seq)")->required();
  uint32_t retry_attempt = 0;
  auto* retry = app.add_subcommand("retry", "a new round of a FAILED or DEAD_LETTERED job, same job_seq (then: await)");
  retry->add_option("job", job_seq, "job id (job_seq)")->required();
  retry->add_option("--attempt", retry_attempt, "the retry to make (idempotent per number; default: the next one)");
  zkctl::JobsArgs jobs_args;
  auto* jobs = app.add_subcommand(
      "jobs", "jobs, newest first, from the broker's index (a submit key lists its own; observe and admin all)");
  jobs->add_option("--state", jobs_args.states, "queued, running, succeeded, failed, dead_lettered, cancelled, "
                                                "expired (repeatable: any of them)");
  jobs->add_option("--circuit", jobs_args.circuit_id, "only this circuit's");
  jobs->add_option("--client", jobs_args.client_id, "only this client's (observe and admin keys)");
  jobs->add_option("--since", jobs_args.since_unix_s, "submitted at or after this time (seconds since the epoch)");
  jobs->add_option("--until", jobs_args.until_unix_s, "submitted before this time (seconds since the epoch)");
  jobs->add_option("--limit", jobs_args.limit, "jobs per page (at most 1000)")->capture_default_str();
  jobs->add_option("--page-token", jobs_args.page_token, "the next page (printed after a full page)");

  std::string worker_id;
  bool drain_wait = false;
  auto* drain = app.add_subcommand("drain", "drain a worker: it hands back queued work, finishes, releases, leaves");
  drain->add_option("worker", worker_id, "worker id")->required();
  drain->add_flag("--wait", drain_wait, "return when the worker has released its memory and left; print the phases");
  auto* undrain = app.add_subcommand(
      "undrain", "let a worker the broker holds DRAINING (zkctl drain) or FAULTED take work again (admin)");
  undrain->add_option("worker", worker_id, "worker id")->required();
  auto* reload = app.add_subcommand(
      "reload", "the broker reads its allow-lists and --verification-key-dir again, as on SIGHUP (admin)");
  std::vector<std::string> reload_workers;
  reload->add_option("--workers", reload_workers,
                     "worker ids (or '*' for all) told to read their circuit flags and --config again, as on their "
                     "SIGHUP")
      ->delimiter(',');

  zkctl::JournalArgs journal_args;
  auto* journal = app.add_subcommand(
      "journal", "inspect a broker's journal read-only (works while the broker runs; no broker connection)");
  journal->add_option("--data-dir", journal_args.data_dir, "the broker's --data-dir (an LMDB journal)");
  journal->add_option("--journal", journal_args.journal_url,
                      "the broker's --journal etcd://... (a journal in etcd: listings only, no check or salvage)");
  journal->add_option("--etcd-ca", journal_args.etcd_ca, "with --journal: the CA (PEM) of the members' TLS certificates");
  journal->add_option("--etcd-cert", journal_args.etcd_cert, "with --journal: a client certificate (PEM), with --etcd-key");
  journal->add_option("--etcd-key", journal_args.etcd_key, "the private key (PEM) of --etcd-cert");
  auto* journal_job = journal->add_option("--job", journal_args.job_seq, "show this job's record and its work items");
  journal->add_option("--limit", journal_args.limit, "jobs listed at most (the newest; 0 = all)")
      ->capture_default_str();
  // `zkctl journal check|salvage --data-dir DIR`: --data-dir may follow the subcommand.
  journal->fallthrough();
  auto* journal_check = journal->add_subcommand(
      "check", "read every record of the journal (checksums, parsing; a damaged store cannot crash it); exit 1 "
               "when damaged");
  std::string salvage_to;
  auto* journal_salvage = journal->add_subcommand(
      "salvage", "copy every intact record and witness file of a damaged journal into a new one (--to)");
  journal_salvage->add_option("--to", salvage_to, "the new journal's directory (must not exist)")->required();

  std::string keygen_out;
  auto* keygen = app.add_subcommand(
      "keygen", "write a CurveZMQ keypair: NAME.pub and NAME.secret (mode 0600); never overwrites; no broker");
  keygen->add_option("--out", keygen_out, "path prefix NAME (its directory is created if needed)")->required();

  // A usage error exits 2; with --json (which may not have been parsed yet
  // when the error struck: looked for among the arguments) as JSON.
  bool json_requested = false;
  for (int i = 1; i < argc; ++i) json_requested |= std::string_view(argv[i]) == "--json";
  if (auto exit_code = zkfleet::cmd::ParseCommandLine(app, argc, argv, "zkctl", [&](const std::string& message) {
        zkctl::ReportError(json_requested, "USAGE", message, zkctl::kExitUsage);
      })) {
    return *exit_code;
  }

  try {
    if (journal->parsed()) {
      journal_args.json = json;
      journal_args.has_job = journal_job->count() > 0;
      const bool lmdb_only = journal_check->parsed() || journal_salvage->parsed();
      if (journal_args.data_dir.empty() == journal_args.journal_url.empty() ||
          (lmdb_only && journal_args.data_dir.empty())) {
        return zkctl::ReportError(json, "USAGE",
                                  lmdb_only ? "journal check and salvage need --data-dir DIR (an LMDB journal; etcd "
                                              "checks its own data)"
                                            : "journal needs --data-dir DIR (an LMDB journal) or --journal "
                                              "etcd://... (a journal in etcd), exactly one",
                                  zkctl::kExitUsage);
      }
      if (journal_check->parsed()) return zkctl::JournalCheck(journal_args);
      if (journal_salvage->parsed()) return zkctl::JournalSalvage(journal_args, salvage_to);
      return zkctl::JournalInspect(journal_args);
    }
    if (keygen->parsed()) return zkctl::Keygen(keygen_out, json);
    zkfleet::client::Options options;
    options.endpoint = endpoint;
    options.insecure_plaintext = insecure_plaintext;
    options.curve_secret_key_file = curve_secret_key;
    options.broker_public_key_file = broker_public_key;
    options.client_id = client_id;
    options.reply_timeout = Millis(timeout_s);
    options.busy_timeout = Millis(submit_args.busy_timeout_s);
    options.request_id_prefix = "zkctl-";
    options.on_busy = zkctl::ReportBusy;
    std::unique_ptr<zkfleet::client::Client> client;
    if (auto status = zkfleet::client::Client::Open(options, &client); !status.ok()) {
      // Bad connection flags or key files: nothing was sent.
      return zkctl::ReportError(json, zkfleet::client::CodeName(status.code()), status.message(),
                                zkctl::kExitUsage);
    }
    if (insecure_plaintext) {
      std::cerr << "zkctl: warning: --insecure-plaintext: this connection is neither encrypted nor authenticated\n";
    }
    zkctl::Context ctx;
    ctx.client = client.get();
    ctx.json = json;
    ctx.reply_timeout = Millis(timeout_s);
    ctx.result_timeout = Millis(wait_timeout_s);
    if (submit->parsed()) {
      submit_args.refs.has_n_public = n_public_option->count() > 0;
      submit_args.refs.has_public_files = public_option->count() > 0;
      return zkctl::Submit(ctx, submit_args);
    }
    if (await->parsed()) return zkctl::Await(ctx, job_seq, out_dir, out_proof);
    if (app.got_subcommand("status")) return zkctl::Status(ctx);
    if (app.got_subcommand("workers")) return zkctl::Workers(ctx);
    if (cancel->parsed()) return zkctl::Cancel(ctx, job_seq);
    if (job->parsed()) return zkctl::Job(ctx, job_seq);
    if (retry->parsed()) return zkctl::Retry(ctx, job_seq, retry_attempt);
    if (jobs->parsed()) return zkctl::Jobs(ctx, jobs_args);
    if (drain->parsed()) return zkctl::Drain(ctx, worker_id, drain_wait);
    if (undrain->parsed()) return zkctl::Undrain(ctx, worker_id);
    if (reload->parsed()) return zkctl::Reload(ctx, reload_workers);
  } catch (const std::exception& e) {
    return zkctl::ReportError(json, "ERROR", e.what(), zkctl::kExitError);
  }
  return zkctl::kExitUsage;
}
