#!/usr/bin/env bash
# The fleet fault-injection scenario of issue 12 on the lent GPU machine, CUDA
# backend, from zkbroker / zkworker / zkctl / zkverify built on the development
# machine with -DZKFLEET_CUDA=ON and carried, with the shared libraries they
# need that the GPU image lacks, as .carry/cuda-fleet/{bin,lib}.tar.gz:
#
#   bench/gpu/fleet_faults_on_gpu_machine.sh
#
# 1. A CUDA worker with ZKFLEET_FAULT_INJECT=msm:100 (test only: pi_a's MSM
#    result is corrupted as it comes back from the GPU, every proof) and
#    --fault-threshold 3: three jobs, one at a time, each still returns a proof
#    zkverify accepts (caught, re-proved on the CPU); its log says "engine
#    fault: backend=cuda device=0", its counter reads 3, then it is FAULTED
#    (zkctl workers, zkfleet_worker_state) and a fourth job waits.
# 2. Then a CUDA worker with ZKFLEET_FAULT_INJECT=device_lost:1 (its first
#    proof fails like a sticky CUDA error) takes that fourth job, goes FAULTED
#    and exits 1; a healthy CUDA worker started afterwards proves the job.
# Log in $OUT/log.txt; exit status 0 only if every check held.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-gpu-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
# BACKEND=cpu DEVICE=none BIN_DIR=<dir with the four binaries>: a dry run on a machine without a GPU.
BACKEND=${BACKEND:-cuda}
DEVICE=${DEVICE:-0}
if [ -n "${BIN_DIR:-}" ]; then
  B=$BIN_DIR
else
  C=.carry/cuda-fleet
  mkdir -p $C/bin $C/lib && tar xzf $C/bin.tar.gz -C $C/bin && tar xzf $C/lib.tar.gz -C $C/lib
  export LD_LIBRARY_PATH=$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  B=$PWD/$C/bin
fi
W=$(mktemp -d)
# The broker's journal (--data-dir): a fresh directory, removed at exit (the
# logs in $W are copied to $OUT before that).
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
fail=0
say() { echo "$*" | tee -a "$LOG"; }
check() { local name=$1; shift; if "$@" >>"$LOG" 2>&1; then say "PASS $name"; else say "FAIL $name"; fail=1; fi; }
source "$(dirname "$0")/../fleet/metrics.sh"  # metric PORT SERIES -> value, or -1
F=$PWD/tests/fixtures/bn128_k12
source "$(dirname "$0")/../fleet/keys.sh"
make_fleet_keys "$DATA/keys" "$B/zkctl"
ZK="$B/zkctl --broker tcp://127.0.0.1:25555 ${CLIENT_SECURITY[*]} --timeout 10 --wait-timeout 120"
nvidia-smi --query-gpu=name,driver_version --format=csv | tee -a "$LOG"
broker_check_args "$B/zkbroker" c "$F/verification_key.json"
$B/zkbroker --clients tcp://127.0.0.1:25555 --workers tcp://127.0.0.1:25556 --data-dir "$DATA/journal" "${BROKER_SECURITY[@]}" "${BROKER_CHECK[@]}" --heartbeat-ms 500 \
  >"$W/broker.log" 2>&1 &
WORKER_COMMON=(--broker tcp://127.0.0.1:25556 "${WORKER_SECURITY[@]}" --circuit c=$F/circuit_final.zkey --backend $BACKEND --heartbeat-ms 500 --capacity 2)
ZKFLEET_FAULT_INJECT=msm:100 $B/zkworker --id bad "${WORKER_COMMON[@]}" --fault-threshold 3 \
  --metrics-listen 127.0.0.1:29101 >"$W/bad.log" 2>&1 &
for i in $(seq 100); do grep -q "LOADING -> READY" "$W/bad.log" && break; sleep 0.2; done
for i in 1 2 3; do
  check "job $i proved by the faulty CUDA worker verifies" bash -c "$ZK submit --circuit c --out $W/r$i $F/witness.wtns && $B/zkverify $F/verification_key.json $W/r$i/public_0.json $W/r$i/proof_0.json"
done
sleep 1
grep "engine fault" "$W/bad.log" | tee -a "$LOG"
check "worker log names backend and device" grep -q "engine fault: backend=$BACKEND device=$DEVICE circuit=c" "$W/bad.log"
SERIES="zkfleet_worker_proof_verification_failures_total{backend=\"$BACKEND\",circuit=\"c\",device=\"$DEVICE\"}"
say "verification failures counter: $(metric 29101 "$SERIES")"
check "counter is 3" test "$(metric 29101 "$SERIES")" = 3.0
check "worker state FAULTED (metrics)" test "$(metric 29101 'zkfleet_worker_state{state="FAULTED"}')" = 1.0
$ZK workers | tee -a "$LOG"
check "zkctl workers shows FAULTED" bash -c "$ZK workers | grep -q FAULTED"
$ZK submit --circuit c --out "$W/r4" "$F/witness.wtns" >"$W/r4.log" 2>&1 &
SUB=$!
sleep 2
check "job 4 waits while only the FAULTED worker holds the circuit" kill -0 $SUB
# 2. A worker whose device is lost takes job 4, goes FAULTED and exits 1;
#    job 4 is then proved by a healthy worker.
ZKFLEET_FAULT_INJECT=device_lost:1 $B/zkworker --id lost "${WORKER_COMMON[@]}" >"$W/lost.log" 2>&1 &
LOST=$!
for i in $(seq 120); do kill -0 $LOST 2>/dev/null || break; sleep 0.5; done
kill -0 $LOST 2>/dev/null && { say "worker 'lost' still runs after 60 s"; kill $LOST; }
wait $LOST; code=$?
say "worker 'lost' exit status: $code"
grep -E "FAULTED|device error" "$W/lost.log" | tee -a "$LOG"
check "worker with a fatal device error exits 1" test "$code" = 1
check "job 4 still waits" kill -0 $SUB
$B/zkworker --id good "${WORKER_COMMON[@]}" >"$W/good.log" 2>&1 &
wait $SUB
cat "$W/r4.log" >>"$LOG"
check "job 4 proved by the healthy worker verifies" $B/zkverify $F/verification_key.json "$W/r4/public_0.json" "$W/r4/proof_0.json"
check "job 4 came from 'good'" grep -q "good" "$W/r4.log"
grep -E "requeued|FAULTED" "$W/broker.log" | tee -a "$LOG"
cp "$W"/*.log "$OUT/" 2>/dev/null
say "=== exit status $fail"
kill $(jobs -p) 2>/dev/null
exit $fail
