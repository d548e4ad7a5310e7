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

const char* ItemEventName(ItemEvent event) {
  switch (event) {
    case ItemEvent::kLeased: return "leased";
    case ItemEvent::kReturned: return "returned";
    case ItemEvent::kProved: return "proved";
    case ItemEvent::kDropped: return "dropped";
  }
  return "?";
}

const char* ItemStateName(WorkItem::State state) {
  switch (state) {
    case WorkItem::State::kQueued: return "queued";
    case WorkItem::State::kLeased: return "leased";
    case WorkItem::State::kDone: return "done";
    case WorkItem::State::kDropped: return "dropped";
  }
  return "?";
}

std::optional<WorkItem::State> ItemNext(WorkItem::State from, ItemEvent event) {
  using State = WorkItem::State;
  switch (event) {
    case ItemEvent::kLeased:
      if (from == State::kQueued) return State::kLeased;
      break;
    case ItemEvent::kReturned:
      if (from == State::kLeased) return State::kQueued;
      break;
    case ItemEvent::kProved:
      if (from == State::kQueued || from == State::kLeased) return State::kDone;
      break;
    case ItemEvent::kDropped:
      if (from != State::kDone) return State::kDropped;
      break;
  }
  return std::nullopt;
}

WorkItem::State ItemEventTarget(ItemEvent event) {
  switch (event) {
    case ItemEvent::kLeased: return WorkItem::State::kLeased;
    case ItemEvent::kReturned: return WorkItem::State::kQueued;
    case ItemEvent::kProved: return WorkItem::State::kDone;
    case ItemEvent::kDropped: return WorkItem::State::kDropped;
  }
  return WorkItem::State::kDropped;
}

bool WorkItem::Move(ItemEvent event) {
  const std::optional<State> next = ItemNext(state, event);
  if (!next) return false;
  state = *next;
  return true;
}

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
