// zkctl's subcommands. Each returns the process exit code:
//   0 success, 1 error (broker refused or stayed BUSY, no reply, bad input,
//   not a journal), 3 the job ended but not SUCCEEDED (failed, dead-lettered,
//   cancelled, expired).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "zkfleet/client.h"

namespace zkctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitJobNotSucceeded = 3;

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
  std::vector<std::string> public_files;  // expected public.json, one per witness (or none)
  // How long BUSY and UNAVAILABLE refusals are retried (with the broker's back-off) before
  // zkctl gives up; each attempt still waits at most the reply timeout.
  // main() hands it to the client (Options::busy_timeout); here for the message.
  double busy_timeout_s = 300;
  bool wait = false;
  std::string out_dir;     // implies wait
};

struct JournalArgs {
  std::string data_dir;
  bool has_job = false;
  uint64_t job_seq = 0;
  size_t limit = 50;       // jobs listed (the newest); 0 = all
  bool json = false;
};

// "zkctl: broker busy (...); retrying in N s" on stderr (or "broker
// unavailable", for UNAVAILABLE): the client's on_busy.
void ReportBusy(const std::string& what, double wait_s);
int Submit(Context& context, const SubmitArgs& args);
int Await(Context& context, uint64_t job_seq, const std::string& out_dir);
int Status(Context& context);
int Workers(Context& context);
int Cancel(Context& context, uint64_t job_seq);
int Drain(Context& context, const std::string& worker_id, bool wait);
// A worker the broker holds DRAINING or FAULTED may take work again (admin).
int Undrain(Context& context, const std::string& worker_id);
// Reads the broker journal in args.data_dir read-only; needs no broker.
int JournalInspect(const JournalArgs& args);

}  // namespace zkctl
