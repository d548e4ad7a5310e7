#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/broker/field_checks.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/storage/digest.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/wire/public_digest.hpp"
#include "zkfleet/wire/worker_state.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/io/json.hpp"

namespace zkfleet::broker {
namespace {

using wire::ItemRef;
using wire::WorkKey;

constexpr uint64_t kMaxCredit = 1u << 20;
// Longest gap between two updates of the queue and worker gauges.
constexpr Clock::duration kMaxGaugePeriod = std::chrono::seconds(1);
// Journal records looked at per tick by each retention sweep.
constexpr size_t kExpiryBudget = 100000;
// The identity of a client that did not name itself.
constexpr char kAnonymousClient[] = "anonymous";

std::string ItemName(uint64_t job_seq, uint32_t partition) {
  return "job_seq=" + std::to_string(job_seq) + " partition=" + std::to_string(partition);
}

std::string LeaseName(const proto::Lease& lease) {
  return std::to_string(lease.epoch()) + "." + std::to_string(lease.number());
}

bool SameLease(const proto::Lease& a, const proto::Lease& b) {
  return a.epoch() == b.epoch() && a.number() == b.number() && a.number() != 0;
}

// What makes a resubmission "the same request": the circuit and every
// witness byte (lengths included, so partitions cannot shift).
std::string PayloadHash(const proto::SubmitRequest& request, const std::vector<fleet::WitnessFrames>& witnesses) {
  storage::Digest128 digest;
  digest.AddSize(request.circuit_id().size()).Add(request.circuit_id().data(), request.circuit_id().size());
  for (const fleet::WitnessFrames& witness : witnesses) digest.AddSize(witness.size()).Add(fleet::ChunkViews(witness));
  return digest.Finish();
}

// A witness from the journal as frames to send: a mapped witness file cut
// into chunks (no copy), bytes from the store as one frame (copied).
fleet::WitnessFrames FramesOf(storage::StoredWitness stored) {
  if (stored.mapped()) {
    const storage::StoredWitness::Mapping mapping = stored.ReleaseMapping();
    if (mapping.size == 0) return {};
    return fleet::ChunkWitness(fleet::FrameFromMapping(mapping.base, mapping.size));
  }
  fleet::WitnessFrames witness;
  witness.chunks.emplace_back(stored.bytes().data(), stored.bytes().size());
  return witness;
}

}  // namespace

BrokerCore::BrokerCore(BrokerOptions options, Journal& journal, metrics::BrokerMetrics* metrics)
    : options_(std::move(options)), journal_(journal), admission_(options_.admission), metrics_(metrics) {
  epoch_ = journal_.BeginLife();
  Recover(Clock::now());
}

BrokerCore::BrokerCore(BrokerOptions options, Journal& journal, metrics::BrokerMetrics* metrics, const Resume& resume)
    : options_(std::move(options)), journal_(journal), admission_(options_.admission), metrics_(metrics) {
  epoch_ = resume.epoch;
  next_lease_ = resume.next_lease;
  next_verify_id_ = resume.next_verify_id;
  counters_ = resume.counters;
  allowed_worker_keys_ = resume.worker_keys;
  allowed_client_keys_ = resume.client_keys;
  counters_.jobs_recovered = 0;
  counters_.leases_recovered = 0;
  Recover(Clock::now());
  // Clients waiting on live connections wait on: each gets its result once.
  for (const auto& [seq, waiters] : resume.waiters) {
    if (JobRecord* job = jobs_.Find(seq)) {
      job->waiters.insert(job->waiters.end(), waiters.begin(), waiters.end());
      continue;
    }
    proto::Envelope result;
    if (!LoadResult(seq, result.mutable_job_result())) continue;
    for (const ReplyTo& waiter : waiters) {
      result.set_correlation_id(waiter.correlation_id);
      SendClient(waiter, result);
    }
  }
}

BrokerCore::Resume BrokerCore::ResumeState() const {
  Resume resume{epoch_, next_lease_, next_verify_id_, counters_, allowed_worker_keys_, allowed_client_keys_, {}};
  for (const auto& [seq, job] : jobs_.all()) {
    if (!job.waiters.empty()) resume.waiters[seq] = job.waiters;
  }
  return resume;
}

bool BrokerCore::InKnownCircuitGrace(const std::string& circuit, Clock::time_point now) const {
  return known_circuits_.count(circuit) && life_began_ && now - *life_began_ < options_.KnownCircuitGrace();
}

void BrokerCore::RememberCircuits(const std::set<std::string>& circuits) {
  for (const std::string& circuit : circuits) {
    if (known_circuits_.size() >= kMaxKnownCircuits) return;
    // A journal write only for a circuit new to this journal.
    if (known_circuits_.insert(circuit).second) journal_.RememberCircuit(circuit);
  }
}

void BrokerCore::Recover(Clock::time_point now) {
  for (std::string& circuit : journal_.KnownCircuits()) {
    if (known_circuits_.size() < kMaxKnownCircuits) known_circuits_.insert(std::move(circuit));
  }
  double now_unix = fleet::UnixNow();
  std::vector<uint64_t> live;
  journal_.ForEachJob([&](const journal::Job& stored) {
    if (wire::IsTerminal(stored.state())) return;
    JobRecord job;
    job.job_seq = stored.job_seq();
    job.client_id = stored.client_id();
    job.request_id = stored.request_id();
    job.circuit_id = stored.circuit_id();
    job.priority = stored.priority();
    job.witness_bytes = stored.witness_bytes();
    job.payload_hash = stored.payload_hash();
    job.submitted_unix_s = stored.submitted_unix_s();
    job.deadline_unix_s = stored.deadline_unix_s();
    // Steady-clock times do not survive a restart; rebuild from the wall clock.
    job.submitted_at = now - std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(std::max(0.0, now_unix - stored.submitted_unix_s())));
    job.items.resize(stored.partitions());
    uint64_t per_item = stored.partitions() ? stored.witness_bytes() / stored.partitions() : 0;
    for (auto& item : job.items) item.witness_bytes = per_item;
    jobs_.Add(std::move(job));
    live.push_back(stored.job_seq());
  });
  for (uint64_t seq : live) {
    JobRecord& job = *jobs_.Find(seq);
    for (auto& [partition, stored] : journal_.Items(seq)) {
      if (partition >= job.items.size()) continue;
      WorkItem& item = job.items[partition];
      item.attempts = stored.attempts();
      item.failed_on = stored.failed_on();
      switch (stored.state()) {
        case journal::Item::STATE_DONE:
          item.state = WorkItem::State::kDone;
          ++job.items_done;
          break;
        case journal::Item::STATE_DROPPED: item.state = WorkItem::State::kDropped; break;
        case journal::Item::STATE_STARTED:
          // Its worker may still be proving it: the lease waits for that
          // worker's READY (which lists it) until the liveness window ends.
          item.state = WorkItem::State::kLeased;
          item.started = true;
          item.ever_leased = true;
          item.lease = stored.lease();
          item.lease_worker_id = stored.worker_id();
          item.orphan_until = {};  // the window starts at the first Tick (the loop is serving then)
          orphans_[stored.worker_id()][{seq, partition}] = stored.lease();
          // Only the key that held it may claim it back.
          if (!stored.worker_key().empty()) worker_keys_.emplace(stored.worker_id(), stored.worker_key());
          ++counters_.leases_recovered;
          break;
        default: break;
      }
    }
    job.state = proto::JOB_STATE_QUEUED;
    for (uint32_t p = 0; p < job.items.size(); ++p) {
      const WorkItem& item = job.items[p];
      if (item.state == WorkItem::State::kQueued) queue_.Insert(job.circuit_id, job.key(p));
      if (item.state != WorkItem::State::kQueued) job.state = proto::JOB_STATE_RUNNING;
    }
    admission_.Add(job.client_id, job.items.size(), job.witness_bytes);
    if (job.deadline_unix_s > 0) deadlines_.insert({job.deadline_unix_s, seq});
    ++counters_.jobs_recovered;
  }
  spdlog::info("journal {}: broker epoch {}, next job_seq {}, {} live jobs recovered ({} items queued, {} started "
               "leases waiting for their workers)",
               journal_.options().dir.string(), epoch_, journal_.next_job_seq(), counters_.jobs_recovered,
               queue_.size(), counters_.leases_recovered);
}

void BrokerCore::CountDroppedFrame(metrics::DropReason reason) {
  switch (reason) {
    case metrics::DropReason::kMalformed: ++counters_.frames_malformed; break;
    case metrics::DropReason::kOversized: ++counters_.frames_oversized; break;
    case metrics::DropReason::kVersion: ++counters_.frames_wrong_version; break;
  }
  if (metrics_) metrics_->MessageDropped(reason);
}

// ------------------------------------------------------------------ journal

void BrokerCore::JournalJob(const JobRecord& job, proto::JobState state, double finished_unix_s,
                            const std::string& error) {
  journal::Job stored;
  stored.set_job_seq(job.job_seq);
  stored.set_client_id(job.client_id);
  stored.set_request_id(job.request_id);
  stored.set_circuit_id(job.circuit_id);
  stored.set_priority(job.priority);
  stored.set_state(state);
  stored.set_partitions(static_cast<uint32_t>(job.items.size()));
  stored.set_submitted_unix_s(job.submitted_unix_s);
  stored.set_deadline_unix_s(job.deadline_unix_s);
  stored.set_finished_unix_s(finished_unix_s);
  stored.set_error(error);
  stored.set_witness_bytes(job.witness_bytes);
  stored.set_payload_hash(job.payload_hash);
  journal_.PutJob(stored);
}

void BrokerCore::JournalItem(const JobRecord& job, uint32_t partition, const proto::PartitionResult* result) {
  const WorkItem& item = job.items[partition];
  journal::Item stored;
  stored.set_attempts(item.attempts);
  stored.set_failed_on(item.failed_on);
  switch (item.state) {
    case WorkItem::State::kDone:
      stored.set_state(journal::Item::STATE_DONE);
      if (result) *stored.mutable_result() = *result;
      break;
    case WorkItem::State::kDropped: stored.set_state(journal::Item::STATE_DROPPED); break;
    case WorkItem::State::kLeased:
      stored.set_state(item.started ? journal::Item::STATE_STARTED : journal::Item::STATE_QUEUED);
      if (item.started) {
        *stored.mutable_lease() = item.lease;
        stored.set_worker_id(item.lease_worker_id);
        if (auto bound = worker_keys_.find(item.lease_worker_id); bound != worker_keys_.end()) {
          stored.set_worker_key(bound->second);
        }
      }
      break;
    case WorkItem::State::kQueued: stored.set_state(journal::Item::STATE_QUEUED); break;
  }
  journal_.PutItem(job.job_seq, partition, stored);
}

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
    case proto::Envelope::kDrainWorker:
      if (allowed({Role::kAdmin}, "DRAIN")) OnDrainWorker(identity, from.correlation_id, message.drain_worker());
      break;
    case proto::Envelope::kUndrainWorker:
      if (allowed({Role::kAdmin}, "UNDRAIN")) {
        OnUndrainWorker(identity, from.correlation_id, message.undrain_worker());
      }
      break;
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
                                                                const std::vector<fleet::WitnessFrames>& witnesses) const {
  const auto& digests = request.public_signals_sha256();
  if (digests.empty()) return std::nullopt;
  if (static_cast<size_t>(digests.size()) != witnesses.size()) {
    return "public_signals_sha256 has " + std::to_string(digests.size()) + " digests for " +
           std::to_string(witnesses.size()) + " witnesses: send one per partition, or none";
  }
  for (int p = 0; p < digests.size(); ++p) {
    if (digests[p].size() != wire::kPublicDigestBytes) {
      return "public_signals_sha256 of partition " + std::to_string(p) + " is " + std::to_string(digests[p].size()) +
             " bytes; a SHA-256 digest is 32";
    }
  }
  // Without the key the broker does not know how many public signals the
  // circuit has (nor checks proofs at all: --unverified-circuits).
  const auto* key = options_.verification_keys ? options_.verification_keys->Find(request.circuit_id()) : nullptr;
  if (!key) return std::nullopt;
  for (int p = 0; p < digests.size(); ++p) {
    std::string why;
    auto values = PublicSignalsOfWitness(witnesses[p], key->n_public, &why);
    if (!values) return "the witness of partition " + std::to_string(p) + " cannot be read: " + why;
    std::vector<std::string> decimal;
    for (const groth16::BigInt& value : *values) decimal.push_back(io::LimbsToDecimal(value.data(), static_cast<int>(value.size())));
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
  if (request.request_id().empty()) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without request_id");
  for (int p = 0; p < request.witness_bytes_size(); ++p) {
    if (request.witness_bytes(p) > options_.limits.max_witness_bytes) {
      return refuse(proto::ERROR_KIND_TOO_LARGE, "witness of partition " + std::to_string(p) + " is " +
                                                     std::to_string(request.witness_bytes(p)) +
                                                     " bytes; the broker accepts at most " +
                                                     std::to_string(options_.limits.max_witness_bytes) +
                                                     " (--max-witness-bytes)");
    }
  }
  uint64_t submit_bytes = 0;
  for (uint64_t bytes : request.witness_bytes()) submit_bytes += bytes;
  if (const uint64_t bound = IngressBounds::From(options_).per_client_connection; submit_bytes > bound) {
    // Larger ones cannot even arrive whole: the ingress guard cuts the
    // connection first. This answer is for one that slipped between its looks.
    return refuse(proto::ERROR_KIND_TOO_LARGE, "SUBMIT carries " + std::to_string(submit_bytes) +
                                                   " witness bytes; a connection may hold at most " +
                                                   std::to_string(bound) +
                                                   " unread (--max-held-bytes-per-connection): split the job");
  }
  std::string why;
  auto split = fleet::SplitWitnesses(std::move(frames), {request.witness_bytes().begin(), request.witness_bytes().end()},
                                     &why);
  if (!split) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT witness frames do not match witness_bytes: " + why);
  std::vector<fleet::WitnessFrames>& witnesses = *split;
  const std::string payload_hash = PayloadHash(request, witnesses);

  // Idempotency: a known (client, request id) returns the existing job, never
  // a new one -- unless that job's result passed the retention: then the same
  // witnesses prove it again (a new job under the same request id), so a
  // request id is never stuck without a proof for the rest of the dedup window.
  if (auto known = journal_.GetRequest(client, request.request_id())) {
    // The journal is read for the job only when the answer could change it.
    const bool prove_again = !witnesses.empty() && known->payload_hash() == payload_hash &&
                             !jobs_.Find(known->job_seq()) && !journal_.GetJob(known->job_seq());
    // A SUBMIT without witnesses only looks the request up (zkctl submit --request-id R).
    if (!prove_again) {
      return OnDuplicateSubmit(from, *known, witnesses.empty() ? known->payload_hash() : payload_hash);
    }
  }

  if (unavailable_) {
    return refuse(proto::ERROR_KIND_UNAVAILABLE,
                  "the broker takes no new work now: " + *unavailable_ +
                      "; nothing was accepted, retry later with the same request id",
                  static_cast<uint32_t>(options_.busy_retry_after.count()));
  }
  if (witnesses.empty() && !request.request_id().empty()) {
    // A lookup (zkctl submit --request-id R, no witness) of a request this
    // client never made, or whose dedup window has passed.
    return refuse(proto::ERROR_KIND_UNKNOWN_JOB,
                  "request id '" + request.request_id() +
                      "' is not known to the broker (never submitted by you, or past the dedup window): submit it "
                      "with its witnesses");
  }
  if (request.circuit_id().empty()) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without circuit_id");
  if (witnesses.empty()) return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT without witnesses");
  if (witnesses.size() > options_.max_partitions) {
    return refuse(proto::ERROR_KIND_BAD_REQUEST, "SUBMIT with " + std::to_string(witnesses.size()) +
                                                     " witnesses; at most " + std::to_string(options_.max_partitions));
  }
  proto::Priority priority = request.priority();
  if (priority == proto::PRIORITY_UNSPECIFIED) priority = proto::PRIORITY_NORMAL;
  if (!proto::Priority_IsValid(priority)) {
    return refuse(proto::ERROR_KIND_BAD_REQUEST, "unknown priority value " + std::to_string(priority));
  }
  if (!std::isfinite(request.deadline_unix_s()) || request.deadline_unix_s() < 0) {
    return refuse(proto::ERROR_KIND_BAD_REQUEST, "deadline_unix_s must be a time since the epoch, or 0 for none");
  }
  // Just after a restart the fleet is still reconnecting: a circuit the
  // journal knows is queued for its worker, not refused for good.
  if (!options_.accept_unrouted && !workers_.AnyHolds(request.circuit_id()) &&
      !InKnownCircuitGrace(request.circuit_id(), now)) {
    return refuse(proto::ERROR_KIND_UNKNOWN_CIRCUIT,
                  "no worker has announced circuit '" + request.circuit_id() +
                      "' (start a worker with it, or run the broker with --accept-unrouted)");
  }
  const bool has_key = options_.verification_keys && options_.verification_keys->Find(request.circuit_id());
  if (!has_key && !options_.unverified_circuits.count(request.circuit_id()) && !options_.unverified_circuits.count("*")) {
    return refuse(proto::ERROR_KIND_UNKNOWN_CIRCUIT,
                  "the broker has no verification key for circuit '" + request.circuit_id() +
                      "', so it could not check the proof (zkbroker --verification-key " + request.circuit_id() +
                      "=verification_key.json)");
  }
  if (auto why = CheckPublicSignalsDigests(request, witnesses)) return refuse(proto::ERROR_KIND_BAD_REQUEST, *why);
  uint64_t witness_bytes = 0;
  for (const fleet::WitnessFrames& witness : witnesses) witness_bytes += witness.size();
  if (auto why = admission_.Refusal(client, witnesses.size(), witness_bytes)) {
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
  job.submitted_unix_s = fleet::UnixNow();
  job.deadline_unix_s = request.deadline_unix_s();
  job.witness_bytes = witness_bytes;
  job.payload_hash = payload_hash;
  job.items.resize(witnesses.size());
  // Durable before the reply: the witnesses (written once, from the received
  // frames), the job and its request id go into this turn's transaction, and
  // the server sends the reply after the commit.
  for (uint32_t p = 0; p < witnesses.size(); ++p) {
    job.items[p].witness_bytes = witnesses[p].size();
    journal_.PutWitness(job.job_seq, p, fleet::ChunkViews(witnesses[p]));
  }
  JournalJob(job, proto::JOB_STATE_QUEUED, 0, "");
  journal::Request index;
  index.set_job_seq(job.job_seq);
  index.set_payload_hash(payload_hash);
  index.set_submitted_unix_s(job.submitted_unix_s);
  journal_.PutRequest(client, job.request_id, index);

  JobRecord& added = jobs_.Add(std::move(job));
  for (uint32_t p = 0; p < added.items.size(); ++p) queue_.Insert(added.circuit_id, added.key(p));
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
    return SendError({identity, correlation}, proto::ERROR_KIND_UNKNOWN_WORKER,
                     "no worker '" + id + "' is registered or held (see zkctl workers)");
  }
  if (held != held_states_.end()) held_states_.erase(held);
  if (auto bound = worker_keys_.find(id); bound != worker_keys_.end()) faulted_keys_.erase(bound->second);
  proto::WorkerState state = proto::WORKER_STATE_UNSPECIFIED;
  if (worker) {
    worker->strikes = 0;
    if (wire::DrainStep(worker->state) > 0 || worker->state == proto::WORKER_STATE_FAULTED) {
      spdlog::warn("worker {} undrained by an admin: {} -> READY", id, wire::WorkerStateName(worker->state));
      worker->state = proto::WORKER_STATE_READY;
      worker->phases.clear();
      // Its free queue slots, as far as the broker knows (the cap holds).
      const uint32_t cap = options_.max_credit_per_worker;
      const auto leased = static_cast<uint32_t>(std::min<size_t>(worker->leased.size(), cap));
      worker->credit = std::min(cap, worker->capacity) > leased ? std::min(cap, worker->capacity) - leased : 0;
    }
    state = worker->state;
  }
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
    RemoveWorker(identity, "key '" + worker.key_name + "' removed from the allow-list", false, now);
  }
}

// ------------------------------------------------------------------ workers

void BrokerCore::HandleWorker(const std::string& identity, proto::Envelope& message, Clock::time_point now,
                              const Peer& peer) {
  NoteTime(now);
  if (peer.authenticated && allowed_worker_keys_ && !allowed_worker_keys_->count(peer.key_name)) {
    // A connection made before its key was removed: cut off.
    if (!message.has_disconnect()) {
      proto::Envelope bye;
      bye.mutable_disconnect()->set_reason("key '" + peer.key_name + "' was removed from the broker's allow-list");
      SendWorker(identity, std::move(bye));
    }
    return;
  }
  if (auto why = WorkerMessageProblem(message, options_.fields)) {
    ++counters_.fields_refused;
    CountDroppedFrame(metrics::DropReason::kMalformed);
    WorkerRecord* sender = workers_.Find(identity);
    spdlog::warn("refused a message from worker {} ({}): {}", sender ? sender->worker_id : identity.size() ? "?" : "",
                 peer.authenticated ? "key " + peer.key_name : "plaintext", *why);
    if (message.has_ready()) {
      return RefuseRegistration(identity, "", peer, "READY refused: " + *why);
    }
    if (!sender) return;
    sender->last_seen = now;
    if (message.has_result()) {
      // An answer to its lease that the broker cannot store: its fault.
      if (JobRecord* job = LiveLease(*sender, message.result().item())) {
        const ItemRef ref = wire::FromProto(message.result().item());
        TakeAnswer(*sender, *job, ref, now);
        return RejectResult(sender->worker_id, *job, ref.partition, metrics::ResultRejectReason::kMalformed,
                            "RESULT refused: " + *why, now);
      }
    }
    return Strike(*sender, "sent a message over a bound: " + *why, now);
  }
  if (message.has_ready()) return OnReady(identity, message.ready(), peer, now);

  WorkerRecord* worker = workers_.Find(identity);
  if (!worker) {
    // Not registered (declared dead, or the broker restarted): tell it to
    // start over, as Majordomo does. Its READY will list what it still proves.
    if (message.has_result()) {
      ++counters_.results_stale;
      if (metrics_) metrics_->ResultStale();
    }
    if (!message.has_disconnect()) {
      proto::Envelope reply;
      reply.mutable_disconnect()->set_reason("not registered with this broker; reconnect and send READY");
      SendWorker(identity, std::move(reply));
    }
    return;
  }
  worker->last_seen = now;  // any message counts as liveness
  switch (message.body_case()) {
    case proto::Envelope::kCredit: {
      // The broker decides: leased + credit never exceeds its cap, whatever
      // the worker announces (a hoarder gets no more than an honest worker).
      if (wire::DrainStep(worker->state) > 0 || worker->state == proto::WORKER_STATE_FAULTED) break;
      const uint64_t cap = std::min<uint64_t>(options_.max_credit_per_worker, kMaxCredit);
      const uint64_t room = cap > worker->leased.size() ? cap - worker->leased.size() : 0;
      uint64_t credit = uint64_t{worker->credit} + message.credit().credits();
      worker->credit = static_cast<uint32_t>(std::min(credit, room));
      break;
    }
    case proto::Envelope::kHeartbeat: {
      const auto& beat = message.heartbeat();
      worker->queue_depth = beat.queue_depth();
      worker->reported_in_flight = beat.in_flight();
      worker->memory = beat.memory();
      OnWorkerState(*worker, beat.state(), now);
      break;
    }
    case proto::Envelope::kStarted: OnStarted(*worker, message.started(), now); break;
    case proto::Envelope::kResult: OnResult(*worker, *message.mutable_result(), now); break;
    case proto::Envelope::kHandback: OnHandback(*worker, message.handback(), now); break;
    case proto::Envelope::kDisconnect: {
      const std::string id = worker->worker_id;
      RemoveWorker(identity, "disconnected: " + message.disconnect().reason(), /*graceful=*/true, now);
      ForgetDrainHold(id);
      break;
    }
    default:
      CountDroppedFrame(metrics::DropReason::kMalformed);
      spdlog::warn("worker {} sent a message of type {} that workers do not send; dropped", worker->worker_id,
                   static_cast<int>(message.body_case()));
  }
}

void BrokerCore::OnReady(const std::string& identity, const proto::Ready& ready, const Peer& peer,
                         Clock::time_point now) {
  const std::string& id = ready.worker_id();
  const std::string key = peer.authenticated ? peer.key_name : "";
  // A worker is its key: an id first registered by one key is that key's.
  if (auto bound = worker_keys_.find(id); bound != worker_keys_.end() && bound->second != key) {
    return RefuseRegistration(identity, id, peer,
                              "worker id '" + id + "' belongs to another key; start this worker with an --id of "
                              "its own");
  }
  // One live process per worker id: a second one is refused (no ping-pong).
  // A restarted worker takes over once its old connection has been silent
  // for a heartbeat interval (it retries after this refusal).
  if (WorkerRecord* live = workers_.FindByWorkerId(id); live && live->identity != identity) {
    const auto silent = now - live->last_seen;
    if (silent < options_.heartbeat_interval + options_.heartbeat_interval / 2) {
      return RefuseRegistration(
          identity, id, peer,
          "worker '" + id + "' is already connected (heard from " +
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(silent).count()) +
              " ms ago); a second process with the same id is refused");
    }
  }
  // What the worker says it is still proving, under which lease.
  std::map<ItemRef, proto::Lease> claimed;
  for (const proto::WorkItemRef& ref : ready.in_progress()) claimed[wire::FromProto(ref)] = ref.lease();
  auto claims = [&](const ItemRef& ref, const proto::Lease& lease) {
    auto it = claimed.find(ref);
    return it != claimed.end() && SameLease(it->second, lease);
  };

  // A READY on a known connection, or from a worker id registered on another
  // connection, starts a new incarnation: its claimed leases carry over, the
  // others go back to the queue.
  std::map<ItemRef, proto::Lease> kept;
  auto keep_claimed = [&](const std::string& old_identity, const std::string& why) {
    std::map<ItemRef, proto::Lease> keep;
    if (WorkerRecord* old = workers_.Find(old_identity)) {
      for (const auto& [ref, lease] : old->leased) {
        if (claims(ref, lease)) keep[ref] = lease;
      }
    }
    kept.merge(RemoveWorker(old_identity, why, false, now, keep));
  };
  if (workers_.Find(identity)) keep_claimed(identity, "sent READY again");
  if (WorkerRecord* old = workers_.FindByWorkerId(ready.worker_id())) {
    keep_claimed(old->identity, "reconnected on a new connection");
  }
  WorkerRecord& worker = workers_.Add(identity, ready.worker_id());
  if (peer.authenticated) worker_keys_.emplace(id, key);
  worker.key_name = peer.key_name;
  worker.host = ready.host();
  worker.backend = ready.backend();
  worker.circuits = {ready.circuits().begin(), ready.circuits().end()};
  RememberCircuits(worker.circuits);
  worker.capacity = ready.capacity();
  worker.state = ready.state() == proto::WORKER_STATE_UNSPECIFIED ? proto::WORKER_STATE_READY : ready.state();
  worker.memory = ready.memory();
  worker.last_seen = now;
  worker.last_progress = now;
  // States the broker holds are not the worker's to leave.
  if (auto held = held_states_.find(id); held != held_states_.end()) {
    if (wire::DrainStep(worker.state) == 0 || held->second == proto::WORKER_STATE_FAULTED) {
      worker.state = held->second;
    }
  } else if (!key.empty() && faulted_keys_.count(key)) {
    worker.state = proto::WORKER_STATE_FAULTED;
    held_states_[id] = proto::WORKER_STATE_FAULTED;
  }
  if (worker.state == proto::WORKER_STATE_FAULTED || wire::DrainStep(worker.state) > 0) worker.credit = 0;

  // Leases recovered from the journal for this worker_id: claimed ones are
  // its again, the rest go back (they had started: each counted an attempt).
  if (auto orphaned = orphans_.find(ready.worker_id()); orphaned != orphans_.end()) {
    std::map<ItemRef, proto::Lease> leases = std::move(orphaned->second);
    orphans_.erase(orphaned);
    for (const auto& [ref, lease] : leases) {
      JobRecord* job = jobs_.Find(ref.job_seq);
      if (!job || ref.partition >= job->items.size()) continue;
      WorkItem& item = job->items[ref.partition];
      if (item.state != WorkItem::State::kLeased || !item.worker_identity.empty() || !SameLease(item.lease, lease)) {
        continue;
      }
      if (claims(ref, lease)) {
        kept[ref] = lease;
      } else {
        ReturnItem(*job, ref.partition, "worker " + ready.worker_id() + " came back without it", now,
                   ready.worker_id());
      }
    }
  }
  for (const auto& [ref, lease] : kept) {
    JobRecord* job = jobs_.Find(ref.job_seq);
    if (!job) continue;
    WorkItem& item = job->items[ref.partition];
    item.worker_identity = identity;
    item.lease_worker_id = worker.worker_id;
    worker.leased[ref] = lease;
  }
  if (metrics_) {
    // Per-circuit series exist from the first scrape, before any job.
    for (const std::string& circuit : worker.circuits) metrics_->ForCircuit(circuit);
  }
  spdlog::info("worker {} registered: key={} host={} backend={} capacity={} state={} circuits={}{}", worker.worker_id,
               peer.authenticated ? peer.key_name : "(plaintext)", worker.host, worker.backend, worker.capacity,
               wire::WorkerStateName(worker.state),
               fmt::join(worker.circuits, ","),
               kept.empty() ? "" : "; still proving " + std::to_string(kept.size()) + " leased item(s)");
}

void BrokerCore::RefuseRegistration(const std::string& identity, const std::string& worker_id, const Peer& peer,
                                    const std::string& why) {
  ++counters_.registrations_refused;
  if (metrics_) metrics_->RegistrationRefused();
  spdlog::warn("refused the registration of worker '{}' (key {}): {}", worker_id,
               peer.authenticated ? peer.key_name : "(plaintext)", why);
  proto::Envelope reply;
  reply.mutable_disconnect()->set_reason("registration refused: " + why);
  SendWorker(identity, std::move(reply));
}

void BrokerCore::Strike(WorkerRecord& worker, const std::string& why, Clock::time_point now) {
  ++worker.strikes;
  spdlog::warn("worker {} (key {}): strike {} of {}: {}", worker.worker_id, worker.key_name, worker.strikes,
               options_.strikes_to_fault, why);
  if (worker.strikes < options_.strikes_to_fault || worker.state == proto::WORKER_STATE_FAULTED) return;
  SetWorkerState(worker, proto::WORKER_STATE_FAULTED);
  // The broker's verdict: it holds for this id and every id of this key
  // (a new process or a new --id does not clear it; zkctl undrain does).
  held_states_[worker.worker_id] = proto::WORKER_STATE_FAULTED;
  if (!worker.key_name.empty()) faulted_keys_.insert(worker.key_name);
  ReturnAllLeases(worker, "worker " + worker.worker_id + " is FAULTED (" + why + ")", now);
}

void BrokerCore::ReturnAllLeases(WorkerRecord& worker, const std::string& why, Clock::time_point now) {
  std::map<ItemRef, proto::Lease> leased = std::move(worker.leased);
  worker.leased.clear();
  for (const auto& [ref, lease] : leased) {
    if (JobRecord* job = jobs_.Find(ref.job_seq)) {
      ReturnItem(*job, ref.partition, why, now, worker.worker_id, /*refund_attempt=*/true);
    }
  }
}

void BrokerCore::ForgetDrainHold(const std::string& worker_id) {
  auto held = held_states_.find(worker_id);
  if (held != held_states_.end() && held->second != proto::WORKER_STATE_FAULTED) held_states_.erase(held);
}

void BrokerCore::OnWorkerState(WorkerRecord& worker, proto::WorkerState reported, Clock::time_point now) {
  if (reported == proto::WORKER_STATE_UNSPECIFIED || reported == worker.state) return;
  SetWorkerState(worker, reported);
  if (worker.state != proto::WORKER_STATE_FAULTED || worker.leased.empty()) return;
  // Its engine is not to be trusted: everything it holds goes back, and the
  // item it was proving, if any, is not the item's fault: its attempt is refunded.
  ReturnAllLeases(worker, "worker " + worker.worker_id + " is FAULTED", now);
}

void BrokerCore::SetWorkerState(WorkerRecord& worker, proto::WorkerState state) {
  if (wire::DrainStep(worker.state) > 0 && wire::DrainStep(state) <= wire::DrainStep(worker.state)) return;
  // FAULTED is left only on the way out (drain, disconnect), never back to READY.
  if (worker.state == proto::WORKER_STATE_FAULTED && wire::DrainStep(state) == 0) return;
  if (state == proto::WORKER_STATE_FAULTED) {
    // A worker that reports its own engine FAULTED exits; restarted, it may
    // serve again. FAULTED for the broker's own reasons is held (Strike).
  } else if (wire::DrainStep(state) > 0 && wire::DrainStep(state) < wire::DrainStep(proto::WORKER_STATE_GONE) &&
             held_states_[worker.worker_id] != proto::WORKER_STATE_FAULTED) {
    held_states_[worker.worker_id] = proto::WORKER_STATE_DRAINING;
  }
  if (state == proto::WORKER_STATE_FAULTED) {
    worker.credit = 0;  // nothing more is routed to a faulted worker
    spdlog::error("worker {} ({} on {}) is FAULTED: no more work is routed to it", worker.worker_id, worker.backend,
                  worker.host);
  }
  double now_s = fleet::UnixNow();
  if (wire::DrainStep(state) > 0) {
    if (!worker.phases.empty()) {
      auto& last = worker.phases.back();
      last.set_duration_s(now_s - last.started_unix_s());
    }
    proto::DrainPhase phase;
    phase.set_state(state);
    phase.set_started_unix_s(now_s);
    worker.phases.push_back(phase);
    worker.credit = 0;  // nothing more is routed to a draining worker
  }
  spdlog::info("worker {} state {} -> {}", worker.worker_id, wire::WorkerStateName(worker.state),
               wire::WorkerStateName(state));
  worker.state = state;
}

JobRecord* BrokerCore::LiveLease(WorkerRecord& worker, const proto::WorkItemRef& wire) {
  ItemRef ref = wire::FromProto(wire);
  auto held = worker.leased.find(ref);
  if (held == worker.leased.end() || !SameLease(held->second, wire.lease())) return nullptr;
  JobRecord* job = jobs_.Find(ref.job_seq);
  if (!job || ref.partition >= job->items.size()) return nullptr;
  const WorkItem& item = job->items[ref.partition];
  if (item.state != WorkItem::State::kLeased || item.worker_identity != worker.identity ||
      !SameLease(item.lease, wire.lease())) {
    return nullptr;
  }
  return job;
}

void BrokerCore::MarkStarted(JobRecord& job, uint32_t partition, Clock::time_point now) {
  WorkItem& item = job.items[partition];
  if (item.started) return;
  item.started = true;
  item.started_at = now;
  ++item.attempts;
  JournalItem(job, partition);  // not waited for: losing it only under-counts an attempt
}

void BrokerCore::OnStarted(WorkerRecord& worker, const proto::Started& started, Clock::time_point now) {
  for (const proto::WorkItemRef& wire : started.items()) {
    if (JobRecord* job = LiveLease(worker, wire)) {
      if (!job->items[wire.partition()].started) worker.last_progress = now;
      MarkStarted(*job, wire.partition(), now);
    }
  }
}

void BrokerCore::OnResult(WorkerRecord& worker, proto::Result& result, Clock::time_point now) {
  const proto::WorkItemRef& wire = result.item();
  ItemRef ref = wire::FromProto(wire);
  JobRecord* job = LiveLease(worker, wire);
  bool confused = job && (result.circuit_id() != job->circuit_id || result.request_id() != job->request_id);
  if (!job || confused) {
    // Only the live lease's holder may answer, for that lease's job. Anything
    // else (an old lease, an earlier broker life, a worker declared dead, a
    // duplicate, a mix-up) is dropped: it can never become another job's proof.
    auto held = worker.leased.find(ref);
    bool ended_meanwhile = held != worker.leased.end() && SameLease(held->second, wire.lease()) && !jobs_.Find(ref.job_seq);
    if (ended_meanwhile) {
      worker.leased.erase(held);  // the job was cancelled or failed meanwhile: the answer is moot
      return;
    }
    ++counters_.results_stale;
    if (metrics_) metrics_->ResultStale();
    spdlog::warn("dropped a stale result from worker {} for {} lease {}{}", worker.worker_id,
                 ItemName(ref.job_seq, ref.partition), LeaseName(wire.lease()),
                 confused ? " (circuit or request id do not match the leased job)" : "");
    return;
  }
  worker.last_progress = now;
  WorkItem& item = TakeAnswer(worker, *job, ref, now);
  if (result.ok()) {
    proto::PartitionResult out;
    out.set_partition(ref.partition);
    out.set_proof_json(std::move(*result.mutable_proof_json()));
    out.set_public_json(std::move(*result.mutable_public_json()));
    *out.mutable_timings() = result.timings();
    out.set_worker_id(worker.worker_id);
    out.set_attempts(item.attempts);
    const VerificationKeys::Entry* key =
        options_.verification_keys ? options_.verification_keys->Find(job->circuit_id) : nullptr;
    if (!key) return AcceptResult(*job, ref.partition, worker.worker_id, std::move(out), now);
    // The broker checks the proof before it stores it: off this thread.
    if (item.expected_public.empty() && key->n_public > 0) {
      // Leased in an earlier broker life: read what its witness commits to
      // now. Without it nothing can be checked: fail closed, as the broker's
      // storage fault (not the worker's, not the client's).
      std::string fault = "its public signals cannot be read", why;
      if (auto stored = journal_.ReadWitness(job->job_seq, ref.partition, &fault)) {
        if (auto values = PublicSignalsOfWitness(FramesOf(std::move(*stored)), key->n_public, &why)) {
          item.expected_public = *values;
        }
        fault = why;
      }
      if (item.expected_public.empty()) {
        ++counters_.storage_faults;
        if (metrics_) metrics_->StorageFault(metrics::StorageFaultKind::kWitness);
        item.state = WorkItem::State::kDropped;
        item.worker_identity.clear();
        return FinishJob(*job, proto::JOB_STATE_FAILED,
                         "broker storage fault: the stored witness of partition " + std::to_string(ref.partition) +
                             " cannot be read to check its proof (" + fault + "); submit it again under a new "
                             "request id",
                         now);
      }
    }
    VerifyTask task;
    task.id = next_verify_id_++;
    task.verifier = key->verifier;
    task.proof_json = out.proof_json();
    task.public_json = out.public_json();
    if (!item.expected_public.empty() || key->n_public == 0) task.expected_public = item.expected_public;
    item.verifying = true;
    verifying_[task.id] = {ref, item.lease, worker.worker_id, std::move(out)};
    verify_outbox_.push_back(std::move(task));
    return;
  }
  item.worker_identity.clear();
  if (result.retryable()) {
    ReturnItem(*job, ref.partition, "worker " + worker.worker_id + " failed it: " + result.error(), now,
               worker.worker_id);
  } else {
    item.state = WorkItem::State::kDropped;
    FinishJob(*job, proto::JOB_STATE_FAILED,
              "partition " + std::to_string(ref.partition) + " failed on worker " + worker.worker_id + ": " +
                  result.error(),
              now);
  }
}

WorkItem& BrokerCore::TakeAnswer(WorkerRecord& worker, JobRecord& job, const ItemRef& ref, Clock::time_point now) {
  worker.leased.erase(ref);
  WorkItem& item = job.items[ref.partition];
  if (!item.started) {  // a RESULT implies it started
    item.started = true;
    item.started_at = now;
    ++item.attempts;
  }
  return item;
}

void BrokerCore::AcceptResult(JobRecord& job, uint32_t partition, const std::string& worker_id,
                              proto::PartitionResult out, Clock::time_point now) {
  WorkItem& item = job.items[partition];
  if (WorkerRecord* worker = workers_.FindByWorkerId(worker_id)) ++worker->items_completed;
  if (item.started_at != Clock::time_point{}) {
    // The circuit's proving time, smoothed so one slow answer moves it little.
    const double seconds = std::chrono::duration<double>(now - item.started_at).count();
    auto [it, fresh] = proving_seconds_.try_emplace(job.circuit_id, seconds);
    if (!fresh) it->second = 0.9 * it->second + 0.1 * seconds;
  }
  item.worker_identity.clear();
  item.verifying = false;
  item.state = WorkItem::State::kDone;
  JournalItem(job, partition, &out);
  journal_.DeleteWitness(job.job_seq, partition);
  if (++job.items_done == job.items.size()) FinishJob(job, proto::JOB_STATE_SUCCEEDED, "", now);
}

void BrokerCore::RejectResult(const std::string& worker_id, JobRecord& job, uint32_t partition,
                              metrics::ResultRejectReason reason, const std::string& why, Clock::time_point now) {
  ++counters_.results_rejected;
  if (metrics_) metrics_->ResultRejected(reason);
  spdlog::error("rejected the RESULT of worker {} for {}: {}; the item goes to another worker", worker_id,
                ItemName(job.job_seq, partition), why);
  job.items[partition].verifying = false;
  // The worker's fault, not the job's: the attempt is refunded, so a forging
  // worker cannot dead-letter a job.
  ReturnItem(job, partition, "worker " + worker_id + "'s RESULT was rejected: " + why, now, worker_id,
             /*refund_attempt=*/true);
  if (WorkerRecord* worker = workers_.FindByWorkerId(worker_id)) Strike(*worker, "RESULT rejected: " + why, now);
}

void BrokerCore::OnVerified(const VerifyVerdict& verdict, Clock::time_point now) {
  if (metrics_) metrics_->ObserveVerify(verdict.seconds);
  auto pending = verifying_.find(verdict.id);
  if (pending == verifying_.end()) return;
  Verifying done = std::move(pending->second);
  verifying_.erase(pending);
  JobRecord* job = jobs_.Find(done.ref.job_seq);
  if (!job || done.ref.partition >= job->items.size()) return;  // ended meanwhile
  WorkItem& item = job->items[done.ref.partition];
  if (item.state != WorkItem::State::kLeased || !item.verifying || !SameLease(item.lease, done.lease)) return;
  if (verdict.ok) return AcceptResult(*job, done.ref.partition, done.worker_id, std::move(done.result), now);
  metrics::ResultRejectReason reason = metrics::ResultRejectReason::kInvalidProof;
  if (verdict.reason == VerifyReason::kWrongPublicSignals) reason = metrics::ResultRejectReason::kWrongPublicSignals;
  if (verdict.reason == VerifyReason::kMalformed) reason = metrics::ResultRejectReason::kMalformed;
  RejectResult(done.worker_id, *job, done.ref.partition, reason, "the broker's verification failed: " + verdict.why,
               now);
}

void BrokerCore::OnHandback(WorkerRecord& worker, const proto::Handback& handback, Clock::time_point now) {
  auto give_back = [&](const proto::WorkItemRef& wire, bool started) {
    JobRecord* job = LiveLease(worker, wire);
    ItemRef ref = wire::FromProto(wire);
    if (!job) {
      // Not (or no longer) its live lease; if the job ended meanwhile the lease just goes.
      auto held = worker.leased.find(ref);
      if (held != worker.leased.end() && SameLease(held->second, wire.lease())) worker.leased.erase(held);
      return;
    }
    worker.leased.erase(ref);
    ++counters_.items_handed_back;
    if (metrics_) metrics_->ItemHandedBack();
    if (started) MarkStarted(*job, ref.partition, now);  // aborted: it ran, the attempt counts
    ReturnItem(*job, ref.partition, "handed back by worker " + worker.worker_id + " (" + handback.reason() + ")", now,
               started ? worker.worker_id : std::string());
  };
  for (const auto& item : handback.items()) give_back(item, false);
  for (const auto& item : handback.aborted()) give_back(item, true);
  spdlog::info("worker {} handed back {} unstarted and {} aborted items ({})", worker.worker_id,
               handback.items_size(), handback.aborted_size(), handback.reason());
}

std::map<ItemRef, proto::Lease> BrokerCore::RemoveWorker(const std::string& identity, const std::string& why,
                                                         bool graceful, Clock::time_point now,
                                                         const std::map<ItemRef, proto::Lease>& keep) {
  std::map<ItemRef, proto::Lease> kept;
  WorkerRecord* worker = workers_.Find(identity);
  if (!worker) return kept;
  if (!graceful) {
    ++counters_.workers_lost;
    if (metrics_) metrics_->WorkerLost();
  }
  spdlog::log(graceful ? spdlog::level::info : spdlog::level::warn,
              "worker {} removed ({}); {} leased items return, {} carry over to its new connection", worker->worker_id,
              why, worker->leased.size() - keep.size(), keep.size());
  SetWorkerState(*worker, proto::WORKER_STATE_GONE);
  std::map<ItemRef, proto::Lease> leased = std::move(worker->leased);
  worker->leased.clear();
  for (const auto& [ref, lease] : leased) {
    if (keep.count(ref)) {
      kept[ref] = lease;
      continue;
    }
    if (JobRecord* job = jobs_.Find(ref.job_seq)) {
      ReturnItem(*job, ref.partition, "lease lost: worker " + worker->worker_id + " " + why, now, worker->worker_id);
    }
  }
  for (const ReplyTo& waiter : worker->drain_waiters) {
    if (graceful) {
      proto::Envelope reply;
      reply.set_correlation_id(waiter.correlation_id);
      auto* body = reply.mutable_drain_worker_reply();
      body->set_worker_id(worker->worker_id);
      body->set_finished(true);
      *body->mutable_phases() = {worker->phases.begin(), worker->phases.end()};
      SendClient(waiter, std::move(reply));
    } else {
      SendError(waiter, proto::ERROR_KIND_UNKNOWN_WORKER,
                "worker " + worker->worker_id + " " + why + " before it finished draining");
    }
  }
  workers_.Remove(identity);
  return kept;
}

void BrokerCore::WorkerUnreachable(const std::string& identity, Clock::time_point now) {
  WorkerRecord* worker = workers_.Find(identity);
  if (!worker) return;
  const std::string id = worker->worker_id;
  RemoveWorker(identity, "unreachable (send failed)", false, now);
  ForgetDrainHold(id);
}

// ------------------------------------------------------------------ jobs

void BrokerCore::ReturnItem(JobRecord& job, uint32_t partition, const std::string& why, Clock::time_point now,
                            const std::string& failed_on, bool refund_attempt) {
  WorkItem& item = job.items[partition];
  if (item.state != WorkItem::State::kLeased) return;
  const bool was_started = item.started;
  item.worker_identity.clear();
  item.lease_worker_id.clear();
  item.lease = {};
  item.started = false;
  if (!failed_on.empty()) item.failed_on = failed_on;
  if (was_started && refund_attempt && item.attempts > 0) --item.attempts;
  if (was_started && !refund_attempt && item.attempts >= options_.max_attempts) {
    item.state = WorkItem::State::kDropped;
    FinishJob(job, proto::JOB_STATE_DEAD_LETTERED,
              "partition " + std::to_string(partition) + " started " + std::to_string(item.attempts) +
                  " times (--max-attempts " + std::to_string(options_.max_attempts) + ") without a result; last: " + why,
              now);
    return;
  }
  item.state = WorkItem::State::kQueued;
  if (was_started) JournalItem(job, partition);  // the journal said STARTED
  queue_.Insert(job.circuit_id, job.key(partition));  // original key: ahead of newer jobs
  ++counters_.items_redelivered;
  if (metrics_) metrics_->ItemRedelivered();
  spdlog::info("requeued {} (started attempts so far {}): {}", ItemName(job.job_seq, partition), item.attempts, why);
}

void BrokerCore::FinishJob(JobRecord& job, proto::JobState state, const std::string& error, Clock::time_point now) {
  (void)now;
  double finished_unix_s = fleet::UnixNow();
  for (uint32_t p = 0; p < job.items.size(); ++p) {
    WorkItem& item = job.items[p];
    if (item.state == WorkItem::State::kQueued) queue_.Erase(job.circuit_id, job.key(p));
    if (item.state == WorkItem::State::kLeased && item.worker_identity.empty()) {
      // An orphaned lease: nobody will answer for it now.
      if (auto it = orphans_.find(item.lease_worker_id); it != orphans_.end()) {
        it->second.erase({job.job_seq, p});
        if (it->second.empty()) orphans_.erase(it);
      }
    }
    // Leased items stay in their worker's lease set until it answers or dies,
    // so its in-flight count stays true; the answer is then dropped.
    if (item.state != WorkItem::State::kDone) {
      if (item.state == WorkItem::State::kLeased && item.started) {
        item.state = WorkItem::State::kDropped;
        JournalItem(job, p);
      }
      item.state = WorkItem::State::kDropped;
      journal_.DeleteWitness(job.job_seq, p);
    }
  }
  JournalJob(job, state, finished_unix_s, error);
  switch (state) {
    case proto::JOB_STATE_SUCCEEDED:
      ++counters_.jobs_completed;
      if (metrics_) metrics_->JobCompleted(job.circuit_id, job.priority);
      break;
    case proto::JOB_STATE_FAILED:
      ++counters_.jobs_failed;
      if (metrics_) metrics_->JobFailed(job.circuit_id, metrics::FailReason::kProveError);
      break;
    case proto::JOB_STATE_DEAD_LETTERED:
      ++counters_.jobs_dead_lettered;
      if (metrics_) metrics_->JobFailed(job.circuit_id, metrics::FailReason::kDeadLettered);
      break;
    case proto::JOB_STATE_CANCELLED:
      ++counters_.jobs_cancelled;
      if (metrics_) metrics_->JobCancelled();
      break;
    case proto::JOB_STATE_EXPIRED:
      ++counters_.jobs_expired;
      if (metrics_) metrics_->JobFailed(job.circuit_id, metrics::FailReason::kExpired);
      break;
    default: break;
  }
  if (state != proto::JOB_STATE_SUCCEEDED) {
    spdlog::warn("job {} ({} of client {}) ended {}: {}", job.job_seq, job.request_id, job.client_id,
                 wire::JobStateName(state), error);
  }
  admission_.Remove(job.client_id, job.items.size(), job.witness_bytes);
  if (job.deadline_unix_s > 0) deadlines_.erase({job.deadline_unix_s, job.job_seq});

  // Each waiter gets the result once (the server sends it after the commit).
  proto::Envelope result;
  LoadResult(job.job_seq, result.mutable_job_result());
  for (const ReplyTo& waiter : job.waiters) {
    result.set_correlation_id(waiter.correlation_id);
    SendClient(waiter, result);
  }
  jobs_.Erase(job.job_seq);
}

bool BrokerCore::LoadResult(uint64_t job_seq, proto::JobResult* out) {
  auto job = journal_.GetJob(job_seq);
  if (!job) return false;
  out->set_job_seq(job_seq);
  out->set_request_id(job->request_id());
  out->set_circuit_id(job->circuit_id());
  out->set_state(job->state());
  out->set_error(job->error());
  out->set_priority(job->priority());
  out->set_submitted_unix_s(job->submitted_unix_s());
  out->set_finished_unix_s(job->finished_unix_s());
  if (job->state() == proto::JOB_STATE_SUCCEEDED) {
    for (auto& [partition, item] : journal_.Items(job_seq)) {
      if (item.state() == journal::Item::STATE_DONE) *out->add_partitions() = std::move(*item.mutable_result());
    }
  }
  return true;
}

// ------------------------------------------------------------------ dispatch

WorkerRecord* BrokerCore::PickWorker(const std::string& circuit, const std::string& avoid) {
  bool skip_avoided = false;
  if (!avoid.empty()) {
    for (const auto& [identity, worker] : workers_.all()) {
      if (worker.worker_id != avoid && worker.state == proto::WORKER_STATE_READY && worker.circuits.count(circuit)) {
        skip_avoided = true;
        break;
      }
    }
  }
  WorkerRecord* best = nullptr;
  for (auto& [identity, worker] : workers_.all()) {
    if (!worker.Dispatchable() || !worker.circuits.count(circuit)) continue;
    if (skip_avoided && worker.worker_id == avoid) continue;
    // Fair: the worker with the fewest unanswered leases first, then the
    // one with the most room; announced capacity buys nothing (credit is capped).
    if (!best || worker.leased.size() < best->leased.size() ||
        (worker.leased.size() == best->leased.size() && worker.credit > best->credit)) {
      best = &worker;
    }
  }
  return best;
}

void BrokerCore::Dispatch(Clock::time_point now) {
  double now_unix = -1;  // read once, lazily
  while (queue_.size() > 0) {
    // The best queued item that some worker can take right now.
    const WorkKey* best_key = nullptr;
    const std::string* best_circuit = nullptr;
    WorkerRecord* best_worker = nullptr;
    for (const auto& [circuit, keys] : queue_.by_circuit()) {
      const WorkKey& head = *keys.begin();
      if (best_key && !(head < *best_key)) continue;
      const JobRecord* head_job = jobs_.Find(head.job_seq);
      const std::string& avoid = head_job ? head_job->items[head.partition].failed_on : std::string();
      if (WorkerRecord* worker = PickWorker(circuit, avoid)) {
        best_key = &head;
        best_circuit = &circuit;
        best_worker = worker;
      }
    }
    if (!best_key) return;
    WorkKey key = *best_key;
    std::string circuit = *best_circuit;
    JobRecord* job = jobs_.Find(key.job_seq);
    if (job->deadline_unix_s > 0) {
      if (now_unix < 0) now_unix = fleet::UnixNow();
      if (job->deadline_unix_s <= now_unix) {  // stale work is not proved
        FinishJob(*job, proto::JOB_STATE_EXPIRED, "its deadline passed before it was proved", now);
        continue;
      }
    }
    queue_.Erase(circuit, key);
    proto::Envelope envelope;
    auto* body = envelope.mutable_job();
    // The witness goes out as its own frame, straight from the journal (a
    // mapped blob file: no copy on the broker).
    std::string fault;
    std::optional<fleet::WitnessFrames> witness;
    if (auto stored = journal_.ReadWitness(job->job_seq, key.partition, &fault)) witness = FramesOf(std::move(*stored));
    if (!witness) {
      // The broker's storage failed this job, not its client: it alone ends.
      ++counters_.storage_faults;
      if (metrics_) metrics_->StorageFault(metrics::StorageFaultKind::kWitness);
      job->items[key.partition].state = WorkItem::State::kDropped;
      FinishJob(*job, proto::JOB_STATE_FAILED,
                "broker storage fault: the stored witness of partition " + std::to_string(key.partition) +
                    " cannot be served (" + fault + "); the client's submission was fine: submit it again "
                    "under a new request id",
                now);
      continue;
    }

    WorkItem& item = job->items[key.partition];
    if (item.expected_public.empty() && options_.verification_keys) {
      // What its proof must show as public signals, read while the witness is at hand.
      if (const auto* vk = options_.verification_keys->Find(job->circuit_id); vk && vk->n_public > 0) {
        std::string why;
        if (auto values = PublicSignalsOfWitness(*witness, vk->n_public, &why)) {
          item.expected_public = std::move(*values);
        } else {
          item.state = WorkItem::State::kDropped;
          FinishJob(*job, proto::JOB_STATE_FAILED,
                    "the witness of partition " + std::to_string(key.partition) + " does not fit circuit '" +
                        job->circuit_id + "' (" + why + ")",
                    now);
          continue;
        }
      }
    }
    item.state = WorkItem::State::kLeased;
    item.leased_at = now;
    item.started_at = {};
    item.worker_identity = best_worker->identity;
    item.lease_worker_id = best_worker->worker_id;
    item.started = false;
    item.lease.set_epoch(epoch_);
    item.lease.set_number(next_lease_++);
    if (!item.ever_leased) {
      item.ever_leased = true;
      if (metrics_) {
        metrics_->ObserveQueueWait(job->priority, std::chrono::duration<double>(now - job->submitted_at).count());
      }
    }
    --best_worker->credit;
    best_worker->leased[key.ref()] = item.lease;
    if (job->state == proto::JOB_STATE_QUEUED) job->state = proto::JOB_STATE_RUNNING;
    ++counters_.items_dispatched;

    wire::ToProto(key.ref(), body->mutable_item());
    *body->mutable_item()->mutable_lease() = item.lease;
    body->set_partitions(static_cast<uint32_t>(job->items.size()));
    body->set_circuit_id(job->circuit_id);
    body->set_priority(job->priority);
    body->set_attempt(item.attempts + 1);
    body->set_request_id(job->request_id);
    body->set_submitted_unix_s(job->submitted_unix_s);
    body->set_deadline_unix_s(job->deadline_unix_s);
    body->set_witness_bytes(witness->size());
    outbox_.emplace_back(Outgoing::To::kWorker, best_worker->identity, std::move(envelope),
                         std::move(witness->chunks));
  }
}

Clock::time_point BrokerCore::Tick(Clock::time_point now) {
  NoteTime(now);
  if (now >= next_heartbeat_) {
    next_heartbeat_ = now + options_.heartbeat_interval;
    auto deadline = options_.heartbeat_interval * options_.liveness;
    std::vector<std::string> dead;
    for (auto& [identity, worker] : workers_.all()) {
      if (now - worker.last_seen > deadline) {
        dead.push_back(identity);
        continue;
      }
      proto::Envelope beat;
      beat.mutable_heartbeat();
      SendWorker(identity, std::move(beat));
    }
    for (const auto& identity : dead) {
      const std::string id = workers_.Find(identity)->worker_id;
      RemoveWorker(identity, "silent for " + std::to_string(options_.liveness) + " heartbeat intervals", false, now);
      ForgetDrainHold(id);
    }
    ReclaimLeases(now);
    // Recovered leases whose worker did not come back within the window.
    for (auto it = orphans_.begin(); it != orphans_.end();) {
      std::map<ItemRef, proto::Lease> leases = it->second;
      bool due = false;
      for (const auto& [ref, lease] : leases) {
        JobRecord* job = jobs_.Find(ref.job_seq);
        if (job && job->items[ref.partition].orphan_until == Clock::time_point{}) {
          job->items[ref.partition].orphan_until = now + options_.heartbeat_interval * options_.liveness;
        }
        due = due || !job || job->items[ref.partition].orphan_until <= now;
      }
      if (!due) {
        ++it;
        continue;
      }
      std::string worker_id = it->first;
      it = orphans_.erase(it);
      for (const auto& [ref, lease] : leases) {
        JobRecord* job = jobs_.Find(ref.job_seq);
        if (!job) continue;
        WorkItem& item = job->items[ref.partition];
        if (item.state != WorkItem::State::kLeased || !item.worker_identity.empty()) continue;
        ReturnItem(*job, ref.partition, "worker " + worker_id + " did not come back after the broker restarted", now,
                   worker_id);
      }
    }
    // Jobs past their deadline fail as EXPIRED, even with no worker to ask.
    double now_unix = fleet::UnixNow();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now_unix) {
      uint64_t seq = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      if (JobRecord* job = jobs_.Find(seq)) {
        FinishJob(*job, proto::JOB_STATE_EXPIRED, "its deadline passed before it was proved", now);
      }
    }
    // Retention: results, then request ids (the dedup window).
    double ttl_s = std::chrono::duration<double>(options_.result_ttl).count();
    double dedup_s = std::chrono::duration<double>(options_.dedup_window).count();
    if (!unavailable_) {  // each would be a write that fails
      journal_.ExpireResults(now_unix - ttl_s, kExpiryBudget);
      journal_.ExpireRequests(now_unix - std::max(dedup_s, ttl_s), kExpiryBudget);
    }
  }
  if (!metrics_) return next_heartbeat_;
  if (now >= next_gauges_) {
    ExportGauges(now);
    next_gauges_ = now + std::min<Clock::duration>(options_.heartbeat_interval, kMaxGaugePeriod);
  }
  return std::min(next_heartbeat_, next_gauges_);
}

Clock::duration BrokerCore::OverrunLimit(const std::string& circuit) const {
  Clock::duration limit = options_.lease_overrun_min;
  if (auto seen = proving_seconds_.find(circuit); seen != proving_seconds_.end()) {
    auto scaled = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(seen->second * options_.lease_overrun_factor));
    limit = std::max(limit, scaled);
  }
  return limit;
}

void BrokerCore::ReclaimLeases(Clock::time_point now) {
  struct Reclaim {
    std::string identity;
    ItemRef ref;
    bool started;
    std::string why;
  };
  std::vector<Reclaim> due;
  for (auto& [identity, worker] : workers_.all()) {
    bool proving = false;  // a started lease in time: its queued leases wait behind it
    for (const auto& [ref, lease] : worker.leased) {
      const JobRecord* job = jobs_.Find(ref.job_seq);
      if (!job) continue;
      const WorkItem& item = job->items[ref.partition];
      if (!item.started || item.started_at == Clock::time_point{}) continue;
      const Clock::duration limit = OverrunLimit(job->circuit_id);
      if (now - item.started_at > limit) {
        due.push_back({identity, ref, true,
                       "started " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - item.started_at).count()) +
                           " s ago, past its circuit's limit of " +
                           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(limit).count()) + " s"});
      } else {
        proving = true;
      }
    }
    if (proving) continue;
    for (const auto& [ref, lease] : worker.leased) {
      const JobRecord* job = jobs_.Find(ref.job_seq);
      if (!job) continue;
      const WorkItem& item = job->items[ref.partition];
      if (item.started) continue;
      const Clock::time_point since = std::max(item.leased_at, worker.last_progress);
      if (now - since > options_.lease_start_timeout) {
        due.push_back({identity, ref, false,
                       "not started within " + std::to_string(options_.lease_start_timeout.count()) +
                           " ms (--lease-start-timeout) while the worker proved nothing"});
      }
    }
  }
  for (const Reclaim& reclaim : due) {
    WorkerRecord* worker = workers_.Find(reclaim.identity);
    JobRecord* job = jobs_.Find(reclaim.ref.job_seq);
    if (!worker || !job || !worker->leased.count(reclaim.ref)) continue;
    worker->leased.erase(reclaim.ref);
    ++counters_.leases_reclaimed;
    if (metrics_) {
      metrics_->LeaseReclaimed(reclaim.started ? metrics::ReclaimReason::kOverran : metrics::ReclaimReason::kNotStarted);
    }
    const std::string why = "lease taken back from worker " + worker->worker_id + ": " + reclaim.why;
    spdlog::warn("{} ({})", why, ItemName(reclaim.ref.job_seq, reclaim.ref.partition));
    const std::string worker_id = worker->worker_id;
    ReturnItem(*job, reclaim.ref.partition, why, now, worker_id);
    if ((worker = workers_.Find(reclaim.identity))) Strike(*worker, why, now);
  }
}

double BrokerCore::OldestQueuedAgeSeconds(proto::Priority priority, Clock::time_point now) const {
  auto seq = queue_.OldestSeq(priority);
  if (!seq) return 0;
  const JobRecord* job = jobs_.Find(*seq);
  return job ? std::chrono::duration<double>(now - job->submitted_at).count() : 0;
}

void BrokerCore::ExportGauges(Clock::time_point now) {
  for (proto::Priority priority : metrics::kPriorities) {
    metrics_->SetQueue(priority, queue_.depth(priority), OldestQueuedAgeSeconds(priority, now));
  }
  std::array<size_t, metrics::kWorkerStates.size()> by_state{};
  for (const auto& [identity, worker] : workers_.all()) {
    int index = metrics::WorkerStateIndex(worker.state);
    if (index >= 0) ++by_state[index];
  }
  for (size_t i = 0; i < by_state.size(); ++i) metrics_->SetWorkers(metrics::kWorkerStates[i], by_state[i]);
  metrics_->SetLive(admission_.items(), admission_.witness_bytes());
  metrics_->epoch.Set(static_cast<double>(epoch_));
}

// ------------------------------------------------------------------ output

void BrokerCore::SendClient(const ReplyTo& to, proto::Envelope envelope) {
  outbox_.push_back({Outgoing::To::kClient, to.identity, std::move(envelope)});
}

void BrokerCore::SendError(const ReplyTo& to, proto::ErrorKind kind, const std::string& message,
                           uint32_t retry_after_ms) {
  proto::Envelope reply = wire::MakeErrorReply(kind, message, to.correlation_id);
  reply.mutable_error()->set_retry_after_ms(retry_after_ms);
  SendClient(to, std::move(reply));
}

void BrokerCore::SendWorker(const std::string& identity, proto::Envelope envelope) {
  outbox_.push_back({Outgoing::To::kWorker, identity, std::move(envelope)});
}

proto::StatusReply BrokerCore::Status(Clock::time_point now) const {
  proto::StatusReply status;
  for (int p = proto::PRIORITY_CRITICAL; p >= proto::PRIORITY_LOW; --p) {
    auto priority = static_cast<proto::Priority>(p);
    auto* queue = status.add_queues();
    queue->set_priority(priority);
    queue->set_depth(static_cast<uint32_t>(queue_.depth(priority)));
    if (queue_.OldestSeq(priority)) queue->set_oldest_age_s(OldestQueuedAgeSeconds(priority, now));
  }
  for (const auto& [identity, worker] : workers_.all()) {
    auto* info = status.add_workers();
    info->set_worker_id(worker.worker_id);
    info->set_host(worker.host);
    info->set_backend(worker.backend);
    info->set_state(worker.state);
    for (const auto& circuit : worker.circuits) info->add_circuits(circuit);
    info->set_credit(worker.credit);
    info->set_in_flight(static_cast<uint32_t>(worker.leased.size()));
    info->set_queue_depth(worker.queue_depth);
    *info->mutable_memory() = worker.memory;
    info->set_last_seen_s(std::chrono::duration<double>(now - worker.last_seen).count());
    info->set_capacity(worker.capacity);
    info->set_items_completed(worker.items_completed);
    info->set_key_name(worker.key_name);
  }
  status.set_jobs_submitted(counters_.jobs_submitted);
  status.set_jobs_completed(counters_.jobs_completed);
  status.set_jobs_failed(counters_.jobs_failed);
  status.set_jobs_dead_lettered(counters_.jobs_dead_lettered);
  status.set_items_redelivered(counters_.items_redelivered);
  status.set_next_job_seq(journal_.next_job_seq());
  status.set_frames_malformed(counters_.frames_malformed);
  status.set_frames_wrong_version(counters_.frames_wrong_version);
  status.set_frames_oversized(counters_.frames_oversized);
  status.set_results_stale(counters_.results_stale);
  status.set_replies_undeliverable(counters_.replies_undeliverable);
  status.set_items_handed_back(counters_.items_handed_back);
  status.set_jobs_cancelled(counters_.jobs_cancelled);
  status.set_jobs_in_table(jobs_.size());
  status.set_jobs_expired(counters_.jobs_expired);
  status.set_submits_busy(counters_.submits_busy);
  status.set_queued_witness_bytes(admission_.witness_bytes());
  status.set_broker_epoch(epoch_);
  status.set_journal_commits(journal_.stats().commits);
  status.set_jobs_recovered(counters_.jobs_recovered);
  status.set_auth_rejected_unknown_key(counters_.auth_rejected_unknown_key);
  status.set_auth_rejected_wrong_endpoint(counters_.auth_rejected_wrong_endpoint);
  status.set_auth_rejected_mechanism(counters_.auth_rejected_mechanism);
  status.set_requests_forbidden(counters_.requests_forbidden);
  status.set_results_rejected(counters_.results_rejected);
  status.set_leases_reclaimed(counters_.leases_reclaimed);
  status.set_registrations_refused(counters_.registrations_refused);
  status.set_storage_faults(counters_.storage_faults);
  status.set_unavailable(unavailable_.has_value());
  if (unavailable_) status.set_unavailable_reason(*unavailable_);
  return status;
}

}  // namespace zkfleet::broker
