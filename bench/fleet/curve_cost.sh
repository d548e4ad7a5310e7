#!/usr/bin/env bash
# What CURVE costs (issue 14): the same fleet (zkbroker + WORKERS x
# "zkworker --instant" + fleet_bench, tiny jobs, loopback), once with
# --insecure-plaintext and once with CURVE keys and the broker's ZAP
# allow-lists, interleaved ROUNDS times; prints jobs/s and latency per mode
# and the CURVE/plaintext throughput ratio (median of the rounds).
#
#   bench/fleet/curve_cost.sh [BUILD_DIR]     (default: build/release)
#
# Environment: WORKERS (4) CLIENTS (4) JOBS (100000) ROUNDS (3) SYNC (batch)
#   BROKER_CPUS  cores the broker is pinned to (default: all)
#   LOAD_CPUS    cores for workers and clients (default: all). On a larger host,
#                BROKER_CPUS=0,1 LOAD_CPUS=2-15 measures the broker's own share:
#                on one 2-core machine every side's crypto shares the cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build/release}
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
WORKERS=${WORKERS:-4}
CLIENTS=${CLIENTS:-4}
JOBS=${JOBS:-100000}
ROUNDS=${ROUNDS:-3}
SYNC=${SYNC:-batch}
BROKER_CPUS=${BROKER_CPUS:-0-$(( $(nproc) - 1 ))}
LOAD_CPUS=${LOAD_CPUS:-0-$(( $(nproc) - 1 ))}
BENCH="$BUILD/bench/fleet/fleet_bench"
[[ -x "$BENCH" ]] || { echo "curve_cost.sh: build $BENCH first" >&2; exit 1; }
source "$ROOT/bench/fleet/keys.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zkfleet-curve-cost.XXXXXX")
PIDS=()
stop_fleet() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
trap 'stop_fleet; rm -rf "$WORK"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One measurement: a fresh fleet in `mode`, a closed-loop throughput run and a
# one-job-in-flight latency run. Prints two JSON lines.
measure() {
  local mode=$1 round=$2 dir="$WORK/$1-$2"
  mkdir -p "$dir"
  SECURITY=$mode make_fleet_keys "$dir/keys" "$BUILD/cmd/zkctl/zkctl"
  local clients="tcp://127.0.0.1:$(port)" workers="tcp://127.0.0.1:$(port)"
  broker_check_args "$BUILD/cmd/zkbroker/zkbroker" bench
  taskset -c "$BROKER_CPUS" "$BUILD/cmd/zkbroker/zkbroker" --clients "$clients" --workers "$workers" --data-dir "$dir/journal" \
    --sync "$SYNC" "${BROKER_SECURITY[@]}" "${BROKER_CHECK[@]}" --log-level warn >"$dir/broker.log" 2>&1 &
  PIDS+=($!)
  for i in $(seq 1 "$WORKERS"); do
    taskset -c "$LOAD_CPUS" "$BUILD/cmd/zkworker/zkworker" --broker "$workers" --id "w$i" --instant --circuit bench --capacity 2000 \
      "${WORKER_SECURITY[@]}" --log-level warn >"$dir/worker-$i.log" 2>&1 &
    PIDS+=($!)
  done
  sleep 1
  taskset -c "$LOAD_CPUS" "$BENCH" --broker "$clients" "${CLIENT_SECURITY[@]}" --circuit bench --json --label "$mode throughput" \
    --jobs "$JOBS" --clients "$CLIENTS" --window 1000 | grep '^{'
  taskset -c "$LOAD_CPUS" "$BENCH" --broker "$clients" "${CLIENT_SECURITY[@]}" --circuit bench --json --label "$mode latency" \
    --jobs 10000 --clients 1 --window 1 | grep '^{'
  stop_fleet
}

echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); broker on cores $BROKER_CPUS, load on $LOAD_CPUS; $WORKERS workers, $CLIENTS clients, $JOBS jobs, --sync $SYNC"
: >"$WORK/results.jsonl"
for round in $(seq 1 "$ROUNDS"); do
  for mode in plaintext curve; do measure "$mode" "$round" | tee -a "$WORK/results.jsonl"; done
done
python3 - "$WORK/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def median(label, key, sub=None):
    vals = [(r[key][sub] if sub else r[key]) for r in rows if r["label"] == label]
    return statistics.median(vals)
t = {m: median(f"{m} throughput", "throughput_jobs_per_s") for m in ("plaintext", "curve")}
for m in ("plaintext", "curve"):
    print(f"{m:9s}: {t[m]:9.0f} jobs/s closed loop; 1 job in flight: result p50 {median(m+' latency','latency_ms','p50'):.3f} ms "
          f"p99 {median(m+' latency','latency_ms','p99'):.3f} ms, accept p99 {median(m+' latency','accept_ms','p99'):.3f} ms")
print(f"CURVE / plaintext throughput = {t['curve'] / t['plaintext']:.3f} (CURVE costs {100 * (1 - t['curve'] / t['plaintext']):.1f} %)")
print(f"added latency (p50, 1 job in flight): {median('curve latency','latency_ms','p50') - median('plaintext latency','latency_ms','p50'):+.3f} ms")
PY
