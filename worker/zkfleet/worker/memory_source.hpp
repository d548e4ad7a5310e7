// How much memory this worker may still take, for the memory gate: cgroup-
// aware (the cgroup's limit minus its usage when a limit is set, v2 or v1),
// else MemAvailable from /proc/meminfo; the smaller of the two when both
// apply. A simulated source stands in for tests.
//
// Thread-safety: Read() may be called from any thread; the sources keep no
// mutable state (the simulated one reads its ledger directory each time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace zkfleet::worker {

struct MemoryReading {
  uint64_t available_bytes = 0;
  std::string detail;  // where the number came from, for the log
};

class MemorySource {
 public:
  virtual ~MemorySource() = default;
  virtual MemoryReading Read() const = 0;
  // The worker's pool now holds `pool_bytes` (only the simulated source cares).
  virtual void OnPoolChanged(const std::string& worker_id, uint64_t pool_bytes) const {}
};

// The host's or container's memory. `proc_root` and `cgroup_root` are "/proc"
// and "/sys/fs/cgroup" except in tests.
class SystemMemorySource : public MemorySource {
 public:
  explicit SystemMemorySource(std::string proc_root = "/proc", std::string cgroup_root = "/sys/fs/cgroup");
  MemoryReading Read() const override;

 private:
  std::string proc_root_;
  std::string cgroup_root_;
};

// TEST-ONLY: a pretend cgroup of `limit_bytes` shared by the workers that
// name the same ledger directory; each records the bytes its pool holds in
// <dir>/<worker_id>.bytes (see PinnedPool's observer). Available = limit -
// the sum of the ledger files.
class SimulatedMemorySource : public MemorySource {
 public:
  SimulatedMemorySource(uint64_t limit_bytes, std::string ledger_dir);
  MemoryReading Read() const override;
  // Records what `worker_id` holds (0 removes its file).
  void OnPoolChanged(const std::string& worker_id, uint64_t held_bytes) const override;

 private:
  uint64_t limit_bytes_;
  std::string ledger_dir_;
};

// A budget is bytes, or a share of the memory available at start ("25%").
struct MemoryBudget {
  uint64_t bytes = 0;
  double share = 0;  // in (0, 1]; used when bytes == 0
  uint64_t Resolve(uint64_t available_bytes) const {
    return bytes != 0 ? bytes : static_cast<uint64_t>(share * static_cast<double>(available_bytes));
  }
};
std::optional<MemoryBudget> ParseMemoryBudget(const std::string& text);

}  // namespace zkfleet::worker
