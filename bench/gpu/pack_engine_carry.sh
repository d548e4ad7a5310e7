#!/usr/bin/env bash
# Packs the engine's programs for bench/gpu/engine_profile.sh:
#
#   bench/gpu/pack_engine_carry.sh [OUT_DIR]      (default OUT_DIR: <repo>/.carry/gpu-engine)
#
# builds zkprove, zkverify, zkfleet-dev, the GPU test suites (zkfleet_cuda_test,
# zkfleet_cuda_parameters_test, ff_gpu_test) and zkfleet_bench_gpu
# in BUILD_DIR (default build/gpu-fleet, configured with ZKFLEET_CUDA=ON and
# tests and benchmarks on) and writes OUT_DIR/bin.tar.xz (stripped) and
# OUT_DIR/lib.tar.xz (the shared libraries the GPU image lacks, as
# bench/gpu/pack_fleet_carry.sh picks them).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT_DIR=${1:-$ROOT/.carry/gpu-engine}
BUILD_DIR=${BUILD_DIR:-$ROOT/build/gpu-fleet}
grep -q 'ZKFLEET_BUILD_TESTS:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" && grep -q 'ZKFLEET_BUILD_BENCH:BOOL=ON' "$BUILD_DIR/CMakeCache.txt" ||
  cmake -B "$BUILD_DIR" -DZKFLEET_BUILD_TESTS=ON -DZKFLEET_BUILD_BENCH=ON >/dev/null
cmake --build "$BUILD_DIR" --target zkprove zkverify zkfleet-dev zkfleet_cuda_test zkfleet_cuda_parameters_test ff_gpu_test \
  zkfleet_bench_gpu zkfleet_bellman_bench -j"${JOBS:-2}"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib" "$OUT_DIR"
for b in cmd/zkprove/zkprove cmd/zkverify/zkverify cmd/zkfleet-dev/zkfleet-dev tests/gpu/cuda/zkfleet_cuda_test \
         tests/gpu/cuda/zkfleet_cuda_parameters_test tests/gpu/ff/ff_gpu_test \
         bench/gpu/zkfleet_bench_gpu bench/bellman/zkfleet_bellman_bench; do
  strip -o "$STAGE/bin/$(basename "$b")" "$BUILD_DIR/$b"
done
# Libraries: what ldd finds outside the base system (libc, libstdc++, libcuda... stay).
SYSTEM_LIBS='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libz|libresolv|libselinux|libpcre2)\.'
for b in "$STAGE"/bin/*; do ldd "$b"; done | awk '$3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
  [[ "$name" =~ $SYSTEM_LIBS ]] || cp -L "$path" "$STAGE/lib/$name"
done
XZ_OPT=-9 tar cJf "$OUT_DIR/bin.tar.xz" -C "$STAGE/bin" .
tar cJf "$OUT_DIR/lib.tar.xz" -C "$STAGE/lib" .
git -C "$ROOT" rev-parse --short HEAD > "$OUT_DIR/COMMIT"
ls "$STAGE/lib" | tr '\n' ' '; echo
ls -la "$OUT_DIR"
