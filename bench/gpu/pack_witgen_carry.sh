#!/usr/bin/env bash
# Packs the bench circuit of bench/witgen (made here: circom2 needs ~3 GiB and
# minutes at 2^22) for bench/gpu/fleet_inputs_bench.sh on the GPU machine:
#
#   bench/gpu/pack_witgen_carry.sh K [SRC_DIR] [OUT_DIR]
#       SRC_DIR: where make_bench_circuit.sh wrote bench_K.wasm and bench_K.r1cs.xz
#                (default /work/bench-witgen); OUT_DIR default <repo>/.carry/witgen
#
# writes OUT_DIR/bench.wasm.xz, OUT_DIR/bench.r1cs.xz and OUT_DIR/generator.tar.xz:
# the witness generator compiled here (zkprove wtns calculate --witgen-cache), so
# a GPU image without wasm2c runs it from its cache (witgen/witness_generator.hpp:
# a host without the tools uses a generator shipped in the cache), and
# OUT_DIR/MANIFEST. The zkey is made on the GPU machine (zkfleet-dev setup
# --insecure): a 2^22 key is ~2.4 GB. Every job's input is made there too
# (make_inputs.py, distinct seeds).
set -euo pipefail
K=${1:?usage: pack_witgen_carry.sh K [SRC_DIR] [OUT_DIR]}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=${2:-/work/bench-witgen}
OUT=${3:-$ROOT/.carry/witgen}
ZKPROVE=${ZKPROVE:-$ROOT/build/cpu/cmd/zkprove/zkprove}
[[ -s "$SRC/bench_$K.wasm" && -s "$SRC/bench_$K.r1cs.xz" ]] || {
  echo "no $SRC/bench_$K.wasm / .r1cs.xz: run bench/witgen/make_bench_circuit.sh $K $SRC" >&2; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT"
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
python3 "$ROOT/bench/witgen/make_inputs.py" 1 99 "$CACHE/in" >/dev/null
"$ZKPROVE" wtns calculate "$SRC/bench_$K.wasm" "$CACHE/in/$(ls "$CACHE/in" | head -n 1)" "$CACHE/w.wtns" \
  --witgen-cache "$CACHE/gen" --timings
xz -T2 -6 -c "$SRC/bench_$K.wasm" >"$OUT/bench.wasm.xz"
cp "$SRC/bench_$K.r1cs.xz" "$OUT/bench.r1cs.xz"
tar -C "$CACHE/gen" -cJf "$OUT/generator.tar.xz" --exclude='.build-*' .
{
  echo "commit $(git -C "$ROOT" rev-parse --short HEAD) date $(date -u +%FT%TZ) K $K"
  echo "wasm sha256 $(sha256sum "$SRC/bench_$K.wasm" | cut -d' ' -f1)"
  ls -l "$OUT"
} >"$OUT/MANIFEST"
cat "$OUT/MANIFEST"
total=$(du -cb "$OUT"/* | tail -n 1 | cut -f1)
echo "pack_witgen_carry: $((total / 1048576)) MiB in $OUT"
