#!/usr/bin/env bash
# require_gpu_check.sh GPU_TEST_BINARY
#
# Checks that ZKFLEET_REQUIRE_GPU=1 turns a GPU suite's no-device skips into
# failures (tests/testutil/require_gpu.hpp), on any host: the device is hidden
# (CUDA_VISIBLE_DEVICES=-1: no index before the invalid one, so no device),
# which is what a GPU host with a broken driver looks like to the suite.
#
#   1. ZKFLEET_REQUIRE_GPU unset, and set to 0: exit 77 (every case skipped),
#      N > 0 cases listed as skipped, none failed.
#   2. ZKFLEET_REQUIRE_GPU=1: exit 1, the same N cases failed, none skipped or
#      passed, and N failure messages naming the variable, so a run that fails
#      for another reason (a crash, a missing fixture) does not pass for this.
#
# Exit 0 when all holds, 1 otherwise, saying what did not.
set -uo pipefail
bin=${1:?usage: require_gpu_check.sh GPU_TEST_BINARY}
if [ ! -x "$bin" ]; then
  echo "require_gpu_check: $bin is not an executable" >&2
  exit 1
fi
export CUDA_VISIBLE_DEVICES=-1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0

# count REGEX: the number in the first line of $out that matches REGEX (its
# first group), 0 when none does.
count() {
  local n
  n=$(sed -nE "s/$1/\\1/p" "$out" | head -n 1)
  echo "${n:-0}"
}
summary() { count '^\[  '"$1"' *\] ([0-9]+) tests?, listed below:.*'; }

skipped=
for value in unset 0; do
  if [ "$value" = unset ]; then
    env -u ZKFLEET_REQUIRE_GPU "$bin" >"$out" 2>&1
  else
    ZKFLEET_REQUIRE_GPU=$value "$bin" >"$out" 2>&1
  fi
  code=$?
  n=$(summary SKIPPED)
  if [ "$code" != 77 ] || [ "$n" = 0 ] || grep -q '^\[  FAILED  \]' "$out"; then
    echo "FAIL: ZKFLEET_REQUIRE_GPU $value, no device: expected exit 77 with every case skipped, got exit $code," \
      "$n skipped; its output:" >&2
    cat "$out" >&2
    fail=1
  fi
  skipped=${skipped:-$n}
done

ZKFLEET_REQUIRE_GPU=1 "$bin" >"$out" 2>&1
code=$?
failed=$(summary FAILED)
because=$(grep -c 'ZKFLEET_REQUIRE_GPU is set: a missing GPU fails this test' "$out")
if [ "$code" != 1 ] || [ "$failed" != "$skipped" ] || [ "$because" != "$skipped" ] ||
   grep -q '^\[  SKIPPED \]' "$out" || ! grep -q '^\[  PASSED  \] 0 tests\.' "$out"; then
  echo "FAIL: ZKFLEET_REQUIRE_GPU=1, no device: expected exit 1 with all $skipped cases failed for the missing GPU," \
    "got exit $code, $failed failed, $because naming the variable; its output:" >&2
  cat "$out" >&2
  fail=1
fi
[ "$fail" = 0 ] && echo "require_gpu_check: $(basename "$bin"): $skipped cases skip without a GPU and fail under ZKFLEET_REQUIRE_GPU=1"
exit "$fail"
