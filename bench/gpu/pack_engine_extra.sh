#!/usr/bin/env bash
# Packs the CUDA test and benchmark programs for bench/gpu/engine_profile.sh:
#
#   bench/gpu/pack_engine_extra.sh [OUT_DIR]      (default OUT_DIR: <repo>/.carry/gpu-extra)
#
# builds zkfleet_cuda_test and zkfleet_bench_gpu in BUILD_DIR (default
# build/gpu-fleet, configured with ZKFLEET_CUDA=ON and tests and benchmarks on)
# and writes OUT_DIR/bin.tar.xz with both, stripped. Their shared libraries
# are those of bench/gpu/pack_fleet_carry.sh's lib.tar.xz.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT_DIR=${1:-$ROOT/.carry/gpu-extra}
BUILD_DIR=${BUILD_DIR:-$ROOT/build/gpu-fleet}
grep -q 'ZKFLEET_BUILD_TESTS:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" && grep -q 'ZKFLEET_BUILD_BENCH:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" ||
  cmake -B "$BUILD_DIR" -DZKFLEET_BUILD_TESTS=ON -DZKFLEET_BUILD_BENCH=ON >/dev/null
cmake --build "$BUILD_DIR" --target zkfleet_cuda_test zkfleet_bench_gpu -j"${JOBS:-2}"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$OUT_DIR"
strip -o "$STAGE/bin/zkfleet_cuda_test" "$BUILD_DIR/tests/gpu/cuda/zkfleet_cuda_test"
strip -o "$STAGE/bin/zkfleet_bench_gpu" "$BUILD_DIR/bench/gpu/zkfleet_bench_gpu"
tar cJf "$OUT_DIR/bin.tar.xz" -C "$STAGE/bin" .
ls -la "$OUT_DIR"
