// The broker's bounds on a SUBMIT, fitted to the etcd journal's transactions
// (zkbroker --journal etcd://): a SUBMIT's records must go to etcd in one
// transaction, since a turn split over several is not atomic.
#pragma once

#include <optional>
#include <string>

#include "zkfleet/broker/options.hpp"

namespace zkfleet::broker {

// A SUBMIT writes its job, its 3 index entries, its request, the meta record
// and, per partition, an item, a witness and its hash.
constexpr uint32_t kSubmitFixedOps = 8;
constexpr uint32_t kSubmitOpsPerPartition = 3;
// Room for a job's records beside its inline bytes.
constexpr uint64_t kSubmitRecordBytes = 64u << 10;
// The inline bound etcd mode starts from: witnesses larger than this go by reference.
constexpr uint64_t kEtcdInlineJobBytes = 768u << 10;

// With options.journal.etcd set: defaults for the bounds the operator did not
// give (`partitions_given`, `inline_given`): --max-partitions half of what
// fits one transaction, --max-inline-job-bytes kEtcdInlineJobBytes; then the
// room the journal keeps for one message (reserve_ops, reserve_bytes). The
// reason, in words with what to change, when a given bound cannot fit.
std::optional<std::string> FitSubmitsToEtcdTransactions(BrokerOptions& options, bool partitions_given,
                                                        bool inline_given);

}  // namespace zkfleet::broker
