#!/usr/bin/env bash
# Proves each fixture with zkprove (CPU backend) and with snarkjs in the same
# run and prints the median wall time of each and their ratio.
#
#   bench/cpu/zkprove_vs_snarkjs.sh [FIXTURE_DIR ...]
#
# A fixture dir holds circuit_final.zkey (or circuit.zkey) and witness.wtns.
# Default: the bundled k12 fixtures plus ../shared/fixtures/*_k14 when present.
# REPS (default 3) runs per tool; THREADS (default: all) for zkprove.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ZKPROVE="${ZKPROVE:-$ROOT/build/release/cmd/zkprove/zkprove}"
SNARKJS="$ROOT/node_modules/.bin/snarkjs"
REPS="${REPS:-3}"
THREADS="${THREADS:-0}"
[ -x "$ZKPROVE" ] || { echo "build zkprove first (scripts/build.sh); looked for $ZKPROVE" >&2; exit 1; }

if [ $# -eq 0 ]; then
  set -- "$ROOT"/tests/fixtures/bn128_k12 "$ROOT"/tests/fixtures/bls12381_k12
  for d in "$ROOT"/../shared/fixtures/*_k14; do [ -d "$d" ] && set -- "$@" "$d"; done
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_cmd() {  # prints wall seconds of "$@"
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f\n", b-a}'
}

printf "%-28s %10s %10s %8s   (%s, nproc=%s, reps=%s)\n" fixture zkprove_s snarkjs_s ratio "$(uname -m)" "$(nproc)" "$REPS"
for d in "$@"; do
  zkey="$d/circuit_final.zkey"; [ -f "$zkey" ] || zkey="$d/circuit.zkey"
  wtns="$d/witness.wtns"
  z=$(for i in $(seq "$REPS"); do time_cmd "$ZKPROVE" "$zkey" "$wtns" "$TMP/p.json" "$TMP/q.json" --threads "$THREADS"; done | median)
  s=$(for i in $(seq "$REPS"); do time_cmd "$SNARKJS" groth16 prove "$zkey" "$wtns" "$TMP/sp.json" "$TMP/sq.json"; done | median)
  printf "%-28s %10s %10s %7.1fx\n" "$(basename "$d")" "$z" "$s" "$(awk -v a="$z" -v b="$s" 'BEGIN{print b/a}')"
done
