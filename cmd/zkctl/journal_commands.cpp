// zkctl journal check | salvage | inspect: the broker's journal read (never
// written) through zkfleet_storage, from its data directory or from etcd.
#include "commands.hpp"

#include <chrono>
#include <deque>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "table.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/storage/etcd_client.hpp"
#include "zkfleet/storage/journal.hpp"
#include "zkfleet/storage/journal_check.hpp"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/unix_time.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkctl {

using json = nlohmann::json;
using zkfleet::wire::IsTerminal;
using zkfleet::wire::JobStateName;
using zkfleet::wire::PriorityName;

namespace {

std::string Dash(const std::string& text) { return text.empty() ? "-" : text; }

std::string ItemStateName(zkfleet::journal::Item::State state) {
  switch (state) {
    case zkfleet::journal::Item::STATE_QUEUED: return "QUEUED";
    case zkfleet::journal::Item::STATE_STARTED: return "STARTED";
    case zkfleet::journal::Item::STATE_DONE: return "DONE";
    case zkfleet::journal::Item::STATE_DROPPED: return "DROPPED";
    default: return "STATE_" + std::to_string(static_cast<int>(state));
  }
}

// A journaled job's references, URLs redacted: the journal holds them as
// submitted (credentials included); zkctl never prints them so.
json JournalWitnessRefsJson(const zkfleet::journal::Job& job) {
  json out = json::array();
  for (const auto& ref : job.witness_refs()) {
    out.push_back({{"url", zkfleet::wire::RedactUrl(ref.url())}, {"size", ref.size()}, {"sha256", zkfleet::wire::DigestHex(ref.sha256())}});
  }
  return out;
}

json PublicDigestsJson(const zkfleet::journal::Job& job) {
  json out = json::array();
  for (const auto& digest : job.public_signals_sha256()) out.push_back(zkfleet::wire::DigestHex(digest));
  return out;
}

json JournalJobJson(const zkfleet::journal::Job& job) {
  return {{"job_seq", job.job_seq()},
          {"client_id", job.client_id()},
          {"request_id", job.request_id()},
          {"circuit_id", job.circuit_id()},
          {"priority", PriorityName(job.priority())},
          {"state", JobStateName(job.state())},
          {"partitions", job.partitions()},
          {"payload_hash", zkfleet::wire::DigestHex(job.payload_hash())},
          {"submitted_unix_s", job.submitted_unix_s()},
          {"deadline_unix_s", job.deadline_unix_s()},
          {"finished_unix_s", job.finished_unix_s()},
          {"error", job.error()},
          {"witness_bytes", job.witness_bytes()},
          {"witness_refs", JournalWitnessRefsJson(job)},
          {"inputs", InputsJson({job.inputs().begin(), job.inputs().end()})},
          {"public_signals_sha256", PublicDigestsJson(job)}};
}

json JournalItemJson(uint32_t partition, const zkfleet::journal::Item& item) {
  json out = {{"partition", partition},
              {"state", ItemStateName(item.state())},
              {"attempts", item.attempts()},
              {"worker_id", item.worker_id()},
              {"failed_on", item.failed_on()}};
  if (item.has_lease()) out["lease"] = {{"epoch", item.lease().epoch()}, {"number", item.lease().number()}};
  if (item.has_result()) {
    out["proof_bytes"] = item.result().proof_json().size();
    out["public_bytes"] = item.result().public_json().size();
    out["result_worker_id"] = item.result().worker_id();
  }
  return out;
}

json StubJson(uint64_t job_seq, const zkfleet::journal::Stub& stub) {
  return {{"job_seq", job_seq},
          {"client_id", stub.client_id()},
          {"request_id", stub.request_id()},
          {"state", JobStateName(stub.state())},
          {"submitted_unix_s", stub.submitted_unix_s()},
          {"finished_unix_s", stub.finished_unix_s()}};
}

// --job N: the job's record and its item records (or its stub).
int InspectJob(zkfleet::storage::Journal& journal, const JournalArgs& args) {
  auto job = journal.GetJob(args.job_seq);
  if (!job) {
    if (auto stub = journal.GetStub(args.job_seq)) {
      if (args.json) {
        std::cout << json{{"stub", StubJson(args.job_seq, *stub)}}.dump(2) << '\n';
      } else {
        std::cout << "job " << args.job_seq << "  " << JobStateName(stub->state())
                  << "  (stub: its results passed the retention)\n"
                  << "client     " << Dash(stub->client_id()) << '\n'
                  << "request    " << stub->request_id() << '\n'
                  << "submitted  " << zkfleet::wire::IsoUtcTime(stub->submitted_unix_s()) << '\n'
                  << "finished   " << zkfleet::wire::IsoUtcTime(stub->finished_unix_s()) << '\n';
      }
      return kExitOk;
    }
    return ReportError(args.json, "UNKNOWN_JOB",
                       "job " + std::to_string(args.job_seq) + " is not in the journal " +
                           (args.data_dir.empty() ? args.journal_url : args.data_dir) +
                           " (never submitted, or its record expired)",
                       kExitUnknownJob);
  }
  auto items = journal.Items(args.job_seq);
  if (args.json) {
    json out_items = json::array();
    for (const auto& [partition, item] : items) out_items.push_back(JournalItemJson(partition, item));
    std::cout << json{{"job", JournalJobJson(*job)}, {"items", out_items}}.dump(2) << '\n';
    return kExitOk;
  }
  std::cout << "job " << job->job_seq() << "  " << JobStateName(job->state()) << '\n'
            << "client       " << Dash(job->client_id()) << '\n'
            << "request      " << job->request_id() << '\n'
            << "circuit      " << job->circuit_id() << '\n'
            << "priority     " << PriorityName(job->priority()) << '\n'
            << "partitions   " << job->partitions() << '\n'
            << "witnesses    "
            << (job->witness_refs_size() > 0 ? std::to_string(job->witness_refs_size()) + " by reference"
                : job->inputs_size() > 0     ? "from inputs (" + FormatBytes(job->witness_bytes()) + " of input.json)"
                                             : FormatBytes(job->witness_bytes()))
            << '\n'
            << "payload hash " << Dash(zkfleet::wire::DigestHex(job->payload_hash())) << '\n'
            << "submitted    " << zkfleet::wire::IsoUtcTime(job->submitted_unix_s()) << '\n'
            << "deadline     " << zkfleet::wire::IsoUtcTime(job->deadline_unix_s()) << '\n'
            << "finished     " << zkfleet::wire::IsoUtcTime(job->finished_unix_s()) << '\n';
  if (!job->error().empty()) std::cout << "error        " << job->error() << '\n';
  for (int p = 0; p < job->witness_refs_size(); ++p) {
    const auto& ref = job->witness_refs(p);
    std::cout << "witness " << p << "    " << zkfleet::wire::RedactUrl(ref.url()) << "  " << ref.size()
              << " bytes  sha256 " << Dash(zkfleet::wire::DigestHex(ref.sha256())) << '\n';
  }
  for (int p = 0; p < job->inputs_size(); ++p) {
    std::cout << "input " << p << "      " << job->inputs(p).size() << " bytes  sha256 "
              << zkfleet::wire::DigestHex(zkfleet::fetch::Sha256::Of(job->inputs(p))) << '\n';
  }
  for (int p = 0; p < job->public_signals_sha256_size(); ++p) {
    std::cout << "public " << p << "     sha256 " << Dash(zkfleet::wire::DigestHex(job->public_signals_sha256(p))) << '\n';
  }
  std::cout << '\n';
  Table table({"PARTITION", "STATE", "ATTEMPTS", "LEASE", "WORKER", "FAILED_ON", "PROOF"});
  size_t next = 0;
  for (uint32_t p = 0; p < job->partitions(); ++p) {
    if (next < items.size() && items[next].first == p) {
      const auto& item = items[next++].second;
      std::string worker = item.worker_id();
      if (worker.empty() && item.has_result()) worker = item.result().worker_id();
      table.Add({std::to_string(p), ItemStateName(item.state()), std::to_string(item.attempts()),
                 item.has_lease() ? std::to_string(item.lease().epoch()) + "." + std::to_string(item.lease().number())
                                  : "-",
                 Dash(worker), Dash(item.failed_on()),
                 item.has_result() ? FormatBytes(item.result().proof_json().size()) : "-"});
    } else {  // no record: never started
      table.Add({std::to_string(p), IsTerminal(job->state()) ? "NEVER_STARTED" : "QUEUED", "0", "-", "-", "-", "-"});
    }
  }
  table.Print(std::cout);
  return kExitOk;
}

}  // namespace

int JournalCheck(const JournalArgs& args) {
  zkfleet::storage::JournalCheck check;
  try {
    check = zkfleet::storage::CheckJournal(args.data_dir);
  } catch (const std::exception& e) {
    return ReportError(args.json, "IO", e.what(), kExitError);
  }
  if (!check.exists) {
    return ReportError(args.json, "NOT_FOUND", args.data_dir + " holds no journal (no data.mdb)", kExitError);
  }
  if (args.json) {
    std::cout << json{{"records", check.records}, {"damaged", check.damaged}, {"problems", check.problems}}.dump(2)
              << '\n';
  } else {
    std::cout << "journal " << args.data_dir << ": " << check.records << " records read, " << check.damaged
              << " damaged\n";
    for (const std::string& problem : check.problems) std::cout << "  " << problem << '\n';
    if (!check.ok()) std::cout << "recover with: zkctl journal salvage --data-dir " << args.data_dir << " --to NEW_DIR\n";
  }
  return check.ok() ? kExitOk : kExitError;
}

int JournalSalvage(const JournalArgs& args, const std::string& to) {
  zkfleet::storage::SalvageReport report;
  try {
    report = zkfleet::storage::SalvageJournal(args.data_dir, to);
  } catch (const std::exception& e) {
    return ReportError(args.json, "IO", e.what(), kExitError);
  }
  if (args.json) {
    std::cout << json{{"to", to},
                      {"records_copied", report.records_copied},
                      {"records_lost", report.records_lost},
                      {"jobs", report.jobs},
                      {"witness_files_copied", report.witness_files_copied},
                      {"problems", report.problems}}
                     .dump(2)
              << '\n';
  } else {
    std::cout << "salvaged " << args.data_dir << " into " << to << ": " << report.records_copied << " records ("
              << report.jobs << " jobs, " << report.witness_files_copied << " witness files) copied, "
              << report.records_lost << " lost\n";
    for (const std::string& problem : report.problems) std::cout << "  " << problem << '\n';
    std::cout << "start zkbroker with --data-dir " << to << "; keep " << args.data_dir << " until it serves\n";
  }
  return kExitOk;
}

int JournalInspect(const JournalArgs& args) {
  zkfleet::storage::JournalOptions options;
  options.read_only = true;
  if (!args.journal_url.empty()) {
    // A journal in etcd: read at one revision, beside the brokers (no fence:
    // read-only).
    try {
      const zkfleet::storage::EtcdUrl url = zkfleet::storage::ParseEtcdUrl(args.journal_url);
      zkfleet::storage::EtcdJournalOptions etcd;
      etcd.endpoints = url.endpoints;
      etcd.tls = {args.etcd_ca, args.etcd_cert, args.etcd_key};
      etcd.prefix = url.prefix;
      options.etcd = etcd;
    } catch (const std::exception& e) {
      return ReportError(args.json, "INVALID_ARGUMENT", e.what(), kExitUsage);
    }
    options.dir = args.journal_url;
  } else {
    std::error_code ec;
    if (!std::filesystem::is_directory(args.data_dir, ec)) {
      return ReportError(args.json, "INVALID_ARGUMENT",
                         args.data_dir + " is not a directory (expected a zkbroker --data-dir)", kExitError);
    }
    options.dir = args.data_dir;
  }
  std::unique_ptr<zkfleet::storage::Journal> journal;
  try {
    journal = zkfleet::storage::Journal::Open(options);
  } catch (const std::exception& e) {
    return ReportError(args.json, "IO", e.what(), kExitError);
  }
  if (args.has_job) return InspectJob(*journal, args);

  size_t live = 0, finished = 0, total = 0;
  std::deque<zkfleet::journal::Job> shown;  // the newest `limit`, in job_seq order
  journal->ForEachJob([&](const zkfleet::journal::Job& job) {
    ++total;
    if (IsTerminal(job.state())) {
      ++finished;
    } else {
      ++live;
    }
    shown.push_back(job);
    if (args.limit > 0 && shown.size() > args.limit) shown.pop_front();
  });
  size_t stubs = 0;
  journal->ForEachStub([&](uint64_t, const zkfleet::journal::Stub&) { ++stubs; });
  const size_t requests = journal->CountRequests();
  const uint64_t store_bytes = journal->StoreBytes();

  if (args.json) {
    json jobs = json::array();
    for (const auto& job : shown) jobs.push_back(JournalJobJson(job));
    std::cout << json{{"data_dir", options.dir.string()},
                      {"epoch", journal->epoch()},
                      {"next_job_seq", journal->next_job_seq()},
                      {"store_bytes", store_bytes},
                      {"live_jobs", live},
                      {"finished_jobs", finished},
                      {"stubs", stubs},
                      {"requests", requests},
                      {"jobs_listed", shown.size()},
                      {"jobs", jobs}}
                     .dump(2)
              << '\n';
    return kExitOk;
  }
  std::cout << "journal " << options.dir.string() << '\n'
            << "epoch " << journal->epoch() << ", next job_seq " << journal->next_job_seq() << ", store "
            << FormatBytes(store_bytes) << '\n'
            << live << " live jobs, " << finished << " finished jobs with results, " << stubs << " stubs, "
            << requests << " request records\n";
  if (shown.empty()) return kExitOk;
  std::cout << '\n';
  Table table({"JOB", "CLIENT", "REQUEST", "CIRCUIT", "PRIORITY", "STATE", "PARTITIONS", "SUBMITTED", "FINISHED"});
  for (const auto& job : shown) {
    table.Add({std::to_string(job.job_seq()), Dash(job.client_id()), job.request_id(), job.circuit_id(),
               PriorityName(job.priority()), JobStateName(job.state()), std::to_string(job.partitions()),
               zkfleet::wire::IsoUtcTime(job.submitted_unix_s()), zkfleet::wire::IsoUtcTime(job.finished_unix_s())});
  }
  table.Print(std::cout);
  if (shown.size() < total) {
    std::cout << "(the newest " << shown.size() << " of " << total << " jobs; --limit 0 lists all)\n";
  }
  return kExitOk;
}

}  // namespace zkctl
