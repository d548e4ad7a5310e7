#!/usr/bin/env bash
# One-shot proofs with zkprove (CPU backend, default settings) and with
# rapidsnark's `prover`, alternated in the same run, on bn128 circuits: the
# median whole-process wall time of each (start, key load, prove, write the
# JSON) and zkprove's ratio to rapidsnark.
#
#   RAPIDSNARK=/path/to/prover bench/cpu/zkprove_vs_rapidsnark.sh [CIRCUIT_DIR ...]
#
# A circuit dir holds circuit_final.zkey (or circuit.zkey) and witness.wtns.
# Default: the bundled bn128_k12 fixture and ../shared/fixtures/bn128_k14 when
# present. zkprove is measured twice, as a user meets it:
#   seen   the key seen before on this host: its points were checked then and
#          the key-check cache remembers them (a digest, no check);
#   first  a key seen for the first time: an empty key-check cache, so the
#          points are checked (and recorded) in that run.
# Both use a key-check cache of their own in a temporary directory
# (ZKFLEET_KEY_CHECK_CACHE), never the user's. NOCHECK=1 adds a third zkprove
# column, --no-key-check (benchmarks only: the points unchecked).
# REPS (default 5) rounds per circuit; each round runs every tool once, the
# order rotating from round to round. THREADS (default: all) for zkprove;
# rapidsnark uses its thread pool's default (all cores). Every run must exit 0.
# Each circuit gets a line of median wall seconds (range in brackets) and one
# of median CPU seconds (user + sys, /usr/bin/time) of the same runs.
# ZKPROVE (default build/release/cmd/zkprove/zkprove) picks the zkprove binary.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ZKPROVE="${ZKPROVE:-$ROOT/build/release/cmd/zkprove/zkprove}"
RAPIDSNARK="${RAPIDSNARK:-}"
REPS="${REPS:-5}"
THREADS="${THREADS:-0}"
NOCHECK="${NOCHECK:-0}"
[ -x "$ZKPROVE" ] || { echo "build zkprove first (scripts/build.sh); looked for $ZKPROVE" >&2; exit 1; }
[ -n "$RAPIDSNARK" ] && [ -x "$RAPIDSNARK" ] ||
  { echo "set RAPIDSNARK to rapidsnark's prover binary (build/src/prover of iden3/rapidsnark)" >&2; exit 1; }

if [ $# -eq 0 ]; then
  set -- "$ROOT"/tests/fixtures/bn128_k12
  [ -d "$ROOT"/../shared/fixtures/bn128_k14 ] && set -- "$@" "$ROOT"/../shared/fixtures/bn128_k14
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}'; }
wall() { cut -d' ' -f1 "$TMP/$1.times"; }
cpu() { cut -d' ' -f2 "$TMP/$1.times"; }
time_cmd() {  # prints "wall_s cpu_s" of "$@" (cpu = user + sys, from /usr/bin/time); fails when it does
  local t0 t1 cpu=nan
  t0=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    if ! /usr/bin/time -f "%U %S" -o "$TMP/cpu" "$@" >"$TMP/out.log" 2>&1; then
      echo "failed: $*" >&2; cat "$TMP/out.log" >&2; return 1
    fi
    cpu=$(awk '{printf "%.3f", $1 + $2}' "$TMP/cpu")
  elif ! "$@" >"$TMP/out.log" 2>&1; then
    echo "failed: $*" >&2; cat "$TMP/out.log" >&2; return 1
  fi
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" -v c="$cpu" 'BEGIN{printf "%.3f %s\n", b-a, c}'
}

run_tool() {  # run_tool NAME ZKEY WTNS -> appends one time to $TMP/NAME.times
  local name=$1 zkey=$2 wtns=$3
  case "$name" in
    rapidsnark) time_cmd "$RAPIDSNARK" "$zkey" "$wtns" "$TMP/rp.json" "$TMP/rq.json" >>"$TMP/$name.times" ;;
    seen) ZKFLEET_KEY_CHECK_CACHE="$TMP/cache-seen" \
            time_cmd "$ZKPROVE" "$zkey" "$wtns" "$TMP/p.json" "$TMP/q.json" --backend cpu --threads "$THREADS" \
            >>"$TMP/$name.times" ;;
    first) rm -rf "$TMP/cache-first"
           ZKFLEET_KEY_CHECK_CACHE="$TMP/cache-first" \
             time_cmd "$ZKPROVE" "$zkey" "$wtns" "$TMP/p.json" "$TMP/q.json" --backend cpu --threads "$THREADS" \
             >>"$TMP/$name.times" ;;
    nocheck) time_cmd "$ZKPROVE" "$zkey" "$wtns" "$TMP/p.json" "$TMP/q.json" --backend cpu --threads "$THREADS" \
               --no-key-check >>"$TMP/$name.times" ;;
  esac
}

tools=(rapidsnark seen first)
[ "$NOCHECK" = 1 ] && tools+=(nocheck)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), nproc=$(nproc), reps=$REPS, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# zkprove: $ZKPROVE; rapidsnark: $RAPIDSNARK; checkout HEAD $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf "%-14s %-22s %-22s %-22s" circuit "rapidsnark_s" "seen_s" "first_s"
[ "$NOCHECK" = 1 ] && printf " %-22s" "nocheck_s"
printf " %10s %10s\n" "seen/rs" "first/rs"
for d in "$@"; do
  zkey="$d/circuit_final.zkey"; [ -f "$zkey" ] || zkey="$d/circuit.zkey"
  wtns="$d/witness.wtns"
  [ -f "$zkey" ] && [ -f "$wtns" ] || { echo "$d: no circuit_final.zkey/circuit.zkey and witness.wtns" >&2; exit 1; }
  rm -f "$TMP"/*.times
  rm -rf "$TMP/cache-seen"
  # Warm-up, not counted: the files in the page cache, the seen cache primed.
  for t in "${tools[@]}"; do run_tool "$t" "$zkey" "$wtns" >/dev/null; done
  rm -f "$TMP"/*.times
  for rep in $(seq "$REPS"); do
    n=${#tools[@]}
    for i in $(seq 0 $((n - 1))); do run_tool "${tools[$(((i + rep) % n))]}" "$zkey" "$wtns"; done
  done
  rs=$(wall rapidsnark | median); seen=$(wall seen | median); first=$(wall first | median)
  printf "%-14s %-22s %-22s %-22s" "$(basename "$d")" "$rs ($(wall rapidsnark | range))" \
    "$seen ($(wall seen | range))" "$first ($(wall first | range))"
  [ "$NOCHECK" = 1 ] && printf " %-22s" "$(wall nocheck | median) ($(wall nocheck | range))"
  printf " %9.2fx %9.2fx\n" "$(awk -v a="$seen" -v b="$rs" 'BEGIN{print a/b}')" \
    "$(awk -v a="$first" -v b="$rs" 'BEGIN{print a/b}')"
  # The same runs' CPU seconds (user + sys), medians: less sensitive to other load.
  crs=$(cpu rapidsnark | median); cseen=$(cpu seen | median); cfirst=$(cpu first | median)
  printf "%-14s %-22s %-22s %-22s" "  cpu" "$crs" "$cseen" "$cfirst"
  [ "$NOCHECK" = 1 ] && printf " %-22s" "$(cpu nocheck | median)"
  printf " %9.2fx %9.2fx\n" "$(awk -v a="$cseen" -v b="$crs" 'BEGIN{print a/b}')" \
    "$(awk -v a="$cfirst" -v b="$crs" 'BEGIN{print a/b}')"
done
