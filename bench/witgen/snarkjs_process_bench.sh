#!/usr/bin/env bash
# Times N runs of `snarkjs wtns calculate WASM INPUT OUT.wtns` as a process (wall clock each, from
# fork to exit: node start, wasm compile, witness, file write) and prints one JSON line with the
# best and median seconds. Run from the repo root:
#   bench/witgen/snarkjs_process_bench.sh WASM INPUT N
# INPUT is one input.json, or a directory of *.json (then run i uses the i-th file, round-robin).
set -euo pipefail
WASM=${1:?usage: snarkjs_process_bench.sh WASM INPUT N}
INPUT=${2:?}
N=${3:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SNARKJS="$ROOT/node_modules/.bin/snarkjs"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

if [[ -d "$INPUT" ]]; then
    mapfile -t FILES < <(ls "$INPUT"/*.json | sort)
else
    FILES=("$INPUT")
fi

TIMES=()
for ((i = 0; i < N; i++)); do
    in=${FILES[$((i % ${#FILES[@]}))]}
    s=$(date +%s.%N)
    "$SNARKJS" wtns calculate "$WASM" "$in" "$TMP/out.wtns" > "$TMP/log" 2>&1 \
        || { cat "$TMP/log" >&2; exit 1; }
    e=$(date +%s.%N)
    TIMES+=("$(echo "$e - $s" | bc -l)")
done

python3 - "$WASM" "$N" "${TIMES[@]}" <<'PY'
import json, statistics, sys
wasm, n, times = sys.argv[1], int(sys.argv[2]), [float(t) for t in sys.argv[3:]]
print(json.dumps({"wasm": wasm, "runs": n, "best_s": round(min(times), 3),
                  "median_s": round(statistics.median(times), 3),
                  "all_s": [round(t, 3) for t in times]}))
PY
