#include "zkfleet/broker/job_table.hpp"

namespace zkfleet::broker {

JobRecord& JobTable::Add(JobRecord job) {
  uint64_t seq = job.job_seq;
  return jobs_.insert_or_assign(seq, std::move(job)).first->second;
}

JobRecord* JobTable::Find(uint64_t job_seq) {
  auto it = jobs_.find(job_seq);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobRecord* JobTable::Find(uint64_t job_seq) const {
  auto it = jobs_.find(job_seq);
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobTable::Erase(uint64_t job_seq) { jobs_.erase(job_seq); }

}  // namespace zkfleet::broker
