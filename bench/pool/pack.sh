#!/usr/bin/env bash
# Builds zkfleet_pin_probe for sm_90 and packs it, stripped, with the shared
# libraries the GPU machine's image lacks (spdlog, fmt: every ldd entry that
# is neither glibc, libstdc++/libgcc nor the loader), into
# <repo>/.carry/pool-probe/probe.tar.gz (bin/, lib/):
#
#   bash bench/pool/pack.sh [DEST_REPO]   (default: this checkout)
#
# The build directory is build/cuda-pool (CUDA on, only this target built).
set -euo pipefail
cd "$(dirname "$0")/../.."
DEST=${1:-$PWD}/.carry/pool-probe
cmake --preset release -DCMAKE_CUDA_ARCHITECTURES=90 -B build/cuda-pool >/dev/null
cmake --build build/cuda-pool --target zkfleet_pin_probe -j"$(nproc)"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib"
cp build/cuda-pool/bench/pool/zkfleet_pin_probe "$STAGE/bin/"
strip "$STAGE/bin/zkfleet_pin_probe"
ldd build/cuda-pool/bench/pool/zkfleet_pin_probe | awk '$2 == "=>" {print $1, $3}' | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++.so*|libgcc_s.so*|ld-linux*) ;;
    *) cp -L "$path" "$STAGE/lib/$name" && strip --strip-unneeded "$STAGE/lib/$name" ;;
  esac
done
mkdir -p "$DEST"
tar czf "$DEST/probe.tar.gz" -C "$STAGE" bin lib
echo "$DEST/probe.tar.gz: $(du -h "$DEST/probe.tar.gz" | cut -f1)"
tar tzvf "$DEST/probe.tar.gz"
