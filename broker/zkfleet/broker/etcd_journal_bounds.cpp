#include "zkfleet/broker/etcd_journal_bounds.hpp"

#include <algorithm>

namespace zkfleet::broker {

std::optional<std::string> FitSubmitsToEtcdTransactions(BrokerOptions& options, bool partitions_given,
                                                        bool inline_given) {
  storage::EtcdJournalOptions& etcd = *options.journal.etcd;
  if (!inline_given) options.max_inline_job_bytes = kEtcdInlineJobBytes;
  const uint32_t fits =
      etcd.max_txn_ops > kSubmitFixedOps ? (etcd.max_txn_ops - kSubmitFixedOps) / kSubmitOpsPerPartition : 0;
  if (!partitions_given) {
    // Half of what fits leaves room to group several SUBMITs per transaction.
    options.max_partitions = std::min(options.max_partitions, std::max(1u, fits / 2));
  }
  if (options.max_partitions > fits) {
    return "--max-partitions " + std::to_string(options.max_partitions) +
           ": a SUBMIT of that many partitions does not fit one etcd transaction of --etcd-max-txn-ops " +
           std::to_string(etcd.max_txn_ops) + " operations (at most " + std::to_string(fits) +
           " partitions); raise --etcd-max-txn-ops (and the members' --max-txn-ops) or lower --max-partitions";
  }
  etcd.reserve_ops = kSubmitFixedOps + kSubmitOpsPerPartition * options.max_partitions;
  etcd.reserve_bytes = options.max_inline_job_bytes + kSubmitRecordBytes;
  if (etcd.reserve_bytes >= etcd.max_txn_bytes) {
    return "--max-inline-job-bytes " + std::to_string(options.max_inline_job_bytes) +
           " does not fit one etcd transaction of --etcd-max-txn-bytes " + std::to_string(etcd.max_txn_bytes) +
           " (with 64 KiB for the job's records): lower it, or raise --etcd-max-txn-bytes (and the members' "
           "--max-request-bytes)";
  }
  return std::nullopt;
}

}  // namespace zkfleet::broker
