#include "zkfleet/broker/job_table.hpp"

namespace zkfleet::broker {

JobRecord& JobTable::Create(std::string request_id) {
  uint64_t seq = next_job_seq_++;
  JobRecord& job = jobs_[seq];
  job.job_seq = seq;
  job.request_id = std::move(request_id);
  by_request_id_[job.request_id] = seq;
  return job;
}

JobRecord* JobTable::Find(uint64_t job_seq) {
  auto it = jobs_.find(job_seq);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobRecord* JobTable::Find(uint64_t job_seq) const {
  auto it = jobs_.find(job_seq);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobRecord* JobTable::FindByRequestId(const std::string& request_id) {
  auto it = by_request_id_.find(request_id);
  return it == by_request_id_.end() ? nullptr : Find(it->second);
}

void JobTable::MarkFinished(JobRecord& job, Clock::time_point now) {
  job.finished_at = now;
  finished_.emplace_back(now, job.job_seq);
}

size_t JobTable::ExpireFinishedBefore(Clock::time_point cutoff) {
  size_t erased = 0;
  while (!finished_.empty() && finished_.front().first <= cutoff) {
    auto it = jobs_.find(finished_.front().second);
    finished_.pop_front();
    if (it == jobs_.end()) continue;
    auto index = by_request_id_.find(it->second.request_id);
    if (index != by_request_id_.end() && index->second == it->first) by_request_id_.erase(index);
    jobs_.erase(it);
    ++erased;
  }
  return erased;
}

}  // namespace zkfleet::broker
