#!/usr/bin/env bash
# Filecoin-style jobs on the fleet, one GPU host (issue 33): a bellperson
# .params circuit of 2^POWER rows registered on one CUDA worker, JOBS jobs of
# PARTS partitions each, every partition an assignment file by file://
# reference, proofs verified by the broker; proofs/s stated.
#
#   bench/gpu/pack_fleet_carry.sh    -> .carry/gpu-fleet (zkbroker, zkworker, zkctl, zkfleet-dev, ...)
#   run(command="bash bench/gpu/fleet_bellman_bench.sh", carry=[".carry/gpu-fleet"])
#
# Steps (timestamped in $OUT/log.txt): the synthetic circuit's parameters and
# .vk (zkfleet-dev bellman-params, seeded, insecure) and PARTS assignments
# (bellman-assignment --variant v: one constraint system, other public
# inputs); zkbroker (plaintext, local) with the .vk; zkworker --bellman-circuit;
# JOBS jobs submitted at once, each awaited with --out-proof; the first job's
# proof, the .vk and inputs go to $OUT for the noble oracle on another machine
# (node tests/js/bellman_verify.mjs --vk c.vk --proof job0.proof --inputs job0.inputs.json).
# The ratio to the engine: the fleet's proofs/s against 1 / the median of the
# partitions' own prove_total_s (the engine's rate in the same run, one key,
# device work serialised).
# Environment: POWER [22] PARTS [10] JOBS [3] CAPACITY [4] PIPELINE [2] (--pipeline-depth) FETCH [4]
# (--fetch-threads: file:// partitions read and hashed at once) POOL [48GiB]
# (--pinned-budget); a dry run on the CPU from a build tree: BIN_DIR=DIR BACKEND=cpu POWER=10 POOL=1GiB
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/zkfleet-fleet-bellman-out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
POWER=${POWER:-22}
PARTS=${PARTS:-10}
JOBS=${JOBS:-3}
CAPACITY=${CAPACITY:-4}
PIPELINE=${PIPELINE:-2}
W=$(mktemp -d /tmp/zkfleet-fb.XXXX)
say() { echo "[fleet-bellman $(date +%T.%N | cut -c1-12)] $*" | tee -a "$LOG"; }
log() { stdbuf -oL -eL "$@" 2>&1 | tee -a "$LOG"; }
now() { date +%s.%N; }
untar() {
  mkdir -p "$2"
  if command -v xz >/dev/null; then tar xf "$1" -C "$2"
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; fi
}
if [[ -n "${BIN_DIR:-}" ]]; then
  B=$BIN_DIR  # a dry run from a build tree: BIN_DIR=... BACKEND=cpu POWER=10
else
  for part in bin lib; do untar ".carry/gpu-fleet/$part.tar.xz" "$W/carry/$part"; done
  B=$W/carry/bin
fi
BACKEND=${BACKEND:-cuda}
export LD_LIBRARY_PATH=$W/carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
say "commit $(cat .carry/gpu-fleet/COMMIT 2>/dev/null)"
cleanup() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT

t=$(now)
log "$B/zkfleet-dev" bellman-params --synthetic "$POWER" --public 2 --seed 7 --out "$W/c.params" --vk "$W/c.vk" || exit 1
say "parameters: $(stat -c %s "$W/c.params") bytes in $(python3 -c "print(round($(now)-$t,1))") s"
t=$(now)
for v in $(seq 0 $((PARTS - 1))); do
  "$B/zkfleet-dev" bellman-assignment --synthetic "$POWER" --public 2 --seed 7 --variant "$v" \
    --out "$W/p$v.asgn" --inputs-json "$W/p$v.json" >/dev/null || { say "assignment $v failed"; exit 1; }
done
say "$PARTS assignments of $(stat -c %s "$W/p0.asgn") bytes in $(python3 -c "print(round($(now)-$t,1))") s"

BROKER_C=tcp://127.0.0.1:27711
BROKER_W=tcp://127.0.0.1:27712
"$B/zkbroker" --insecure-plaintext --data-dir "$W/journal" --clients "$BROKER_C" --workers "$BROKER_W" \
  --verification-key "c=$W/c.vk" --max-partitions 64 >"$W/broker.log" 2>&1 &
sleep 1
t=$(now)
"$B/zkworker" --insecure-plaintext --broker "$BROKER_W" --backend "$BACKEND" --bellman-circuit "c=$W/c.params" \
  --fetch-allow "file://$W/" --capacity "$CAPACITY" --pipeline-depth "$PIPELINE" --pinned-budget "${POOL:-48GiB}" \
  --fetch-threads "${FETCH:-4}" \
  --metrics-listen 127.0.0.1:27713 >"$W/worker.log" 2>&1 &
export ZKFLEET_BROKER=$BROKER_C
for i in $(seq 1 600); do
  "$B/zkctl" --insecure-plaintext workers 2>/dev/null | grep -q " READY " && break
  sleep 0.5
done
say "worker READY after $(python3 -c "print(round($(now)-$t,1))") s"
log "$B/zkctl" --insecure-plaintext workers

submit_args=()
for v in $(seq 0 $((PARTS - 1))); do
  f=$W/p$v.asgn
  submit_args+=(--witness-url "file://$f" --sha256 "$(sha256sum "$f" | cut -c1-64)" --size "$(stat -c %s "$f")"
                --public-signals "$W/p$v.json")
done
t0=$(now)
pids=()
for j in $(seq 0 $((JOBS - 1))); do
  "$B/zkctl" --insecure-plaintext submit --circuit c --request-id "job-$j" "${submit_args[@]}" \
    --out-proof "$W/job$j.proof" --json >"$W/job$j.json" 2>"$W/job$j.err" &
  pids+=($!)
done
fails=0
for p in "${pids[@]}"; do wait "$p" || true; done
wait_end=$(now)
for j in $(seq 0 $((JOBS - 1))); do
  if [[ -s "$W/job$j.proof" ]] && [[ $(stat -c %s "$W/job$j.proof") == $((192 * PARTS)) ]]; then :; else
    fails=$((fails + 1)); say "job $j: no proof: $(tail -3 "$W/job$j.err")"; fi
done
elapsed=$(python3 -c "print(round($wait_end-$t0,3))")
say "$JOBS jobs x $PARTS partitions of 2^$POWER: $elapsed s from the first submit to the last proof file;" \
    "$(python3 -c "print(round($JOBS*$PARTS/($wait_end-$t0),2))") proofs/s; jobs without a proof: $fails"
python3 - "$W" "$JOBS" "$elapsed" "$PARTS" <<'PY' | tee -a "$LOG"
import json, sys, collections, statistics
w, jobs, elapsed, parts_per_job = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
all_totals = []
for j in range(jobs):
    try:
        r = json.load(open(f"{w}/job{j}.json"))
    except Exception as e:
        print(f"job {j}: no JSON result ({e})"); continue
    res = r.get("result", r)
    parts = res.get("partitions", [])
    totals = [p.get("timings", {}).get("prove_total_s", 0) for p in parts]
    all_totals += [t for t in totals if t > 0]
    workers = collections.Counter(p.get("worker_id", "?") for p in parts)
    print(f"job {j}: state {res.get('state', r.get('state'))}, {len(parts)} partitions, prove total_s per partition "
          f"min {min(totals, default=0):.3f} max {max(totals, default=0):.3f}, workers {dict(workers)}")
if all_totals and elapsed > 0:
    engine = 1 / statistics.median(all_totals)
    fleet = jobs * parts_per_job / elapsed
    print(f"engine rate (1 / median prove_total_s {statistics.median(all_totals):.4f} s): {engine:.2f} partitions/s; "
          f"fleet {fleet:.2f} partitions/s = {fleet / engine:.2f} x the engine")
PY
curl -s http://127.0.0.1:27713/metrics 2>/dev/null | grep -E "^zkfleet_worker_(proofs|lane|proof_seconds_(sum|count))" | head -20 | tee -a "$LOG"
cp "$W/c.vk" "$W/job0.proof" "$OUT/" 2>/dev/null
python3 -c "import json,sys; print(json.dumps([json.load(open(f'$W/p{v}.json')) for v in range($PARTS)]))" > "$OUT/job0.inputs.json"
tar czf "$OUT/logs.tar.gz" -C "$W" broker.log worker.log $(cd "$W" && ls job*.json job*.err) 2>/dev/null
say "exit status $fails"
exit $fails
