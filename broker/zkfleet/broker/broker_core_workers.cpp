// BrokerCore (broker_core.hpp), worker messages: registration (READY),
// credit, state reports and the drain path, strikes, and a worker's
// removal; what a worker answers for its leases (STARTED, RESULT, the
// verdicts, HANDBACK) is in broker_core_results.cpp. Thread-safety: as
// BrokerCore (one thread).
#include "zkfleet/broker/broker_core.hpp"

#include <algorithm>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "zkfleet/broker/broker_core_detail.hpp"
#include "zkfleet/engine/wtns.hpp"
#include "zkfleet/broker/field_checks.hpp"
#include "zkfleet/broker/verification_keys.hpp"
#include "zkfleet/wire/names.hpp"
#include "zkfleet/wire/worker_state.hpp"
#include "zkfleet/fleet/sockets.hpp"
#include "zkfleet/wire/unix_time.hpp"

namespace zkfleet::broker {

namespace {

using detail::ItemName;
using detail::LeaseName;
using detail::SameLease;
using wire::ItemRef;

constexpr uint64_t kMaxCredit = 1u << 20;

}  // namespace

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
        return RejectResult(sender->worker_id, sender->owner(), *job, ref.partition,
                            metrics::ResultRejectReason::kMalformed, "RESULT refused: " + *why, now);
      }
    }
    Strike(sender->owner(), sender->worker_id, StrikeKind::kOverBound,
           "worker " + sender->worker_id + " sent a message over a bound: " + *why, now);
    return;
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
  // The same worker on the same connection announcing what it holds anew
  // (its circuits changed at run time: zkworker's SIGHUP): an update, not a
  // new incarnation. Its leases, credit and state stay as they are.
  if (WorkerRecord* same = workers_.Find(identity); same && same->worker_id == id) {
    TakeAnnouncement(*same, ready);
    same->last_seen = now;
    spdlog::info("worker {} announces circuits={} generates={}", id, fmt::join(same->circuits, ","),
                 fmt::join(same->generates, ","));
    if (metrics_) {
      for (const std::string& circuit : same->circuits) metrics_->ForCircuit(circuit);
    }
    return;
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
  std::set<ItemRef> kept;
  auto keep_claimed = [&](const std::string& old_identity, const std::string& why) {
    std::set<ItemRef> keep;
    if (WorkerRecord* old = workers_.Find(old_identity)) {
      for (const ItemRef& ref : old->leased) {
        if (const WorkItem* item = LeasedTo(*old, ref); item && claims(ref, item->lease)) keep.insert(ref);
      }
    }
    kept.merge(RemoveWorker(old_identity, why, false, now, keep));
  };
  if (workers_.Find(identity)) keep_claimed(identity, "sent READY again under another id");
  if (WorkerRecord* old = workers_.FindByWorkerId(ready.worker_id())) {
    keep_claimed(old->identity, "reconnected on a new connection");
  }
  WorkerRecord& worker = workers_.Add(identity, ready.worker_id());
  departed_.erase(ready.worker_id());  // (its place in departed_order_ goes when the order reaches it)
  if (peer.authenticated) worker_keys_.emplace(id, key);
  worker.key_name = peer.key_name;
  worker.host = ready.host();
  worker.backend = ready.backend();
  TakeAnnouncement(worker, ready);
  worker.capacity = ready.capacity();
  worker.state = ready.state() == proto::WORKER_STATE_UNSPECIFIED ? proto::WORKER_STATE_READY : ready.state();
  worker.reported_faulted = ready.state() == proto::WORKER_STATE_FAULTED;
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
    const std::set<ItemRef> leases = std::move(orphaned->second);
    orphans_.erase(orphaned);
    for (const ItemRef& ref : leases) {
      JobRecord* job = jobs_.Find(ref.job_seq);
      if (!job || ref.partition >= job->items.size()) continue;
      WorkItem& item = job->items[ref.partition];
      if (item.state != WorkItem::State::kLeased || !item.worker_identity.empty() ||
          item.lease_worker_id != ready.worker_id()) {
        continue;
      }
      if (claims(ref, item.lease)) {
        kept.insert(ref);
      } else {
        ReturnItem(*job, ref.partition, "worker " + ready.worker_id() + " came back without it", now,
                   worker.owner());
      }
    }
  }
  for (const ItemRef& ref : kept) {
    JobRecord* job = jobs_.Find(ref.job_seq);
    if (!job) continue;
    WorkItem& item = job->items[ref.partition];
    item.worker_identity = identity;
    item.lease_worker_id = worker.worker_id;
    worker.leased.insert(ref);
  }
  if (metrics_) {
    // Per-circuit series exist from the first scrape, before any job.
    for (const std::string& circuit : worker.circuits) metrics_->ForCircuit(circuit);
  }
  spdlog::info("worker {} registered: key={} host={} backend={} capacity={} state={} circuits={} generates={}{}",
               worker.worker_id, peer.authenticated ? peer.key_name : "(plaintext)", worker.host, worker.backend,
               worker.capacity, wire::WorkerStateName(worker.state), fmt::join(worker.circuits, ","),
               fmt::join(worker.generates, ","),
               kept.empty() ? "" : "; still proving " + std::to_string(kept.size()) + " leased item(s)");
}

void BrokerCore::TakeAnnouncement(WorkerRecord& worker, const proto::Ready& ready) {
  worker.circuit_kinds.clear();
  worker.circuits = {ready.circuits().begin(), ready.circuits().end()};
  for (int c = 0; c < ready.circuits_size(); ++c) {
    const proto::CircuitKind kind =
        c < ready.circuit_kinds_size() && ready.circuit_kinds(c) == proto::CIRCUIT_KIND_BELLMAN
            ? proto::CIRCUIT_KIND_BELLMAN
            : proto::CIRCUIT_KIND_CIRCOM;
    worker.circuit_kinds[ready.circuits(c)] = kind;
  }
  DropCircuitsOfAnotherKind(worker);
  RememberCircuits(worker.owner(), worker.circuits);
  for (const std::string& circuit : worker.circuits) circuit_owners_[QueueOf(circuit, false)].insert(worker.owner());
  worker.generates = {ready.generates().begin(), ready.generates().end()};  // of circuits (WorkerMessageProblem)
  // A day bounds what one worker's word can stretch a lease to.
  worker.generation_wall = std::chrono::seconds(std::min<uint32_t>(ready.generation_wall_s(), 86400));
  worker.generation_slots = std::clamp<uint32_t>(ready.generation_slots(), 1, 1024);
  worker.fetch_prefixes = {ready.fetch_prefixes().begin(), ready.fetch_prefixes().end()};
  RememberGenerators(worker.owner(), worker.generates);
  for (const std::string& circuit : worker.generates) circuit_owners_[QueueOf(circuit, true)].insert(worker.owner());
}

void BrokerCore::DropCircuitsOfAnotherKind(WorkerRecord& worker) {
  if (!options_.verification_keys) return;
  for (auto it = worker.circuit_kinds.begin(); it != worker.circuit_kinds.end();) {
    const VerificationKeys::Entry* key = options_.verification_keys->Find(it->first);
    if (!key || key->kind == it->second) {
      ++it;
      continue;
    }
    spdlog::warn("worker {} announces circuit {} as {}, its verification key ({}) is {}: it gets no job of it",
                 worker.worker_id, it->first, wire::CircuitKindName(it->second), key->path,
                 wire::CircuitKindName(key->kind));
    worker.circuits.erase(it->first);
    it = worker.circuit_kinds.erase(it);
  }
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

bool BrokerCore::Strike(const std::string& owner, const std::string& worker_id, StrikeKind kind,
                        const std::string& why, Clock::time_point now) {
  strikes_.Add(owner, worker_id, kind, now);
  // A worker id already held alone has had its verdict: its strikes do not
  // count again towards one for its neighbours.
  std::set<std::string> held_alone;
  for (const std::string& id : strikes_.StruckWorkers(owner, now)) {
    auto held = held_states_.find(id);
    if (!id.empty() && id != worker_id && held != held_states_.end() && held->second == proto::WORKER_STATE_FAULTED) {
      held_alone.insert(id);
    }
  }
  const uint32_t count = strikes_.Count(owner, now, held_alone);
  spdlog::warn("{}: strike {} of {} within {} s ({}): {}", owner, count, options_.strikes_to_fault,
               std::chrono::duration_cast<std::chrono::seconds>(options_.strike_window).count(), StrikeKindName(kind),
               why);
  if (count < options_.strikes_to_fault) return false;
  // Strikes all from one worker id point at that worker (its GPU, its
  // process); from several ids, or from the key's own word, at the key.
  std::set<std::string> struck = strikes_.StruckWorkers(owner, now);
  for (const std::string& id : held_alone) struck.erase(id);
  const bool whole_owner = struck.size() != 1 || struck.begin()->empty();
  const std::string& one_id = *struck.begin();
  if (whole_owner) {
    spdlog::error("{} is FAULTED, every worker of it (its strikes came from {}): it takes no work until an admin "
                  "undrains one of its workers",
                  owner, struck.count("") ? "the key itself" : fmt::format("{} worker ids", struck.size()));
  } else {
    spdlog::error("worker {} is FAULTED ({}'s strikes all came from it): its key's other workers keep working",
                  one_id, owner);
    held_states_[one_id] = proto::WORKER_STATE_FAULTED;  // also when it comes back with this id
  }
  // The verdict holds live workers and ones to come: a new process with the
  // same id, or with any id of a key held whole (zkctl undrain clears it).
  std::vector<std::string> faulted;
  for (auto& [identity, worker] : workers_.all()) {
    if (worker.owner() != owner || (!whole_owner && worker.worker_id != one_id)) continue;
    held_states_[worker.worker_id] = proto::WORKER_STATE_FAULTED;
    if (whole_owner && !worker.key_name.empty()) faulted_keys_.insert(worker.key_name);
    if (worker.state == proto::WORKER_STATE_FAULTED || worker.state == proto::WORKER_STATE_GONE) continue;
    SetWorkerState(worker, proto::WORKER_STATE_FAULTED);
    faulted.push_back(identity);
  }
  if (whole_owner && owner.rfind("key ", 0) == 0) faulted_keys_.insert(owner.substr(4));
  for (const std::string& identity : faulted) {
    if (WorkerRecord* worker = workers_.Find(identity)) {
      ReturnAllLeases(*worker, "worker " + worker->worker_id + " is FAULTED (" + owner + ": " + why + ")", now);
    }
  }
  return whole_owner || one_id == worker_id;
}

std::string BrokerCore::OwnerOf(const std::string& worker_id) const {
  auto bound = worker_keys_.find(worker_id);
  return StrikeOwner(bound == worker_keys_.end() ? std::string() : bound->second, worker_id);
}

void BrokerCore::ReturnAllLeases(WorkerRecord& worker, const std::string& why, Clock::time_point now) {
  // Only its live leases go back: an old round's item is another's now.
  std::vector<ItemRef> live;
  for (const ItemRef& ref : worker.leased) {
    if (LeasedTo(worker, ref)) live.push_back(ref);
  }
  worker.leased.clear();
  for (const ItemRef& ref : live) {
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
  if (reported == proto::WORKER_STATE_FAULTED) worker.reported_faulted = true;
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
  double now_s = wire::UnixNow();
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

std::set<ItemRef> BrokerCore::RemoveWorker(const std::string& identity, const std::string& why, bool graceful,
                                           Clock::time_point now, const std::set<ItemRef>& keep, bool charge_owner) {
  std::set<ItemRef> kept;
  WorkerRecord* worker = workers_.Find(identity);
  if (!worker) return kept;
  if (!graceful) {
    ++counters_.workers_lost;
    if (metrics_) metrics_->WorkerLost();
  }
  SetWorkerState(*worker, proto::WORKER_STATE_GONE);
  const std::string worker_id = worker->worker_id, owner = worker->owner();
  if (!departed_.count(worker_id)) {
    departed_order_.push_back(worker_id);
    if (departed_order_.size() > kMaxDeparted) {
      departed_.erase(departed_order_.front());
      departed_order_.pop_front();
    }
  }
  departed_[worker_id] = why + ", at " + wire::IsoUtcTime(wire::UnixNow());
  const std::set<ItemRef> leased = std::move(worker->leased);
  worker->leased.clear();
  // Only a lease that is still the item's: a job retried after it failed
  // (RetryJob) lives again under the same job_seq, and this worker's ref
  // from the failed round is not the new round's lease.
  std::vector<ItemRef> lost;
  for (const ItemRef& ref : leased) {
    if (keep.count(ref)) {
      kept.insert(ref);
      continue;
    }
    if (LeasedTo(*worker, ref)) lost.push_back(ref);
  }
  spdlog::log(graceful ? spdlog::level::info : spdlog::level::warn,
              "worker {} removed ({}); {} leased items return, {} carry over to its new connection", worker_id, why,
              lost.size(), kept.size());
  // Each started item lost counts an attempt of its job (ReturnItem).
  std::vector<ItemRef> requeued;  // started, lost, back in the queue
  bool dead_lettered = false;     // started, lost, its last attempt used
  for (const ItemRef& ref : lost) {
    JobRecord* job = jobs_.Find(ref.job_seq);
    if (!job) continue;  // dead-lettered by the loss of another of its partitions just now
    const bool started = job->items[ref.partition].started;
    ReturnItem(*job, ref.partition, "lease lost: worker " + worker_id + " " + why, now, owner);
    if (!started) continue;
    job = jobs_.Find(ref.job_seq);  // gone when it was dead-lettered
    if (job && job->items[ref.partition].state == WorkItem::State::kQueued) {
      requeued.push_back(ref);
    } else {
      dead_lettered = true;
    }
  }
  // Started work that leaves with its worker is a strike against the owner,
  // unless this loss dead-lettered a job: then the job is the likelier
  // culprit (a witness that crashes every prover), and a fleet of one key
  // must not be FAULTED by it. When the strike faults the owner, the lost
  // items' attempts are refunded: a key that takes jobs, starts them and
  // leaves cannot use up other clients' attempts.
  if (charge_owner && !requeued.empty() && !dead_lettered) {
    if (Strike(owner, worker_id, StrikeKind::kLostWork,
               "worker " + worker_id + " left with " + std::to_string(requeued.size()) + " started item(s) (" + why +
                   ")",
               now)) {
      for (const ItemRef& ref : requeued) {
        JobRecord* job = jobs_.Find(ref.job_seq);
        if (!job) continue;
        WorkItem& item = job->items[ref.partition];
        if (item.state != WorkItem::State::kQueued || item.attempts == 0) continue;
        --item.attempts;
        JournalItem(*job, ref.partition);
      }
    }
  }
  worker = workers_.Find(identity);
  if (!worker) return kept;
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

}  // namespace zkfleet::broker