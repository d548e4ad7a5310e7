// Jobs the broker knows: live ones and finished ones kept for --result-ttl,
// with the request-id index that makes SUBMIT idempotent.
//
// Thread-safety: not thread-safe; owned by the broker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "zkfleet.pb.h"
#include "zkfleet/fleet/work_key.hpp"

namespace zkfleet::broker {

using Clock = std::chrono::steady_clock;

// One partition of a job.
struct WorkItem {
  enum class State {
    kQueued,   // in the DispatchQueue
    kLeased,   // sent to worker_identity, result pending
    kDone,     // result stored
    kDropped,  // the job ended (failed, cancelled) before this item did
  };
  State state = State::kQueued;
  std::string witness;          // the .wtns bytes; freed when the job ends
  uint32_t attempts = 0;        // leases so far (a handed-back unstarted lease is refunded)
  bool ever_leased = false;     // its queue wait (SUBMIT to first lease) was recorded
  std::string worker_identity;  // routing id of the lease holder while kLeased
  // worker_id of the last worker whose attempt at this item failed (a
  // retryable error, a lost lease, FAULTED): the retry goes elsewhere while
  // another READY worker holds the circuit.
  std::string failed_on;
  proto::PartitionResult result;
};

// Someone to send the JobResult to: routing id and the correlation id to echo.
struct ReplyTo {
  std::string identity;
  uint64_t correlation_id = 0;
};

struct JobRecord {
  uint64_t job_seq = 0;
  std::string request_id;
  std::string circuit_id;
  proto::Priority priority = proto::PRIORITY_NORMAL;
  proto::JobState state = proto::JOB_STATE_QUEUED;
  std::vector<WorkItem> items;   // index = partition
  uint32_t items_done = 0;
  ReplyTo submitter;             // receives the JobResult once, when the job ends
  std::vector<ReplyTo> awaiters; // AWAITs and duplicate SUBMITs of a running job
  double submitted_unix_s = 0;
  double finished_unix_s = 0;
  Clock::time_point submitted_at;
  Clock::time_point finished_at;
  std::string error;             // why it failed / was dead-lettered

  fleet::WorkKey key(uint32_t partition) const { return {priority, job_seq, partition}; }
};

class JobTable {
 public:
  // Creates a job with the next job_seq (one monotonic counter, never reused).
  JobRecord& Create(std::string request_id);
  JobRecord* Find(uint64_t job_seq);
  const JobRecord* Find(uint64_t job_seq) const;
  JobRecord* FindByRequestId(const std::string& request_id);

  // Records that `job` ended now; it is erased ExpireUntil(now - ttl) later.
  void MarkFinished(JobRecord& job, Clock::time_point now);
  // Erases jobs that finished at or before `cutoff`. Returns how many.
  size_t ExpireFinishedBefore(Clock::time_point cutoff);

  uint64_t next_job_seq() const { return next_job_seq_; }
  size_t size() const { return jobs_.size(); }

 private:
  uint64_t next_job_seq_ = 1;
  std::unordered_map<uint64_t, JobRecord> jobs_;
  std::unordered_map<std::string, uint64_t> by_request_id_;
  std::deque<std::pair<Clock::time_point, uint64_t>> finished_;  // in finishing order
};

}  // namespace zkfleet::broker
