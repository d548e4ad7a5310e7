#!/usr/bin/env bash
# Verify-before-return and key validation on the lent GPU machine (issue 12),
# from zkprove / zkverify / zkfleet-dev built on the development machine with
# -DZKFLEET_CUDA=ON and carried as .carry/cuda-verify/bin.tar.gz (the GPU image
# lacks the project's other dependencies):
#
#   bench/gpu/verify_on_gpu_machine.sh [domain powers for the load-time figures, default "20"]
#
# 1. Both bundled fixtures on the CUDA backend: a checked proof verifies
#    (zkverify); ZKFLEET_FAULT_INJECT=msm:1 (test only: corrupts pi_a's MSM
#    result as it comes back from the GPU) with --verify off gives a proof
#    zkverify rejects, and with the check on zkprove catches it, re-proves on
#    the CPU, warns "engine fault on backend cuda" and writes a valid proof; a
#    tampered witness exits 1 with "witness does not satisfy circuit".
# 2. Generated bn128 circuits of domain 2^K: load time with and without the
#    key validation, proof and verification time on the GPU.
# Everything goes to $OUT/log.txt; the exit status is 0 only if every check of 1 held.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-gpu-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
BIN=.carry/cuda-verify/bin
mkdir -p "$BIN" && tar xzf .carry/cuda-verify/bin.tar.gz -C "$BIN"
log() { stdbuf -oL -eL "$@" 2>&1 | tee -a "$LOG"; }
fail=0
check() {  # check NAME COMMAND...: logs and records the outcome
  local name=$1; shift
  if "$@" >>"$LOG" 2>&1; then echo "PASS $name" | tee -a "$LOG"; else echo "FAIL $name" | tee -a "$LOG"; fail=1; fi
}
log nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv
log nproc
W=$(mktemp -d)
for fx in bn128_k12 bls12381_k12; do
  F=tests/fixtures/$fx
  check "$fx checked proof verifies" bash -c "$BIN/zkprove --backend cuda --timings $F/circuit_final.zkey $F/witness.wtns $W/p.json $W/pub.json && $BIN/zkverify $F/verification_key.json $W/pub.json $W/p.json"
  check "$fx injected fault, --verify off: zkverify rejects" bash -c "ZKFLEET_FAULT_INJECT=msm:1 $BIN/zkprove --backend cuda --verify off $F/circuit_final.zkey $F/witness.wtns $W/p.json $W/pub.json && ! $BIN/zkverify $F/verification_key.json $W/pub.json $W/p.json"
  check "$fx injected fault, checked: caught, re-proved, valid" bash -c "ZKFLEET_FAULT_INJECT=msm:1 $BIN/zkprove --backend cuda --timings $F/circuit_final.zkey $F/witness.wtns $W/p.json $W/pub.json 2>$W/err; cat $W/err; grep -q 'engine fault on backend cuda' $W/err && $BIN/zkverify $F/verification_key.json $W/pub.json $W/p.json"
  python3 - "$F/witness.wtns" "$W/bad.wtns" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); b[-32] ^= 1; open(sys.argv[2], 'wb').write(b)
PY
  rm -f $W/p.json $W/pub.json
  check "$fx tampered witness refused, nothing written" bash -c "! $BIN/zkprove --backend cuda $F/circuit_final.zkey $W/bad.wtns $W/p.json $W/pub.json 2>$W/err; cat $W/err; grep -q 'witness does not satisfy circuit circuit_final' $W/err && test ! -e $W/p.json"
done
for k in ${1:-20}; do
  echo "=== bn128 2^$k" | tee -a "$LOG"
  log $BIN/zkfleet-dev gen-circuit --curve bn128 --domain-power "$k" --out "$W/k$k"
  log $BIN/zkfleet-dev setup --insecure --seed 1 "$W/k$k/circuit.r1cs" "$W/k$k/circuit.zkey"
  for opt in --no-key-check ""; do
    { TIMEFORMAT="zkprove $opt: wall %R s user %U s"
      time $BIN/zkprove --backend cuda --timings --repeat 3 $opt \
        "$W/k$k/circuit.zkey" "$W/k$k/witness.wtns" "$W/k$k/p.json" "$W/k$k/pub.json"; } 2>&1 | tee -a "$LOG"
  done
  rm -rf "$W/k$k"
done
echo "=== exit status $fail" | tee -a "$LOG"
exit $fail
