#!/usr/bin/env bash
# Broker failover on an etcd journal (issue 48): a real 3-member etcd cluster
# on 127.0.0.1 (data on disk in the build tree), two zkbrokers on
# --journal etcd://..., one instant worker; KILLS times the leader is killed
# with -9 and the time from the kill to the first acknowledged SUBMIT (served
# by the standby, now leading) is taken; every job's result must arrive once.
# Prints the median and the max (the test's own line).
#
#   bench/fleet/etcd_failover.sh [BUILD_DIR]     (default: build/release)
#
# Environment: KILLS (20), TTL (the brokers' --etcd-lease-ttl, 5: zkbroker's default).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build/release}
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
TEST="$BUILD/tests/integration/etcd/etcd_broker_tests"
[[ -x "$TEST" ]] || { echo "etcd_failover.sh: $TEST is not built (cmake --build $BUILD --target etcd_broker_tests)" >&2; exit 1; }
export ZKFLEET_ETCD_KILLS=${KILLS:-20}
export ZKFLEET_ETCD_LEASE_TTL=${TTL:-5}
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git -C "$ROOT" rev-parse --short HEAD)"
cd "$BUILD/tests/integration/etcd"
"$TEST" --gtest_filter='EtcdBrokers.AStandbyTakesOver*' 2>&1 | grep -E '^etcd failover:|^\[  (PASSED|FAILED) |Failure' || true
