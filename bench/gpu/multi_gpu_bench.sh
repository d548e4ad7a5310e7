#!/usr/bin/env bash
# Issue 16, part 2: fleet throughput of one worker driving two GPUs vs one.
# Runs bench/gpu/fleet_gpu_bench.sh once per value of GPUS_LIST (the same
# fixture size, jobs and pool each time; one worker with --gpus VALUE), each
# into $OUT/gpus-<value>/, then writes $OUT/compare.md: every run's proofs/s
# (first result -> last result), its per-device proof counts, and the ratio
# of each run's rate to the first run's. Target: GPUS=all vs GPUS=0 >= 1.9x.
#
#   bash bench/gpu/multi_gpu_bench.sh              (on the nvidia-h200-x2 machine)
#
# Environment: GPUS_LIST ["0 all"]; OUT [/tmp/zkfleet-multigpu-out]; every
# knob of fleet_gpu_bench.sh (POWER, JOBS, POOL, CAPACITY, SUBMIT_PARALLEL,
# WORKER_FLAGS, BIN_DIR, ...) is passed through. Defaults here differ where
# the comparison needs it: JOBS [64] (enough to keep two GPUs busy for a
# while: the rate is over first result -> last result), SKIP_KILL9 [1],
# ENGINE_REPEAT [0] (neither is part of the comparison). Time: at POWER=22
# one run is a few minutes; if two do not fit in one command, run this
# script twice with GPUS_LIST=0 and GPUS_LIST=all and the same OUT: the
# comparison is rewritten from every gpus-* run found in OUT.
# CPU dry run: BIN_DIR=<dir with the six binaries> BACKEND=cpu POWER=12 POOL=64MiB JOBS=8
#   WORKER_FLAGS="--test-fake-devices 2" bash bench/gpu/multi_gpu_bench.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
GPUS_LIST=${GPUS_LIST:-"0 all"}
OUT=${OUT:-/tmp/zkfleet-multigpu-out}
export JOBS=${JOBS:-64} SKIP_KILL9=${SKIP_KILL9:-1} ENGINE_REPEAT=${ENGINE_REPEAT:-0}
mkdir -p "$OUT"
rc=0
for g in $GPUS_LIST; do
  echo "=== GPUS=$g -> $OUT/gpus-$g"
  GPUS=$g OUT=$OUT/gpus-$g bash bench/gpu/fleet_gpu_bench.sh || rc=1
done
python3 - "$OUT" <<'PY' | tee "$OUT/compare.md"
import glob, os, sys
out = sys.argv[1]
runs = []
for d in sorted(glob.glob(os.path.join(out, "gpus-*")), key=lambda d: (d != os.path.join(out, "gpus-0"), d)):
    figures = {}
    try:
        for line in open(os.path.join(d, "figures.txt")):
            k, _, v = line.rstrip("\n").partition(" ")
            figures[k] = v
    except OSError:
        continue
    runs.append((os.path.basename(d)[len("gpus-"):], figures))
def rate(f):
    try:
        return float(f.get("rate_steady", "-").split()[0])
    except ValueError:
        return None
print("# One worker, --gpus: fleet throughput\n")
print("| --gpus | jobs ok | proofs/s (first -> last result) | proofs/s (first submit -> last) | per device (stream, whole run) | ratio to first |")
print("|---|---|---|---|---|---|")
base = rate(runs[0][1]) if runs else None
for g, f in runs:
    r = rate(f)
    ratio = "%.2fx" % (r / base) if r and base else "-"
    print("| %s | %s | %s | %s | %s | %s |" % (g, f.get("jobs_ok", "-"), f.get("rate_steady", "-"),
                                           f.get("rate_e2e", "-"), f.get("device_proofs", "-"), ratio))
print("\nTarget: --gpus all vs --gpus 0 on the two-GPU machine >= 1.9x.")
PY
exit $rc
