// BrokerCore (broker_core.hpp), client requests: SUBMIT (checks, dedup,
// the journal), AWAIT, CANCEL, DRAIN/UNDRAIN of a worker, and the allowed
// keys. Thread-safety: as BrokerCore (one thread).
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

void BrokerCore::SendUnknownJob(const ReplyTo& to, uint64_t job_seq) {
  SendError(to, proto::ERROR_KIND_UNKNOWN_JOB,
            "job " + std::to_string(job_seq) + " is not known to you (never submitted by your key, or long expired)");
}

void BrokerCore::OnAwait(const ReplyTo& from, const std::string& client, bool any_job,
                         const proto::AwaitRequest& request) {
  const uint64_t seq = request.job_seq();
  // Another client's job answers exactly as one that does not exist.
  auto visible = [&](const std::string& owner) { return any_job || owner == client; };
  if (JobRecord* job = jobs_.Find(seq)) {
    if (!visible(job->client_id)) return SendUnknownJob(from, seq);
    job->waiters.push_back(from);
    return;
  }
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  if (auto stored = journal_.GetJob(seq)) {
    if (!visible(stored->client_id())) return SendUnknownJob(from, seq);
    LoadResult(seq, reply.mutable_job_result());
    return SendClient(from, std::move(reply));
  }
  if (auto stub = journal_.GetStub(seq)) {
    if (!visible(stub->client_id())) return SendUnknownJob(from, seq);
    return SendError(from, proto::ERROR_KIND_RESULT_EXPIRED,
                     "job " + std::to_string(seq) + " ended " + wire::JobStateName(stub->state()) +
                         " but its result passed the broker's retention (--result-ttl); submit its request "
                         "again with the same witnesses to prove it again");
  }
  SendUnknownJob(from, seq);
}

std::optional<proto::JobInfo> BrokerCore::JobInfoOf(uint64_t seq, bool with_stub) {
  proto::JobInfo info;
  info.set_job_seq(seq);
  auto payload_of = [](bool refs, bool inputs) {
    return refs ? proto::JobInfo::PAYLOAD_REFERENCES : inputs ? proto::JobInfo::PAYLOAD_INPUTS
                                                              : proto::JobInfo::PAYLOAD_WITNESSES;
  };
  if (const JobRecord* job = jobs_.Find(seq)) {
    info.set_request_id(job->request_id);
    info.set_circuit_id(job->circuit_id);
    info.set_client_id(job->client_id);
    info.set_state(job->state);
    info.set_priority(job->priority);
    info.set_partitions(static_cast<uint32_t>(job->items.size()));
    info.set_partitions_done(job->items_done);
    uint32_t attempts = 0;
    for (const WorkItem& item : job->items) attempts = std::max(attempts, item.attempts);
    info.set_max_attempts_used(attempts);
    info.set_submitted_unix_s(job->submitted_unix_s);
    info.set_deadline_unix_s(job->deadline_unix_s);
    info.set_payload(payload_of(!job->witness_refs.empty(), !job->inputs.empty()));
    info.set_retries(job->retries);
    *info.mutable_history() = {job->history.begin(), job->history.end()};
    return info;
  }
  if (auto stored = journal_.GetJob(seq)) {
    info.set_request_id(stored->request_id());
    info.set_circuit_id(stored->circuit_id());
    info.set_client_id(stored->client_id());
    info.set_state(stored->state());
    info.set_priority(stored->priority());
    info.set_partitions(stored->partitions());
    uint32_t done = 0, attempts = 0;
    for (const auto& [partition, item] : journal_.Items(seq)) {
      if (item.state() == journal::Item::STATE_DONE) ++done;
      attempts = std::max(attempts, item.attempts());
    }
    info.set_partitions_done(done);
    info.set_max_attempts_used(attempts);
    info.set_submitted_unix_s(stored->submitted_unix_s());
    info.set_deadline_unix_s(stored->deadline_unix_s());
    info.set_finished_unix_s(stored->finished_unix_s());
    info.set_error(stored->error());
    info.set_payload(stored->payload() != proto::JobInfo::PAYLOAD_UNSPECIFIED
                         ? stored->payload()
                         : payload_of(stored->witness_refs_size() > 0, stored->inputs_size() > 0));
    info.set_retries(stored->retries());
    *info.mutable_history() = stored->history();
    return info;
  }
  if (!with_stub) return std::nullopt;
  if (auto stub = journal_.GetStub(seq)) {
    info.set_request_id(stub->request_id());
    info.set_client_id(stub->client_id());
    info.set_state(stub->state());
    info.set_submitted_unix_s(stub->submitted_unix_s());
    info.set_finished_unix_s(stub->finished_unix_s());
    info.set_result_expired(true);
    return info;
  }
  return std::nullopt;
}

void BrokerCore::OnGetJob(const ReplyTo& from, const std::string& client, bool any_job,
                          const proto::GetJobRequest& request) {
  std::optional<proto::JobInfo> info = JobInfoOf(request.job_seq(), /*with_stub=*/true);
  if (!info || !(any_job || info->client_id() == client)) return SendUnknownJob(from, request.job_seq());
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  *reply.mutable_job_info() = std::move(*info);
  SendClient(from, std::move(reply));
}

void BrokerCore::OnListJobs(const ReplyTo& from, const std::string& client, bool any_job,
                            const proto::ListJobsRequest& request) {
  std::string client_filter = request.client_id();
  if (!any_job) {
    if (!client_filter.empty() && client_filter != client) {
      ++counters_.requests_forbidden;
      if (metrics_) metrics_->RequestForbidden();
      return SendError(from, proto::ERROR_KIND_FORBIDDEN,
                       "key '" + client + "' may list its own jobs only, not client '" + client_filter + "'s");
    }
    client_filter = client;
  }
  uint64_t below = 0;
  if (!request.page_token().empty()) {
    char* end = nullptr;
    below = std::strtoull(request.page_token().c_str(), &end, 10);
    if (*end != '\0' || below == 0) {
      return SendError(from, proto::ERROR_KIND_BAD_REQUEST,
                       "page_token '" + request.page_token().substr(0, 64) + "' is not one this broker gave");
    }
  }
  const uint32_t page = request.page_size() == 0 ? 100 : std::min<uint32_t>(request.page_size(), 1000);
  std::set<int> states(request.states().begin(), request.states().end());
  const double after = request.submitted_after_unix_s(), before = request.submitted_before_unix_s();
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  proto::ListJobsReply& out = *reply.mutable_list_jobs_reply();
  // One job: false once the page is full (one more match than the page
  // says that another page follows) or the jobs are older than `after`.
  bool more = false;
  // The loop serves everyone: one listing reads at most this many jobs, and
  // a page that filled no further says where to go on (next_page_token).
  constexpr size_t kExaminedPerCall = 20000;
  size_t examined = 0;
  uint64_t last_examined = 0;
  auto consider = [&](uint64_t seq) {
    if (++examined > kExaminedPerCall) {
      more = true;
      return false;
    }
    last_examined = seq;
    std::optional<proto::JobInfo> info = JobInfoOf(seq, /*with_stub=*/false);
    if (!info) return true;
    // Not a stop: submission times follow job_seq only as far as the clock does.
    if (after > 0 && info->submitted_unix_s() < after) return true;
    if (before > 0 && info->submitted_unix_s() >= before) return true;
    if (!client_filter.empty() && info->client_id() != client_filter) return true;
    if (!request.circuit_id().empty() && info->circuit_id() != request.circuit_id()) return true;
    if (!states.empty() && !states.count(info->state())) return true;
    if (out.jobs_size() == static_cast<int>(page)) {
      more = true;
      return false;
    }
    *out.add_jobs() = std::move(*info);
    return true;
  };
  // The narrowest index the request names: its client, its circuit, or its
  // one state (RUNNING is journaled as QUEUED); else every job, newest first.
  if (!client_filter.empty()) {
    journal_.ScanJobIndex(JobIndex::kClient, client_filter, below, consider);
  } else if (!request.circuit_id().empty()) {
    journal_.ScanJobIndex(JobIndex::kCircuit, request.circuit_id(), below, consider);
  } else if (states.size() == 1) {
    int state = *states.begin() == proto::JOB_STATE_RUNNING ? proto::JOB_STATE_QUEUED : *states.begin();
    journal_.ScanJobIndex(JobIndex::kState, Journal::StateIndexValue(state), below, consider);
  } else {
    journal_.ScanJobsNewestFirst(below, [&](const journal::Job& job) { return consider(job.job_seq()); });
  }
  if (more) {
    // Below the last job listed, or, when the scan budget ran out first, the last one read.
    const bool page_full = out.jobs_size() == static_cast<int>(page);
    out.set_next_page_token(std::to_string(page_full ? out.jobs(out.jobs_size() - 1).job_seq() : last_examined));
  }
  SendClient(from, std::move(reply));
}

void BrokerCore::OnRetryJob(const ReplyTo& from, const std::string& client, bool any_job,
                            const proto::RetryJobRequest& request, Clock::time_point now) {
  const uint64_t seq = request.job_seq();
  auto visible = [&](const std::string& owner) { return any_job || owner == client; };
  auto reply_info = [&] {
    proto::Envelope reply;
    reply.set_correlation_id(from.correlation_id);
    *reply.mutable_job_info() = *JobInfoOf(seq, /*with_stub=*/false);
    SendClient(from, std::move(reply));
  };
  auto not_retryable = [&](const std::string& why) {
    SendError(from, proto::ERROR_KIND_NOT_RETRYABLE, "job " + std::to_string(seq) + ": " + why);
  };
  if (const JobRecord* live = jobs_.Find(seq)) {
    if (!visible(live->client_id)) return SendUnknownJob(from, seq);
    if (request.attempt() != 0 && request.attempt() <= live->retries) return reply_info();  // that retry runs now
    return not_retryable("it has not ended (" + wire::JobStateName(live->state) + "): nothing to retry");
  }
  std::optional<journal::Job> stored = journal_.GetJob(seq);
  if (!stored) {
    if (auto stub = journal_.GetStub(seq); stub && visible(stub->client_id())) {
      return SendError(from, proto::ERROR_KIND_RESULT_EXPIRED,
                       "job " + std::to_string(seq) + " ended " + wire::JobStateName(stub->state()) +
                           " and passed the broker's retention (--result-ttl), its payload with it: submit its "
                           "request again (same request id, same payload) to prove it again");
    }
    return SendUnknownJob(from, seq);
  }
  if (!visible(stored->client_id())) return SendUnknownJob(from, seq);
  if (request.attempt() == 0) {
    return SendError(from, proto::ERROR_KIND_BAD_REQUEST,
                     "RetryJob needs attempt: the retry to make (1 for the first; the job has had " +
                         std::to_string(stored->retries()) + ")");
  }
  // Idempotent per attempt: a retry already made is answered with the job as it is.
  if (request.attempt() <= stored->retries()) return reply_info();
  if (request.attempt() != stored->retries() + 1) {
    return not_retryable("retry " + std::to_string(request.attempt()) + " is not the next one (it has had " +
                         std::to_string(stored->retries()) + ")");
  }
  if (!wire::IsRetryable(stored->state())) {
    return not_retryable("it ended " + wire::JobStateName(stored->state()) +
                         "; only FAILED and DEAD_LETTERED jobs are retried");
  }
  if (stored->deadline_unix_s() > 0 && stored->deadline_unix_s() <= wire::UnixNow()) {
    return not_retryable("its deadline has passed");
  }
  if (!TakesJobsFor(stored->circuit_id())) {
    // Its key was removed (a reload): its proofs could not be checked.
    return not_retryable("the broker has no verification key for circuit '" + stored->circuit_id() +
                         "' now (removed by a reload?), so a new proof could not be checked");
  }
  // What it is proved from again: references are always kept; witnesses and
  // inputs only for a dead-lettered job (FinishJob, JournalJob).
  switch (stored->payload()) {
    case proto::JobInfo::PAYLOAD_REFERENCES: break;
    case proto::JobInfo::PAYLOAD_WITNESSES:
    case proto::JobInfo::PAYLOAD_INPUTS:
      if (stored->state() != proto::JOB_STATE_DEAD_LETTERED) {
        return not_retryable("a FAILED job's witnesses or inputs are not kept (the failure was theirs: a witness or "
                             "input the circuit refuses); fix them and submit a new request");
      }
      if (stored->payload() == proto::JobInfo::PAYLOAD_INPUTS &&
          stored->inputs_size() != static_cast<int>(stored->partitions())) {
        return not_retryable("its inputs are no longer journaled: submit it again");
      }
      break;
    default:
      return not_retryable("it ended under an older broker, which kept nothing to prove it from: submit it again");
  }
  JobRecord job = JobFromJournal(*stored, now);
  if (auto why = admission_.Refusal(job.client_id, job.items.size(), job.witness_bytes)) {
    ++counters_.submits_busy;
    if (metrics_) metrics_->SubmitRefusedBusy();
    return SendError(from, proto::ERROR_KIND_BUSY, *why + "; retry later with the same attempt",
                     static_cast<uint32_t>(options_.busy_retry_after.count()));
  }
  // The round that ended goes into the history; the partitions it did not
  // prove start afresh (no item record: queued, no attempts), with their
  // witnesses, which the journal kept for this.
  proto::JobRound round;
  round.set_round(stored->retries());
  round.set_state(stored->state());
  round.set_error(stored->error());
  round.set_finished_unix_s(stored->finished_unix_s());
  job.history.push_back(round);
  job.retries = stored->retries() + 1;
  for (auto& [partition, item] : journal_.Items(seq)) {
    if (item.state() != journal::Item::STATE_DONE) journal_.DeleteItem(seq, partition);
  }
  JobRecord& added = jobs_.Add(std::move(job));
  ResumeJob(added);
  JournalJob(added, proto::JOB_STATE_QUEUED, 0, "");
  ++counters_.jobs_retried;
  spdlog::info("job {} ({} of client {}): retry {} queued {} partitions", seq, added.request_id, added.client_id,
               added.retries, added.items.size() - added.items_done);
  reply_info();
}

void BrokerCore::OnCancel(const ReplyTo& from, const std::string& client, bool any_job,
                          const proto::CancelRequest& request, Clock::time_point now) {
  const uint64_t seq = request.job_seq();
  auto visible = [&](const std::string& owner) { return any_job || owner == client; };
  proto::Envelope reply;
  reply.set_correlation_id(from.correlation_id);
  if (JobRecord* job = jobs_.Find(seq)) {
    if (!visible(job->client_id)) return SendUnknownJob(from, seq);
    FinishJob(*job, proto::JOB_STATE_CANCELLED, "cancelled by its client", now);
    reply.mutable_cancel_reply()->set_cancelled(true);
    reply.mutable_cancel_reply()->set_state(proto::JOB_STATE_CANCELLED);
    return SendClient(from, std::move(reply));
  }
  std::optional<proto::JobState> ended;
  std::string owner;
  if (auto stored = journal_.GetJob(seq)) {
    ended = stored->state();
    owner = stored->client_id();
  } else if (auto stub = journal_.GetStub(seq)) {
    ended = stub->state();
    owner = stub->client_id();
  }
  if (!ended || !visible(owner)) return SendUnknownJob(from, seq);
  reply.mutable_cancel_reply()->set_cancelled(false);
  reply.mutable_cancel_reply()->set_state(*ended);
  SendClient(from, std::move(reply));
}

void BrokerCore::OnDrainWorker(const std::string& identity, uint64_t correlation,
                               const proto::DrainWorkerRequest& request) {
  WorkerRecord* worker = workers_.FindByWorkerId(request.worker_id());
  if (!worker) {
    return SendError({identity, correlation}, proto::ERROR_KIND_UNKNOWN_WORKER,
                     "no worker '" + request.worker_id() + "' is registered (see zkctl workers)");
  }
  // The broker's view changes now, before the next dispatch; the worker
  // confirms with a DRAINING heartbeat.
  SetWorkerState(*worker, proto::WORKER_STATE_DRAINING);
  proto::Envelope command;
  command.mutable_drain()->set_reason("zkctl drain");
  SendWorker(worker->identity, std::move(command));

  proto::Envelope reply;
  reply.set_correlation_id(correlation);
  reply.mutable_drain_worker_reply()->set_worker_id(worker->worker_id);
  *reply.mutable_drain_worker_reply()->mutable_phases() = {worker->phases.begin(), worker->phases.end()};
  SendClient({identity, correlation}, std::move(reply));
  if (request.wait()) worker->drain_waiters.push_back({identity, correlation});
  spdlog::info("worker {} draining on request", worker->worker_id);
}

void BrokerCore::OnUndrainWorker(const std::string& identity, uint64_t correlation,
                                 const proto::UndrainWorkerRequest& request) {
  const std::string& id = request.worker_id();
  WorkerRecord* worker = workers_.FindByWorkerId(id);
  auto held = held_states_.find(id);
  if (!worker && held == held_states_.end()) {
    if (auto left = departed_.find(id); left != departed_.end()) {
      return SendError({identity, correlation}, proto::ERROR_KIND_UNKNOWN_WORKER,
                       "worker '" + id + "' is not connected: it left (" + left->second +
                           "). A drained worker exits once its work is handed back and its memory released; start "
                           "it again (systemctl start zkworker@..., or its pod) and it registers READY. Undrain is for "
                           "a worker the broker holds DRAINING or FAULTED");
    }
    return SendError({identity, correlation}, proto::ERROR_KIND_UNKNOWN_WORKER,
                     "no worker '" + id + "' is registered or held (see zkctl workers)");
  }
  if (held != held_states_.end()) held_states_.erase(held);
  if (auto bound = worker_keys_.find(id); bound != worker_keys_.end()) faulted_keys_.erase(bound->second);
  proto::WorkerState state = proto::WORKER_STATE_UNSPECIFIED;
  strikes_.Clear(OwnerOf(id));
  if (worker && worker->reported_faulted) {
    // Its own engine faulted: it takes no work whatever the broker says
    // (zkctl says so, and that a restart of that worker clears it).
    spdlog::warn("worker {} undrained by an admin: the broker's holds and strikes are cleared, but the worker "
                 "reported its own engine FAULTED and stays so until it is restarted",
                 id);
  } else if (worker) {
    if (wire::DrainStep(worker->state) > 0 || worker->state == proto::WORKER_STATE_FAULTED) {
      spdlog::warn("worker {} undrained by an admin: {} -> READY", id, wire::WorkerStateName(worker->state));
      worker->state = proto::WORKER_STATE_READY;
      worker->phases.clear();
      // Its free queue slots, as far as the broker knows (the cap holds).
      const uint32_t cap = options_.max_credit_per_worker;
      const auto leased = static_cast<uint32_t>(std::min<size_t>(worker->leased.size(), cap));
      worker->credit = std::min(cap, worker->capacity) > leased ? std::min(cap, worker->capacity) - leased : 0;
    }
  }
  if (worker) state = worker->state;
  proto::Envelope reply;
  reply.set_correlation_id(correlation);
  reply.mutable_undrain_worker_reply()->set_worker_id(id);
  reply.mutable_undrain_worker_reply()->set_state(state);
  SendClient({identity, correlation}, std::move(reply));
}

void BrokerCore::SetAllowedKeys(std::set<std::string> worker_keys, std::set<std::string> client_keys,
                                Clock::time_point now) {
  allowed_worker_keys_ = std::move(worker_keys);
  allowed_client_keys_ = std::move(client_keys);
  std::vector<std::string> revoked;
  for (const auto& [identity, worker] : workers_.all()) {
    if (!worker.key_name.empty() && !allowed_worker_keys_->count(worker.key_name)) revoked.push_back(identity);
  }
  for (const std::string& identity : revoked) {
    WorkerRecord& worker = *workers_.Find(identity);
    counters_.leases_reclaimed += worker.leased.size();
    if (metrics_) {
      for (size_t i = 0; i < worker.leased.size(); ++i) metrics_->LeaseReclaimed(metrics::ReclaimReason::kRevoked);
    }
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("key '" + worker.key_name + "' was removed from the broker's allow-list");
    SendWorker(identity, std::move(bye));
    RemoveWorker(identity, "key '" + worker.key_name + "' removed from the allow-list", false, now, {},
                 /*charge_owner=*/false);
  }
}

}  // namespace zkfleet::broker

namespace zkfleet::broker {

void BrokerCore::SetVerificationKeys(std::shared_ptr<const VerificationKeys> keys) {
  options_.verification_keys = std::move(keys);
  for (auto& [identity, worker] : workers_.all()) DropCircuitsOfAnotherKind(worker);
}

void BrokerCore::TellWorkersToReload(const proto::ReloadRequest& request, proto::ReloadReply& reply) {
  std::set<std::string> asked(request.workers().begin(), request.workers().end());
  const bool every = asked.erase("*") > 0;
  for (auto& [identity, worker] : workers_.all()) {
    if (worker.state == proto::WORKER_STATE_GONE || (!every && !asked.count(worker.worker_id))) continue;
    asked.erase(worker.worker_id);
    proto::Envelope command;
    command.mutable_reload_command();
    SendWorker(identity, std::move(command));
    reply.add_workers_told(worker.worker_id);
  }
  for (const std::string& id : asked) reply.add_workers_unknown(id);
}

std::map<std::string, size_t> BrokerCore::LiveJobsByCircuit() const {
  std::map<std::string, size_t> live;
  for (const auto& [seq, job] : jobs_.all()) ++live[job.circuit_id];
  return live;
}

}  // namespace zkfleet::broker
