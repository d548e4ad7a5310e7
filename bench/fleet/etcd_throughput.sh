#!/usr/bin/env bash
# Tiny jobs (zkworker --instant, proves nothing) through a broker whose
# journal is a local 3-member etcd cluster (issue 48), and through the same
# broker with its LMDB journal on the same disk, in one run: jobs/s from
# SUBMIT to delivered result (fleet_bench, closed loop) and the ratio.
#
#   bench/fleet/etcd_throughput.sh [BUILD_DIR]     (default: build/release)
#
# Runs: etcd with its default transaction bounds, etcd allowing 1024 operations
# per transaction (--etcd-max-txn-ops), LMDB.
# Environment: JOBS (30000) CLIENTS (4) WINDOW (500 per client) WORKERS (2)
#   DATA_ROOT  where the etcd members' and the LMDB journal's data go (default
#              the build directory: a disk, not a tmpfs; say which with the figures)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build/release}
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
JOBS=${JOBS:-30000}
CLIENTS=${CLIENTS:-4}
WINDOW=${WINDOW:-500}
WORKERS=${WORKERS:-2}
BENCH="$BUILD/bench/fleet/fleet_bench"
[[ -x "$BENCH" ]] || { echo "etcd_throughput.sh: build $BENCH first" >&2; exit 1; }
command -v etcd >/dev/null || { echo "etcd_throughput.sh: etcd is not installed (scripts/install-deps.sh)" >&2; exit 1; }
DATA=$(mktemp -d "${DATA_ROOT:-$BUILD}/etcd-throughput.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Three members on loopback, data on disk.
CLUSTER="" ENDPOINTS=()
for i in 0 1 2; do
  CP[$i]=$(port); PP[$i]=$(port)
  CLUSTER+="${CLUSTER:+,}m$i=http://127.0.0.1:${PP[$i]}"
  ENDPOINTS+=("127.0.0.1:${CP[$i]}")
done
for i in 0 1 2; do
  etcd --name "m$i" --data-dir "$DATA/m$i" --listen-client-urls "http://127.0.0.1:${CP[$i]}" \
    --advertise-client-urls "http://127.0.0.1:${CP[$i]}" --listen-peer-urls "http://127.0.0.1:${PP[$i]}" \
    --initial-advertise-peer-urls "http://127.0.0.1:${PP[$i]}" --initial-cluster "$CLUSTER" \
    --initial-cluster-state new --max-txn-ops 1024 --max-request-bytes 4194304 \
    --logger zap --log-level error >"$DATA/m$i.log" 2>&1 &
  PIDS+=($!)
done
EPS=$(IFS=,; echo "${ENDPOINTS[*]}")
for _ in $(seq 1 100); do etcdctl --endpoints="$EPS" put up 1 >/dev/null 2>&1 && break; sleep 0.2; done

echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "# data in $DATA ($(df --output=fstype "$DATA" | tail -n 1)); $WORKERS instant workers, $CLIENTS clients x window $WINDOW, $JOBS jobs"
measure() {  # measure LABEL JOURNAL_ARGS...
  local label=$1; shift
  local client_ep="tcp://127.0.0.1:$(port)" worker_ep="tcp://127.0.0.1:$(port)" pids=()
  "$BUILD/cmd/zkbroker/zkbroker" --clients "$client_ep" --workers "$worker_ep" --insecure-plaintext \
    --unverified-circuits bench --max-credit-per-worker 2000 --result-ttl 60 --log-level warn "$@" \
    >"$DATA/broker-$label.log" 2>&1 &
  pids+=($!)
  for i in $(seq 1 "$WORKERS"); do
    "$BUILD/cmd/zkworker/zkworker" --broker "$worker_ep" --id "w$i" --instant --circuit bench --capacity 2000 \
      --insecure-plaintext --log-level warn >"$DATA/worker-$label-$i.log" 2>&1 &
    pids+=($!)
  done
  sleep 2
  "$BENCH" --broker "$client_ep" --insecure-plaintext --circuit bench --label "$label warmup" --jobs 2000 \
    --clients "$CLIENTS" --window "$WINDOW" >/dev/null
  "$BENCH" --broker "$client_ep" --insecure-plaintext --circuit bench --label "$label" --jobs "$JOBS" \
    --clients "$CLIENTS" --window "$WINDOW" --json >"$DATA/$label.out"
  head -n 1 "$DATA/$label.out"
  tail -n 1 "$DATA/$label.out" >"$DATA/$label.json"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
}
# etcd's default transaction bounds (128 operations), then members and broker
# allowing 1024 operations and 4 MiB per transaction (as the tests' clusters).
measure etcd-128 --journal "etcd://$EPS/bench128/"
measure etcd-1024 --journal "etcd://$EPS/bench1024/" --etcd-max-txn-ops 1024 --etcd-max-txn-bytes 3145728
measure lmdb --data-dir "$DATA/lmdb"
python3 - "$DATA" <<'PY'
import json, sys
runs = {name: json.load(open(f"{sys.argv[1]}/{name}.json"))["throughput_jobs_per_s"] for name in ("etcd-128", "etcd-1024", "lmdb")}
for name in ("etcd-128", "etcd-1024"):
    print(f"{name}: {runs[name]:.0f} jobs/s, LMDB journal {runs['lmdb']:.0f} jobs/s: ratio {runs[name] / runs['lmdb']:.3f}")
PY
