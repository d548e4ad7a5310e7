#!/usr/bin/env bash
# zkfleet's witness generation against circom's wasm in V8, side by side on
# one circuit (issue 31's targets), run from the repository root:
#
#   bench/witgen/witgen_bench.sh WASM INPUT_DIR [N]
#
# 1. in-process: one generator process computes the witness N times
#    (zkprove wtns calculate --repeat N: init, inputs, run, the whole witness
#    read out) against circom_runtime's calculateWTNSBin in one node process
#    (bench/witgen/v8_bench.cjs, N distinct inputs); best and median ms;
# 2. process to process: N runs of `zkprove wtns calculate` (generator
#    already compiled, in a cache of this run) against N of
#    `snarkjs wtns calculate` (bench/witgen/snarkjs_process_bench.sh);
# 3. byte identity: the .wtns of the first input from both, compared (cmp).
# Prints one JSON line (WITGEN_BENCH {...}). ZKPROVE overrides the binary.
set -euo pipefail
WASM=${1:?usage: witgen_bench.sh WASM INPUT_DIR [N]}
INPUTS=${2:?}
N=${3:-10}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ZKPROVE=${ZKPROVE:-$ROOT/build/release/cmd/zkprove/zkprove}
[[ -x "$ZKPROVE" ]] || ZKPROVE=$ROOT/build/cpu/cmd/zkprove/zkprove
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mapfile -t FILES < <(ls "$INPUTS"/*.json | sort)
FIRST=${FILES[0]}
# Compile once (not timed), and wait for it: a first `wtns calculate` would
# answer through node and leave the native build running behind it.
"$ZKPROVE" wtns build "$WASM" --witgen-cache "$TMP/cache" 2>"$TMP/compile.txt"
"$ZKPROVE" wtns calculate "$WASM" "$FIRST" "$TMP/ours.wtns" --witgen-cache "$TMP/cache" --timings 2>>"$TMP/compile.txt"
"$ROOT/node_modules/.bin/snarkjs" wtns calculate "$WASM" "$FIRST" "$TMP/snarkjs.wtns" >/dev/null
identical=false
cmp -s "$TMP/ours.wtns" "$TMP/snarkjs.wtns" && identical=true
ours_inproc=$("$ZKPROVE" wtns calculate "$WASM" "${FILES[1]:-$FIRST}" "$TMP/r.wtns" --witgen-cache "$TMP/cache" \
  --repeat "$N" 2>&1 >/dev/null | grep -m1 '^{"witnesses"')
v8_inproc=$(node "$ROOT/bench/witgen/v8_bench.cjs" "$WASM" "$INPUTS" "$((N + 1))" 2>/dev/null | tail -n 1)
times=()
for ((i = 0; i < N; i++)); do
  in=${FILES[$((i % ${#FILES[@]}))]}
  s=$(date +%s.%N)
  "$ZKPROVE" wtns calculate "$WASM" "$in" "$TMP/p.wtns" --witgen-cache "$TMP/cache"
  e=$(date +%s.%N)
  times+=("$(echo "$e - $s" | bc -l)")
done
ours_proc=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { printf "{\"best_s\":%.4f,\"median_s\":%.4f}", v[1], v[int((NR + 1) / 2)] }')
snarkjs_proc=$(bash "$ROOT/bench/witgen/snarkjs_process_bench.sh" "$WASM" "$INPUTS" "$N" | tail -n 1)
python3 - "$WASM" "$identical" "$ours_inproc" "$v8_inproc" "$ours_proc" "$snarkjs_proc" "$(cat "$TMP/compile.txt")" \
  "$(git -C "$ROOT" rev-parse --short HEAD)" <<'PY'
import json, sys
wasm, identical, oi, vi, op, sp, compile_line, commit = sys.argv[1:9]
oi, vi, op, sp = (json.loads(x) for x in (oi, vi, op, sp))
out = {
    "wasm": wasm, "commit": commit, "byte_identical": identical == "true",
    "inprocess_ours_ms": {"best": oi["best_ms"], "median": oi["median_ms"], "native": oi["native"]},
    "inprocess_v8_ms": {"best": vi["best_ms"], "median": vi["median_ms"]},
    "inprocess_speedup_median": round(vi["median_ms"] / oi["median_ms"], 2),
    "process_ours_s": op, "process_snarkjs_s": {k: sp[k] for k in sp if k.endswith("_s")},
    "compile": compile_line.strip(),
}
ours_med = op["median_s"]
snark_med = sp.get("median_s") or sp.get("median")
if snark_med:
    out["process_speedup_median"] = round(float(snark_med) / ours_med, 2)
print("WITGEN_BENCH " + json.dumps(out))
PY
