#!/usr/bin/env bash
# Where a bellperson proof's device time goes, and this build against
# another, on the GPU machine (one run):
#
#   run(command="PEER=.carry/gpu-peer BUDGETS='24 0' bash bench/gpu/bellman_profile.sh",
#       carry=[".carry/gpu-engine", ".carry/gpu-peer"])
#
#   1. CudaAssignment.* (this build's CUDA proofs equal the CPU's bytes);
#   2. for each budget in BUDGETS [24] (GiB; 0: the device's free memory):
#      zkfleet_bellman_bench on the synthetic PoRep-shaped circuit of 2^K [27]
#      rows with generator multiples as parameters (--fake-params: timing
#      only, proofs not verified), REPEAT [3] proofs, the PEER build's first
#      (a bin.tar.xz/lib.tar.xz pair packed by pack_engine_carry.sh at another
#      commit) when given, then this build's: compare them as ratios, in
#      the same run;
#   3. NCU=1: one proof under Nsight Compute, every kernel's duration
#      (--clock-control none), into $OUT/ncu.txt; bench/gpu/ncu_summary.py
#      sums it per kernel on the development machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-profile-out}
mkdir -p "$OUT"
K=${K:-27}
unpack() {  # unpack CARRY_DIR DEST
  mkdir -p "$2/bin" "$2/lib"
  tar xf "$1/bin.tar.xz" -C "$2/bin" && tar xf "$1/lib.tar.xz" -C "$2/lib"
}
unpack .carry/gpu-engine /tmp/zkfleet-this || exit 1
[[ -n "${PEER:-}" ]] && { unpack "$PEER" /tmp/zkfleet-peer || exit 1; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
echo "this build: $(cat .carry/gpu-engine/COMMIT 2>/dev/null)${PEER:+, peer: $(cat "$PEER/COMMIT" 2>/dev/null)}"
export ZKFLEET_FIXTURES_DIR=$PWD/tests/fixtures ZKFLEET_REQUIRE_GPU=1
status=0
LD_LIBRARY_PATH=/tmp/zkfleet-this/lib timeout 300 /tmp/zkfleet-this/bin/zkfleet_cuda_test \
  --gtest_filter='CudaAssignment.*' 2>&1 | grep -v '^\[ *RUN\|^\[ *OK' | tail -30 || status=1
prove() {  # prove BUILD_DIR BUDGET_GIB [extra args]
  local dir=$1 budget=$2
  shift 2
  LD_LIBRARY_PATH=$dir/lib "$dir/bin/zkfleet_bellman_bench" --synthetic "$K" --public 327 --fake-params --backend cuda \
    --device-memory-budget-gib "$budget" "$@" 2>&1 | grep -v '^{"setup\|assignment"' | cut -c1-500
}
for budget in ${BUDGETS:-24}; do
  if [[ -n "${PEER:-}" ]]; then echo "== peer, budget $budget GiB"; prove /tmp/zkfleet-peer "$budget" --repeat "${REPEAT:-3}"; fi
  echo "== this build, budget $budget GiB"; prove /tmp/zkfleet-this "$budget" --repeat "${REPEAT:-3}" || status=1
done
if [[ "${NCU:-0}" == 1 ]]; then
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  LD_LIBRARY_PATH=/tmp/zkfleet-this/lib timeout 400 "$ncu" --clock-control none --metrics gpu__time_duration.sum \
    --print-summary per-kernel /tmp/zkfleet-this/bin/zkfleet_bellman_bench --synthetic "$K" --public 327 --fake-params \
    --backend cuda --repeat 1 --device-memory-budget-gib "${NCU_BUDGET_GIB:-0}" > "$OUT/ncu.txt" 2>&1 || status=1
  echo "ncu: $(grep -c . "$OUT/ncu.txt") lines in \$OUT/ncu.txt"
fi
exit $status
