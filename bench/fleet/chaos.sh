#!/usr/bin/env bash
# The long chaos run (issue 13): the in-repo chaos test
# (tests/integration/fleet/chaos_test.cpp) with 10,000 real CPU proofs of the
# bundled circuit through 3 workers, the broker kill -9ed and restarted 10
# times and workers 20 times. Prints the test's summary (jobs, kills, lost,
# duplicates, verified) and writes it as JSON to $REPORT.
#
#   bench/fleet/chaos.sh [BUILD_DIR]     (default: build/release)
#
# Environment: JOBS (10000) CLIENTS (4) WORKERS (3) BROKER_KILLS (10)
# WORKER_KILLS (20) REPORT (chaos-report.json in the current directory).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build/release}
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
TEST="$BUILD/tests/integration/fleet/fleet_chaos_test"
[[ -x "$TEST" ]] || { echo "chaos.sh: $TEST is not built (cmake --build $BUILD --target fleet_chaos_test)" >&2; exit 1; }
export ZKFLEET_CHAOS_JOBS=${JOBS:-10000}
export ZKFLEET_CHAOS_CLIENTS=${CLIENTS:-4}
export ZKFLEET_CHAOS_WORKERS=${WORKERS:-3}
export ZKFLEET_CHAOS_BROKER_KILLS=${BROKER_KILLS:-10}
export ZKFLEET_CHAOS_WORKER_KILLS=${WORKER_KILLS:-20}
export ZKFLEET_CHAOS_REPORT=${REPORT:-$PWD/chaos-report.json}
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, commit $(git -C "$ROOT" rev-parse --short HEAD)"
"$TEST" --gtest_filter='FleetChaos.*' 2>&1 | grep -E '^chaos:|^\[  (PASSED|FAILED) |Failure' || true
echo "report: $ZKFLEET_CHAOS_REPORT"
cat "$ZKFLEET_CHAOS_REPORT"
