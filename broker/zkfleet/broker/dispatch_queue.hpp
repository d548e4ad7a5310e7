// Work items waiting at the broker, one ordered set per circuit, keyed
// (priority desc, job_seq, partition). A returned item goes back under its
// original key, so it is served ahead of newer jobs of its priority.
//
// Thread-safety: not thread-safe; owned by the broker thread.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "zkfleet/wire/work_key.hpp"

namespace zkfleet::broker {

class DispatchQueue {
 public:
  // False when the key is already queued (a bug upstream; never duplicated).
  bool Insert(const std::string& circuit, const wire::WorkKey& key);
  bool Erase(const std::string& circuit, const wire::WorkKey& key);

  // The first item for `circuit`, if any.
  std::optional<wire::WorkKey> Front(const std::string& circuit) const;

  size_t size() const { return size_; }
  size_t depth(proto::Priority priority) const { return depth_[priority]; }
  // Smallest job_seq queued at `priority` over all circuits (its oldest job).
  std::optional<uint64_t> OldestSeq(proto::Priority priority) const;

  // Circuits that currently have queued items.
  const std::map<std::string, std::set<wire::WorkKey>>& by_circuit() const { return queues_; }

 private:
  std::map<std::string, std::set<wire::WorkKey>> queues_;  // no empty sets kept
  std::array<size_t, proto::Priority_ARRAYSIZE> depth_{};
  size_t size_ = 0;
};

}  // namespace zkfleet::broker
