#!/usr/bin/env bash
# Builds zkfleet and runs every test, in four phases:
#   release  the whole tree (CUDA kernels compiled where nvcc exists, so they
#            cannot rot; a compiler warning in its log fails the phase),
#            every ctest entry: unit, integration, gpu. GPU tests
#            on a machine without a GPU report themselves skipped, with why.
#            In CI without a GPU, the suites the asan phase runs are left
#            to it (ZKFLEET_ASAN_SUITES): each suite runs once.
#   asan     unit and integration suites under AddressSanitizer + UBSan, but the
#            arithmetic ones (tests/CMakeLists.txt), which run in release.
#   tsan     the broker's and worker's in-process suites under ThreadSanitizer.
#   fuzz     each libFuzzer target for a short smoke (ZKFLEET_FUZZ_SECONDS,
#            default 10) plus its regression corpus.
# A sanitizer report anywhere (the test process or a zkbroker/zkworker it
# started) fails the phase. ZKFLEET_TEST_PHASES="release asan" runs a subset;
# extra arguments go to every ctest call. Exits non-zero if any phase failed.
set -uo pipefail
cd "$(dirname "$0")/.."
phases="${ZKFLEET_TEST_PHASES:-release asan tsan fuzz}"
jobs="$(nproc)"
# ctest runs one more case than there are cores: the fleet and client cases
# spend much of their time waiting on the processes they start (a 2-core run
# kept 1.2 cores busy at -j2), and every case must pass on a loaded machine.
ctest_jobs=$((jobs + 1))
# The ASan phase's cases wait longer still (every delay they set for a worker
# or a lease is stretched by ZKFLEET_TEST_TIME_SCALE): one more beside them.
asan_ctest_jobs=$((jobs + 2))
failed=()
# Why each failed phase failed, printed again at the very end: CI keeps only
# the tail of this output, and the cause must be in it.
reasons=()
passed_total=0; failed_total=0; skipped_total=0

log() { echo "test.sh: $*"; }

# Runs ctest on build dir $1 (then ctest's arguments), echoes its output,
# says why each skipped case skipped, and adds its counts to the totals.
run_ctest() {
  local bdir=$1; shift
  local out; out="$(mktemp)"
  ctest "$@" 2>&1 | tee "$out"
  local rc=${PIPESTATUS[0]}
  local name
  while read -r name; do
    reasons+=("$bdir: test failed: $name")
  done < <(sed -n '/The following tests FAILED:/,$p' "$out" | sed -nE 's/^[[:space:]]+[0-9]+ - (.*)$/\1/p')
  local total failed_n skipped_n
  total=$(sed -nE 's/.*tests passed, [0-9]+ tests? failed out of ([0-9]+).*/\1/p' "$out" | tail -1)
  failed_n=$(sed -nE 's/.*tests passed, ([0-9]+) tests? failed out of.*/\1/p' "$out" | tail -1)
  skipped_n=$(grep -cE '\(Skipped\)$' "$out")
  passed_total=$((passed_total + ${total:-0} - ${failed_n:-0} - skipped_n))
  failed_total=$((failed_total + ${failed_n:-0}))
  skipped_total=$((skipped_total + skipped_n))
  if [ "$skipped_n" -gt 0 ] && [ -f "$bdir/Testing/Temporary/LastTest.log" ]; then
    log "why the $skipped_n skipped cases skipped (count, reason):"
    grep -A1 ': Skipped$' "$bdir/Testing/Temporary/LastTest.log" | grep -vE -- '^--$|: Skipped$' | sort | uniq -c
  fi
  rm -f "$out"
  return "$rc"
}

# Adds the first failed build step and its first error lines of log $2 to
# the reasons phase $1 failed.
build_failure_reasons() {
  local line
  while read -r line; do reasons+=("$1 build: $line"); done < <(
    { grep -m3 -E '^FAILED: ' "$2"; grep -m5 -E '(error|Error)[: ]' "$2"; } | cut -c1-300)
  [ -n "$(grep -m1 -E '^FAILED: |error' "$2")" ] || reasons+=("$1 build failed (see its log above)")
}

# Fails when a sanitizer wrote any report into $1 (log_path=$1/...).
check_sanitizer_logs() {
  local dir=$1 found=0
  for f in "$dir"/*; do
    [ -s "$f" ] || continue
    found=1
    reasons+=("sanitizer report: $f: $(grep -m1 -E 'ERROR|runtime error|WARNING' "$f" | cut -c1-200)")
    log "sanitizer report in $f:"
    cat "$f"
  done
  return $found
}

# The TSan phase's targets: the unit suites of the components with threads or
# shared state (the broker core and journal, the worker's queue, memory gate,
# lanes and devices, the ingress guard, metrics).
tsan_targets=(fleet_unit_tests wire_unit_tests broker_unit_tests storage_unit_tests worker_unit_tests)

# The build of phase $1 (what the phase itself runs before its cases).
phase_build() {
  case $1 in
    asan) cmake --preset debug-asan >/dev/null && cmake --build --preset debug-asan -j "$jobs" ;;
    tsan) cmake --preset tsan >/dev/null && cmake --build --preset tsan -j "$jobs" --target "${tsan_targets[@]}" ;;
    fuzz) { [ -f build/fuzz/CMakeCache.txt ] && [ -f build/fuzz/build.ninja ] || cmake --preset fuzz >/dev/null; } &&
            cmake --build --preset fuzz -j "$jobs" --target zkfleet_fuzzers ;;
  esac
}

# Builds ahead. While the release phase's cases run, the builds of the
# phases after it run in the background, niced (the cases come first), one
# after another, into their own build dirs: the cases leave part of the 2
# cores idle (they wait on the processes they start). The next phase stops
# that background build before it builds (ninja keeps every step it
# finished and removes the one it was in the middle of), then builds as
# before: the build ahead only saves time (about 150 s in CI), and a failure
# in it is reported by the phase's own build. Not beside the ASan cases: their
# fleets under ASan, with 100 ms heartbeats, took a build beside them for a
# lost worker (3 cases failed in one run). Output: build/prebuild.log.
# ZKFLEET_PREBUILD=0 turns it off.
prebuild_pid=""
stop_prebuild() {
  [ -n "$prebuild_pid" ] || return 0
  if kill -0 "$prebuild_pid" 2>/dev/null; then
    kill -INT -- "-$prebuild_pid" 2>/dev/null
    log "stopped the build ahead (build/prebuild.log)"
  fi
  wait "$prebuild_pid" 2>/dev/null
  prebuild_pid=""
}
start_prebuild() {  # the builds of the phases after phase $1
  stop_prebuild
  [ "${ZKFLEET_PREBUILD:-1}" = 1 ] || return 0
  local later=() seen=0 p
  for p in $phases; do
    [ $seen = 1 ] && [[ " asan tsan fuzz " == *" $p "* ]] && later+=("$p")
    [ "$p" = "$1" ] && seen=1
  done
  [ ${#later[@]} -gt 0 ] || return 0
  log "building ahead, niced, while the $1 cases run: ${later[*]}"
  # setsid: its own process group, so that stop_prebuild stops the compilers too.
  ZKFLEET_TEST_PREBUILD="${later[*]}" setsid nice -n 19 bash "$0" >> build/prebuild.log 2>&1 &
  prebuild_pid=$!
}
if [ -n "${ZKFLEET_TEST_PREBUILD:-}" ]; then
  # setsid made a new session, and with the kernel's autogroups (Debian's
  # default) a session's processes share the CPU with the others' as one
  # group whatever their nice: nice the group itself too (a release phase's
  # cases ran 1.9x slower beside a build ahead without this).
  echo 19 > /proc/self/autogroup 2>/dev/null || true
  for p in $ZKFLEET_TEST_PREBUILD; do
    echo "prebuild: $p ($(date -u +%T))"
    phase_build "$p" || exit 1
  done
  echo "prebuild: done ($(date -u +%T))"
  exit 0
fi
trap stop_prebuild EXIT

sanitizer_env() {  # $1: log dir
  rm -rf "$1"; mkdir -p "$1"
  export ASAN_OPTIONS="log_path=$1/asan:detect_leaks=1:abort_on_error=0"
  export UBSAN_OPTIONS="log_path=$1/ubsan:print_stacktrace=1:halt_on_error=1"
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export TSAN_OPTIONS="log_path=$1/tsan:halt_on_error=0:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"
}

for phase in $phases; do
  stop_prebuild
  start=$(date +%s)
  log "=== phase $phase ==="
  ok=1
  failed_before=$failed_total
  reasons_before=${#reasons[@]}
  case "$phase" in
    release)
      # CI has no GPU: there the kernels are compiled to PTX only (nvcc's
      # front end and code generation, without ptxas's minutes of SASS
      # assembly), which still catches CUDA code that no longer compiles.
      # No kernel runs there and the host code of .cu files only finds no
      # device, so they compile without optimisation (host -O0, NVVM -O0):
      # 36 % less time per file (msm_bn254.cu: 13.1 s of CPU, not 20.5 s).
      ci_args=()
      if [ "${CI:-}" = true ] && ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
        ci_args+=(-DCMAKE_CUDA_ARCHITECTURES=90-virtual "-DCMAKE_CUDA_FLAGS_RELEASE=-O0 -DNDEBUG -Xcicc -O0")
        # Without a GPU the suites the ASan phase runs (the broker's, the
        # worker's, the fleet's multi-process ones...) would test the same
        # CPU code here again, with fewer checks: in CI they run there only
        # (ZKFLEET_ASAN_SUITES, tests/CMakeLists.txt).
        ci_args+=(-DZKFLEET_ASAN_SUITES=OFF)
      else
        ci_args+=(-DZKFLEET_ASAN_SUITES=ON)
      fi
      # The build's own output is a test too: a compiler warning (the demo
      # builds the same sources) fails the phase, listed here.
      mkdir -p build
      scripts/build.sh "${ci_args[@]}" 2>&1 | tee build/release-build.log
      if [ "${PIPESTATUS[0]}" != 0 ]; then
        ok=0
        build_failure_reasons release build/release-build.log
      fi
      if grep -E '(^|[: ])warning([: #]|$)' build/release-build.log > build/release-warnings.log; then
        log "the release build printed $(wc -l < build/release-warnings.log) compiler warning line(s); fix them:"
        cat build/release-warnings.log
        while read -r line; do reasons+=("release: compiler warning: $line"); done < <(head -5 build/release-warnings.log)
        ok=0
      fi
      [ $ok = 1 ] && start_prebuild release
      [ $ok = 1 ] && { run_ctest build/release --preset release -j "$ctest_jobs" "$@" || ok=0; }
      ;;
    asan)
      phase_build asan 2>&1 | tee build/asan-build.log
      if [ "${PIPESTATUS[0]}" != 0 ]; then
        ok=0
        build_failure_reasons asan build/asan-build.log
      fi
      if [ $ok = 1 ]; then
        sanitizer_env "$PWD/build/asan/sanitizer-logs"
        # The arithmetic suites are not built here (ZKFLEET_ARITHMETIC_TESTS
        # in the preset, tests/CMakeLists.txt): they run in release, and the
        # engine runs under ASan inside zkworker in the fleet suites.
        # zkverify_snarkjs_test (34 s under ASan) spends its time in node: it
        # runs in release, as do the SnarkjsExportBellman cases (17 s each under
        # ASan, in node; the same parser runs here in the other format cases);
        # the witness generators' BLS12-381 fixture cases
        # repeat the BN254 ones' code (the same parser and driver).
        run_ctest build/asan --preset debug-asan -j "$asan_ctest_jobs" -L 'unit|integration' \
          -E '^zkverify_snarkjs_test/|^zkfleet_witgen_tests/.*_bls12381$|^zkfleet_bellman_format_test/SnarkjsExportBellman\.' "$@" || ok=0
        check_sanitizer_logs "$PWD/build/asan/sanitizer-logs" || ok=0
        unset ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS LSAN_OPTIONS
      fi
      ;;
    tsan)
      # The in-process suites: the broker core and journal, the worker's
      # queue, memory gate, lanes and devices, the ingress guard, metrics.
      # The process-level integration suites do not run under TSan yet: with
      # TSan-built zkbroker/zkworker on 2 cores, real proofs and broker
      # round trips outrun the tests' timeouts (docs/testing.md, "Sanitizers").
      phase_build tsan || ok=0
      if [ $ok = 1 ]; then
        sanitizer_env "$PWD/build/tsan/sanitizer-logs"
        run_ctest build/tsan --preset tsan -j "$ctest_jobs" -R '^(fleet|wire|broker|storage|worker)_unit_tests/' "$@" || ok=0
        check_sanitizer_logs "$PWD/build/tsan/sanitizer-logs" || ok=0
        unset ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS LSAN_OPTIONS
      fi
      ;;
    fuzz)
      bench/fuzz/run.sh "${ZKFLEET_FUZZ_SECONDS:-10}" || ok=0
      ;;
    *) log "unknown phase '$phase'"; ok=0 ;;
  esac
  log "phase $phase $([ $ok = 1 ] && echo passed || echo FAILED) in $(( $(date +%s) - start )) s"
  if [ $ok = 0 ]; then
    failed+=("$phase")
    # A phase that failed outside ctest (build, sanitizer log, fuzzer) still
    # counts as a failure in the closing line.
    [ "$failed_total" -gt "$failed_before" ] || failed_total=$((failed_total + 1))
    [ ${#reasons[@]} -gt "$reasons_before" ] || reasons+=("$phase: failed outside ctest (see its output above)")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  log "FAILED phases: ${failed[*]}"
  for r in "${reasons[@]}"; do log "  why: $r"; done
fi
echo "zkfleet: $passed_total passed, $failed_total failed, $skipped_total skipped"
[ ${#failed[@]} -eq 0 ]
