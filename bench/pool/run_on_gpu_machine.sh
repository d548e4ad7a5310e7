#!/usr/bin/env bash
# Runs the pinned-pool probe (bench/pool/pin_probe.cpp, issue 15) on the lent
# GPU machine, from a binary built on the development machine and carried as
# .carry/pool-probe/probe.tar.gz (bin/zkfleet_pin_probe and lib/ with the
# spdlog/fmt the GPU image lacks; bench/pool/pack.sh makes it):
#
#   bash bench/pool/run_on_gpu_machine.sh [SIZE_GIB] [probe options...]
#
# SIZE_GIB defaults to $SIZE, else 96. Everything goes, line by line, to
# $OUT/pool_probe.txt, so a run cut short still returns what it printed.
# PROBE_TIMEOUT (seconds, default 560) bounds the probe.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-pool-out}
mkdir -p "$OUT"
LOG=$OUT/pool_probe.txt
SIZE=${1:-${SIZE:-96}}
shift || true
DIR=.carry/pool-probe
rm -rf "$DIR/unpacked" && mkdir -p "$DIR/unpacked" && tar xzf "$DIR/probe.tar.gz" -C "$DIR/unpacked" || {
  echo "cannot unpack $DIR/probe.tar.gz (carry .carry/pool-probe)" | tee -a "$LOG"
  exit 1
}
export LD_LIBRARY_PATH=$PWD/$DIR/unpacked/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  echo "=== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  uname -r
  nproc
  grep -E '^(MemTotal|MemAvailable|AnonHugePages|Hugepagesize):' /proc/meminfo
  echo "ulimit -l: $(ulimit -l)"
  ldd "$DIR/unpacked/bin/zkfleet_pin_probe"
  echo "=== zkfleet_pin_probe $SIZE $*"
} 2>&1 | tee -a "$LOG"
stdbuf -oL -eL timeout "${PROBE_TIMEOUT:-560}" "$DIR/unpacked/bin/zkfleet_pin_probe" "$SIZE" "$@" 2>&1 | tee -a "$LOG"
status=${PIPESTATUS[0]}
echo "=== exit status $status" | tee -a "$LOG"
exit "$status"
