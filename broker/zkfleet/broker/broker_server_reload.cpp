// BrokerServer::Reload: the allow-lists and the verification keys read again
// (SIGHUP, zkctl reload), so keys and circuits come and go without a restart.
#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "zkfleet/broker/broker_server.hpp"
#include "zkfleet/broker/verification_keys.hpp"

namespace zkfleet::broker {

proto::ReloadReply BrokerServer::Reload() {
  proto::ReloadReply reply;
  ReloadAllowLists(reply);
  ReloadVerificationKeys(reply);
  return reply;
}

void BrokerServer::ReloadAllowLists(proto::ReloadReply& reply) {
  if (!zap_) return;  // plaintext: no lists
  try {
    auto loaded = PeerAllowList::Load(options_.security.allow_dir);
    for (const auto& warning : loaded.warnings) {
      spdlog::warn("allow-list: {}", warning);
      reply.add_problems("allow-list: " + warning);
    }
    spdlog::info("allow-lists reloaded from {}: {} worker keys, {} client keys (connections kept)",
                 options_.security.allow_dir.string(), loaded.list.count(PeerKind::kWorker),
                 loaded.list.count(PeerKind::kClient));
    reply.set_allow_lists_reloaded(true);
    reply.set_worker_keys(static_cast<uint32_t>(loaded.list.count(PeerKind::kWorker)));
    reply.set_client_keys(static_cast<uint32_t>(loaded.list.count(PeerKind::kClient)));
    ApplyAllowList(loaded.list);
    if (grpc_) grpc_->SetAllowList(loaded.list);
    zap_->Reload(std::move(loaded.list));
  } catch (const std::exception& e) {
    spdlog::error("allow-lists not reloaded (the current ones stay): {}", e.what());
    reply.add_problems(std::string("allow-lists not reloaded (the current ones stay): ") + e.what());
  }
}

void BrokerServer::ReloadVerificationKeys(proto::ReloadReply& reply) {
  const auto current = options_.verification_keys ? options_.verification_keys
                                                  : std::make_shared<const VerificationKeys>();
  reply.set_verification_keys(static_cast<uint32_t>(current->size()));
  if (options_.verification_key_dir.empty()) return;  // only --verification-key: fixed
  std::map<std::string, std::string> failed;
  std::vector<std::string> notes;
  VerificationKeys loaded;
  try {
    loaded = VerificationKeys::LoadAll(options_.verification_key_specs, options_.verification_key_dir, &failed,
                                       &notes);
  } catch (const std::exception& e) {
    spdlog::error("verification keys not reloaded (the current ones stay): {}", e.what());
    reply.add_problems(std::string("verification keys not reloaded (the current ones stay): ") + e.what());
    return;
  }
  for (const std::string& note : notes) spdlog::info("verification key directory: {}", note);
  for (const auto& [circuit, why] : failed) {
    spdlog::error("verification key of circuit {} not (re)loaded: {}", circuit, why);
    reply.add_problems(why);
  }
  const std::map<std::string, size_t> live = core_->LiveJobsByCircuit();
  auto keep = [&](const std::string& circuit) -> std::optional<std::string> {
    if (auto bad = failed.find(circuit); bad != failed.end()) return "its new file failed to load";
    auto jobs = live.find(circuit);
    if (jobs == live.end()) return std::nullopt;
    return fmt::format("{} job(s) not yet done keep the key they were submitted under; reload again once they are",
                       jobs->second);
  };
  VerificationKeys::Change change;
  auto merged = std::make_shared<const VerificationKeys>(VerificationKeys::Merge(*current, loaded, keep, &change));
  for (const std::string& circuit : change.added) {
    const VerificationKeys::Entry* key = merged->Find(circuit);
    spdlog::info("verification key of circuit {} added: {} (sha256 {}, {} public signals)", circuit, key->path,
                 key->sha256, key->n_public);
  }
  for (const std::string& circuit : change.changed) {
    const VerificationKeys::Entry* key = merged->Find(circuit);
    spdlog::info("verification key of circuit {} changed: {} (sha256 {})", circuit, key->path, key->sha256);
  }
  for (const std::string& circuit : change.removed) {
    spdlog::info("verification key of circuit {} removed: SUBMITs of it are refused from now on", circuit);
  }
  for (const std::string& kept : change.kept) spdlog::warn("verification key kept as it was: {}", kept);
  *reply.mutable_circuits_added() = {change.added.begin(), change.added.end()};
  *reply.mutable_circuits_removed() = {change.removed.begin(), change.removed.end()};
  *reply.mutable_circuits_changed() = {change.changed.begin(), change.changed.end()};
  *reply.mutable_circuits_kept() = {change.kept.begin(), change.kept.end()};
  reply.set_verification_keys(static_cast<uint32_t>(merged->size()));
  options_.verification_keys = merged;  // a rebuilt core starts with these
  core_->SetVerificationKeys(std::move(merged));
}

}  // namespace zkfleet::broker
