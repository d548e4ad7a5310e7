// The public client (zkfleet/client.h) over internal::BrokerClient
// (internal/zkfleet/client/broker_client.hpp), which owns the socket, the correlation ids and the resends after a reconnect.
// This layer adds what an application needs on top: key loading, BUSY
// retries bounded by a time budget, results waited for by job, and errors
// turned into Status values.
#include "zkfleet/client.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <random>
#include <thread>

#include <zmq.hpp>

#include "zkfleet/client/broker_client.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "zkfleet/fleet/frames.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/wire/witness_ref.hpp"

namespace zkfleet::client {
namespace {

namespace proto = zkfleet::proto;
using Clock = std::chrono::steady_clock;

Code CodeForKind(proto::ErrorKind kind) {
  switch (kind) {
    case proto::ERROR_KIND_BUSY: return Code::kBusy;
    case proto::ERROR_KIND_UNKNOWN_CIRCUIT: return Code::kUnknownCircuit;
    case proto::ERROR_KIND_UNKNOWN_JOB: return Code::kUnknownJob;
    case proto::ERROR_KIND_UNKNOWN_WORKER: return Code::kUnknownWorker;
    case proto::ERROR_KIND_BAD_REQUEST: return Code::kBadRequest;
    case proto::ERROR_KIND_REQUEST_ID_REUSED: return Code::kRequestIdReused;
    case proto::ERROR_KIND_FOREIGN_JOB: return Code::kForeignJob;
    case proto::ERROR_KIND_TOO_LARGE: return Code::kTooLarge;
    case proto::ERROR_KIND_VERSION_MISMATCH: return Code::kVersionMismatch;
    case proto::ERROR_KIND_FORBIDDEN: return Code::kAuth;
    case proto::ERROR_KIND_UNAVAILABLE: return Code::kUnavailable;
    case proto::ERROR_KIND_RESULT_EXPIRED: return Code::kResultExpired;
    case proto::ERROR_KIND_NOT_LEADER: return Code::kNotLeader;
    default: return Code::kInternal;
  }
}

Code CodeForError(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kNotFound:
    case ErrorCode::kBadFormat:
    case ErrorCode::kMismatch: return Code::kInvalidArgument;
    case ErrorCode::kIo: return Code::kIo;
    default: return Code::kInternal;
  }
}

// Runs `body`, turning what it throws into a Status.
template <typename Body>
Status Guard(const internal::BrokerClient* broker, Body&& body) {
  try {
    return body();
  } catch (const internal::BrokerError& e) {
    return Status(CodeForKind(e.kind()), e.what());
  } catch (const internal::NoReplyError& e) {
    return Status(broker && !broker->HandshakeProblem().empty() ? Code::kAuth : Code::kTimeout, e.what());
  } catch (const internal::InvalidResultError& e) {
    return Status(Code::kInvalidResult, e.what());
  } catch (const Error& e) {
    return Status(CodeForError(e.code()), e.what());
  } catch (const zmq::error_t& e) {
    return Status(Code::kIo, std::string("socket: ") + e.what());
  }
}

// `prefix` and 96 random bits in hex.
std::string RandomRequestId(const std::string& prefix) {
  std::random_device device;
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%x%x%x", device(), device(), device());
  return prefix + buffer;
}

// Thrown from the BUSY observer when the next wait would pass the budget.
struct BusyGaveUp {
  std::string what;
};

// kBusy, kUnavailable or kNotLeader, from the last refusal's words (a
// BrokerError's "broker: <KIND>: <message>").
Code GaveUpCode(const std::string& what) {
  for (const auto& [kind, code] : {std::pair{proto::ERROR_KIND_UNAVAILABLE, Code::kUnavailable},
                                   std::pair{proto::ERROR_KIND_NOT_LEADER, Code::kNotLeader}}) {
    if (what.rfind("broker: " + wire::ErrorKindName(kind) + ": ", 0) == 0) return code;
  }
  return Code::kBusy;
}

// OK for a SUCCEEDED job, else kJobFailed naming the state and the reason.
Status ResultStatus(const proto::JobResult& result) {
  if (result.state() == proto::JOB_STATE_SUCCEEDED) return Status();
  return Status(Code::kJobFailed, "job " + std::to_string(result.job_seq()) + " ended " +
                                      wire::JobStateName(result.state()) +
                                      (result.error().empty() ? "" : ": " + result.error()));
}

}  // namespace

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kBusy: return "BUSY";
    case Code::kUnknownCircuit: return "UNKNOWN_CIRCUIT";
    case Code::kUnknownJob: return "UNKNOWN_JOB";
    case Code::kJobFailed: return "JOB_FAILED";
    case Code::kTimeout: return "TIMEOUT";
    case Code::kAuth: return "AUTH";
    case Code::kBadRequest: return "BAD_REQUEST";
    case Code::kRequestIdReused: return "REQUEST_ID_REUSED";
    case Code::kForeignJob: return "FOREIGN_JOB";
    case Code::kTooLarge: return "TOO_LARGE";
    case Code::kUnknownWorker: return "UNKNOWN_WORKER";
    case Code::kVersionMismatch: return "VERSION_MISMATCH";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kIo: return "IO";
    case Code::kInternal: return "INTERNAL";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kInvalidResult: return "INVALID_RESULT";
    case Code::kResultExpired: return "RESULT_EXPIRED";
    case Code::kNotLeader: return "NOT_LEADER";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const { return ok() ? "OK" : std::string(CodeName(code_)) + ": " + message_; }

Witness Witness::FromFile(std::string path) {
  Witness w;
  w.from_file_ = true;
  w.data_ = std::move(path);
  return w;
}

Witness Witness::FromBytes(std::string bytes) {
  Witness w;
  w.data_ = std::move(bytes);
  return w;
}

struct Client::Impl {
  Options options;
  zmq::context_t context{1};
  std::unique_ptr<internal::BrokerClient> broker;
  std::mt19937 jitter{std::random_device{}()};

};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const Options& Client::options() const { return impl_->options; }
uint64_t Client::reconnections() const { return impl_->broker->reconnections(); }
uint64_t Client::duplicate_results_dropped() const { return impl_->broker->duplicate_results_dropped(); }

Status Client::Open(const Options& options, std::unique_ptr<Client>* client) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  Status status = Guard(nullptr, [&] {
    auto security = fleet::ClientSecurity::Load(options.insecure_plaintext, options.curve_secret_key_file,
                                                options.broker_public_key_file);
    // With CURVE the broker knows the client by its key and ignores a
    // declared id: none is sent (so none can be refused as too long).
    const std::string client_id = options.insecure_plaintext ? options.client_id : "";
    internal::CheckName("client id", client_id, kMaxClientIdBytes, "kMaxClientIdBytes");
    impl->broker = std::make_unique<internal::BrokerClient>(impl->context, options.endpoint, security,
                                                         fleet::SocketLimits{}, client_id);
    return Status();
  });
  if (!status.ok()) return status;
  client->reset(new Client(std::move(impl)));
  return Status();
}

Status Client::Submit(const SubmitOptions& options, std::vector<Witness> witnesses, Job* job) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    proto::SubmitRequest request;
    request.set_request_id(options.request_id.empty() ? RandomRequestId(impl.options.request_id_prefix) : options.request_id);
    request.set_circuit_id(options.circuit);
    request.set_priority(options.priority);
    if (options.deadline_unix_s > 0) request.set_deadline_unix_s(options.deadline_unix_s);
    const bool by_reference = !options.witness_refs.empty();
    const bool from_inputs = !options.inputs.empty();
    if (by_reference && !witnesses.empty()) {
      return Status(Code::kInvalidArgument,
                    std::to_string(witnesses.size()) + " witnesses and " + std::to_string(options.witness_refs.size()) +
                        " witness references: a submit carries witnesses or references, not both; nothing was sent");
    }
    if (from_inputs && (by_reference || !witnesses.empty())) {
      return Status(Code::kInvalidArgument,
                    std::to_string(options.inputs.size()) + " inputs with " +
                        (by_reference ? std::to_string(options.witness_refs.size()) + " witness references"
                                      : std::to_string(witnesses.size()) + " witnesses") +
                        ": a submit carries inputs, witnesses or references, one of them; nothing was sent");
    }
    const size_t partitions = by_reference  ? options.witness_refs.size()
                              : from_inputs ? options.inputs.size()
                                            : witnesses.size();
    const char* unit = by_reference ? " witness references" : from_inputs ? " inputs" : " witnesses";
    if (!options.expected_public_json.empty() && options.expected_public_json.size() != partitions) {
      return Status(Code::kInvalidArgument, std::to_string(options.expected_public_json.size()) +
                                                " expected public.json for " + std::to_string(partitions) + unit +
                                                ": give one per " +
                                                (by_reference ? "reference" : from_inputs ? "input" : "witness") +
                                                ", or none");
    }
    for (size_t p = 0; p < options.inputs.size(); ++p) {
      if (auto problem = wire::InputJsonProblem(options.inputs[p], kMaxInputJsonDepth)) {
        return Status(Code::kInvalidArgument,
                      "input of partition " + std::to_string(p) + " is not an input.json: " + *problem +
                          "; nothing was sent");
      }
      request.add_inputs(options.inputs[p]);
    }
    for (size_t p = 0; p < options.witness_refs.size(); ++p) {
      const WitnessRef& ref = options.witness_refs[p];
      proto::WitnessRef* out = request.add_witness_refs();
      out->set_url(ref.url);
      out->set_size(ref.size);
      out->set_sha256(ref.sha256);
      // The broker bounds the size (its --max-witness-bytes); here only > 0.
      if (auto problem = wire::WitnessRefProblem(*out, std::numeric_limits<uint64_t>::max())) {
        return Status(Code::kInvalidArgument,
                      "witness reference of partition " + std::to_string(p) + ": " + *problem + "; nothing was sent");
      }
    }
    for (size_t p = 0; p < options.expected_public_json.size(); ++p) {
      std::string why;
      auto digest = zkfleet::wire::PublicSignalsDigestOfJson(options.expected_public_json[p], &why);
      if (!digest) {
        return Status(Code::kInvalidArgument, "expected public signals of partition " + std::to_string(p) + ": " + why);
      }
      request.add_public_signals_sha256(*digest);
    }
    internal::CheckSubmitRequest(request);  // before the witness files are opened
    // Each witness becomes one frame without a copy (a mapping of its file).
    fleet::Frames frames;
    for (Witness& witness : witnesses) {
      if (!witness.from_file()) {
        frames.push_back(fleet::FrameFromString(std::move(witness.data_)));
        continue;
      }
      std::error_code error;
      const auto size = std::filesystem::file_size(witness.path(), error);
      std::optional<zmq::message_t> frame;
      if (!error) frame = fleet::FrameFromFile(witness.path(), size);
      if (!frame) return Status(Code::kInvalidArgument, "cannot open witness file " + witness.path());
      frames.push_back(std::move(*frame));
    }

    // BrokerClient::Submit retries BUSY and UNAVAILABLE itself, but only within its timeout,
    // which is also how long it waits for a reply at all. Here each attempt
    // gets the reply timeout (a dead broker is still reported after it), the
    // observer ends the retries once the next wait would pass busy_timeout,
    // and an attempt that gave up on BUSY at its own timeout is made again.
    const auto give_up = Clock::now() + impl.options.busy_timeout;
    auto before_wait = [&](const std::string& what, double wait_s) {
      if (Clock::now() + std::chrono::duration<double>(wait_s) >= give_up) throw BusyGaveUp{what};
      if (impl.options.on_busy) impl.options.on_busy(what, wait_s);
    };
    impl.broker->set_busy_observer(before_wait);
    double backoff_s = 0;
    proto::SubmitReply reply;
    try {
      for (;;) {
        try {
          fleet::Frames shared;  // the originals stay for a retry
          for (zmq::message_t& frame : frames) shared.push_back(fleet::ShareFrame(frame));
          reply = impl.broker->Submit(request, std::move(shared), impl.options.reply_timeout);
          break;
        } catch (const internal::BrokerError& e) {
          if (!e.retryable()) throw;  // nothing was accepted, and the same SUBMIT may be
          backoff_s = std::min(30.0, std::max(e.retry_after_ms() / 1000.0, std::max(backoff_s * 2, 0.1)));
          const double wait_s = backoff_s * std::uniform_real_distribution<double>(0.75, 1.25)(impl.jitter);
          before_wait(e.what(), wait_s);
          std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
        }
      }
    } catch (const BusyGaveUp& busy) {
      impl.broker->set_busy_observer(nullptr);
      return Status(GaveUpCode(busy.what), busy.what);
    } catch (...) {
      impl.broker->set_busy_observer(nullptr);  // it captures this call's locals
      throw;
    }
    impl.broker->set_busy_observer(nullptr);
    job->job_seq = reply.job_seq();
    job->request_id = request.request_id();
    job->duplicate = reply.duplicate();
    job->state = reply.state();
    job->result_expired = reply.result_expired();
    if (job->result_expired) {
      // Never a success without a proof to collect.
      return Status(Code::kResultExpired,
                    "request " + job->request_id + " was job " + std::to_string(job->job_seq) + " (" +
                        wire::JobStateName(job->state) +
                        "); its result passed the broker's retention (--result-ttl): submit it again with its "
                        "witnesses to prove it again");
    }
    return Status();
  });
}

Status Client::WaitResult(uint64_t job_seq, std::chrono::milliseconds timeout, proto::JobResult* result) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    // The broker pushes each result once; results of other jobs that arrive
    // first are held back and handed out by their own WaitResult.
    auto next = impl.broker->NextJobResult(job_seq, timeout);
    if (!next) {
      if (std::string problem = impl.broker->HandshakeProblem(); !problem.empty()) {
        return Status(Code::kAuth, "no result for job " + std::to_string(job_seq) + " from the broker at " +
                                       impl.options.endpoint + ": " + problem);
      }
      return Status(Code::kTimeout, "no result for job " + std::to_string(job_seq) + " from the broker at " +
                                        impl.options.endpoint + " within " + std::to_string(timeout.count()) + " ms");
    }
    *result = std::move(*next);
    return ResultStatus(*result);
  });
}

Status Client::Await(uint64_t job_seq, std::chrono::milliseconds timeout, proto::JobResult* result) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    *result = impl.broker->Await(job_seq, timeout);
    return ResultStatus(*result);
  });
}

Status Client::Cancel(uint64_t job_seq, proto::CancelReply* reply) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    *reply = impl.broker->Cancel(job_seq, impl.options.reply_timeout);
    return Status();
  });
}

Status Client::GetJob(uint64_t job_seq, proto::JobInfo* info) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    *info = impl.broker->GetJob(job_seq, impl.options.reply_timeout);
    return Status();
  });
}

Status Client::RetryJob(uint64_t job_seq, uint32_t attempt, proto::JobInfo* info) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    *info = impl.broker->RetryJob(job_seq, attempt, impl.options.reply_timeout);
    return Status();
  });
}

Status Client::ListJobs(const proto::ListJobsRequest& request, proto::ListJobsReply* reply) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    *reply = impl.broker->ListJobs(request, impl.options.reply_timeout);
    return Status();
  });
}

Status Client::GetStatus(proto::StatusReply* status) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    *status = impl.broker->Status(impl.options.reply_timeout);
    return Status();
  });
}

Status Client::Workers(std::vector<proto::WorkerInfo>* workers) {
  proto::StatusReply status;
  Status s = GetStatus(&status);
  if (!s.ok()) return s;
  workers->assign(status.workers().begin(), status.workers().end());
  return Status();
}

Status Client::Undrain(const std::string& worker_id, proto::UndrainWorkerReply* reply) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    internal::CheckName("worker id", worker_id, kMaxWorkerIdBytes, "kMaxWorkerIdBytes");
    *reply = impl.broker->Undrain(worker_id, impl.options.reply_timeout);
    return Status();
  });
}

Status Client::Reload(const std::vector<std::string>& workers, proto::ReloadReply* reply) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    for (const std::string& id : workers) {
      if (id != "*") internal::CheckName("worker id", id, kMaxWorkerIdBytes, "kMaxWorkerIdBytes");
    }
    *reply = impl.broker->Reload(workers, impl.options.reply_timeout);
    return Status();
  });
}

Status Client::Drain(const std::string& worker_id, bool wait, std::chrono::milliseconds timeout,
                     proto::DrainWorkerReply* reply) {
  Impl& impl = *impl_;
  return Guard(impl.broker.get(), [&]() -> Status {
    internal::CheckName("worker id", worker_id, kMaxWorkerIdBytes, "kMaxWorkerIdBytes");
    *reply = impl.broker->Drain(worker_id, wait, timeout);
    return Status();
  });
}

}  // namespace zkfleet::client
