// zkctl's subcommands (commands.cpp; the journal's in journal_commands.cpp).
// Each returns the process exit code (docs/clients.md, "Exit codes", lists
// them for users):
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkfleet/client.h"
#include "zkfleet/common/command_line.hpp"
#include "witness_refs.hpp"

namespace zkctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;            // refused by the broker, no reply, local I/O
using zkfleet::cmd::kExitUsage;                  // 2: bad flags, arguments or key files: nothing was sent
inline constexpr int kExitJobNotSucceeded = 3;  // the job ended FAILED, DEAD_LETTERED, CANCELLED or EXPIRED
inline constexpr int kExitResultExpired = 4;    // it ended, but its result passed the broker's retention
inline constexpr int kExitUnknownJob = 5;       // no such job for this client (or past the dedup window)

// Reports an error and returns `exit_code`: one line "zkctl: <message>" on
// stderr, or with --json {"error": {"code": CODE, "message": ...}} on stdout
// (so a script reading stdout always gets JSON).
int ReportError(bool json, const std::string& code, const std::string& message, int exit_code);

// zkctl talks to the broker only through the public client (zkfleet/client.h);
// its Options carry the reply timeout, the --busy-timeout and the BUSY message.
struct Context {
  zkfleet::client::Client* client = nullptr;
  bool json = false;
  std::chrono::milliseconds reply_timeout{10000};   // for request/reply (also in the client's Options)
  std::chrono::milliseconds result_timeout{0};      // waiting for a job; 0 = no limit
};

struct SubmitArgs {
  std::vector<std::string> witness_files;
  std::string circuit;
  std::string priority = "normal";
  std::string request_id;  // empty: a random one
  double deadline_s = 0;   // from now; 0 = none
  std::vector<std::string> public_files;  // expected public.json, one per witness or reference (or none)
  WitnessRefArgs refs;                    // --witness-url ... (instead of witness_files)
  std::vector<std::string> input_files;   // --input input.json ... (instead of both): a job from inputs
  // How long BUSY and UNAVAILABLE refusals are retried (with the broker's back-off) before
  // zkctl gives up; each attempt still waits at most the reply timeout.
  // main() hands it to the client (Options::busy_timeout); here for the message.
  double busy_timeout_s = 300;
  bool wait = false;
  std::string out_dir;     // implies wait
  // A bellman circuit's job: its proof, the partitions' 192-byte proofs
  // concatenated in partition order (bellperson's multi-partition form). Implies wait.
  std::string out_proof;
};

struct JournalArgs {
  std::string data_dir;     // an LMDB journal, or
  std::string journal_url;  // a journal in etcd (etcd://...)
  std::string etcd_ca, etcd_cert, etcd_key;  // TLS to its members (the broker's --etcd-ca ...)
  bool has_job = false;
  uint64_t job_seq = 0;
  size_t limit = 50;       // jobs listed (the newest); 0 = all
  bool json = false;
};

// "zkctl: broker busy (...); retrying in N s" on stderr (or "broker
// unavailable", for UNAVAILABLE): the client's on_busy.
void ReportBusy(const std::string& what, double wait_s);
int Submit(Context& context, const SubmitArgs& args);
int Await(Context& context, uint64_t job_seq, const std::string& out_dir, const std::string& out_proof = "");
int Status(Context& context);
int Workers(Context& context);
int Cancel(Context& context, uint64_t job_seq);
// One job's state (GetJob), and jobs listed newest first (ListJobs).
int Job(Context& context, uint64_t job_seq);
// A new round of a failed or dead-lettered job (attempt 0: the next one).
int Retry(Context& context, uint64_t job_seq, uint32_t attempt);
struct JobsArgs {
  std::vector<std::string> states;  // names: queued, running, succeeded, failed, dead_lettered, ...
  std::string circuit_id, client_id, page_token;
  double since_unix_s = 0, until_unix_s = 0;
  uint32_t limit = 100;             // one page
};
int Jobs(Context& context, const JobsArgs& args);
int Drain(Context& context, const std::string& worker_id, bool wait);
// A worker the broker holds DRAINING or FAULTED may take work again (admin).
int Undrain(Context& context, const std::string& worker_id);
// The broker reads its allow-lists and verification keys again (admin);
// exit 1 when something failed to load (what, listed).
int Reload(Context& context, const std::vector<std::string>& workers);
// Reads the broker journal in args.data_dir read-only; needs no broker.
int JournalInspect(const JournalArgs& args);
// zkctl journal check: reads every record (checksums, parsing) in a child
// process; exit 0 when intact, 1 when damaged (what, listed).
int JournalCheck(const JournalArgs& args);
// zkctl journal salvage --to NEW_DIR: copies every intact record and witness
// file into a new journal; lists what was lost. Exit 0 when it was written.
int JournalSalvage(const JournalArgs& args, const std::string& to);

// A job's inputs as `--json` shows them: each one's bytes and SHA-256
// (commands.cpp; the journal's inspection shows them the same way).
nlohmann::json InputsJson(const std::vector<std::string>& inputs);

}  // namespace zkctl
