// Where a client or a worker finds the broker: one endpoint, or the list of
// the brokers that share one etcd journal ("tcp://a:5555,tcp://b:5555"), of
// which one leads and binds its ports while the others stand by and bind
// nothing (docs/operations.md, "Brokers on etcd").
//
// How the list is followed: a client connects to every endpoint at once with
// ZMQ_IMMEDIATE, so its requests go only to a completed connection, which is
// the leader's (broker_client.hpp); a worker holds one conversation at a time
// and moves to the next endpoint when the one it talks to falls silent
// (worker_session.hpp).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace zkfleet::fleet {

// More brokers than this in one list is a mistake (a fleet runs two or three).
inline constexpr size_t kMaxBrokerEndpoints = 16;

// Parses a comma-separated list of ZeroMQ endpoints (blanks around the commas
// are ignored). Throws Error (kInvalidArgument) naming what is wrong: an empty
// list or entry, an entry that is not TRANSPORT://ADDRESS, one given twice,
// more than kMaxBrokerEndpoints. `what` names the option in the message
// ("--broker").
std::vector<std::string> ParseBrokerEndpoints(std::string_view list, std::string_view what = "--broker");

// "tcp://a:5555" or "any of tcp://a:5555, tcp://b:5555", for messages.
std::string DescribeBrokerEndpoints(const std::vector<std::string>& endpoints);

}  // namespace zkfleet::fleet
