#!/usr/bin/env bash
# Broker benchmark (issue 6): zkbroker + WORKERS x "zkworker --instant"
# (BENCHMARK MODE: answers every job at once, proves nothing) + fleet_bench.
# Measures jobs/s and the latency the fleet adds (SUBMIT -> JobResult).
#
#   bench/fleet/run.sh [BUILD_DIR]        (default BUILD_DIR: build)
#
# Environment:
#   BROKER_CPUS  cores the broker is pinned to (default 0,1: "on 2 cores")
#   LOAD_CPUS    cores for workers and clients (default: the other cores; the
#                same two when the machine has only two)
#   WORKERS (4)  CLIENTS (4)  JOBS (200000)  RATES ("10000 25000 50000")
#   SYNC         the broker's --sync: batch (default), always or none
#   SECURITY     curve (default: keys made for the run) or plaintext
#   TMPDIR       where the broker's journal (--data-dir, a fresh directory
#                removed at exit) is created: its filesystem decides what an
#                fsync costs (tmpfs: nothing), so say which one with the results
# Ends with journal_witness_bench (journal MB/s for 134 MB witnesses vs raw disk).
# Results go to stdout; docs/benchmarks.md and docs/benchmarks-fleet.md record them.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
WORKERS=${WORKERS:-4}
CLIENTS=${CLIENTS:-4}
JOBS=${JOBS:-200000}
RATES=${RATES:-"10000 25000 50000"}
SYNC=${SYNC:-batch}
NCPU=$(nproc)
BROKER_CPUS=${BROKER_CPUS:-0,1}
if [[ -z "${LOAD_CPUS:-}" ]]; then
  if (( NCPU > 2 )); then LOAD_CPUS="2-$((NCPU - 1))"; else LOAD_CPUS="0,1"; fi
fi

BENCH="$BUILD/bench/fleet/fleet_bench"
if [[ ! -x "$BENCH" ]]; then
  # bench/ is not part of this build tree: compile the load generator directly
  # against the fleet libraries that are.
  BENCH="$BUILD/fleet_bench"
  g++ -std=c++20 -O2 -o "$BENCH" "$ROOT/bench/fleet/fleet_bench.cpp" -I"$ROOT/fleet" -I"$ROOT/common" \
    -I"$BUILD/schema" "$BUILD/fleet/libzkfleet_fleet.a" "$BUILD/schema/libzkfleet_schema.a" \
    "$BUILD/common/libzkfleet_common.a" -lprotobuf -lzmq -lpthread
fi

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
CLIENT_EP="tcp://127.0.0.1:$(port)"
WORKER_EP="tcp://127.0.0.1:$(port)"
LOGS=$(mktemp -d)
DATA=$(mktemp -d "${TMPDIR:-/tmp}/zkfleet-bench-journal.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT
source "$ROOT/bench/fleet/keys.sh"
make_fleet_keys "$DATA/keys" "$BUILD/cmd/zkctl/zkctl"

echo "# $(date -u +%FT%TZ) $(uname -n): $NCPU cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "# broker on cores $BROKER_CPUS; $WORKERS instant workers and $CLIENTS clients on cores $LOAD_CPUS"
echo "# journal: --sync $SYNC in $DATA ($(df --output=fstype "$DATA" | tail -n 1) filesystem); security: ${SECURITY:-curve}"
broker_check_args "$BUILD/cmd/zkbroker/zkbroker" bench
taskset -c "$BROKER_CPUS" "$BUILD/cmd/zkbroker/zkbroker" --clients "$CLIENT_EP" --workers "$WORKER_EP" \
  --data-dir "$DATA/journal" --sync "$SYNC" "${BROKER_SECURITY[@]}" "${BROKER_CHECK[@]}" --result-ttl 60 >"$LOGS/broker.log" 2>&1 &
PIDS+=($!)
for i in $(seq 1 "$WORKERS"); do
  taskset -c "$LOAD_CPUS" "$BUILD/cmd/zkworker/zkworker" --broker "$WORKER_EP" --id "bench-$i" --instant "${WORKER_SECURITY[@]}" \
    --circuit bench --capacity 2000 --log-level warn >"$LOGS/worker-$i.log" 2>&1 &
  PIDS+=($!)
done
sleep 1

run() { taskset -c "$LOAD_CPUS" "$BENCH" --broker "$CLIENT_EP" "${CLIENT_SECURITY[@]}" --circuit bench --json "$@"; }
# CPU seconds (user + system) the broker process has used so far.
broker_cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/${PIDS[0]}/stat"; }
run --label warmup --jobs 20000 --clients "$CLIENTS" --window 500 >/dev/null
cpu_before=$(broker_cpu)
run --label throughput --jobs "$JOBS" --clients "$CLIENTS" --window 1000
cpu_after=$(broker_cpu)
awk -v a="$cpu_before" -v b="$cpu_after" -v n="$JOBS" \
  'BEGIN { printf "broker CPU: %.2f s for %d jobs = %.1f us per job (%.0f jobs/s per busy core)\n", b - a, n, (b - a) / n * 1e6, n / (b - a) }'
run --label "latency, 1 client, 1 job in flight" --jobs 20000 --clients 1 --window 1
for rate in $RATES; do
  run --label "latency at $rate jobs/s, 1 client" --jobs $((rate * 4)) --clients 1 --window 100000 --rate "$rate"
  run --label "latency at $rate jobs/s, $CLIENTS clients" --jobs $((rate * 4)) --clients "$CLIENTS" --window 100000 --rate "$rate"
done
"$BUILD/cmd/zkctl/zkctl" --broker "$CLIENT_EP" "${CLIENT_SECURITY[@]}" status | tail -n 3
# Time spent inside the broker per loop turn (all runs above together).
kill -TERM "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null || true
grep -o "broker loop turns.*" "$LOGS/broker.log"
# The journal with 2^22-sized witnesses (134 MB each) next to the disk's raw
# write speed, in the same directory the broker journaled to.
WITNESS_BENCH="$BUILD/bench/fleet/journal_witness_bench"
if [[ -x "$WITNESS_BENCH" ]]; then
  "$WITNESS_BENCH" --dir "$DATA/witness-bench" --bytes 134217728 --count "${WITNESS_COUNT:-8}"
else
  echo "(journal_witness_bench not built: cmake --build $BUILD --target journal_witness_bench)"
fi
