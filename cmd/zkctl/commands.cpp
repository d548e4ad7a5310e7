#include "commands.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "table.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/names.hpp"
#include "zkfleet/fleet/sockets.hpp"

namespace zkctl {
namespace {

using zkfleet::Error;
using zkfleet::ErrorCode;
using zkfleet::fleet::JobStateName;
using zkfleet::fleet::PriorityName;
using zkfleet::fleet::WorkerStateName;
namespace proto = zkfleet::proto;
using json = nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot open witness file " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error(ErrorCode::kIo, "cannot write " + path.string());
}

std::string RandomRequestId() {
  std::random_device device;
  std::ostringstream id;
  id << "zkctl-" << std::hex << device() << device() << device();
  return id.str();
}

// "no limit" is a very long timeout.
std::chrono::milliseconds ResultTimeout(const Context& context) {
  return context.result_timeout.count() > 0 ? context.result_timeout : std::chrono::hours(24 * 365);
}

json TimingsJson(const proto::PhaseTimings& t) {
  return {{"queue_wait_s", t.queue_wait_s()}, {"witness_transfer_s", t.witness_transfer_s()},
          {"build_abc_s", t.build_abc_s()},   {"ntt_s", t.ntt_s()},
          {"msm_s", t.msm_s()},               {"prove_total_s", t.prove_total_s()}};
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

json JobResultJson(const proto::JobResult& result) {
  json partitions = json::array();
  for (const auto& p : result.partitions()) {
    partitions.push_back({{"partition", p.partition()},
                          {"worker_id", p.worker_id()},
                          {"attempts", p.attempts()},
                          {"timings", TimingsJson(p.timings())},
                          {"proof", EmbeddedJson(p.proof_json())},
                          {"public", EmbeddedJson(p.public_json())}});
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

// Writes proof_<p>.json and public_<p>.json for every partition.
void WriteOutputs(const proto::JobResult& result, const std::string& out_dir) {
  std::filesystem::create_directories(out_dir);
  for (const auto& p : result.partitions()) {
    std::filesystem::path dir(out_dir);
    WriteFile(dir / ("proof_" + std::to_string(p.partition()) + ".json"), p.proof_json());
    WriteFile(dir / ("public_" + std::to_string(p.partition()) + ".json"), p.public_json());
  }
}

int ReportResult(Context& context, const proto::JobResult& result, const std::string& out_dir) {
  bool succeeded = result.state() == proto::JOB_STATE_SUCCEEDED;
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
      Table table({"PARTITION", "WORKER", "ATTEMPTS", "QUEUE_S", "WITNESS_S", "ABC_S", "NTT_S", "MSM_S", "PROVE_S"});
      for (const auto& p : result.partitions()) {
        const auto& t = p.timings();
        table.Add({std::to_string(p.partition()), p.worker_id(), std::to_string(p.attempts()),
                   FormatSeconds(t.queue_wait_s()), FormatSeconds(t.witness_transfer_s()),
                   FormatSeconds(t.build_abc_s()), FormatSeconds(t.ntt_s()), FormatSeconds(t.msm_s()),
                   FormatSeconds(t.prove_total_s())});
      }
      table.Print(std::cout);
    }
    if (succeeded && !out_dir.empty()) {
      std::cout << "wrote proof_<partition>.json and public_<partition>.json to " << out_dir << '\n';
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
          {"host", w.host()},
          {"backend", w.backend()},
          {"state", WorkerStateName(w.state())},
          {"circuits", std::vector<std::string>(w.circuits().begin(), w.circuits().end())},
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
  Table table({"WORKER", "STATE", "HOST", "BACKEND", "CIRCUITS", "CAPACITY", "CREDIT", "IN_FLIGHT", "QUEUE", "DONE",
               "POOL_IN_USE/POOL", "ALLOCS", "TO_RELEASE", "LAST_SEEN_S"});
  for (const auto& w : status.workers()) {
    const auto& m = w.memory();
    table.Add({w.worker_id(), WorkerStateName(w.state()), w.host(), w.backend(), Join(w.circuits()),
               std::to_string(w.capacity()), std::to_string(w.credit()), std::to_string(w.in_flight()),
               std::to_string(w.queue_depth()), std::to_string(w.items_completed()),
               FormatBytes(m.pool_in_use_bytes()) + "/" + FormatBytes(m.pool_bytes()), std::to_string(m.alloc_calls()),
               m.bytes_to_release() > 0 ? FormatBytes(m.bytes_to_release()) : "-", FormatSeconds(w.last_seen_s(), 1)});
  }
  if (status.workers_size() == 0) {
    std::cout << "no workers registered\n";
  } else {
    table.Print(std::cout);
  }
}

}  // namespace

int Submit(Context& context, const SubmitArgs& args) {
  auto priority = zkfleet::fleet::ParsePriority(args.priority);
  if (!priority) {
    std::cerr << "zkctl: --priority " << args.priority << ": expected low, normal, high or critical\n";
    return kExitError;
  }
  proto::SubmitRequest request;
  request.set_request_id(args.request_id.empty() ? RandomRequestId() : args.request_id);
  request.set_circuit_id(args.circuit);
  request.set_priority(*priority);
  for (const auto& path : args.witness_files) request.add_witnesses(ReadFile(path));

  proto::SubmitReply reply = context.client->Submit(request, context.reply_timeout);
  bool wait = args.wait || !args.out_dir.empty();
  if (!wait) {
    if (context.json) {
      std::cout << json{{"job_seq", reply.job_seq()},
                        {"request_id", request.request_id()},
                        {"duplicate", reply.duplicate()},
                        {"state", JobStateName(reply.state())}}
                       .dump(2)
                << '\n';
    } else if (reply.duplicate()) {
      std::cout << "request " << request.request_id() << " was already submitted as job " << reply.job_seq()
                << " (" << JobStateName(reply.state()) << "); nothing new was queued\n";
    } else {
      std::cout << "job " << reply.job_seq() << " submitted (request " << request.request_id() << ", priority "
                << PriorityName(*priority) << ", " << args.witness_files.size() << " partition"
                << (args.witness_files.size() == 1 ? "" : "s") << ")\n";
    }
    return kExitOk;
  }
  if (!context.json) {
    std::cerr << "job " << reply.job_seq() << (reply.duplicate() ? " (existing request)" : " submitted")
              << ", waiting for the result\n";
  }
  // The broker pushes the result to this connection when the job ends.
  for (;;) {
    auto result = context.client->NextJobResult(ResultTimeout(context));
    if (!result) {
      std::cerr << "zkctl: no result for job " << reply.job_seq() << " within the --wait-timeout\n";
      return kExitError;
    }
    if (result->job_seq() == reply.job_seq()) return ReportResult(context, *result, args.out_dir);
  }
}

int Await(Context& context, uint64_t job_seq, const std::string& out_dir) {
  return ReportResult(context, context.client->Await(job_seq, ResultTimeout(context)), out_dir);
}

int Status(Context& context) {
  proto::StatusReply status = context.client->Status(context.reply_timeout);
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
                        {"in_table", status.jobs_in_table()},
                        {"next_job_seq", status.next_job_seq()}}},
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
            << status.jobs_cancelled() << " cancelled; " << status.items_redelivered() << " items redelivered, "
            << status.items_handed_back() << " handed back\n"
            << "dropped frames: " << status.frames_malformed() << " malformed, " << status.frames_wrong_version()
            << " wrong version, " << status.frames_oversized() << " oversized; " << status.results_stale()
            << " stale results\n";
  return kExitOk;
}

int Workers(Context& context) {
  proto::StatusReply status = context.client->Status(context.reply_timeout);
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
  proto::CancelReply reply = context.client->Cancel(job_seq, context.reply_timeout);
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

int Drain(Context& context, const std::string& worker_id, bool wait) {
  auto timeout = wait ? ResultTimeout(context) : context.reply_timeout;
  proto::DrainWorkerReply reply = context.client->Drain(worker_id, wait, timeout);
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

}  // namespace zkctl
