#!/usr/bin/env bash
# Issue 7 on the H200: a CUDA worker with a 64 GiB cudaHostAlloc pool is
# drained during a job stream; the timeline is recorded.
set -u
# Usage (on a GPU host, from the repository root, binaries of a CUDA build
# in $C/bin, or point B at build/release/cmd/...): OUT=/tmp/drain bash bench/fleet/drain_timeline.sh
C=${C:-.carry/issue7}
OUT=${OUT:-/tmp/zkfleet-drain}; mkdir -p $OUT
export LD_LIBRARY_PATH=$PWD/$C/lib
B=$C/bin
FX=tests/fixtures/bn128_k12
# The broker's journal (--data-dir): a fresh directory, removed at exit.
DATA=$(mktemp -d "${TMPDIR:-/tmp}/zkfleet-drain-journal.XXXXXX")
trap 'kill ${BPID:-} 2>/dev/null; rm -rf "$DATA"' EXIT
source "$(dirname "$0")/keys.sh"
make_fleet_keys "$DATA/keys" "$B/zkctl"
ZKCTL=("$B/zkctl" "${CLIENT_SECURITY[@]}")
ts() { date +%s.%N; }
log() { echo "$(ts) $*" | tee -a $OUT/timeline.txt; }
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv | tee $OUT/gpu.txt
free -g | tee -a $OUT/gpu.txt
log "start broker"
broker_check_args "$B/zkbroker" bn "$FX/verification_key.json"
$B/zkbroker --clients tcp://127.0.0.1:5555 --workers tcp://127.0.0.1:5556 --data-dir "$DATA/journal" "${BROKER_SECURITY[@]}" "${BROKER_CHECK[@]}" \
  --metrics-listen 127.0.0.1:9101 > $OUT/broker.log 2>&1 &
BPID=$!
sleep 0.5
log "start worker (64 GiB pinned pool, cuda)"
$B/zkworker --broker tcp://127.0.0.1:5556 "${WORKER_SECURITY[@]}" --id w1 --circuit bn=$FX/circuit_final.zkey --backend cuda \
  --pinned-budget 64GiB --pool-chunk 1GiB --memory-margin 1GiB --metrics-listen 127.0.0.1:9102 > $OUT/worker.log 2>&1 &
WPID=$!
for i in $(seq 1200); do
  if "${ZKCTL[@]}" workers 2>/dev/null | grep -q READY; then break; fi
  sleep 0.1
done
log "worker READY"
"${ZKCTL[@]}" workers | tee -a $OUT/timeline.txt
# A stream of jobs: 3 submitters, each submitting without waiting.
SUBS=()
for c in 1 2 3; do
  ( for j in $(seq 3000); do "${ZKCTL[@]}" --wait-timeout 120 submit --circuit bn --priority normal $FX/witness.wtns > /dev/null 2>&1; done ) &
  SUBS+=($!)
done
sleep 5
log "status before drain"
"${ZKCTL[@]}" status | tee -a $OUT/timeline.txt
log "zkctl drain w1 --wait: begin"
/usr/bin/time -v "${ZKCTL[@]}" --timeout 600 drain w1 --wait 2>$OUT/drain_time.txt | tee $OUT/drain.txt
log "zkctl drain returned"
kill "${SUBS[@]}" 2>/dev/null  # stop the job stream (else the script never ends)
wait $WPID; log "worker exited rc=$?"
free -g | tee -a $OUT/timeline.txt
"${ZKCTL[@]}" status | tee -a $OUT/timeline.txt
grep -iE "drain|releas|pool|state|hand" $OUT/worker.log | head -60 > $OUT/worker_drain_lines.txt
kill $BPID 2>/dev/null
sleep 1
tail -5 $OUT/worker.log
