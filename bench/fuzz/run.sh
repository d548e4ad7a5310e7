#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, `fuzz` CMake preset) and runs each one
# for SECONDS seconds, ZKFLEET_FUZZ_JOBS of them at a time.
#
#   bench/fuzz/run.sh SECONDS [target...]
#
# targets: zkey wtns r1cs json envelope (default: all). For each target:
#   1. regression: every file of fuzz/corpus/<target>/ (committed seeds and
#      the reproducer of every bug found so far) and the full-size bundled
#      fixtures are run once;
#   2. fuzzing for SECONDS seconds, starting from build/fuzz/corpus/<target>
#      (kept between runs), build/fuzz/seeds/<target> (fixtures plus small
#      valid files from fuzz_seed_gen, rebuilt every run) and fuzz/corpus/.
# Prints one summary line per target. Crash, hang (-timeout), leak and OOM
# reproducers go to build/fuzz/artifacts/, logs to build/fuzz/logs/.
# Exits 1 when any target failed, 2 on bad usage or a failed build.
#
# Environment: ZKFLEET_FUZZ_JOBS (build and run parallelism, default 2),
# ZKFLEET_FUZZ_RSS_MB (memory limit per fuzzer, default 2048).
set -uo pipefail

usage() { echo "usage: $0 SECONDS [zkey|wtns|r1cs|json|envelope|broker|input ...]" >&2; exit 2; }
[[ $# -ge 1 && "$1" =~ ^[0-9]+$ ]] || usage
seconds=$1
shift
all_targets=(zkey wtns r1cs json envelope broker input)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "run.sh: unknown target '$t'" >&2; usage; }
done

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=build/fuzz
fixtures=tests/fixtures
jobs=${ZKFLEET_FUZZ_JOBS:-2}
rss_mb=${ZKFLEET_FUZZ_RSS_MB:-2048}
log() { echo "fuzz/run.sh: $*"; }

# One run at a time: two would share the corpus directories and the cores.
mkdir -p build
exec 9>build/fuzz.lock
if ! flock -n 9; then
  log "another bench/fuzz/run.sh is running (build/fuzz.lock)"
  exit 2
fi

# --- build --------------------------------------------------------------------
if ! command -v clang++ >/dev/null; then
  log "clang++ not found (libFuzzer needs clang; Debian: apt-get install clang)"
  exit 2
fi
if [[ ! -f $build/CMakeCache.txt || ! -f $build/build.ninja ]]; then  # (build.ninja: a configure stopped midway)
  log "configuring $build (cmake --preset fuzz)"
  cmake --preset fuzz >"$root/$build.configure.log" 2>&1 || {
    cat "$root/$build.configure.log"; log "configure failed"; exit 2; }
fi
fuzzers=()
for t in "${targets[@]}"; do fuzzers+=("${t}_fuzzer"); done
log "building ${fuzzers[*]} fuzz_seed_gen (-j$jobs)"
cmake --build --preset fuzz --target "${fuzzers[@]}" fuzz_seed_gen -j "$jobs" || { log "build failed"; exit 2; }

# --- seeds ---------------------------------------------------------------------
rm -rf "$build/seeds"
"$build/fuzz/fuzz_seed_gen" "$build/seeds" || { log "fuzz_seed_gen failed"; exit 2; }
mkdir -p "$build/seeds/json" "$build/seeds/input"
# Fixture seeds (copies: libFuzzer truncates them to -max_len for mutation;
# the regression step below runs them whole).
fixture_files() {  # the bundled fixtures a target reads
  case $1 in
    zkey) ls "$fixtures"/*/circuit_final.zkey ;;
    wtns) ls "$fixtures"/*/witness.wtns ;;
    r1cs) ls "$fixtures"/*/circuit.r1cs ;;
    json) ls "$fixtures"/*/*.json ;;
    input) ls "$fixtures"/witgen/*/input*.json ;;
    envelope) ;;
  esac 2>/dev/null
}
for t in "${targets[@]}"; do
  while read -r f; do
    [[ -n $f ]] && cp "$f" "$build/seeds/$t/$(basename "$(dirname "$f")")_$(basename "$f")"
  done < <(fixture_files "$t")
done

# Longest input the mutator makes: room for the small seeds and their
# mutations, but far below the megabyte fixtures, which would slow every run.
max_len() {
  case $1 in
    zkey|json) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

# --- run -----------------------------------------------------------------------
mkdir -p "$build/artifacts" "$build/logs"
# Runs target $1 (regressions, then fuzzing) and writes its summary line to
# $build/logs/$1.summary; the line ends in "ok" when nothing was found.
run_target() {
  local t=$1
  local bin="$build/fuzz/${t}_fuzzer"
  local corpus="$build/corpus/$t" common status regression reglog fuzzlog before after rc artifact kind runs speed last cov ft corp f
  corpus="$build/corpus/$t"
  mkdir -p "$corpus" "fuzz/corpus/$t"
  common=(-timeout=10 -rss_limit_mb="$rss_mb" -artifact_prefix="$build/artifacts/$t-")
  status=ok

  # Regression inputs: files as arguments are each run once.
  regression=()
  while read -r f; do [[ -n $f ]] && regression+=("$f"); done < <(
    find "fuzz/corpus/$t" -type f | sort; fixture_files "$t")
  reglog="$build/logs/$t-regression.log"
  if [[ ${#regression[@]} -gt 0 ]]; then
    log "$t: running ${#regression[@]} regression inputs"
    if ! "$bin" "${common[@]}" "${regression[@]}" >"$reglog" 2>&1; then
      status="REGRESSION FAILED (see $reglog)"
    fi
  fi

  fuzzlog="$build/logs/$t.log"
  if [[ $status == ok ]]; then
    log "$t: fuzzing for ${seconds}s (log: $fuzzlog)"
    before=$(find "$build/artifacts" -name "$t-*" | wc -l)
    "$bin" "${common[@]}" -max_total_time="$seconds" -max_len="$(max_len "$t")" -print_final_stats=1 \
      "$corpus" "$build/seeds/$t" "fuzz/corpus/$t" >"$fuzzlog" 2>&1
    rc=$?
    after=$(find "$build/artifacts" -name "$t-*" | wc -l)
    if [[ $rc -ne 0 || $after -ne $before ]]; then
      artifact=$(ls -t "$build/artifacts/$t-"* 2>/dev/null | head -1)
      kind=$(grep -oE 'ERROR: libFuzzer: [a-z-]+( signal)?|ERROR: (Address|Leak|UndefinedBehavior)Sanitizer: [a-z-]+|runtime error|fuzz check failed' \
        "$fuzzlog" | head -1)
      status="FOUND ${kind:-a failure} (rc $rc; artifact ${artifact:-none}; log $fuzzlog)"
    fi
  fi

  # Figures from libFuzzer's last status line and final stats.
  runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$fuzzlog" 2>/dev/null | tail -1)
  speed=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$fuzzlog" 2>/dev/null | tail -1)
  last=$(grep -E '^#[0-9]+' "$fuzzlog" 2>/dev/null | tail -1)
  cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$last")
  corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9]+[a-zA-Z]*).*/\1/p' <<<"$last")
  printf '%-9s runs=%-10s exec/s=%-7s cov=%-5s ft=%-6s corpus=%-12s regressions=%-3s %s\n' \
    "$t" "${runs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${#regression[@]}" "$status" \
    >"$build/logs/$t.summary"
}

# The targets run $jobs at a time: each fuzzer is one process on one core.
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.summary"
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n; done
  run_target "$t" &
done
wait
summary=()
failed=0
for t in "${targets[@]}"; do
  line=$(cat "$build/logs/$t.summary" 2>/dev/null || echo "$t  no summary: the run did not finish")
  summary+=("$line")
  [[ $line == *" ok" ]] || failed=1
done

echo
echo "fuzz summary (${seconds}s per target, $(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD 2>/dev/null || echo '?'))"
printf '%s\n' "${summary[@]}"
exit "$failed"
