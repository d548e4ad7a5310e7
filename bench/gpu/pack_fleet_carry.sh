#!/usr/bin/env bash
# Builds the fleet binaries with the CUDA backend (sm_90: H100/H200) and packs
# them, with the shared libraries they need that the GPU machine's image
# (Ubuntu 24.04, CUDA driver only) lacks, for bench/gpu/fleet_gpu_bench.sh:
#
#   bench/gpu/pack_fleet_carry.sh [OUT_DIR]      (default OUT_DIR: <repo>/.carry/gpu-fleet)
#
# writes OUT_DIR/bin.tar.xz  stripped zkbroker zkworker zkctl zkfleet-dev zkverify zkprove
#        OUT_DIR/lib.tar.xz  libzmq, libsodium, libpgm, libnorm, libbsd, libmd, the krb5/gssapi
#                            stack, libprotobuf, prometheus-cpp core/pull, civetweb(-cpp),
#                            spdlog, fmt, lmdb, xxhash: whatever `ldd` lists of those
#        OUT_DIR/MANIFEST    commit, date, nvcc version, file list and sizes
# xz, not gzip: the two CUDA binaries (zkworker, zkprove) are ~24 MB each, mostly
# the same device code; gzip's 32 KiB window packs them to ~42 MB, xz to ~21 MB.
# (fleet_gpu_bench.sh unpacks with tar, or python3's tarfile where xz is missing.)
# Never carried: libc, libm, libstdc++, libgcc_s, ld-linux, libcuda (the image has
# newer ones, and libcuda must match the driver there).
#
# The repository built is the one the current directory is in (any worktree;
# else the one holding this script). Environment:
#   BUILD_DIR   build tree (default <repo>/build/gpu-fleet; an existing one is reused)
#   CUDA_ARCH   CMAKE_CUDA_ARCHITECTURES (default 90)
#   JOBS        build parallelism (default 2)
#   SKIP_BUILD  1: only pack what BUILD_DIR already holds
#   MAX_MB      fail if the two archives together exceed this (default 40)
set -euo pipefail
SCRIPT_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=$(git rev-parse --show-toplevel 2>/dev/null || true)
if [[ -z "$ROOT" || ! -f "$ROOT/CMakePresets.json" || ! -d "$ROOT/bench/gpu" ]]; then ROOT=$SCRIPT_ROOT; fi
OUT_DIR=${1:-$ROOT/.carry/gpu-fleet}
BUILD_DIR=${BUILD_DIR:-$ROOT/build/gpu-fleet}
CUDA_ARCH=${CUDA_ARCH:-90}
JOBS=${JOBS:-2}
MAX_MB=${MAX_MB:-40}
TARGETS=(zkbroker zkworker zkctl zkfleet-dev zkverify zkprove)
# Shared libraries to carry (basename prefixes as ldd prints them).
CARRY_LIBS='^lib(zmq|sodium|pgm|norm|bsd|md|gssapi_krb5|krb5|k5crypto|krb5support|com_err|keyutils|protobuf|prometheus-cpp-(core|pull)|civetweb|civetweb-cpp|spdlog|fmt|lmdb|xxhash)(-[0-9.]+)?\.so'
# Libraries the GPU image has (or must come from its driver): never carried.
SYSTEM_LIBS='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libcuda|libz|libresolv|libselinux|libpcre2)'
say() { echo "[pack $(date +%T)] $*"; }
is_cuda_build() {  # CUDA enabled and the CUDA backend compiled in
  compgen -G "$BUILD_DIR/CMakeFiles/*/CMakeCUDACompiler.cmake" >/dev/null &&
    { [[ ! -f "$BUILD_DIR/build.ninja" ]] || grep -q 'ZKFLEET_HAVE_CUDA=1' "$BUILD_DIR/build.ninja"; }
}

say "repository $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git')), build $BUILD_DIR, out $OUT_DIR"
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  [[ -x /usr/local/cuda/bin/nvcc || -n "${CUDACXX:-}" ]] || command -v nvcc >/dev/null || {
    echo "pack_fleet_carry: no nvcc (/usr/local/cuda/bin/nvcc, \$CUDACXX or PATH)" >&2; exit 1; }
  say "configure (release preset, ZKFLEET_CUDA=ON, CUDA arch $CUDA_ARCH, no tests, no bench)"
  (cd "$ROOT" && cmake --preset release -B "$BUILD_DIR" -DZKFLEET_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
    -DZKFLEET_BUILD_TESTS=OFF -DZKFLEET_BUILD_BENCH=OFF >/dev/null)
  is_cuda_build || { echo "pack_fleet_carry: $BUILD_DIR is not a CUDA build (no CUDA compiler, or ZKFLEET_HAVE_CUDA off)" >&2; exit 1; }
  say "build ${TARGETS[*]} (-j$JOBS; nvcc on few cores takes a while)"
  cmake --build "$BUILD_DIR" --target "${TARGETS[@]}" -j"$JOBS"
fi
is_cuda_build || { echo "pack_fleet_carry: $BUILD_DIR is not a CUDA build (no CUDA compiler, or ZKFLEET_HAVE_CUDA off)" >&2; exit 1; }

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib" "$OUT_DIR"
for t in "${TARGETS[@]}"; do
  src="$BUILD_DIR/cmd/$t/$t"
  [[ -x "$src" ]] || { echo "pack_fleet_carry: $src missing (build it, or drop SKIP_BUILD)" >&2; exit 1; }
  cp "$src" "$STAGE/bin/$t"
  strip --strip-unneeded "$STAGE/bin/$t"
done
# The libraries: every one ldd resolves for any binary, sorted into carried,
# system and unknown (unknown ones are reported: the GPU run would fail on them).
unknown=0
while read -r name path; do
  if [[ "$name" =~ $CARRY_LIBS ]]; then
    cp -L "$path" "$STAGE/lib/$name"
  elif [[ ! "$name" =~ $SYSTEM_LIBS ]]; then
    echo "pack_fleet_carry: WARNING: $name ($path) is neither carried nor known to be on the GPU image" >&2
    unknown=1
  fi
done < <(for b in "$STAGE"/bin/*; do ldd "$b"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
if ldd "$STAGE"/bin/* | grep -q "not found"; then
  ldd "$STAGE"/bin/* | grep "not found" >&2; echo "pack_fleet_carry: unresolved libraries" >&2; exit 1
fi
if ldd "$STAGE/bin/zkworker" | grep -q libcudart; then
  echo "pack_fleet_carry: zkworker links libcudart dynamically; carrying it" >&2
  cp -L "$(ldd "$STAGE/bin/zkworker" | awk '/libcudart/ {print $3}')" "$STAGE/lib/"
fi
rm -f "$OUT_DIR"/bin.tar.* "$OUT_DIR"/lib.tar.*
tar -C "$STAGE/bin" -cf - . | xz -9 -T1 >"$OUT_DIR/bin.tar.xz"  # one stream: the CUDA binaries share their device code
tar -C "$STAGE/lib" -cf - . | xz -9 -T"$JOBS" >"$OUT_DIR/lib.tar.xz"
{
  echo "zkfleet GPU fleet carry, $(date -u +%FT%TZ)"
  echo "commit $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "build $BUILD_DIR, CMAKE_CUDA_ARCHITECTURES=$(awk -F= '/^CMAKE_CUDA_ARCHITECTURES:/ {print $2}' "$BUILD_DIR/CMakeCache.txt" | grep . || echo "default (90-real 90-virtual)")"
  echo "$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -n 1)"
  (cd "$STAGE" && ls -l bin lib | awk 'NF >= 9 {print $5, $9}')
} >"$OUT_DIR/MANIFEST"
echo "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" >"$OUT_DIR/COMMIT"
total=$(( $(stat -c %s "$OUT_DIR/bin.tar.xz") + $(stat -c %s "$OUT_DIR/lib.tar.xz") ))
say "binaries: $(cd "$STAGE/bin" && ls | tr '\n' ' ')"
say "libraries: $(cd "$STAGE/lib" && ls | tr '\n' ' ')"
say "$OUT_DIR: bin.tar.xz $(stat -c %s "$OUT_DIR/bin.tar.xz") B, lib.tar.xz $(stat -c %s "$OUT_DIR/lib.tar.xz") B, total $((total / 1000000)) MB"
if (( total > MAX_MB * 1000000 )); then echo "pack_fleet_carry: $((total / 1000000)) MB is over MAX_MB=$MAX_MB" >&2; exit 1; fi
(( unknown == 0 )) || say "WARNING: some libraries are neither carried nor known system ones (see above)"
say "carry it: run(..., carry=[\"${OUT_DIR#$ROOT/}\"]) then bash bench/gpu/fleet_gpu_bench.sh there"
