#!/usr/bin/env bash
# Make the Poseidon-shaped bench circuit of 2^K - 3 r1cs constraints (so that nConstraints +
# nPublic + 1 = 2^K fits a 2^K Groth16 domain; nPublic = 2: the public salt and the output) and
# compile it for bn128 with the pinned circom2 (default simplification, --O1).
#
# usage (from the repo root): bench/witgen/make_bench_circuit.sh K [OUTDIR]
#   K in 10..22 (16..22 for the bench); OUTDIR defaults to /work/bench-witgen.
# writes OUTDIR/bench_K.circom, bench_K.wasm, bench_K.r1cs, bench_K.r1cs.xz and bench_K.compile.txt
# (the /usr/bin/time -v report of the circom2 run).
#
# Constraint count at --O1 (measured with circom 2.2.3): one Hash(3, 8, 57) is 243 non-linear
# + 391 linear = 634 constraints; the square chain is one constraint per element, so
# nConstraints = 634*H + M. We take H = floor((2^K - 4) / 634) and M = 2^K - 3 - 634*H (>= 1).
set -euo pipefail

K=${1:?usage: make_bench_circuit.sh K [OUTDIR]}
OUT=${2:-/work/bench-witgen}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CIRCOM2="$ROOT/node_modules/.bin/circom2"
HERE="$ROOT/bench/witgen"

if (( K < 10 || K > 22 )); then echo "K must be in 10..22" >&2; exit 2; fi
TARGET=$(( (1 << K) - 3 ))
PER_HASH=634
H=$(( (TARGET - 1) / PER_HASH ))
M=$(( TARGET - PER_HASH * H ))

mkdir -p "$OUT"
NAME="bench_$K"
sed "s/@H@/$H/g; s/@M@/$M/g" "$HERE/bench_circuit.circom.in" > "$OUT/$NAME.circom"
echo "K=$K H=$H M=$M target constraints=$TARGET"

TMP=$(mktemp -d "$OUT/.build_$K.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
( cd "$OUT" && /usr/bin/time -v "$CIRCOM2" "$NAME.circom" --r1cs --wasm --prime bn128 -o "$TMP" ) \
    > "$OUT/$NAME.compile.txt" 2>&1 || { tail -30 "$OUT/$NAME.compile.txt" >&2; exit 1; }
grep -E "constraints|wires|Elapsed|Maximum resident" "$OUT/$NAME.compile.txt" || true

mv "$TMP/${NAME}_js/$NAME.wasm" "$OUT/$NAME.wasm"
mv "$TMP/$NAME.r1cs" "$OUT/$NAME.r1cs"

INFO=$(python3 "$HERE/r1cs_info.py" "$OUT/$NAME.r1cs")
echo "$INFO"
GOT=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["constraints"])' "$INFO")
if (( GOT != TARGET )); then
    echo "constraint count $GOT != expected $TARGET (per-hash count changed?)" >&2
    exit 1
fi

rm -f "$OUT/$NAME.r1cs.xz"
/usr/bin/time -f "xz -T1 -6: wall %e s, peak RSS %M KB" xz -T1 -6 -k "$OUT/$NAME.r1cs"
ls -l "$OUT/$NAME.wasm" "$OUT/$NAME.r1cs" "$OUT/$NAME.r1cs.xz"
