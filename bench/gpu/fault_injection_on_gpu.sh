#!/usr/bin/env bash
# Issue 12 on a GPU host: verify-before-send with a CUDA worker. Runs the
# CUDA tests, then a broker and CUDA workers on 127.0.0.1 with the test-only
# fault injection (ZKFLEET_FAULT_INJECT) and records what a client and an
# operator see:
#   1. msm:1   one corrupted MSM result: caught, counted, re-proved on the
#              CPU; the client gets 3 valid proofs; the worker stays READY.
#   2. msm:100 with --fault-threshold 3: 3 valid proofs, then FAULTED; the
#              broker routes the next job to a healthy CUDA worker.
#   3. device_lost:1  a sticky CUDA error: FAULTED, exit non-zero, the job
#              is proved by another worker.
# Every proof returned is kept under $OUT/proofs (checked here with zkverify,
# and with snarkjs back on the development machine, which the GPU host lacks).
#
#   C=.carry/issue12 OUT=/tmp/faults bash bench/gpu/fault_injection_on_gpu.sh
# with the CUDA build's binaries in $C/bin and the shared libraries the GPU
# image lacks (libzmq, spdlog, fmt, prometheus-cpp, sodium, pgm, norm) in $C/lib.
set -u
cd "$(dirname "$0")/../.."
C=${C:-.carry/issue12}
OUT=${OUT:-/tmp/zkfleet-faults}
mkdir -p "$OUT/proofs"
if [ -f "$C/bin.tar.gz" ]; then mkdir -p "$C/bin" && tar xzf "$C/bin.tar.gz" -C "$C/bin"; fi
export LD_LIBRARY_PATH=$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ZKFLEET_FIXTURES_DIR=$PWD/tests/fixtures
B=$C/bin
BACKEND=${BACKEND:-cuda}   # cpu: a dry run of the script on a machine without a GPU
FX=tests/fixtures/bn128_k12
CL=tcp://127.0.0.1:25555
WK=tcp://127.0.0.1:25556
LOG=$OUT/log.txt
status=0
log() { echo "$(date +%T.%N | cut -c1-12) $*" | tee -a "$LOG"; }
fail() { log "FAIL: $*"; status=1; }
zkctl() { "$B/zkctl" --broker "$CL" "$@"; }
metric() {  # port name [label fragment...] -> sum of the matching samples (empty when none)
  python3 - "$@" <<'EOF'
import sys, urllib.request
port, name, fragments = sys.argv[1], sys.argv[2], sys.argv[3:]
body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3).read().decode()
values = [float(line.split()[-1]) for line in body.splitlines()
          if line.startswith(name + "{") and all(f in line for f in fragments)]
if values:
    print(f"{sum(values):g}")
EOF
}
wait_state() {  # worker state timeout_s
  for _ in $(seq $(( $3 * 10 ))); do
    zkctl workers 2>/dev/null | grep -E "^$1 " | grep -q "$2" && return 0
    sleep 0.1
  done
  return 1
}
start_worker() {  # id metrics_port inject [extra args...]
  local id=$1 port=$2 inject=$3; shift 3
  ZKFLEET_FAULT_INJECT=$inject "$B/zkworker" --broker "$WK" --id "$id" --circuit "bn=$FX/circuit_final.zkey" \
    --backend "$BACKEND" --capacity 1 --heartbeat-ms 500 --metrics-listen "127.0.0.1:$port" "$@" > "$OUT/$id.log" 2>&1 &
}  # run in this shell (not in $(...)), so that $! is a child we can wait for
prove() {  # name -> proves the bundled witness, keeps and checks the proof
  local dir=$OUT/proofs/$1
  if zkctl --wait-timeout 120 submit --circuit bn --out "$dir" "$FX/witness.wtns" >> "$LOG" 2>&1 &&
     "$B/zkverify" "$FX/verification_key.json" "$dir/public_0.json" "$dir/proof_0.json" >> "$LOG" 2>&1; then
    log "$1: proof returned, zkverify OK"
  else
    fail "$1: no valid proof"
  fi
}

log "=== GPU"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv 2>&1 | tee -a "$LOG"
for t in zkfleet_cuda_test ff_gpu_test; do
  [ -x "$B/$t" ] || { log "=== $t: not carried"; continue; }
  log "=== $t"
  timeout 600 "$B/$t" > "$OUT/$t.txt" 2>&1 || fail "$t"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran" "$OUT/$t.txt" | tee -a "$LOG"
done

log "=== broker"
"$B/zkbroker" --clients "$CL" --workers "$WK" --heartbeat-ms 500 > "$OUT/broker.log" 2>&1 &
BROKER=$!
sleep 0.5

log "=== 1. one injected MSM fault (msm:1)"
start_worker w1 29101 msm:1 --fault-threshold 3 --fault-window 600; W1=$!
wait_state w1 READY 120 || fail "w1 not READY"
for i in 1 2 3; do prove "one-fault-$i"; done
faults=$(metric 29101 zkfleet_worker_proof_verification_failures_total "backend=\"$BACKEND\"" 'circuit="bn"')
log "w1 verification failures counted: ${faults:-absent} (expected 1); state READY: $(metric 29101 zkfleet_worker_state 'state="READY"')"
[ "${faults:-0}" = 1 ] || fail "w1 fault counter is '${faults:-absent}', expected 1"
grep -m1 "engine fault" "$OUT/w1.log" | tee -a "$LOG"
zkctl drain w1 --wait >> "$LOG" 2>&1; wait "$W1"

log "=== 2. repeated faults (msm:100, --fault-threshold 3)"
start_worker bad 29102 msm:100 --fault-threshold 3 --fault-window 600; W2=$!
wait_state bad READY 120 || fail "bad not READY"
for i in 1 2 3; do prove "repeated-fault-$i"; done
wait_state bad FAULTED 10 && log "bad is FAULTED" || fail "bad did not go FAULTED"
zkctl workers | tee -a "$LOG"
log "bad: failures $(metric 29102 zkfleet_worker_proof_verification_failures_total "backend=\"$BACKEND\""), FAULTED $(metric 29102 zkfleet_worker_state 'state="FAULTED"')"
start_worker good 29103 ""; W3=$!
wait_state good READY 120 || fail "good not READY"
prove "after-faulted"
grep -h "processing" "$OUT/good.log" | tail -1 | tee -a "$LOG"
kill "$W2" 2>/dev/null

log "=== 3. sticky device error (device_lost:1)"
zkctl drain good --wait >> "$LOG" 2>&1; wait "$W3"
start_worker lost 29104 device_lost:1; W4=$!
wait_state lost READY 120 || fail "lost not READY"
zkctl --wait-timeout 180 submit --circuit bn --out "$OUT/proofs/device-lost" "$FX/witness.wtns" >> "$LOG" 2>&1 &
SUB=$!
for _ in $(seq 600); do kill -0 "$W4" 2>/dev/null || break; sleep 0.1; done
wait "$W4"; code=$?
log "lost exited with $code (expected non-zero)"
[ "$code" -ne 0 ] || fail "lost exited 0"
grep -E "FAULTED|fatal|device" "$OUT/lost.log" | head -5 | tee -a "$LOG"
zkctl workers | tee -a "$LOG"
start_worker good2 29105 ""; W5=$!
wait_state good2 READY 120 || fail "good2 not READY"
if wait "$SUB" && "$B/zkverify" "$FX/verification_key.json" "$OUT/proofs/device-lost/public_0.json" \
  "$OUT/proofs/device-lost/proof_0.json" >> "$LOG" 2>&1; then
  log "device-lost job: proved by good2, zkverify OK"
else
  fail "device-lost job has no valid proof"
fi
zkctl status | tee -a "$LOG"

zkctl drain good2 --wait >> "$LOG" 2>&1
kill "$BROKER" 2>/dev/null
wait 2>/dev/null
log "=== exit status $status"
exit $status
