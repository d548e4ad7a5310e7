#include "commands.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "table.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/storage/etcd_client.hpp"
#include "zkfleet/storage/journal.hpp"
#include "zkfleet/storage/journal_check.hpp"
#include "zkfleet/wire/unix_time.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkctl {
namespace {

using zkfleet::Error;
using zkfleet::ErrorCode;
using zkfleet::wire::IsTerminal;
using zkfleet::wire::JobStateName;
using zkfleet::wire::PriorityName;
using zkfleet::wire::WorkerStateName;
namespace proto = zkfleet::proto;
using json = nlohmann::json;

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error(ErrorCode::kIo, "cannot write " + path.string());
}

// "no limit" is a very long timeout.
std::chrono::milliseconds ResultTimeout(const Context& context) {
  return context.result_timeout.count() > 0 ? context.result_timeout : std::chrono::hours(24 * 365);
}

json TimingsJson(const proto::PhaseTimings& t) {
  return {{"queue_wait_s", t.queue_wait_s()}, {"witness_transfer_s", t.witness_transfer_s()},
          {"build_abc_s", t.build_abc_s()},   {"ntt_s", t.ntt_s()},
          {"msm_s", t.msm_s()},               {"prove_total_s", t.prove_total_s()},
          {"witness_generation_s", t.witness_generation_s()}, {"generation_queue_s", t.generation_queue_s()}};
}

// Proof and public signals are JSON documents; embed them as such when they parse.
// Deepest nesting of arrays/objects in `text` (strings skipped), scanning
// iteratively: the text comes from a worker and may be hostile.
size_t JsonNestingDepth(const std::string& text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// A proof or public-signals document embedded as JSON when it parses, as a
// plain string otherwise. nlohmann's dump() recurses once per nesting level,
// so anything nested deeper than a snarkjs document could ever be (proof.json
// is 3 deep) stays a string: a faulty worker cannot crash zkctl --json.
json EmbeddedJson(const std::string& text) {
  constexpr size_t kMaxDepth = 16;
  if (JsonNestingDepth(text) > kMaxDepth) return json(text);
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json(text) : parsed;
}


// "CIRCOM" / "BELLMAN" for each of a worker's circuits (CIRCOM when it did not say).
std::vector<std::string> CircuitKindNames(const proto::WorkerInfo& w) {
  std::vector<std::string> names;
  for (int c = 0; c < w.circuits_size(); ++c) {
    names.push_back(zkfleet::wire::CircuitKindName(c < w.circuit_kinds_size() ? w.circuit_kinds(c)
                                                                              : proto::CIRCUIT_KIND_CIRCOM));
  }
  return names;
}

json JobResultJson(const proto::JobResult& result) {
  json partitions = json::array();
  for (const auto& p : result.partitions()) {
    partitions.push_back({{"partition", p.partition()},
                          {"worker_id", p.worker_id()},
                          {"attempts", p.attempts()},
                          {"timings", TimingsJson(p.timings())},
                          {"proof", EmbeddedJson(p.proof_json())},
                          {"public", EmbeddedJson(p.public_json())}});
    // A bellman circuit's 192-byte proof, hex.
    if (!p.proof_bytes().empty()) partitions.back()["proof_bytes"] = zkfleet::wire::DigestHex(p.proof_bytes());
  }
  return {{"job_seq", result.job_seq()},
          {"request_id", result.request_id()},
          {"circuit_id", result.circuit_id()},
          {"priority", PriorityName(result.priority())},
          {"state", JobStateName(result.state())},
          {"error", result.error()},
          {"submitted_unix_s", result.submitted_unix_s()},
          {"finished_unix_s", result.finished_unix_s()},
          {"partitions", partitions}};
}

// Writes proof_<p>.json and public_<p>.json for every partition, and a
// bellman circuit's proof_<p>.bin (its 192 bytes).
void WriteOutputs(const proto::JobResult& result, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  for (const auto& p : result.partitions()) {
    std::filesystem::path dir(out_dir);
    WriteFile(dir / ("proof_" + std::to_string(p.partition()) + ".json"), p.proof_json());
    WriteFile(dir / ("public_" + std::to_string(p.partition()) + ".json"), p.public_json());
    if (!p.proof_bytes().empty()) WriteFile(dir / ("proof_" + std::to_string(p.partition()) + ".bin"), p.proof_bytes());
  }
}

// The job's bellperson proof: every partition's 192 bytes, in partition
// order. Empty with *why when a partition has none (a circom circuit's job)
// or one is missing: nothing is written then.
std::string ConcatenatedProof(const proto::JobResult& result, std::string* why) {
  constexpr size_t kProofBytes = 192;
  std::vector<const proto::PartitionResult*> ordered(result.partitions_size(), nullptr);
  for (const auto& p : result.partitions()) {
    if (p.partition() >= ordered.size() || ordered[p.partition()]) {
      *why = "partition " + std::to_string(p.partition()) + " is out of order or repeated";
      return "";
    }
    ordered[p.partition()] = &p;
  }
  if (ordered.empty()) {
    *why = "the result has no partition";
    return "";
  }
  std::string proof;
  for (const proto::PartitionResult* p : ordered) {
    if (p->proof_bytes().size() != kProofBytes) {
      *why = "partition " + std::to_string(p->partition()) + " carries " + std::to_string(p->proof_bytes().size()) +
             " proof bytes, not a bellman proof's 192 (is circuit " + result.circuit_id() + " a bellman circuit?)";
      return "";
    }
    proof += p->proof_bytes();
  }
  return proof;
}

int ReportResult(Context& context, const proto::JobResult& result, const std::string& out_dir,
                 const std::string& out_proof = "") {
  bool succeeded = result.state() == proto::JOB_STATE_SUCCEEDED;
  if (succeeded && !out_proof.empty()) {
    // Before anything else is written or printed: no file unless every partition has its proof.
    std::string why;
    const std::string proof = ConcatenatedProof(result, &why);
    if (proof.empty()) {
      return ReportError(context.json, "NO_PROOF",
                         "job " + std::to_string(result.job_seq()) + " succeeded but --out-proof " + out_proof +
                             " was not written: " + why,
                         kExitError);
    }
    const std::filesystem::path target(out_proof), tmp(out_proof + ".tmp");
    WriteFile(tmp, proof);
    std::filesystem::rename(tmp, target);
  }
  if (succeeded && !out_dir.empty()) WriteOutputs(result, out_dir);
  if (context.json) {
    std::cout << JobResultJson(result).dump(2) << '\n';
  } else {
    std::cout << "job " << result.job_seq() << "  " << JobStateName(result.state()) << "  circuit "
              << result.circuit_id() << "  priority " << PriorityName(result.priority()) << "  request "
              << result.request_id() << '\n';
    if (!result.error().empty()) std::cout << "error: " << result.error() << '\n';
    if (result.finished_unix_s() > 0) {
      std::cout << "total " << FormatSeconds(result.finished_unix_s() - result.submitted_unix_s()) << " s\n";
    }
    if (result.partitions_size() > 0) {
      Table table({"PARTITION", "WORKER", "ATTEMPTS", "QUEUE_S", "WITNESS_S", "ABC_S", "NTT_S", "MSM_S", "PROVE_S",
                   "WITGEN_S"});
      for (const auto& p : result.partitions()) {
        const auto& t = p.timings();
        table.Add({std::to_string(p.partition()), p.worker_id(), std::to_string(p.attempts()),
                   FormatSeconds(t.queue_wait_s()), FormatSeconds(t.witness_transfer_s()),
                   FormatSeconds(t.build_abc_s()), FormatSeconds(t.ntt_s()), FormatSeconds(t.msm_s()),
                   FormatSeconds(t.prove_total_s()), FormatSeconds(t.witness_generation_s())});
      }
      table.Print(std::cout);
    }
    if (succeeded && !out_dir.empty()) {
      std::cout << "wrote proof_<partition>.json and public_<partition>.json to " << out_dir << '\n';
    }
    if (succeeded && !out_proof.empty()) {
      std::cout << "wrote the job's proof (" << result.partitions_size() << " x 192 bytes, partition order) to "
                << out_proof << '\n';
    }
  }
  if (!succeeded) {
    std::cerr << "zkctl: job " << result.job_seq() << " ended " << JobStateName(result.state())
              << (result.error().empty() ? "" : ": " + result.error()) << '\n';
    return kExitJobNotSucceeded;
  }
  return kExitOk;
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out.empty() ? "-" : out;
}

json WorkerJson(const proto::WorkerInfo& w) {
  return {{"worker_id", w.worker_id()},
          {"key_name", w.key_name()},
          {"host", w.host()},
          {"backend", w.backend()},
          {"state", WorkerStateName(w.state())},
          {"circuits", std::vector<std::string>(w.circuits().begin(), w.circuits().end())},
          {"generates", std::vector<std::string>(w.generates().begin(), w.generates().end())},
          {"circuit_kinds", CircuitKindNames(w)},
          {"capacity", w.capacity()},
          {"credit", w.credit()},
          {"in_flight", w.in_flight()},
          {"queue_depth", w.queue_depth()},
          {"items_completed", w.items_completed()},
          {"last_seen_s", w.last_seen_s()},
          {"memory",
           {{"pool_bytes", w.memory().pool_bytes()},
            {"pool_in_use_bytes", w.memory().pool_in_use_bytes()},
            {"bytes_to_release", w.memory().bytes_to_release()},
            {"alloc_calls", w.memory().alloc_calls()},
            {"budget_bytes", w.memory().budget_bytes()},
            {"available_bytes", w.memory().available_bytes()}}}};
}

void PrintWorkers(const proto::StatusReply& status) {
  Table table({"WORKER", "KEY", "STATE", "HOST", "BACKEND", "CIRCUITS", "CAPACITY", "CREDIT", "IN_FLIGHT", "QUEUE", "DONE",
               "POOL_IN_USE/POOL", "ALLOCS", "TO_RELEASE", "LAST_SEEN_S",
               "GENERATES"});  // last: scripts read the columns before it by position
  for (const auto& w : status.workers()) {
    const auto& m = w.memory();
    table.Add({w.worker_id(), w.key_name().empty() ? "-" : w.key_name(), WorkerStateName(w.state()), w.host(), w.backend(), Join(w.circuits()),
               std::to_string(w.capacity()), std::to_string(w.credit()), std::to_string(w.in_flight()),
               std::to_string(w.queue_depth()), std::to_string(w.items_completed()),
               FormatBytes(m.pool_in_use_bytes()) + "/" + FormatBytes(m.pool_bytes()), std::to_string(m.alloc_calls()),
               m.bytes_to_release() > 0 ? FormatBytes(m.bytes_to_release()) : "-", FormatSeconds(w.last_seen_s(), 1),
               Join(w.generates())});
  }
  if (status.workers_size() == 0) {
    std::cout << "no workers registered\n";
  } else {
    table.Print(std::cout);
  }
}

// The broker's words of a BUSY or UNAVAILABLE refusal, without the
// "broker: BUSY: " / "broker: UNAVAILABLE: " prefix.
std::string BusyMessage(const std::string& what) {
  for (const std::string prefix : {"broker: BUSY: ", "broker: UNAVAILABLE: "}) {
    if (what.rfind(prefix, 0) == 0) return what.substr(prefix.size());
  }
  return what;
}

bool IsUnavailable(const std::string& what) { return what.rfind("broker: UNAVAILABLE: ", 0) == 0; }

int ExitCodeFor(zkfleet::client::Code code) {
  switch (code) {
    case zkfleet::client::Code::kResultExpired: return kExitResultExpired;
    case zkfleet::client::Code::kUnknownJob:
    case zkfleet::client::Code::kForeignJob: return kExitUnknownJob;
    case zkfleet::client::Code::kJobFailed: return kExitJobNotSucceeded;
    case zkfleet::client::Code::kInvalidArgument: return kExitUsage;  // refused here: nothing was sent
    default: return kExitError;
  }
}

// References as zkctl shows them: URLs redacted (a presigned query string or
// userinfo is a credential), digests in hex.
json WitnessRefsJson(const std::vector<zkfleet::client::WitnessRef>& refs) {
  json out = json::array();
  for (const auto& ref : refs) {
    out.push_back({{"url", zkfleet::wire::RedactUrl(ref.url)},
                   {"size", ref.size},
                   {"sha256", zkfleet::wire::DigestHex(ref.sha256)}});
  }
  return out;
}

// Inputs as zkctl shows them: size and SHA-256, never the content (an
// input.json usually holds the prover's secrets).

// A refusal or a failure of the client: one line (or JSON), its exit code.
int Fail(const Context& context, const zkfleet::client::Status& status) {
  return ReportError(context.json, zkfleet::client::CodeName(status.code()), status.message(),
                     ExitCodeFor(status.code()));
}

}  // namespace

nlohmann::json InputsJson(const std::vector<std::string>& inputs) {
  json out = json::array();
  for (const std::string& input : inputs) {
    out.push_back({{"bytes", input.size()}, {"sha256", zkfleet::wire::DigestHex(zkfleet::fetch::Sha256::Of(input))}});
  }
  return out;
}

int ReportError(bool json_output, const std::string& code, const std::string& message, int exit_code) {
  if (json_output) {
    std::cout << json{{"error", {{"code", code}, {"message", message}, {"exit_code", exit_code}}}}.dump(2) << '\n';
  } else {
    std::cerr << "zkctl: " << message << '\n';
  }
  return exit_code;
}

void ReportBusy(const std::string& what, double wait_s) {
  std::cerr << "zkctl: broker " << (IsUnavailable(what) ? "unavailable" : "busy") << " (" << BusyMessage(what)
            << "); retrying in " << FormatSeconds(wait_s, 1) << " s" << std::endl;
}

int Submit(Context& context, const SubmitArgs& args) {
  auto priority = zkfleet::wire::ParsePriority(args.priority);
  if (!priority) {
    return ReportError(context.json, "USAGE",
                       "--priority " + args.priority + ": expected low, normal, high or critical", kExitUsage);
  }
  zkfleet::client::SubmitOptions options;
  options.circuit = args.circuit;
  options.priority = *priority;
  options.request_id = args.request_id;  // empty: the client makes a random one
  if (!args.refs.urls.empty() && !args.witness_files.empty()) {
    return ReportError(context.json, "USAGE",
                       std::to_string(args.witness_files.size()) + " witness files and " +
                           std::to_string(args.refs.urls.size()) +
                           " --witness-url: a submit carries witness files or references, not both",
                       kExitUsage);
  }
  if (!args.input_files.empty() && (!args.witness_files.empty() || !args.refs.urls.empty())) {
    return ReportError(context.json, "USAGE",
                       std::to_string(args.input_files.size()) + " --input with " +
                           (args.witness_files.empty() ? std::to_string(args.refs.urls.size()) + " --witness-url"
                                                       : std::to_string(args.witness_files.size()) + " witness files") +
                           ": a submit carries inputs, witness files or references, one of them",
                       kExitUsage);
  }
  // Inputs: read and checked here (a JSON object), so nothing is sent for a bad one.
  for (size_t p = 0; p < args.input_files.size(); ++p) {
    const std::string& path = args.input_files[p];
    std::ifstream in(path, std::ios::binary);
    if (!in || std::filesystem::is_directory(path)) {
      return ReportError(context.json, "USAGE", "--input " + path + ": cannot read it", kExitUsage);
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (auto problem = zkfleet::wire::InputJsonProblem(text, zkfleet::client::kMaxInputJsonDepth)) {
      return ReportError(context.json, "USAGE",
                         "--input " + path + " (partition " + std::to_string(p) + ") is not an input.json: " +
                             *problem + "; nothing was sent",
                         kExitUsage);
    }
    options.inputs.push_back(std::move(text));
  }
  if (args.refs.has_n_public && args.refs.urls.empty()) {
    return ReportError(context.json, "USAGE",
                       "--n-public reads the public signals of file:// --witness-url references; for witness "
                       "files give --public-signals",
                       kExitUsage);
  }
  // References: checked (and file:// ones hashed) before anything is sent.
  std::string why;
  if (!BuildWitnessRefs(args.refs, &options.witness_refs, &options.expected_public_json, &why)) {
    return ReportError(context.json, "USAGE", why, kExitUsage);
  }
  // Each witness file is mapped and sent as its own frame: no copy here.
  std::vector<zkfleet::client::Witness> witnesses;
  for (const auto& path : args.witness_files) witnesses.push_back(zkfleet::client::Witness::FromFile(path));
  if (args.deadline_s > 0) options.deadline_unix_s = zkfleet::wire::UnixNow() + args.deadline_s;
  for (const auto& path : args.public_files) {
    std::ifstream in(path, std::ios::binary);
    options.expected_public_json.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const size_t partitions = !options.inputs.empty()        ? options.inputs.size()
                            : options.witness_refs.empty() ? args.witness_files.size()
                                                           : options.witness_refs.size();
  if (!options.expected_public_json.empty() && options.expected_public_json.size() != partitions) {
    return ReportError(context.json, "USAGE",
                       std::to_string(options.expected_public_json.size()) + " --public-signals for " +
                           std::to_string(partitions) +
                           (!options.inputs.empty()        ? " --input"
                            : options.witness_refs.empty() ? " witness files"
                                                           : " --witness-url") +
                           ": give one per partition, in the same order, or none",
                       kExitUsage);
  }

  // BUSY and UNAVAILABLE refusals are retried by the client (its on_busy
  // prints why) until the --busy-timeout it was opened with.
  zkfleet::client::Job reply;
  const zkfleet::client::Status submitted = context.client->Submit(options, std::move(witnesses), &reply);
  if (submitted.code() == zkfleet::client::Code::kBusy) {
    return ReportError(context.json, "BUSY",
                       "broker still busy after " + FormatSeconds(args.busy_timeout_s, 1) +
                           " s (--busy-timeout); nothing was queued: " + BusyMessage(submitted.message()),
                       kExitError);
  }
  if (submitted.code() == zkfleet::client::Code::kUnavailable) {
    return ReportError(context.json, "UNAVAILABLE",
                       "broker still unavailable after " + FormatSeconds(args.busy_timeout_s, 1) +
                           " s (--busy-timeout; it cannot write its journal); nothing was queued: " +
                           BusyMessage(submitted.message()),
                       kExitError);
  }
  if (!submitted.ok()) return Fail(context, submitted);
  // (A lookup of a request whose result passed the retention is
  // kResultExpired above: never a success without a proof.)
  bool wait = args.wait || !args.out_dir.empty() || !args.out_proof.empty();
  if (!wait) {
    if (context.json) {
      json out{{"job_seq", reply.job_seq},
               {"request_id", reply.request_id},
               {"duplicate", reply.duplicate},
               {"state", JobStateName(reply.state)},
               {"result_expired", false}};
      if (!options.witness_refs.empty()) out["witness_refs"] = WitnessRefsJson(options.witness_refs);
      if (!options.inputs.empty()) out["inputs"] = InputsJson(options.inputs);
      std::cout << out.dump(2) << '\n';
    } else if (reply.duplicate) {
      std::cout << "request " << reply.request_id << " was already submitted as job " << reply.job_seq
                << " (" << JobStateName(reply.state) << "); nothing new was queued\n";
    } else {
      std::cout << "job " << reply.job_seq << " submitted (request " << reply.request_id << ", priority "
                << PriorityName(*priority) << ", " << partitions << " partition" << (partitions == 1 ? "" : "s")
                << (options.witness_refs.empty() ? "" : " by reference") << (options.inputs.empty() ? "" : " from inputs")
                << ")\n";
      for (size_t p = 0; p < options.witness_refs.size(); ++p) {
        const auto& ref = options.witness_refs[p];
        std::cout << "  partition " << p << ": " << zkfleet::wire::RedactUrl(ref.url) << "  " << ref.size
                  << " bytes  sha256 " << zkfleet::wire::DigestHex(ref.sha256) << '\n';
      }
    }
    return kExitOk;
  }
  if (!context.json) {
    std::cerr << "job " << reply.job_seq << (reply.duplicate ? " (existing request)" : " submitted")
              << ", waiting for the result\n";
  }
  // The broker pushes the result to this connection when the job ends.
  proto::JobResult result;
  const zkfleet::client::Status ended = context.client->WaitResult(reply.job_seq, ResultTimeout(context), &result);
  if (ended.code() == zkfleet::client::Code::kTimeout) {
    return ReportError(context.json, "TIMEOUT",
                       "no result for job " + std::to_string(reply.job_seq) +
                           " within the --wait-timeout (it is still queued or running: zkctl await " +
                           std::to_string(reply.job_seq) + " collects it later)",
                       kExitError);
  }
  // kJobFailed comes with the result, which ReportResult prints (exit 3).
  if (!ended.ok() && ended.code() != zkfleet::client::Code::kJobFailed) return Fail(context, ended);
  return ReportResult(context, result, args.out_dir, args.out_proof);
}

int Await(Context& context, uint64_t job_seq, const std::string& out_dir, const std::string& out_proof) {
  proto::JobResult result;
  const zkfleet::client::Status ended = context.client->Await(job_seq, ResultTimeout(context), &result);
  if (!ended.ok() && ended.code() != zkfleet::client::Code::kJobFailed) return Fail(context, ended);
  return ReportResult(context, result, out_dir, out_proof);
}

int Status(Context& context) {
  proto::StatusReply status;
  if (auto s = context.client->GetStatus(&status); !s.ok()) return Fail(context, s);
  if (context.json) {
    json queues = json::array();
    for (const auto& q : status.queues()) {
      queues.push_back({{"priority", PriorityName(q.priority())}, {"depth", q.depth()}, {"oldest_age_s", q.oldest_age_s()}});
    }
    json workers = json::array();
    for (const auto& w : status.workers()) workers.push_back(WorkerJson(w));
    std::cout << json{{"queues", queues},
                      {"workers", workers},
                      {"jobs",
                       {{"submitted", status.jobs_submitted()},
                        {"completed", status.jobs_completed()},
                        {"failed", status.jobs_failed()},
                        {"dead_lettered", status.jobs_dead_lettered()},
                        {"cancelled", status.jobs_cancelled()},
                        {"expired", status.jobs_expired()},
                        {"recovered", status.jobs_recovered()},
                        {"in_table", status.jobs_in_table()},
                        {"next_job_seq", status.next_job_seq()}}},
                      {"admission",
                       {{"submits_busy", status.submits_busy()},
                        {"queued_witness_bytes", status.queued_witness_bytes()}}},
                      {"broker", {{"epoch", status.broker_epoch()}, {"journal_commits", status.journal_commits()}}},
                      {"auth",
                       {{"rejected_unknown_key", status.auth_rejected_unknown_key()},
                        {"rejected_wrong_endpoint", status.auth_rejected_wrong_endpoint()},
                        {"rejected_mechanism", status.auth_rejected_mechanism()},
                        {"requests_forbidden", status.requests_forbidden()}}},
                      {"items", {{"redelivered", status.items_redelivered()}, {"handed_back", status.items_handed_back()}}},
                      {"dropped",
                       {{"frames_malformed", status.frames_malformed()},
                        {"frames_wrong_version", status.frames_wrong_version()},
                        {"frames_oversized", status.frames_oversized()},
                        {"results_stale", status.results_stale()},
                        {"replies_undeliverable", status.replies_undeliverable()}}}}
                     .dump(2)
              << '\n';
    return kExitOk;
  }
  Table queues({"PRIORITY", "QUEUED_ITEMS", "OLDEST_AGE_S"});
  for (const auto& q : status.queues()) {
    queues.Add({PriorityName(q.priority()), std::to_string(q.depth()),
                q.depth() > 0 ? FormatSeconds(q.oldest_age_s(), 1) : "-"});
  }
  queues.Print(std::cout);
  std::cout << '\n';
  PrintWorkers(status);
  std::cout << "\njobs: " << status.jobs_submitted() << " submitted, " << status.jobs_completed() << " completed, "
            << status.jobs_failed() << " failed, " << status.jobs_dead_lettered() << " dead-lettered, "
            << status.jobs_cancelled() << " cancelled, " << status.jobs_expired() << " expired; "
            << status.items_redelivered() << " items redelivered, " << status.items_handed_back() << " handed back\n"
            << "admission: " << status.submits_busy() << " submits refused BUSY; "
            << FormatBytes(status.queued_witness_bytes()) << " of witnesses queued\n"
            << "broker: epoch " << status.broker_epoch() << ", " << status.journal_commits() << " journal commits, "
            << status.jobs_recovered() << " jobs recovered from the journal at start\n"
            << "auth: refused at the handshake " << status.auth_rejected_unknown_key() << " unknown key, "
            << status.auth_rejected_wrong_endpoint() << " wrong endpoint, " << status.auth_rejected_mechanism()
            << " no CURVE; " << status.requests_forbidden() << " requests forbidden by role\n"
            << "dropped frames: " << status.frames_malformed() << " malformed, " << status.frames_wrong_version()
            << " wrong version, " << status.frames_oversized() << " oversized; " << status.results_stale()
            << " stale results\n";
  return kExitOk;
}

int Workers(Context& context) {
  proto::StatusReply status;
  if (auto s = context.client->GetStatus(&status); !s.ok()) return Fail(context, s);
  if (context.json) {
    json workers = json::array();
    for (const auto& w : status.workers()) workers.push_back(WorkerJson(w));
    std::cout << workers.dump(2) << '\n';
  } else {
    PrintWorkers(status);
  }
  return kExitOk;
}

int Cancel(Context& context, uint64_t job_seq) {
  proto::CancelReply reply;
  if (auto s = context.client->Cancel(job_seq, &reply); !s.ok()) return Fail(context, s);
  if (context.json) {
    std::cout << json{{"job_seq", job_seq}, {"cancelled", reply.cancelled()}, {"state", JobStateName(reply.state())}}.dump(2)
              << '\n';
  } else if (reply.cancelled()) {
    std::cout << "job " << job_seq << " cancelled\n";
  } else {
    std::cout << "job " << job_seq << " had already ended (" << JobStateName(reply.state()) << "); nothing to cancel\n";
  }
  return kExitOk;
}

namespace {
// A message as Protobuf's JSON mapping writes it (the field names of
// schema/zkfleet.proto, every field also at its default, enums by name,
// 64-bit integers as strings): the same JSON a gRPC client gets for it, with
// no field left behind by a hand-made copy.
std::string ProtoJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  if (auto status = google::protobuf::util::MessageToJsonString(message, &out, options); !status.ok()) {
    throw zkfleet::Error(zkfleet::ErrorCode::kInternal, "JSON of " + message.GetTypeName() + ": " + status.ToString());
  }
  return out;
}
}  // namespace

int Job(Context& context, uint64_t job_seq) {
  proto::JobInfo job;
  if (auto s = context.client->GetJob(job_seq, &job); !s.ok()) return Fail(context, s);
  if (context.json) {
    std::cout << ProtoJson(job);
    return kExitOk;
  }
  std::cout << "job " << job.job_seq() << " (" << job.client_id() << ", request " << job.request_id() << ", circuit "
            << job.circuit_id() << "): " << JobStateName(job.state()) << ", " << job.partitions_done() << "/"
            << job.partitions() << " partitions proved, " << job.max_attempts_used() << " attempts at most"
            << (job.error().empty() ? "" : "; " + job.error())
            << (job.result_expired() ? "; its result passed the broker's retention" : "") << '\n';
  return kExitOk;
}

int Retry(Context& context, uint64_t job_seq, uint32_t attempt) {
  if (attempt == 0) {
    // The next retry: one more than the job has had.
    proto::JobInfo job;
    if (auto s = context.client->GetJob(job_seq, &job); !s.ok()) return Fail(context, s);
    attempt = job.retries() + 1;
  }
  proto::JobInfo job;
  if (auto s = context.client->RetryJob(job_seq, attempt, &job); !s.ok()) return Fail(context, s);
  if (context.json) {
    std::cout << ProtoJson(job);
  } else {
    std::cout << "job " << job_seq << ": retry " << job.retries() << " " << JobStateName(job.state())
              << " (zkctl await " << job_seq << " for its result)\n";
  }
  return kExitOk;
}

int Jobs(Context& context, const JobsArgs& args) {
  proto::ListJobsRequest request;
  for (const std::string& name : args.states) {
    auto state = zkfleet::wire::ParseJobState(name);
    if (!state) return ReportError(context.json, "USAGE", "unknown job state '" + name + "'", kExitUsage);
    request.add_states(*state);
  }
  request.set_circuit_id(args.circuit_id);
  request.set_client_id(args.client_id);
  request.set_submitted_after_unix_s(args.since_unix_s);
  request.set_submitted_before_unix_s(args.until_unix_s);
  request.set_page_size(args.limit);
  request.set_page_token(args.page_token);
  proto::ListJobsReply reply;
  if (auto s = context.client->ListJobs(request, &reply); !s.ok()) return Fail(context, s);
  if (context.json) {
    std::cout << ProtoJson(reply);
    return kExitOk;
  }
  if (reply.jobs().empty()) {
    std::cout << "no jobs match\n";
    return kExitOk;
  }
  Table table({"JOB", "STATE", "CIRCUIT", "CLIENT", "REQUEST", "PROVED", "SUBMITTED"});
  for (const auto& job : reply.jobs()) {
    table.Add({std::to_string(job.job_seq()), JobStateName(job.state()), job.circuit_id(), job.client_id(),
               job.request_id(), std::to_string(job.partitions_done()) + "/" + std::to_string(job.partitions()),
               zkfleet::wire::IsoUtcTime(job.submitted_unix_s())});
  }
  table.Print(std::cout);
  if (!reply.next_page_token().empty()) {
    std::cout << "(more: --page-token " << reply.next_page_token() << ")\n";
  }
  return kExitOk;
}

int Drain(Context& context, const std::string& worker_id, bool wait) {
  auto timeout = wait ? ResultTimeout(context) : context.reply_timeout;
  proto::DrainWorkerReply reply;
  if (auto s = context.client->Drain(worker_id, wait, timeout, &reply); !s.ok()) return Fail(context, s);
  if (context.json) {
    json phases = json::array();
    for (const auto& p : reply.phases()) {
      phases.push_back({{"state", WorkerStateName(p.state())}, {"started_unix_s", p.started_unix_s()},
                        {"duration_s", p.duration_s()}});
    }
    std::cout << json{{"worker_id", reply.worker_id()}, {"finished", reply.finished()}, {"phases", phases}}.dump(2)
              << '\n';
    return kExitOk;
  }
  if (!wait) {
    std::cout << "worker " << reply.worker_id() << " is draining (the broker routes nothing more to it)\n";
    return kExitOk;
  }
  std::cout << "worker " << reply.worker_id() << " drained, released its memory and left\n";
  Table table({"PHASE", "DURATION_S"});
  for (const auto& p : reply.phases()) {
    table.Add({WorkerStateName(p.state()), p.state() == proto::WORKER_STATE_GONE ? "-" : FormatSeconds(p.duration_s())});
  }
  table.Print(std::cout);
  return kExitOk;
}

int Undrain(Context& context, const std::string& worker_id) {
  proto::UndrainWorkerReply reply;
  if (auto s = context.client->Undrain(worker_id, &reply); !s.ok()) {
    if (s.code() == zkfleet::client::Code::kBadRequest) {
      return ReportError(context.json, "BAD_REQUEST",
                         s.message() + " (a broker older than UNDRAIN cannot read the request)", kExitError);
    }
    return Fail(context, s);
  }
  if (context.json) {
    std::cout << json{{"worker_id", reply.worker_id()}, {"state", WorkerStateName(reply.state())}}.dump(2) << '\n';
  } else if (reply.state() == proto::WORKER_STATE_READY) {
    std::cout << "worker " << reply.worker_id() << " is READY again (the broker routes work to it)\n";
  } else if (reply.state() == proto::WORKER_STATE_FAULTED) {
    // The broker's holds are cleared, but the worker faulted itself (its
    // proofs failed its own verification, or its device failed).
    std::cout << "worker " << reply.worker_id()
              << " is still FAULTED: it reported its own engine faulted (proofs that failed its own check, or a "
                 "device error; its log says which). The broker's hold and strikes are cleared; restart that "
                 "zkworker (after fixing the cause) and it comes back READY\n";
    return kExitError;
  } else {
    std::cout << "worker " << reply.worker_id() << " undrained; its state now: " << WorkerStateName(reply.state())
              << '\n';
  }
  return kExitOk;
}

int Reload(Context& context, const std::vector<std::string>& workers) {
  proto::ReloadReply reply;
  if (auto s = context.client->Reload(workers, &reply); !s.ok()) {
    if (s.code() == zkfleet::client::Code::kBadRequest) {
      return ReportError(context.json, "BAD_REQUEST",
                         s.message() + " (a broker older than RELOAD cannot read the request: send it SIGHUP)",
                         kExitError);
    }
    return Fail(context, s);
  }
  const int exit_code = reply.problems_size() > 0 || reply.workers_unknown_size() > 0 ? kExitError : kExitOk;
  if (context.json) {
    std::cout << ProtoJson(reply);
    return exit_code;
  }
  std::cout << "reloaded: " << reply.verification_keys() << " verification key(s)";
  if (reply.allow_lists_reloaded()) {
    std::cout << ", " << reply.worker_keys() << " worker key(s), " << reply.client_keys() << " client key(s)";
  }
  std::cout << '\n';
  Table table({"CIRCUIT", "CHANGE"});
  for (const auto& c : reply.circuits_added()) table.Add({c, "added (SUBMITs of it are taken)"});
  for (const auto& c : reply.circuits_changed()) table.Add({c, "new key"});
  for (const auto& c : reply.circuits_removed()) table.Add({c, "removed (SUBMITs of it are refused)"});
  for (const auto& kept : reply.circuits_kept()) {
    const size_t colon = kept.find(": ");
    table.Add({kept.substr(0, colon), "kept as it was: " + (colon == std::string::npos ? "" : kept.substr(colon + 2))});
  }
  if (table.empty()) {
    std::cout << "no circuit changed\n";
  } else {
    table.Print(std::cout);
  }
  for (const auto& problem : reply.problems()) std::cout << "problem: " << problem << '\n';
  for (const auto& id : reply.workers_told()) {
    std::cout << "worker " << id << " told to read its circuits again (its log and its next READY say what changed)\n";
  }
  for (const auto& id : reply.workers_unknown()) std::cout << "problem: no worker " << id << " is connected\n";
  return exit_code;
}

}  // namespace zkctl
