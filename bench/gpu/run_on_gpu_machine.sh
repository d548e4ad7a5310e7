#!/usr/bin/env bash
# Runs the CUDA tests and the GPU benchmark on the lent GPU machine, from
# binaries built on the development machine and carried as
# .carry/cuda/bin.tar.gz (the GPU image lacks the project's other
# dependencies; see docs/benchmarks-gpu.md):
#
#   bench/gpu/run_on_gpu_machine.sh [benchmark options...]
#
# Everything goes, line-buffered, to $OUT/log.txt (and the benchmark table
# to $OUT/bench.md), so a run cut short still returns what it printed.
# TEST_TIMEOUT / BENCH_TIMEOUT (seconds) bound each program.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-gpu-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
export ZKFLEET_FIXTURES_DIR=$PWD/tests/fixtures
# This machine has a GPU: a GPU test that would skip for want of one (a
# broken driver, a hidden device) fails instead (tests/testutil/require_gpu.hpp).
export ZKFLEET_REQUIRE_GPU=1
BIN=.carry/cuda/bin
mkdir -p "$BIN" && tar xzf .carry/cuda/bin.tar.gz -C "$BIN"
log() { stdbuf -oL -eL "$@" 2>&1 | tee -a "$LOG"; }
log nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used --format=csv
log nproc
status=0
for t in zkfleet_cuda_test; do
  echo "=== $t" | tee -a "$LOG"
  log timeout "${TEST_TIMEOUT:-240}" "$BIN/$t" || status=1
done
echo "=== zkfleet_bench_gpu $*" | tee -a "$LOG"
log timeout "${BENCH_TIMEOUT:-330}" "$BIN/zkfleet_bench_gpu" --markdown "$OUT/bench.md" "$@" || status=1
echo "=== exit status $status" | tee -a "$LOG"
exit $status
