// BrokerCore (broker_core.hpp), the admin's requests and the server's
// reloads: DRAIN/UNDRAIN of a worker, the allowed keys, the verification
// keys, the workers told to read their circuits again. Thread-safety: as
// BrokerCore (one thread).
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
    const size_t live = LiveLeaseCount(worker);  // refs of ended rounds reclaim nothing
    counters_.leases_reclaimed += live;
    if (metrics_) {
      for (size_t i = 0; i < live; ++i) metrics_->LeaseReclaimed(metrics::ReclaimReason::kRevoked);
    }
    proto::Envelope bye;
    bye.mutable_disconnect()->set_reason("key '" + worker.key_name + "' was removed from the broker's allow-list");
    SendWorker(identity, std::move(bye));
    RemoveWorker(identity, "key '" + worker.key_name + "' removed from the allow-list", false, now, {},
                 /*charge_owner=*/false);
  }
}

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
