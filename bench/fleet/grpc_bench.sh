#!/usr/bin/env bash
# The gRPC front door's benchmark (issue 32), one broker, side by side with
# the ZeroMQ path in the same run: zkbroker (CURVE on its ports, gRPC with
# mTLS from a test CA) + WORKERS x "zkworker --instant" (BENCHMARK MODE:
# answers every job at once, proves nothing).
#
#   bench/fleet/grpc_bench.sh [BUILD_DIR]     (default build/cpu; needs the
#                                             grpc_bench and fleet_bench targets)
# Environment: WORKERS (4)  RATE (5000)  SECONDS_OPEN (60)  JOBS (100000, closed
# loop)  LIST_JOBS (100000)  SYNC (batch)  TMPDIR (where the journal goes)
# ZKBROKER (the broker binary, default BUILD's: another build's, to compare two).
#
# 1. SubmitJob -> durable reply over gRPC + TLS, open loop at RATE jobs/s for
#    SECONDS_OPEN s, 1 client: accept p50/p99 (target p99 <= 5 ms).
# 2. Closed loop, 4 clients x 1000 outstanding: jobs/s over gRPC and over
#    ZeroMQ (fleet_bench, CURVE) on the same broker (target gRPC >= 0.5x).
# 3. ListJobs of 100 over LIST_JOBS journaled jobs, 1 % of them of circuit
#    "rare" (a broker of its own, no workers): p50/p99 (target <= 20 ms).
set -euo pipefail
BUILD=${1:-build/cpu}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
WORKERS=${WORKERS:-4}
RATE=${RATE:-5000}
SECONDS_OPEN=${SECONDS_OPEN:-60}
JOBS=${JOBS:-100000}
LIST_JOBS=${LIST_JOBS:-100000}
SYNC=${SYNC:-batch}
GRPC_BENCH="$BUILD/bench/fleet/grpc_bench"
ZKBROKER=${ZKBROKER:-$BUILD/cmd/zkbroker/zkbroker}
FLEET_BENCH="$BUILD/bench/fleet/fleet_bench"
for b in "$GRPC_BENCH" "$FLEET_BENCH"; do
  [[ -x "$b" ]] || { echo "grpc_bench.sh: $b is not built (cmake --build $BUILD --target grpc_bench fleet_bench)" >&2; exit 1; }
done

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
DATA=$(mktemp -d "${TMPDIR:-/tmp}/zkfleet-grpc-bench.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT
source "$ROOT/bench/fleet/keys.sh"
make_fleet_keys "$DATA/keys" "$BUILD/cmd/zkctl/zkctl"
# The gRPC caller "client" (the CURVE client key's name: an admin) and the broker's certificate.
"$ROOT/tests/testutil/make_test_ca.sh" "$DATA/ca" client >/dev/null
GRPC_CLIENT=(--ca "$DATA/ca/ca.pem" --cert "$DATA/ca/client.pem" --key "$DATA/ca/client.key")

# Every benchmark client is one caller (one certificate): the closed loop's
# 4 x 1000 open calls need more than the per-caller default (1024; a broker
# older than that bound has no flag).
GRPC_CALLS=()
has_flag "$ZKBROKER" --grpc-max-calls-per-caller && GRPC_CALLS=(--grpc-max-calls-per-caller 8192)
start_broker() {  # start_broker NAME EXTRA...: sets CLIENT_EP WORKER_EP GRPC_ADDR
  local name=$1
  shift
  CLIENT_EP="tcp://127.0.0.1:$(port)"
  WORKER_EP="tcp://127.0.0.1:$(port)"
  GRPC_ADDR="localhost:$(port)"
  "$ZKBROKER" --clients "$CLIENT_EP" --workers "$WORKER_EP" --data-dir "$DATA/$name" \
    --sync "$SYNC" "${BROKER_SECURITY[@]}" --result-ttl 600 --grpc-listen "127.0.0.1:${GRPC_ADDR##*:}" \
    --grpc-cert "$DATA/ca/server.pem" --grpc-key "$DATA/ca/server.key" --grpc-client-ca "$DATA/ca/ca.pem" \
    "${GRPC_CALLS[@]}" "$@" >"$DATA/$name.log" 2>&1 &
  PIDS+=($!)
  BROKER_PID=$!
  for _ in $(seq 100); do grep -q "broker serving" "$DATA/$name.log" && return; sleep 0.1; done
  echo "broker $name did not start:" >&2; cat "$DATA/$name.log" >&2; exit 1
}

echo "# $(date -u +%FT%TZ) $(uname -n): $(nproc) cores; commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "# journal: --sync $SYNC in $DATA ($(df --output=fstype "$DATA" | tail -n 1)); CURVE on the ports, gRPC with mTLS"
broker_check_args "$ZKBROKER" bench
start_broker submit "${BROKER_CHECK[@]}"
for i in $(seq 1 "$WORKERS"); do
  "$BUILD/cmd/zkworker/zkworker" --broker "$WORKER_EP" --id "bench-$i" --instant "${WORKER_SECURITY[@]}" \
    --circuit bench --capacity 2000 --log-level warn >"$DATA/worker-$i.log" 2>&1 &
  PIDS+=($!)
done
sleep 1
"$GRPC_BENCH" --addr "$GRPC_ADDR" "${GRPC_CLIENT[@]}" --label warmup --jobs 5000 --clients 2 --window 200 >/dev/null
"$GRPC_BENCH" --addr "$GRPC_ADDR" "${GRPC_CLIENT[@]}" --label "grpc open loop $RATE jobs/s, 1 client" \
  --jobs $((RATE * SECONDS_OPEN)) --clients 1 --window 1000000 --rate "$RATE"
# The broker's CPU per job of each closed loop: a figure the machine's load
# moves less than the rates (its user + system ticks, /proc/PID/stat).
ticks() { awk '{print $14 + $15}' "/proc/$BROKER_PID/stat"; }
cpu_per_job() {  # cpu_per_job LABEL TICKS_BEFORE
  awk -v t="$(( $(ticks) - $2 ))" -v hz="$(getconf CLK_TCK)" -v n="$JOBS" -v l="$1" \
    'BEGIN { printf "# broker CPU, %s: %.1f us per job\n", l, t / hz / n * 1e6 }'
}
before=$(ticks)
"$GRPC_BENCH" --addr "$GRPC_ADDR" "${GRPC_CLIENT[@]}" --label "grpc closed loop, 4 clients x 1000" \
  --jobs "$JOBS" --clients 4 --window 1000
cpu_per_job "grpc closed loop" "$before"
before=$(ticks)
"$FLEET_BENCH" --broker "$CLIENT_EP" "${CLIENT_SECURITY[@]}" --circuit bench --json \
  --label "zeromq closed loop, 4 clients x 1000" --jobs "$JOBS" --clients 4 --window 1000
cpu_per_job "zeromq closed loop" "$before"
kill "${PIDS[@]}" 2>/dev/null || true
wait 2>/dev/null || true
PIDS=()

# ListJobs: LIST_JOBS jobs, 1 % "rare", no workers (they stay queued, journaled).
start_broker list --accept-unrouted --unverified-circuits '*' --max-live-items $((LIST_JOBS + 1000)) \
  --max-live-items-per-client $((LIST_JOBS + 1000))
"$GRPC_BENCH" --addr "$GRPC_ADDR" "${GRPC_CLIENT[@]}" --circuit rare --label fill --jobs $((LIST_JOBS / 100)) \
  --clients 2 --window 500 >/dev/null
"$GRPC_BENCH" --addr "$GRPC_ADDR" "${GRPC_CLIENT[@]}" --circuit common --label fill \
  --jobs $((LIST_JOBS - LIST_JOBS / 100)) --clients 2 --window 500 >/dev/null
"$GRPC_BENCH" --addr "$GRPC_ADDR" "${GRPC_CLIENT[@]}" --list-circuit rare --page-size 100 --list-calls 200 \
  --label "ListJobs page of 100, circuit = 1 % of $LIST_JOBS jobs"
