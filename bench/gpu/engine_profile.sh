#!/usr/bin/env bash
# The proving engine on the GPU machine, one run: the CUDA tests, the MSM
# benchmark with its phase split, and zkprove on a BN254 2^POWER circuit
# (one-shot, key resident), from binaries packed on the development machine:
#
#   bench/gpu/pack_engine_carry.sh      -> .carry/gpu-engine (zkprove, zkverify, zkfleet-dev,
#                                          zkfleet_cuda_test, zkfleet_bench_gpu, libraries)
#   run(command="bash bench/gpu/engine_profile.sh", carry=[".carry/gpu-engine"])
#
# Everything goes, line-buffered, to $OUT/log.txt, so a run cut short still
# returns what it printed. Environment:
#   POWER [22]       circuit domain (zkfleet-dev gen-circuit --domain-power)
#   MSM_MAX [24]     G1 MSM sizes 2^16..2^MSM_MAX (step 2); G2 up to G2_MAX [22]
#   TESTS [1]        run the GPU test suites first (zkfleet_cuda_test, and
#                    zkfleet_cuda_parameters_test and ff_gpu_test where packed)
#   BENCH [1]        run zkfleet_bench_gpu
#   ONESHOT [3]      one-shot zkprove runs (--no-key-check), plus one with the key check
#   REPEAT [10]      zkprove --repeat N, key resident, without MSM tables and with
#   TABLES [16]      --msm-tables for the resident runs and the benchmark (1: without only)
#   FIXTURE [1]      make the 2^POWER circuit and run zkprove (0: tests and benchmark only)
#   DISK [0]         also time reading the .zkey with the page cache dropped: one
#                    sequential reader, and 4 and 8 readers on slices of it
#   PEER [unset]     a bin.tar.xz of another build (pack_engine_carry.sh on another
#                    checkout, e.g. the previous commit): its benchmark and its
#                    key-resident zkprove run right after ours, in the same run,
#                    so that the two compare as ratios (these machines vary 10 %
#                    from one lease to the next)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-engine-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
POWER=${POWER:-22}
MSM_MAX=${MSM_MAX:-24}
G2_MAX=${G2_MAX:-22}
W=$(mktemp -d /tmp/zkfleet-engine.XXXX)
say() { echo "[engine $(date +%T)] $*" | tee -a "$LOG"; }
log() { stdbuf -oL -eL "$@" 2>&1 | tee -a "$LOG"; }
untar() {  # untar ARCHIVE DIR: tar, or python3 where xz is missing
  mkdir -p "$2"
  if [[ "$1" == *.gz ]] || command -v xz >/dev/null; then tar xf "$1" -C "$2"
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; fi
}
for a in .carry/gpu-engine/bin.tar.xz .carry/gpu-engine/lib.tar.xz; do
  part=$(basename "$a" .tar.xz)  # bin or lib
  [[ -f "$a" ]] && untar "$a" "$W/carry/$part" || say "missing $a"
done
B=$W/carry/bin
P=""
if [[ -n "${PEER:-}" ]]; then
  untar "$PEER" "$W/peer" && P=$W/peer || say "missing peer $PEER"
fi
export LD_LIBRARY_PATH=$W/carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ZKFLEET_FIXTURES_DIR=$PWD/tests/fixtures
# This machine has a GPU: a GPU test that would skip for want of one (a
# broken driver, a hidden device) fails instead (tests/testutil/require_gpu.hpp).
export ZKFLEET_REQUIRE_GPU=1
log nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used --format=csv
say "commit $(cat .carry/gpu-engine/COMMIT 2>/dev/null)"
status=0
if [[ "${TESTS:-1}" == 1 ]]; then
  for suite in zkfleet_cuda_test zkfleet_cuda_parameters_test ff_gpu_test; do
    [[ -x "$B/$suite" ]] || { [[ $suite == zkfleet_cuda_test ]] && { say "missing $suite"; status=1; }; continue; }
    say "$suite"
    log timeout 300 "$B/$suite" || status=1
  done
fi
if [[ "${BENCH:-1}" == 1 ]]; then
  say "zkfleet_bench_gpu --msm-max-log $MSM_MAX --g2-max-log $G2_MAX"
  log timeout 400 "$B/zkfleet_bench_gpu" --markdown "$OUT/bench.md" --msm-max-log "$MSM_MAX" --g2-max-log "$G2_MAX" \
    --ntt-max-log 22 --cpu-max-log 16 --synthetic-log 0 --msm-tables "${TABLES:-16}" || status=1
  if [[ -n "$P" ]]; then
    say "peer: zkfleet_bench_gpu, the same options"
    log timeout 400 "$P/zkfleet_bench_gpu" --markdown "$OUT/bench-peer.md" --msm-max-log "$MSM_MAX" \
      --g2-max-log "$G2_MAX" --ntt-max-log 22 --cpu-max-log 16 --synthetic-log 0 --msm-tables "${TABLES:-16}" || status=1
  fi
fi
if [[ "${FIXTURE:-1}" != 1 ]]; then
  say "exit status $status"
  exit $status
fi
FX=$W/fx
say "fixture 2^$POWER"
t=$EPOCHREALTIME
log "$B/zkfleet-dev" gen-circuit --curve bn128 --domain-power "$POWER" --seed 7 --out "$FX" >/dev/null || { say "gen-circuit failed"; exit 1; }
log "$B/zkfleet-dev" setup --insecure --seed 7 "$FX/circuit.r1cs" "$FX/circuit.zkey" >/dev/null || { say "setup failed"; exit 1; }
say "fixture made in $(python3 -c "print(round($EPOCHREALTIME-$t,1))") s; zkey $(stat -c %s "$FX/circuit.zkey") bytes"
WT=$(ls "$FX"/*.wtns | head -1)
if [[ "${DISK:-0}" == 1 ]]; then
  size=$(stat -c %s "$FX/circuit.zkey")
  for readers in 1 4 8; do
    sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
    t=$EPOCHREALTIME
    slice=$(( (size / readers / 8388608 + 1) ))  # 8 MiB blocks per reader
    for r in $(seq 0 $((readers - 1))); do
      dd if="$FX/circuit.zkey" of=/dev/null bs=8M skip=$((r * slice)) count=$slice status=none &
    done
    wait
    say "disk: $readers reader(s), page cache dropped: $(python3 -c "print(round($size/1e9/($EPOCHREALTIME-$t),2))") GB/s"
  done
fi
for i in $(seq 1 "${ONESHOT:-3}"); do
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  t=$EPOCHREALTIME
  log "$B/zkprove" --backend cuda --timings --no-key-check "$FX/circuit.zkey" "$WT" "$W/proof.json" "$W/public.json" || status=1
  say "one-shot $i (--no-key-check, page cache $( [[ -w /proc/sys/vm/drop_caches ]] && echo dropped || echo warm)): $(python3 -c "print(round($EPOCHREALTIME-$t,3))") s wall"
done
t=$EPOCHREALTIME
log "$B/zkprove" --backend cuda --timings "$FX/circuit.zkey" "$WT" "$W/proof.json" "$W/public.json" || status=1
say "one-shot with the key check: $(python3 -c "print(round($EPOCHREALTIME-$t,3))") s wall"
log "$B/zkprove" export-vk "$FX/circuit.zkey" "$W/vk.json" && log "$B/zkverify" "$W/vk.json" "$W/public.json" "$W/proof.json" || status=1
if [[ "${REPEAT:-10}" -gt 0 ]]; then
  TABLE_RUNS="1"
  [[ "${TABLES:-16}" != 1 ]] && TABLE_RUNS="1 ${TABLES:-16}"
  for tables in $TABLE_RUNS; do
    say "key resident, --msm-tables $tables"
    log "$B/zkprove" --backend cuda --timings --no-key-check --msm-tables "$tables" --repeat "${REPEAT:-10}" \
      "$FX/circuit.zkey" "$WT" "$W/proof.json" "$W/public.json" || status=1
    log "$B/zkverify" "$W/vk.json" "$W/public.json" "$W/proof.json" || status=1
    if [[ -n "$P" ]]; then
      say "peer: key resident, --msm-tables $tables"
      log "$P/zkprove" --backend cuda --timings --no-key-check --msm-tables "$tables" --repeat "${REPEAT:-10}" \
        "$FX/circuit.zkey" "$WT" "$W/proof.json" "$W/public.json" || status=1
    fi
  done
fi
say "exit status $status"
exit $status
