#include "zkfleet/broker/stand_by.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "zkfleet/broker/standby_responder.hpp"

namespace zkfleet::broker {
namespace {

// How long one answering turn waits: also how soon a new leader, the end of
// the campaign or stop() is noticed.
constexpr auto kServeTurn = std::chrono::milliseconds(100);

}  // namespace

bool StandBy(zmq::context_t& context, const BrokerOptions& options, const LeaderAddress& self,
             storage::EtcdLeadership& leadership, const std::function<bool()>& stop,
             const std::function<void(const std::string&)>& on_leader) {
  StandbyResponder responder(context, options, self);

  // What the campaign's thread tells this one.
  std::mutex mutex;
  std::optional<std::string> seen;  // the leader key's value, when it changed
  std::atomic<bool> stopping{false}, done{false};
  bool leads = false;
  std::exception_ptr failure;
  std::thread campaign([&] {
    try {
      leads = leadership.Campaign([&] { return stopping.load(); },
                                  [&](const std::string& leader) {
                                    std::lock_guard lock(mutex);
                                    seen = leader;
                                  });
    } catch (...) {
      failure = std::current_exception();
    }
    done = true;
  });

  std::optional<LeaderAddress> leader;
  try {
    while (!done) {
      if (stop()) stopping = true;
      std::optional<std::string> changed;
      {
        std::lock_guard lock(mutex);
        changed.swap(seen);
      }
      if (changed) {
        leader.reset();
        if (!changed->empty()) leader = LeaderAddress::Decode(*changed);
        if (on_leader) on_leader(leader ? leader->Describe() : std::string());
      }
      responder.SetLeader(leader);  // every turn: a port that could not be bound is tried again
      responder.Serve(kServeTurn);
    }
  } catch (...) {
    stopping = true;
    campaign.join();
    throw;
  }
  campaign.join();
  responder.Close();
  if (failure) std::rethrow_exception(failure);
  return leads;
}

}  // namespace zkfleet::broker
