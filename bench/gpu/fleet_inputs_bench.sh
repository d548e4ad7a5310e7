#!/usr/bin/env bash
# Jobs from inputs on the GPU machine (issue 31): the client sends each job's
# input.json (~0.3 kB); the worker computes the witness with the circuit's
# compiled generator (--generator, --witgen-threads child processes on the
# host's cores) while the GPU proves earlier jobs.
#
#   run(command="OUT=$OUT/in22 bash bench/gpu/fleet_inputs_bench.sh",
#       carry=[".carry/gpu-fleet", ".carry/witgen"], timeout_s=600)
#
# Carries: bench/gpu/pack_fleet_carry.sh (the binaries) and
# bench/gpu/pack_witgen_carry.sh K (the bench circuit's wasm and r1cs, and its
# generator compiled on the development machine: the GPU image has no wasm2c).
# Steps, each figure into $OUT/summary.txt and one SUMMARY_JSON line:
#   a. zkfleet-dev setup --insecure of the bench r1cs; zkprove export-vk
#   b. one witness with zkprove wtns calculate (the shipped generator), the
#      engine alone on it: zkprove --repeat ENGINE_REPEAT (median of 2..N)
#   c. the host's generation rate alone: GEN_SAMPLE distinct inputs through
#      zkprove wtns calculate, WITGEN_THREADS at a time
#   d. the fleet: broker (plaintext, the verification key: it verifies every
#      proof), one worker (--generator, --witgen-threads WITGEN_THREADS),
#      JOBS jobs with distinct inputs submitted by zkctl submit --input;
#      steady rate from the results' finish times; the broker's bytes per job
#      (zkfleet_broker_received_bytes_total / sent_bytes_total), the worker's
#      generation counters (one witness per job: no reuse), median phases.
# Environment: JOBS [64] WITGEN_THREADS [nproc - 2] CAPACITY [6] POOL [64GiB]
#   ENGINE_REPEAT [20] GEN_SAMPLE [2 x WITGEN_THREADS] BACKEND [cuda] WORK [/tmp/fib-work]
#   WORKER_FLAGS [--no-key-check]  WITGEN_CARRY [.carry/witgen]
#   BIN_DIR: binaries to use instead of the fleet carry (CPU dry run:
#   BIN_DIR=<dir with the six> BACKEND=cpu POOL=1GiB WITGEN_CARRY=<a K=16 carry>)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-/tmp/fib-out}
W=${WORK:-/tmp/fib-work}
JOBS=${JOBS:-64}
WITGEN_THREADS=${WITGEN_THREADS:-$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))}
CAPACITY=${CAPACITY:-$((WITGEN_THREADS + 2))}  # every generator busy while the GPU proves
POOL=${POOL:-64GiB}
ENGINE_REPEAT=${ENGINE_REPEAT:-20}
GEN_SAMPLE=${GEN_SAMPLE:-$((2 * WITGEN_THREADS))}
BACKEND=${BACKEND:-cuda}
WORKER_FLAGS=${WORKER_FLAGS:---no-key-check}
WITGEN_CARRY=${WITGEN_CARRY:-.carry/witgen}
mkdir -p "$OUT" "$W"/{logs,res,in}
declare -A R
PIDS=()
say() { echo "[$(date -u +%T)] $*" | tee -a "$OUT/summary.txt"; }
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
finish() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  python3 - "$OUT" <<PY
import json, sys
r = {$(for k in "${!R[@]}"; do printf '"%s": "%s", ' "$k" "${R[$k]}"; done)}
open(sys.argv[1] + "/summary.json", "w").write(json.dumps(r, indent=1, sort_keys=True))
print("SUMMARY_JSON " + json.dumps(r, sort_keys=True))
PY
  cp "$W"/logs/*.log "$OUT/" 2>/dev/null
  exit "${1:-0}"
}
scrape() { python3 -c 'import sys, urllib.request; print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode())' "$1"; }
sample() {  # sample PORT SERIES
  scrape "$1" | awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }'
}

# ---------------------------------------------------------------- carries
if [[ -n "${BIN_DIR:-}" ]]; then  # a CPU dry run: this machine's binaries
  B=$BIN_DIR
else
  eval "$(CARRY_DIR=.carry/gpu-fleet bash bench/gpu/unpack_fleet_carry.sh "$W/carry")" || { say "no fleet carry"; finish 1; }
  B=$W/carry/bin
fi
python3 - "$WITGEN_CARRY" "$W" <<'PY' || { say "no witgen carry ($WITGEN_CARRY)"; finish 1; }
import lzma, shutil, sys, tarfile
src, w = sys.argv[1], sys.argv[2]
for name in ("bench.wasm", "bench.r1cs"):
    with lzma.open(f"{src}/{name}.xz") as f, open(f"{w}/{name}", "wb") as out:
        shutil.copyfileobj(f, out, 1 << 24)
tarfile.open(f"{src}/generator.tar.xz").extractall(f"{w}/gen-cache")
PY
R[carry]=$(head -n 1 "$WITGEN_CARRY/MANIFEST" 2>/dev/null)
R[host]="$(nproc) cores, $(nvidia-smi -L 2>/dev/null | head -n 1 | cut -c1-60)"
say "carry: ${R[carry]}; host ${R[host]}; wasm2c here: $(command -v wasm2c || echo none)"
python3 bench/witgen/make_inputs.py $((JOBS + GEN_SAMPLE + 1)) 7 "$W/in" >/dev/null
IN=("$W"/in/input_*.json)

# ---------------------------------------------------------------- a. key
t=$(now)
"$B/zkfleet-dev" setup --insecure "$W/bench.r1cs" "$W/bench.zkey" >"$W/logs/setup.log" 2>&1 || { say "setup failed"; tail "$W/logs/setup.log"; finish 1; }
R[setup_s]=$(sub "$t" "$(now)")
"$B/zkprove" export-vk "$W/bench.zkey" "$W/vk.json" || finish 1
R[constraints]=$(python3 bench/witgen/r1cs_info.py "$W/bench.r1cs" 2>/dev/null | python3 -c "import json, sys; print(json.load(sys.stdin)[\"constraints\"])")
say "a. setup ${R[setup_s]} s; zkey $(stat -c %s "$W/bench.zkey") B; constraints ${R[constraints]}"

# ---------------------------------------------------------------- b. one witness, the engine alone
t=$(now)
"$B/zkprove" wtns calculate "$W/bench.wasm" "${IN[0]}" "$W/w0.wtns" --witgen-cache "$W/gen-cache" --timings \
  2>&1 | tee "$W/logs/wtns0.log" || { say "wtns calculate failed"; finish 1; }
R[witness0_s]=$(sub "$t" "$(now)")
R[wtns_bytes]=$(stat -c %s "$W/w0.wtns")
say "b. first witness ${R[witness0_s]} s ($(grep -o 'generator [a-z ]*cache\|compiled' "$W/logs/wtns0.log" | head -n 1)), ${R[wtns_bytes]} B"
"$B/zkprove" --backend "$BACKEND" --timings --repeat "$ENGINE_REPEAT" --no-key-check \
  "$W/bench.zkey" "$W/w0.wtns" "$W/res/p0.json" "$W/res/pub0.json" >"$W/logs/engine.log" 2>&1
R[engine_ms]=$(grep -oP "total=\K[0-9.]+" "$W/logs/engine.log" | tail -n +2 | sort -n |
  awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", 1000 * (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
R[engine_rate]=$(awk -v m="${R[engine_ms]:-0}" 'BEGIN { if (m > 0) printf "%.2f", 1000 / m; else print "-" }')
say "   engine alone: ${R[engine_ms]} ms per proof = ${R[engine_rate]} proofs/s"

# ---------------------------------------------------------------- c. generation alone
GEN_DIR=${GEN_DIR:-/dev/shm/fib-gen}  # the sample witnesses go to memory, not the disk
mkdir -p "$GEN_DIR"
t=$(now)
printf '%s\n' "${IN[@]:1:$GEN_SAMPLE}" | xargs -P "$WITGEN_THREADS" -I{} sh -c \
  '"$0" wtns calculate "$1" "$2" "$3/$(basename "$2" .json).wtns" --witgen-cache "$4" && rm -f "$3/$(basename "$2" .json).wtns"' \
  "$B/zkprove" "$W/bench.wasm" {} "$GEN_DIR" "$W/gen-cache" 2>"$W/logs/gen.err"
R[gen_rate]=$(awk -v n="$GEN_SAMPLE" -v s="$(sub "$t" "$(now)")" 'BEGIN { printf "%.2f", n / s }')
t=$(now); "$B/zkprove" wtns calculate "$W/bench.wasm" "${IN[1]}" "$W/w1.wtns" --witgen-cache "$W/gen-cache" >/dev/null 2>&1
R[gen_one_s]=$(sub "$t" "$(now)")
R[min_engine_gen]=$(awk -v a="${R[engine_rate]}" -v b="${R[gen_rate]}" 'BEGIN { print (a + 0 < b + 0 ? a : b) }')
say "c. generation alone: ${R[gen_rate]} witnesses/s with $WITGEN_THREADS processes ($GEN_SAMPLE inputs; one alone ${R[gen_one_s]} s)$( [[ -s $W/logs/gen.err ]] && echo "; errors: $(head -c 200 "$W/logs/gen.err")")"

# ---------------------------------------------------------------- d. the fleet
CP=$(port); WP=$(port); BMP=$(port); WMP=$(port)
"$B/zkbroker" --clients "tcp://127.0.0.1:$CP" --workers "tcp://127.0.0.1:$WP" --data-dir "$W/journal" \
  --insecure-plaintext --verification-key "c=$W/vk.json" --accept-unrouted --result-ttl 3600 \
  --metrics-listen "127.0.0.1:$BMP" >"$W/logs/broker.log" 2>&1 &
PIDS+=($!)
ZK=("$B/zkctl" --broker "tcp://127.0.0.1:$CP" --insecure-plaintext --timeout 300)
for _ in $(seq 100); do "${ZK[@]}" --timeout 1 status >/dev/null 2>&1 && break; sleep 0.1; done
t=$(now)
# shellcheck disable=SC2086
"$B/zkworker" --id w1 --broker "tcp://127.0.0.1:$WP" --insecure-plaintext --circuit "c=$W/bench.zkey" \
  --generator "c=$W/bench.wasm" --witgen-cache "$W/gen-cache" --witgen-threads "$WITGEN_THREADS" \
  --backend "$BACKEND" --capacity "$CAPACITY" --pinned-budget "$POOL" --metrics-listen "127.0.0.1:$WMP" $WORKER_FLAGS \
  >"$W/logs/w1.log" 2>&1 &
WPID=$!; PIDS+=($WPID)
for _ in $(seq 1200); do grep -q -- "-> READY" "$W/logs/w1.log" && break; kill -0 $WPID 2>/dev/null || break; sleep 0.1; done
grep -q -- "-> READY" "$W/logs/w1.log" || { say "worker not READY"; tail -n 20 "$W/logs/w1.log"; finish 1; }
R[worker_ready_s]=$(sub "$t" "$(now)")
say "d. worker READY in ${R[worker_ready_s]} s: $(grep -m1 'witness generator' "$W/logs/w1.log" | cut -c 25-)"
IN_B0=$(sample "$BMP" 'zkfleet_broker_received_bytes_total{socket="clients"}')
OUT_B0=$(sample "$BMP" 'zkfleet_broker_sent_bytes_total{socket="workers"}')
WIN_B0=$(sample "$BMP" 'zkfleet_broker_received_bytes_total{socket="workers"}')
T0=$(now)
export ZK_STR="${ZK[*]}" W
printf '%s\n' "${IN[@]:$((GEN_SAMPLE + 1)):$JOBS}" | xargs -P 8 -I{} bash -c \
  'seq=$($ZK_STR --json submit --circuit c --request-id "$(basename {} .json)" --busy-timeout 300 --input {} |
     python3 -c "import json, sys; print(json.load(sys.stdin)[\"job_seq\"])") && echo "$seq"' >"$W/res/seqs.txt" \
  2>"$W/logs/submit.err"
say "   submitted $(wc -l <"$W/res/seqs.txt") of $JOBS in $(sub "$T0" "$(now)") s"
ok=0
while read -r seq; do
  "${ZK[@]}" --wait-timeout 300 --json await "$seq" --out "$W/res/job-$seq" >"$W/res/job-$seq.json" 2>>"$W/logs/await.err" &&
    ok=$((ok + 1))
done < <(sort -n "$W/res/seqs.txt")
R[jobs_ok]=$ok
python3 - "$W/res" "$JOBS" >"$W/res/stream.txt" <<'PY'
import glob, json, statistics, sys
res, jobs = sys.argv[1], int(sys.argv[2])
done, phases = [], {}
for f in glob.glob(res + "/job-*.json"):
    try:
        r = json.load(open(f))
    except Exception:
        continue
    if r.get("state") != "SUCCEEDED":
        continue
    done.append(r["finished_unix_s"])
    for p in r["partitions"]:
        for k, v in p["timings"].items():
            phases.setdefault(k, []).append(v)
done.sort()
if len(done) >= 2:
    print("rate_steady %.2f" % ((len(done) - 1) / (done[-1] - done[0])))
print("phases " + ", ".join("%s %.3f" % (k.replace("_s", ""), statistics.median(v)) for k, v in sorted(phases.items())))
PY
while read -r k v; do R[$k]=$v; done <"$W/res/stream.txt"
n=$(wc -l <"$W/res/seqs.txt")
R[broker_in_per_job]=$(awk -v a="$IN_B0" -v b="$(sample "$BMP" 'zkfleet_broker_received_bytes_total{socket="clients"}')" -v n="$n" 'BEGIN { printf "%.0f", (b - a) / n }')
R[broker_out_per_job]=$(awk -v a="$OUT_B0" -v b="$(sample "$BMP" 'zkfleet_broker_sent_bytes_total{socket="workers"}')" -v n="$n" 'BEGIN { printf "%.0f", (b - a) / n }')
R[broker_from_worker_per_job]=$(awk -v a="$WIN_B0" -v b="$(sample "$BMP" 'zkfleet_broker_received_bytes_total{socket="workers"}')" -v n="$n" 'BEGIN { printf "%.0f", (b - a) / n }')
R[input_bytes]=$(cat "${IN[@]:$((GEN_SAMPLE + 1)):$JOBS}" | wc -c | awk -v n="$JOBS" '{ printf "%.0f", $1 / n }')
R[generations_ok]=$(sample "$WMP" 'zkfleet_worker_generations_total{outcome="ok"}')
R[generated_bytes]=$(sample "$WMP" 'zkfleet_worker_generated_bytes_total')
R[generated_check]=$(awk -v g="${R[generated_bytes]}" -v n="$ok" -v s="${R[wtns_bytes]}" 'BEGIN { print (g == n * s ? "PASS" : "FAIL") }')
R[fleet_vs_min]=$(awk -v f="${R[rate_steady]:-0}" -v m="${R[min_engine_gen]}" 'BEGIN { if (m > 0) printf "%.3f", f / m }')
say "   $ok of $JOBS jobs succeeded (the broker verified each); fleet ${R[rate_steady]} proofs/s; engine ${R[engine_rate]}, generation ${R[gen_rate]}: fleet / min = ${R[fleet_vs_min]}"
say "   broker per job: ${R[broker_in_per_job]} B in from clients (input.json ${R[input_bytes]} B), ${R[broker_out_per_job]} B out to the worker, ${R[broker_from_worker_per_job]} B from it"
say "   worker: ${R[generations_ok]} witnesses generated, ${R[generated_bytes]} B (= jobs x ${R[wtns_bytes]}: ${R[generated_check]}); phases ${R[phases]}"
"$B/zkverify" --help >/dev/null 2>&1 && first=$(sort -n "$W/res/seqs.txt" | head -n 1) &&
  ls "$W/res/job-$first"* >/dev/null 2>&1 && say "   sample: $(ls "$W/res/job-$first" 2>/dev/null | tr '\n' ' ')"
(( ok == JOBS )) || finish 1
finish 0
