// BrokerCore (broker_core.hpp), client requests: the dispatch of every
// request a client sends (HandleClient) and SUBMIT (checks, dedup, the
// journal); the other requests about jobs are in broker_core_jobs.cpp, the
// admin's in broker_core_admin.cpp. Thread-safety: as BrokerCore (one thread).
#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_core_detail.hpp"
#include "zkfleet/broker/field_checks.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/storage/digest.hpp"
#include "zkfleet/wire/local_paths.hpp"
#include "zkfleet/wire/input_json.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/witness_ref.hpp"
#include "zkfleet/wire/worker_state.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/engine/snarkjs.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {

namespace {

// The identity of a client that did not name itself.
constexpr char kAnonymousClient[] = "anonymous";

// What makes a resubmission "the same request": the circuit and every
// witness byte (lengths included, so partitions cannot shift).
std::string PayloadHash(const proto::SubmitRequest& request, const std::vector<fleet::WitnessFrames>& witnesses) {
  storage::Digest128 digest;
  digest.AddSize(request.circuit_id().size()).Add(request.circuit_id().data(), request.circuit_id().size());
  for (const fleet::WitnessFrames& witness : witnesses) digest.AddSize(witness.size()).Add(fleet::ChunkViews(witness));
  return digest.Finish();
}

// The same for a job of witnesses by reference: the circuit, every
// reference's redacted URL, size and digest, and the public-signals digests
// (what the proofs must show). The redacted URL: a retry with a freshly
// presigned URL (another query string, the same object) is the same request.
// The leading marker keeps it apart from any inline payload.
std::string PayloadHashOfReferences(const proto::SubmitRequest& request) {
  storage::Digest128 digest;
  digest.AddSize(~uint64_t{0});
  digest.AddSize(request.circuit_id().size()).Add(request.circuit_id().data(), request.circuit_id().size());
  for (const proto::WitnessRef& ref : request.witness_refs()) {
    const std::string url = wire::RedactUrl(ref.url());
    digest.AddSize(url.size()).Add(url.data(), url.size());
    digest.AddSize(ref.size());
    digest.AddSize(ref.sha256().size()).Add(ref.sha256().data(), ref.sha256().size());
  }
  for (const std::string& expected : request.public_signals_sha256()) {
    digest.AddSize(expected.size()).Add(expected.data(), expected.size());
  }
  return digest.Finish();
}

// The same for a job from inputs: the circuit, every input.json's bytes
// (lengths included) and the public-signals digests if given. Its own leading
// marker keeps it apart from the other two.
std::string PayloadHashOfInputs(const proto::SubmitRequest& request) {
  storage::Digest128 digest;
  digest.AddSize(~uint64_t{0} - 1);
  digest.AddSize(request.circuit_id().size()).Add(request.circuit_id().data(), request.circuit_id().size());
  digest.AddSize(request.inputs_size());
  for (const std::string& input : request.inputs()) digest.AddSize(input.size()).Add(input.data(), input.size());
  digest.AddSize(request.public_signals_sha256_size());
  for (const std::string& expected : request.public_signals_sha256()) {
    digest.AddSize(expected.size()).Add(expected.data(), expected.size());
  }
  return digest.Finish();
}

}  // namespace

// ------------------------------------------------------------------ clients

void BrokerCore::HandleClient(const std::string& identity, proto::Envelope& message, Clock::time_point now,
                              const Peer& peer, fleet::Frames frames) {
  NoteTime(now);
  ReplyTo from{identity, message.correlation_id()};
  if (!frames.empty() && message.body_case() != proto::Envelope::kSubmit) {
    CountDroppedFrame(metrics::DropReason::kMalformed);
    return SendError(from, proto::ERROR_KIND_BAD_REQUEST,
                     "only a SUBMIT may be followed by (witness) frames; this request had " +
                         std::to_string(frames.size()));
  }
  if (auto why = ClientRequestProblem(message, options_.fields, peer.authenticated)) {
    ++counters_.fields_refused;
    CountDroppedFrame(metrics::DropReason::kMalformed);
    return SendError(from, proto::ERROR_KIND_BAD_REQUEST, "request refused: " + *why + " (nothing was accepted)");
  }
  if (peer.authenticated && allowed_client_keys_ && !allowed_client_keys_->count(peer.key_name)) {
    ++counters_.requests_forbidden;
    if (metrics_) metrics_->RequestForbidden();
    return SendError(from, proto::ERROR_KIND_FORBIDDEN,
                     "key '" + peer.key_name + "' was removed from the broker's allow-list");
  }
  // Authenticated: the key is the identity, whatever the client declares.
  const std::string client = peer.authenticated    ? peer.key_name
                             : message.client_id().empty() ? std::string(kAnonymousClient)
                                                           : message.client_id();
  // Roles: submit = its own jobs; observe = status and workers; admin = everything.
  auto allowed = [&](std::initializer_list<Role> roles, const char* request) {
    for (Role role : roles) {
      if (peer.role == role) return true;
    }
    ++counters_.requests_forbidden;
    if (metrics_) metrics_->RequestForbidden();
    SendError(from, proto::ERROR_KIND_FORBIDDEN,
              std::string(request) + " is not allowed for key '" + client + "' (role " + RoleName(peer.role) + ")");
    return false;
  };
  // An authenticated admin may touch every job; an unauthenticated peer
  // (--insecure-plaintext) may do everything but still owns only its
  // declared identity's jobs.
  const bool admin = peer.authenticated && peer.role == Role::kAdmin;
  switch (message.body_case()) {
    case proto::Envelope::kSubmit:
      if (allowed({Role::kSubmit, Role::kAdmin}, "SUBMIT")) {
        OnSubmit(from, client, *message.mutable_submit(), frames, now);
      }
      break;
    case proto::Envelope::kAwait:
      if (allowed({Role::kSubmit, Role::kAdmin}, "AWAIT")) OnAwait(from, client, admin, message.await());
      break;
    case proto::Envelope::kCancel:
      if (allowed({Role::kSubmit, Role::kAdmin}, "CANCEL")) OnCancel(from, client, admin, message.cancel(), now);
      break;
    case proto::Envelope::kGetJob:
      // Reading a job is what observe keys are for; submit keys read their own.
      OnGetJob(from, client, peer.authenticated && peer.role != Role::kSubmit, message.get_job());
      break;
    case proto::Envelope::kListJobs:
      OnListJobs(from, client, peer.authenticated && peer.role != Role::kSubmit, message.list_jobs());
      break;
    case proto::Envelope::kRetryJob:
      if (allowed({Role::kSubmit, Role::kAdmin}, "RETRY")) OnRetryJob(from, client, admin, message.retry_job(), now);
      break;
    case proto::Envelope::kDrainWorker:
      if (allowed({Role::kAdmin}, "DRAIN")) OnDrainWorker(identity, from.correlation_id, message.drain_worker());
      break;
    case proto::Envelope::kUndrainWorker:
      if (allowed({Role::kAdmin}, "UNDRAIN")) {
        OnUndrainWorker(identity, from.correlation_id, message.undrain_worker());
      }
      break;
    case proto::Envelope::kReload: {
      if (!allowed({Role::kAdmin}, "RELOAD")) break;
      if (!reloader_) {
        SendError(from, proto::ERROR_KIND_BAD_REQUEST, "this broker has nothing to reload from (no reloader)");
        break;
      }
      // Bounded like every field a peer sends: ids as long as worker ids, no more than a fleet's.
      constexpr int kMaxReloadWorkers = 4096;
      const auto& ids = message.reload().workers();
      if (ids.size() > kMaxReloadWorkers ||
          std::any_of(ids.begin(), ids.end(), [](const std::string& id) { return id.empty() || id.size() > 128; })) {
        SendError(from, proto::ERROR_KIND_BAD_REQUEST,
                  "RELOAD names at most " + std::to_string(kMaxReloadWorkers) +
                      " workers, each a worker id of 1 to 128 bytes (or \"*\")");
        break;
      }
      proto::Envelope reply;
      reply.set_correlation_id(from.correlation_id);
      *reply.mutable_reload_reply() = reloader_();
      TellWorkersToReload(message.reload(), *reply.mutable_reload_reply());
      spdlog::info("reloaded at the request of {}", client);
      SendClient(from, std::move(reply));
      break;
    }
    case proto::Envelope::kStatus: {
      if (!allowed({Role::kObserve, Role::kAdmin}, "STATUS")) break;
      proto::Envelope reply;
      reply.set_correlation_id(from.correlation_id);
      *reply.mutable_status_reply() = Status(now);
      SendClient(from, std::move(reply));
      break;
    }
    default:
      CountDroppedFrame(metrics::DropReason::kMalformed);
      SendError(from, proto::ERROR_KIND_BAD_REQUEST,
                "message type " + std::to_string(message.body_case()) + " is not a client request");
  }
}

std::optional<std::string> BrokerCore::CheckPublicSignalsDigests(const proto::SubmitRequest& request,
                                                                size_t partitions,
                                                                const std::vector<fleet::WitnessFrames>& witnesses) const {
  const auto& digests = request.public_signals_sha256();
  const auto* key = options_.verification_keys ? options_.verification_keys->Find(request.circuit_id()) : nullptr;
  const bool by_reference = request.witness_refs_size() > 0;
  const bool from_inputs = request.inputs_size() > 0;
  if (digests.empty()) {
    // The broker cannot read a referenced witness: the client's digests are
    // what binds each proof to it.
    if (by_reference && key && key->n_public > 0) {
      return "a SUBMIT of witnesses by reference needs public_signals_sha256, one per partition: the broker "
             "cannot read a referenced witness, so it checks each proof against the public signals you expect "
             "(zkctl submit --public-signals public.json, or a file:// witness zkctl can read)";
    }
    return std::nullopt;
  }
  if (static_cast<size_t>(digests.size()) != partitions) {
    return "public_signals_sha256 has " + std::to_string(digests.size()) + " digests for " +
           std::to_string(partitions) + " witnesses: send one per partition, or none";
  }
  for (int p = 0; p < digests.size(); ++p) {
    if (digests[p].size() != wire::kPublicDigestBytes) {
      return "public_signals_sha256 of partition " + std::to_string(p) + " is " + std::to_string(digests[p].size()) +
             " bytes; a SHA-256 digest is 32";
    }
  }
  // Without the key the broker does not know how many public signals the
  // circuit has (nor checks proofs at all: --unverified-circuits); a
  // referenced witness, or one a worker computes from inputs, is checked
  // against the digests once proved.
  if (!key || by_reference || from_inputs) return std::nullopt;
  for (int p = 0; p < digests.size(); ++p) {
    std::string why;
    auto values = PublicSignalsOfWitness(witnesses[p], key->n_public, &why);
    if (!values) return "the witness of partition " + std::to_string(p) + " cannot be read: " + why;
    std::vector<std::string> decimal;
    for (const engine::BigInt& value : *values) decimal.push_back(engine::DecimalString(value));
    const std::string digest = wire::PublicSignalsDigest(decimal);
    if (digest != digests[p]) {
      return "the witness of partition " + std::to_string(p) + " commits to other public signals than the client "
             "expects (public_signals_sha256 " + wire::DigestHex(digests[p]) + ", the witness's " +
             wire::DigestHex(digest) + "); nothing was accepted";
    }
  }
  return std::nullopt;
}

void BrokerCore::OnSubmit(const ReplyTo& from, const std::string& client, proto::SubmitRequest& request,
                          fleet::Frames& frames, Clock::time_point now) {
  auto refuse = [&](proto::ErrorKind kind, const std::string& why, uint32_t retry_after_ms = 0) {
    ++counters_.jobs_refused;
    SendError(from, kind, why, retry_after_ms);
  };
  if (auto refusal = SubmitShapeProblem(request, !frames.empty(), options_)) return refuse(refusal->kind, refusal->why);
  const bool by_reference = request.witness_refs_size() > 0;
  const bool from_inputs = request.inputs_size() > 0;
  std::string why;
  auto split = fleet::SplitWitnesses(std::move(frames), {request.witness_bytes().begin(), request.witness_bytes().end()},
                                     &why);
  if (!split) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT witness frames do not match witness_bytes: " + why);
  std::vector<fleet::WitnessFrames>& witnesses = *split;  // empty for a job by reference or from inputs
  const size_t partitions = by_reference  ? static_cast<size_t>(request.witness_refs_size())
                            : from_inputs ? static_cast<size_t>(request.inputs_size())
                                          : witnesses.size();
  const std::string payload_hash = by_reference  ? PayloadHashOfReferences(request)
                                   : from_inputs ? PayloadHashOfInputs(request)
                                                 : PayloadHash(request, witnesses);

  // Idempotency: a known (client, request id) returns the existing job, never
  // a new one -- unless that job's result passed the retention: then the same
  // witnesses prove it again (a new job under the same request id), so a
  // request id is never stuck without a proof for the rest of the dedup window.
  if (auto known = journal_.GetRequest(client, request.request_id())) {
    // The journal is read for the job only when the answer could change it.
    const bool prove_again = partitions > 0 && known->payload_hash() == payload_hash &&
                             !jobs_.Find(known->job_seq()) && !journal_.GetJob(known->job_seq());
    // A SUBMIT without witnesses only looks the request up (zkctl submit --request-id R).
    if (!prove_again) {
      return OnDuplicateSubmit(from, *known, partitions == 0 ? known->payload_hash() : payload_hash);
    }
  }

  if (unavailable_) {
    return refuse(proto::ERROR_KIND_UNAVAILABLE,
                  "the broker takes no new work now: " + wire::WithoutLocalPaths(*unavailable_) +
                      "; nothing was accepted, retry later with the same request id",
                  static_cast<uint32_t>(options_.busy_retry_after.count()));
  }
  if (partitions == 0 && !request.request_id().empty()) {
    // A lookup (zkctl submit --request-id R, no witness) of a request this
    // client never made, or whose dedup window has passed.
    return refuse(proto::ERROR_KIND_UNKNOWN_JOB,
                  "request id '" + request.request_id() +
                      "' is not known to the broker (never submitted by you, or past the dedup window): submit it "
                      "with its witnesses");
  }
  if (auto refusal = NewJobShapeProblem(request, partitions, options_)) return refuse(refusal->kind, refusal->why);
  const proto::Priority priority =
      request.priority() == proto::PRIORITY_UNSPECIFIED ? proto::PRIORITY_NORMAL : request.priority();
  // A witness by reference that no registered worker of the circuit may
  // fetch (their --fetch-allow prefixes, Ready.fetch_prefixes) is refused
  // now, not queued for a worker that would only refuse it.
  if (!options_.accept_unrouted && workers_.AnyHolds(request.circuit_id())) {
    for (const proto::WitnessRef& ref : request.witness_refs()) {
      bool covered = false;
      for (const auto& [identity, worker] : workers_.all()) {
        if (!worker.circuits.count(request.circuit_id())) continue;
        for (const std::string& prefix : worker.fetch_prefixes) covered = covered || FetchPrefixCovers(prefix, ref.url());
      }
      if (!covered) {
        return refuse(proto::ERROR_KIND_BAD_REQUEST,
                      "no worker of circuit '" + request.circuit_id() + "' fetches " + wire::RedactUrl(ref.url()) +
                          " (no worker's --fetch-allow prefix covers it); nothing was accepted");
      }
    }
  }
  // Just after a restart the fleet is still reconnecting: a circuit the
  // journal knows is queued for its worker, not refused for good.
  if (!options_.accept_unrouted && !workers_.AnyHolds(request.circuit_id()) &&
      !InKnownCircuitGrace(request.circuit_id(), now)) {
    return refuse(proto::ERROR_KIND_UNKNOWN_CIRCUIT,
                  "no worker has announced circuit '" + request.circuit_id() +
                      "' (start a worker with it, or run the broker with --accept-unrouted)");
  }
  // A job from inputs needs a worker that computes the circuit's witnesses.
  if (from_inputs && !options_.accept_unrouted && !workers_.AnyGenerates(request.circuit_id()) &&
      !InKnownCircuitGrace(request.circuit_id(), now, /*from_inputs=*/true)) {
    return refuse(proto::ERROR_KIND_UNKNOWN_CIRCUIT,
                  "no worker generates witnesses for circuit '" + request.circuit_id() +
                      "' from inputs (start a worker with the circuit's witness generator, submit witnesses "
                      "instead, or run the broker with --accept-unrouted)");
  }
  const bool has_key = options_.verification_keys && options_.verification_keys->Find(request.circuit_id());
  if (!has_key && !options_.unverified_circuits.count(request.circuit_id()) && !options_.unverified_circuits.count("*")) {
    return refuse(proto::ERROR_KIND_UNKNOWN_CIRCUIT,
                  "the broker has no verification key for circuit '" + request.circuit_id() +
                      "', so it could not check the proof (zkbroker --verification-key " + request.circuit_id() +
                      "=verification_key.json, or " + request.circuit_id() +
                      ".json in its --verification-key-dir and zkctl reload)");
  }
  if (auto why = CheckPublicSignalsDigests(request, partitions, witnesses)) {
    return refuse(proto::ERROR_KIND_BAD_REQUEST, *why);
  }
  // The bytes the broker holds: the witnesses, or the inputs; none for references.
  uint64_t witness_bytes = 0;
  for (const fleet::WitnessFrames& witness : witnesses) witness_bytes += witness.size();
  for (const std::string& input : request.inputs()) witness_bytes += input.size();
  if (auto why = admission_.Refusal(client, partitions, witness_bytes)) {
    ++counters_.submits_busy;
    if (metrics_) metrics_->SubmitRefusedBusy();
    return refuse(proto::ERROR_KIND_BUSY, *why + "; nothing was accepted, retry later with the same request id",
                  static_cast<uint32_t>(options_.busy_retry_after.count()));
  }

  JobRecord job;
  job.job_seq = journal_.TakeJobSeq();
  job.client_id = client;
  job.request_id = request.request_id();
  job.circuit_id = request.circuit_id();
  job.priority = priority;
  job.waiters.push_back(from);
  job.submitted_at = now;
  job.submitted_unix_s = wire::UnixNow();
  job.deadline_unix_s = request.deadline_unix_s();
  job.witness_bytes = witness_bytes;
  job.payload_hash = payload_hash;
  job.items.resize(partitions);
  // Durable before the reply: the witnesses (written once, from the received
  // frames) or their references, the job and its request id go into this
  // turn's transaction, and the server sends the reply after the commit.
  for (uint32_t p = 0; p < witnesses.size(); ++p) {
    job.items[p].witness_bytes = witnesses[p].size();
    journal_.PutWitness(job.job_seq, p, fleet::ChunkViews(witnesses[p]));
  }
  if (by_reference) {
    job.witness_refs.assign(request.witness_refs().begin(), request.witness_refs().end());
    job.public_digests.assign(request.public_signals_sha256().begin(), request.public_signals_sha256().end());
    for (uint32_t p = 0; p < partitions; ++p) job.items[p].witness_bytes = job.witness_refs[p].size();
  }
  if (from_inputs) {
    job.inputs.assign(std::make_move_iterator(request.mutable_inputs()->begin()),
                      std::make_move_iterator(request.mutable_inputs()->end()));
    job.public_digests.assign(request.public_signals_sha256().begin(), request.public_signals_sha256().end());
    for (uint32_t p = 0; p < partitions; ++p) job.items[p].witness_bytes = job.inputs[p].size();
  }
  JournalJob(job, proto::JOB_STATE_QUEUED, 0, "");
  journal::Request index;
  index.set_job_seq(job.job_seq);
  index.set_payload_hash(payload_hash);
  index.set_submitted_unix_s(job.submitted_unix_s);
  journal_.PutRequest(client, job.request_id, index);

  JobRecord& added = jobs_.Add(std::move(job));
  for (uint32_t p = 0; p < added.items.size(); ++p) queue_.Insert(added.queue(), added.key(p));
  admission_.Add(client, added.items.size(), witness_bytes);
  if (added.deadline_unix_s > 0) deadlines_.insert({added.deadline_unix_s, added.job_seq});
  ++counters_.jobs_submitted;
  if (metrics_) metrics_->JobSubmitted(added.circuit_id, added.priority);

  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  auto* body = reply.mutable_submit_reply();
  body->set_job_seq(added.job_seq);
  body->set_state(added.state);
  SendClient(from, std::move(reply));
}

void BrokerCore::OnDuplicateSubmit(const ReplyTo& from, const journal::Request& known, const std::string& payload_hash) {
  if (known.payload_hash() != payload_hash) {
    ++counters_.jobs_refused;
    return SendError(from, proto::ERROR_KIND_REQUEST_ID_REUSED,
                     "request id reused with a different witness (or circuit): it was job " +
                         std::to_string(known.job_seq()) + "; choose a new request id for new work");
  }
  ++counters_.jobs_duplicate;
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  auto* body = reply.mutable_submit_reply();
  body->set_job_seq(known.job_seq());
  body->set_duplicate(true);
  if (JobRecord* live = jobs_.Find(known.job_seq())) {
    body->set_state(live->state);
    SendClient(from, std::move(reply));
    live->waiters.push_back(from);
    return;
  }
  proto::Envelope result;
  result.set_correlation_id(from.correlation_id);
  if (LoadResult(known.job_seq(), result.mutable_job_result())) {
    body->set_state(result.job_result().state());
    SendClient(from, std::move(reply));
    SendClient(from, std::move(result));
    return;
  }
  // Ran and ended, but its results passed the retention.
  auto stub = journal_.GetStub(known.job_seq());
  body->set_state(stub ? stub->state() : proto::JOB_STATE_UNSPECIFIED);
  body->set_result_expired(true);
  SendClient(from, std::move(reply));
}

}  // namespace zkfleet::broker
