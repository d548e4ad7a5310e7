#!/usr/bin/env bash
# The long chaos run on the etcd journal (issue 48): the in-repo test
# EtcdBrokers.ChaosOnBrokersEtcdAndWorkersLosesNothingAndProvesEachJobOnce
# (tests/integration/etcd/etcd_broker_test.cpp) with JOBS real proofs and
# FAULTS faults, cycling through: kill -9 of the leading broker, kill -9 of
# etcd's Raft leader, SIGSTOP of etcd's Raft leader (3 s), SIGSTOP of the
# leading broker past its lease (4 s, SUBMITs sent to it meanwhile), kill -9 of
# a worker. Prints the test's summary line.
#
#   bench/fleet/etcd_chaos.sh [BUILD_DIR]     (default: build/release)
#
# Environment: JOBS (2000) FAULTS (30).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build/release}
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
TEST="$BUILD/tests/integration/etcd/etcd_broker_tests"
[[ -x "$TEST" ]] || { echo "etcd_chaos.sh: $TEST is not built (cmake --build $BUILD --target etcd_broker_tests)" >&2; exit 1; }
export ZKFLEET_ETCD_CHAOS_JOBS=${JOBS:-2000}
export ZKFLEET_ETCD_CHAOS_FAULTS=${FAULTS:-30}
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git -C "$ROOT" rev-parse --short HEAD)"
cd "$BUILD/tests/integration/etcd"
"$TEST" --gtest_filter='EtcdBrokers.Chaos*' 2>&1 | grep -E '^etcd chaos:|^\[  (PASSED|FAILED) |Failure' || true
