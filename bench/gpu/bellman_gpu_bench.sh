#!/usr/bin/env bash
# bellperson-style assignment proofs on the GPU machine, one run (issue 33's
# targets), from binaries packed by bench/gpu/pack_engine_carry.sh:
#
#   run(command="bash bench/gpu/bellman_gpu_bench.sh", carry=[".carry/gpu-engine"])
#
#   1. zkfleet_cuda_test CudaAssignment.*: the CUDA proofs equal the CPU's bytes;
#   2. one BLS12-381 circuit of 2^POWER constraints (zkfleet-dev gen-circuit),
#      proved both ways in the same run, key resident: the circom path
#      (zkprove --repeat, .zkey from zkfleet-dev setup --insecure) and the
#      assignment path (zkfleet_bellman_bench on the same r1cs and witness,
#      its parameters synthesized in memory); the ratio is the target;
#   3. STREAM [0]: a synthetic PoRep-like circuit of 2^STREAM rows, a real
#      (seeded) SRS made on the GPU, proved under a device memory budget of STREAM_GIB [0.25]
#      GiB (points streamed from pinned host memory) and compared byte for
#      byte with the resident key's proof (fixed r, s); every proof verified;
#   4. BIG [0]: a synthetic PoRep-like circuit of 2^BIG rows, its parameters
#      multiples of the generators (BIG_SRS=fake: proofs not verified) or a
#      seeded SRS made on the GPU (BIG_SRS=gpu: every proof verified), memory
#      figures printed, under BUDGET_GIB [0: the device's free memory; the key
#      then chooses resident or streamed]; BIG_REPEAT [3] proofs; with
#      COMPARE_RESIDENT=1 first as many on a key without the budget, timed,
#      its first proof compared byte for byte (fixed r, s).
#   5. LOAD [0]: a synthetic PoRep-like circuit of 2^LOAD rows, its seeded SRS made on
#      the GPU and written as a .params file (under LOAD_DIR [the work dir]),
#      then loaded twice as zkworker loads it (engine::BellmanKey::Load) under
#      BUDGET_GIB: first sight (points checked, the check remembered) with one
#      proof, and a second start (remembered, page cache warm) with LOAD_REPEAT
#      [10] verified proofs back to back (a sector's partitions); LOAD_ALSO_GIB
#      ["": none]: budgets (GiB, space-separated) for more second starts;
#      KEEP=1: two more starts with --keep-decoded-params (the first writes
#      the decoded image, the second maps it; as much disk again as the file).
# Environment: POWER [22], REPEAT [10], STREAM [0], STREAM_GIB [0.25], BIG [0],
# BUDGET_GIB [0], PUBLIC [327: a 32 GiB PoRep partition's inputs], TESTS [1].
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-bellman-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
POWER=${POWER:-22}
REPEAT=${REPEAT:-10}
W=$(mktemp -d /tmp/zkfleet-bellman.XXXX)
say() { echo "[bellman $(date +%T)] $*" | tee -a "$LOG"; }
log() { stdbuf -oL -eL "$@" 2>&1 | tee -a "$LOG"; }
untar() {
  mkdir -p "$2"
  if command -v xz >/dev/null; then tar xf "$1" -C "$2"
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; fi
}
for part in bin lib; do untar ".carry/gpu-engine/$part.tar.xz" "$W/carry/$part"; done
B=$W/carry/bin
export LD_LIBRARY_PATH=$W/carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ZKFLEET_FIXTURES_DIR=$PWD/tests/fixtures
# This machine has a GPU: a GPU test that would skip for want of one (a
# broken driver, a hidden device) fails instead (tests/testutil/require_gpu.hpp).
export ZKFLEET_REQUIRE_GPU=1
log nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
say "commit $(cat .carry/gpu-engine/COMMIT 2>/dev/null)"
status=0
if [[ "${TESTS:-1}" == 1 ]]; then
  log timeout 300 "$B/zkfleet_cuda_test" --gtest_filter="${TEST_FILTER:-CudaAssignment.*}" || status=1
  if [[ "${PARAM_TIMINGS:-0}" == 1 ]]; then timings=--gtest_also_run_disabled_tests; else timings=; fi
  log timeout 300 "$B/zkfleet_cuda_parameters_test" $timings || status=1
fi
if [[ "$POWER" -gt 0 ]]; then
  FX=$W/fx
  t=$EPOCHREALTIME
  log "$B/zkfleet-dev" gen-circuit --curve bls12381 --domain-power "$POWER" --seed 7 --out "$FX" >/dev/null || exit 1
  log "$B/zkfleet-dev" setup --insecure --seed 7 "$FX/circuit.r1cs" "$FX/circuit.zkey" >/dev/null || exit 1
  say "circom fixture 2^$POWER made in $(python3 -c "print(round($EPOCHREALTIME-$t,1))") s"
  WT=$(ls "$FX"/*.wtns | head -1)
  for tables in 1 16; do
    say "circom path, key resident, --msm-tables $tables"
    log "$B/zkprove" --backend cuda --timings --no-key-check --msm-tables "$tables" --repeat "$REPEAT" \
      "$FX/circuit.zkey" "$WT" "$W/proof.json" "$W/public.json" || status=1
  done
  rm -f "$FX/circuit.zkey"
  say "assignment path, the same circuit, parameters resident"
  log "$B/zkfleet_bellman_bench" --r1cs "$FX/circuit.r1cs" --wtns "$WT" --backend cuda --repeat "$REPEAT" --compare-cpu || status=1
fi
if [[ "${STREAM:-0}" -gt 0 ]]; then
  say "synthetic 2^$STREAM, real SRS, a ${STREAM_GIB:-0.25} GiB device memory budget, compared with the resident key"
  log "$B/zkfleet_bellman_bench" --synthetic "$STREAM" --public "${PUBLIC:-327}" --backend cuda --repeat "$REPEAT" --gpu-srs \
    --device-memory-budget-gib "${STREAM_GIB:-0.25}" --compare-resident || status=1
fi
if [[ "${LOAD:-0}" -gt 0 ]]; then
  P=${LOAD_DIR:-$W}/porep-$LOAD.params
  say "synthetic 2^$LOAD: its .params written, then loaded as zkworker loads it, budget ${BUDGET_GIB:-0} GiB"
  log "$B/zkfleet_bellman_bench" --synthetic "$LOAD" --public "${PUBLIC:-327}" --gpu-srs --backend cuda \
    --write-params "$P" || status=1
  df -h "$(dirname "$P")" | tee -a "$LOG"
  sleep 2  # the cache's freshness rule: a file changed within 2 s of its open is not remembered
  say "first sight: points checked and remembered"
  log "$B/zkfleet_bellman_bench" --synthetic "$LOAD" --public "${PUBLIC:-327}" --backend cuda --repeat 1 \
    --params "$P" --checked-keys "$W/checked-keys" --device-memory-budget-gib "${BUDGET_GIB:-0}" || status=1
  say "second start: remembered, page cache warm; ${LOAD_REPEAT:-10} proofs back to back"
  log "$B/zkfleet_bellman_bench" --synthetic "$LOAD" --public "${PUBLIC:-327}" --backend cuda --repeat "${LOAD_REPEAT:-10}" \
    --params "$P" --checked-keys "$W/checked-keys" --device-memory-budget-gib "${BUDGET_GIB:-0}" || status=1
  if [[ "${KEEP:-0}" == 1 ]]; then
    # --keep-decoded-params: a CUDA key's image is written by the first
    # remembered load, and mapped by the next.
    for start in "writes the decoded image" "maps the decoded image"; do
      say "a start with --keep-decoded-params that $start; ${LOAD_REPEAT:-10} proofs back to back"
      log "$B/zkfleet_bellman_bench" --synthetic "$LOAD" --public "${PUBLIC:-327}" --backend cuda --repeat "${LOAD_REPEAT:-10}" \
        --params "$P" --checked-keys "$W/checked-keys" --keep-decoded-params --device-memory-budget-gib "${BUDGET_GIB:-0}" || status=1
    done
  fi
  for gib in ${LOAD_ALSO_GIB:-}; do
    say "second start again under a ${gib} GiB budget; ${LOAD_REPEAT:-10} proofs back to back"
    log "$B/zkfleet_bellman_bench" --synthetic "$LOAD" --public "${PUBLIC:-327}" --backend cuda --repeat "${LOAD_REPEAT:-10}" \
      --params "$P" --checked-keys "$W/checked-keys" --device-memory-budget-gib "$gib" || status=1
  done
  rm -f "$P"
fi
if [[ "${BIG:-0}" -gt 0 ]]; then
  say "synthetic 2^$BIG, ${BIG_SRS:-fake} parameters, device memory budget ${BUDGET_GIB:-0} GiB"
  ( while sleep 5; do free -g | awk '/Mem:/ {print "host used GiB", $3}' >> "$OUT/mem.txt";
      nvidia-smi --query-gpu=memory.used --format=csv,noheader >> "$OUT/mem.txt"; done ) & MON=$!
  if [[ "${BIG_SRS:-fake}" == gpu ]]; then srs=--gpu-srs; else srs=--fake-params; fi
  log "$B/zkfleet_bellman_bench" --synthetic "$BIG" --public "${PUBLIC:-327}" $srs --backend cuda --repeat "${BIG_REPEAT:-3}" \
    --device-memory-budget-gib "${BUDGET_GIB:-0}" ${COMPARE_RESIDENT:+--compare-resident} || status=1
  kill $MON
  say "peak host GiB used $(awk '/host/ {print $4}' "$OUT/mem.txt" | sort -n | tail -1), peak device $(grep MiB "$OUT/mem.txt" | sort -n | tail -1)"
fi
say "exit status $status"
exit $status
