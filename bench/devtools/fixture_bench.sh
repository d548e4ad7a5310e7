#!/usr/bin/env bash
# Times the big-fixture path: zkfleet-dev gen-circuit + setup --insecure, a
# proof by zkprove, and snarkjs' check of it (export verificationkey, verify).
#
#   bench/devtools/fixture_bench.sh [OUTDIR]
#
# Knobs (environment):
#   CURVE=bn128|bls12381     (default bn128)
#   POWER=20                 domain 2^POWER, filled exactly (constraints = 2^POWER - 4)
#   BUILD=build/devtools     build directory holding cmd/zkfleet-dev and cmd/zkprove
#   THREADS=0                threads for setup and zkprove (0 = all cores)
#   SNARKJS_PROVE=0          1 = also time `snarkjs groth16 prove` (about 3 min at 2^20)
#
# OUTDIR (default /tmp/zkfleet-fixture-$CURVE-$POWER) receives circuit.r1cs,
# witness.wtns, circuit.zkey, vk.json, proof.json, public.json and
# timings.txt. Never commit it: a 2^20 bn128 zkey is ~500 MB. The files feed
# the CUDA benchmarks (zkprove --backend cuda circuit.zkey witness.wtns ...).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CURVE=${CURVE:-bn128}
POWER=${POWER:-20}
BUILD=${BUILD:-$ROOT/build/devtools}
THREADS=${THREADS:-0}
SNARKJS_PROVE=${SNARKJS_PROVE:-0}
OUT=${1:-/tmp/zkfleet-fixture-$CURVE-$POWER}

DEV=$BUILD/cmd/zkfleet-dev/zkfleet-dev
PROVE=$BUILD/cmd/zkprove/zkprove
SNARKJS_CLI=$ROOT/node_modules/snarkjs/build/cli.cjs
for f in "$DEV" "$PROVE" "$SNARKJS_CLI"; do
  [[ -e $f ]] || { echo "missing $f (build zkfleet-dev and zkprove; npm ci for snarkjs)" >&2; exit 1; }
done
# snarkjs holds a whole big zkey in memory.
SNARKJS=(node --max-old-space-size=16000 "$SNARKJS_CLI")

mkdir -p "$OUT"
TIMINGS=$OUT/timings.txt
: >"$TIMINGS"
echo "# $(date -u +%FT%TZ) $(hostname) nproc=$(nproc) load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$TIMINGS"

# step NAME CMD...: runs CMD, records wall seconds, CPU seconds (user + sys,
# which a busy shared machine inflates much less than wall time) and peak RSS.
step() {
  local name=$1
  shift
  local start end stats=$OUT/.stats
  start=$(date +%s.%N)
  /usr/bin/time -f '%M %U %S' -o "$stats" "$@"
  end=$(date +%s.%N)
  read -r rss user sys <"$stats"
  printf '%-38s wall %8.2f s   cpu %8.2f s   peak RSS %6d MB\n' "$name" "$(echo "$end - $start" | bc)" \
    "$(echo "$user + $sys" | bc)" "$((rss / 1024))" | tee -a "$TIMINGS"
}

step "gen-circuit ($CURVE 2^$POWER)" "$DEV" gen-circuit --curve "$CURVE" --domain-power "$POWER" --out "$OUT"
step "setup --insecure" "$DEV" setup "$OUT/circuit.r1cs" "$OUT/circuit.zkey" --insecure --threads "$THREADS"
step "zkprove (cpu, load + prove)" "$PROVE" "$OUT/circuit.zkey" "$OUT/witness.wtns" "$OUT/proof.json" \
  "$OUT/public.json" --threads "$THREADS" --timings
step "snarkjs zkey export verificationkey" "${SNARKJS[@]}" zkey export verificationkey "$OUT/circuit.zkey" "$OUT/vk.json"
step "snarkjs groth16 verify (zkprove)" "${SNARKJS[@]}" groth16 verify "$OUT/vk.json" "$OUT/public.json" "$OUT/proof.json"
if [[ $SNARKJS_PROVE == 1 ]]; then
  step "snarkjs groth16 prove" "${SNARKJS[@]}" groth16 prove "$OUT/circuit.zkey" "$OUT/witness.wtns" \
    "$OUT/sproof.json" "$OUT/spublic.json"
  step "snarkjs groth16 verify (snarkjs)" "${SNARKJS[@]}" groth16 verify "$OUT/vk.json" "$OUT/spublic.json" \
    "$OUT/sproof.json"
fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$TIMINGS"
ls -l "$OUT"/circuit.r1cs "$OUT"/witness.wtns "$OUT"/circuit.zkey | awk '{printf "%-40s %8.1f MB\n", $NF, $5/1e6}' |
  tee -a "$TIMINGS"
