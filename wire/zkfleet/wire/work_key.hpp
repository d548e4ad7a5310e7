// The ordering key of one work item, shared by the broker's queue and the
// worker's local queue: higher priority first, then older job (smaller
// job_seq), then lower partition. Keys are unique (job_seq is never reused and
// a job has one item per partition), so std::set<WorkKey> needs no sentinel.
#pragma once

#include <cstdint>
#include <tuple>

#include "zkfleet.pb.h"

namespace zkfleet::wire {

// Identifies a work item: partition `partition` of job `job_seq`.
struct ItemRef {
  uint64_t job_seq = 0;
  uint32_t partition = 0;
  friend auto operator<=>(const ItemRef&, const ItemRef&) = default;
};

struct WorkKey {
  proto::Priority priority = proto::PRIORITY_NORMAL;
  uint64_t job_seq = 0;
  uint32_t partition = 0;

  ItemRef ref() const { return {job_seq, partition}; }

  // "Comes first": priority descending, then job_seq and partition ascending.
  friend bool operator<(const WorkKey& a, const WorkKey& b) {
    return std::make_tuple(-static_cast<int>(a.priority), a.job_seq, a.partition) <
           std::make_tuple(-static_cast<int>(b.priority), b.job_seq, b.partition);
  }
  friend bool operator==(const WorkKey&, const WorkKey&) = default;
};

inline ItemRef FromProto(const proto::WorkItemRef& ref) { return {ref.job_seq(), ref.partition()}; }
inline void ToProto(const ItemRef& ref, proto::WorkItemRef* out) {
  out->set_job_seq(ref.job_seq);
  out->set_partition(ref.partition);
}

}  // namespace zkfleet::wire
