#!/usr/bin/env bash
# Builds zkfleet_msm_variants from the engine sources of a checkout, with
# extra nvcc flags, for same-run comparisons of builds on the GPU machine:
#
#   bench/gpu/variants/build_variant.sh SRC OUT [nvcc flags...]
#     SRC   a checkout (e.g. `git worktree add /tmp/base <commit>`)
#     OUT   the binary (sm_90, stripped, no CMake needed)
#
# then, e.g., pack several into one carry and run them interleaved:
#   tar cJf .carry/exp/variants.tar.xz base new
#   run(command="for v in base new new base; do ./$v bn 10; done", carry=[".carry/exp"])
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$1" && pwd); OUT=$2; shift 2
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
NV=("$NVCC" -std=c++20 -O3 -DNDEBUG -gencode arch=compute_90,code=sm_90 --expt-relaxed-constexpr
    -I"$SRC/gpu" -I"$SRC/common" "$@")
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# Two compilations at a time; a failed one stops the script (set -e on wait).
pids=()
compile() { "${NV[@]}" "$@" & pids+=($!); }
join() { for p in "${pids[@]}"; do wait "$p"; done; pids=(); }
# The checkout's own MSM instantiations, NTT, workspace and device layer.
compile -c "$SRC/gpu/zkfleet/msm/msm_bn254.cu" -o "$D/bn254.o"
compile -c "$SRC/gpu/zkfleet/msm/msm_bls12_381.cu" -o "$D/bls12_381.o"
join
compile -I"$HERE/.." -c "$HERE/msm_variants.cu" -o "$D/main.o"
compile -c "$SRC/gpu/zkfleet/ntt/ntt_device.cu" -o "$D/ntt.o"
join
compile -c "$SRC/gpu/zkfleet/msm/msm_workspace.cu" -o "$D/workspace.o"
compile -c "$SRC/gpu/zkfleet/runtime/cuda_device.cu" -o "$D/device.o"
g++ -std=c++20 -O2 -I"$SRC/common" -c "$SRC/common/zkfleet/common/error.cpp" -o "$D/error.o"
join
"$NVCC" "$D"/*.o -o "$OUT"
strip "$OUT"
