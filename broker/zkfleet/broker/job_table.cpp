#include "zkfleet/broker/job_table.hpp"

namespace zkfleet::broker {

namespace {
constexpr char kInputsQueueMark = '\x01';
}  // namespace

std::string QueueOf(const std::string& circuit, bool from_inputs) {
  return from_inputs ? std::string(1, kInputsQueueMark) + circuit : circuit;
}

std::string_view CircuitOfQueue(const std::string& queue, bool* from_inputs) {
  *from_inputs = !queue.empty() && queue[0] == kInputsQueueMark;
  return std::string_view(queue).substr(*from_inputs ? 1 : 0);
}

std::string JobRecord::queue() const { return QueueOf(circuit_id, !inputs.empty()); }

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
