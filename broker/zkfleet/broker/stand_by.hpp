// A broker on etcd until it leads: it campaigns for the leadership
// (EtcdLeadership::Campaign) on a thread of its own while this thread answers
// clients and workers "not the leader, try X" (standby_responder.hpp).
//
// Thread-safety: call from the thread that will run the BrokerServer; it
// joins the campaign's thread before it returns.
#pragma once

#include <functional>
#include <string>

#include <zmq.hpp>

#include "zkfleet/broker/leader_address.hpp"
#include "zkfleet/broker/options.hpp"
#include "zkfleet/storage/etcd_leadership.hpp"

namespace zkfleet::broker {

// Returns true once this broker leads (its standby ports and ZAP handler are
// closed by then, free for the BrokerServer), false when `stop()` (polled on
// this thread) says so first. `on_leader(description)` is called on this
// thread whenever the leader seen changes ("" while none leads). Throws what
// Campaign throws (etcd cannot be reached at all) and what the responder's
// set-up throws (the allow-lists cannot be read).
bool StandBy(zmq::context_t& context, const BrokerOptions& options, const LeaderAddress& self,
             storage::EtcdLeadership& leadership, const std::function<bool()>& stop,
             const std::function<void(const std::string&)>& on_leader = {});

}  // namespace zkfleet::broker
