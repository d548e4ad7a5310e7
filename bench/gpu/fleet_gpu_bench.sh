#!/usr/bin/env bash
# The whole fleet benchmark of issue 15 on one GPU host: fixture, broker,
# worker, a stream of jobs, verification of every proof, start-up, drain and
# kill -9 timings, in one command of at most ~9 minutes at POWER=22:
#
#   bash bench/gpu/fleet_gpu_bench.sh          (from the repository root; results in $OUT)
#
# Binaries: .carry/gpu-fleet/{bin,lib}.tar.xz made by bench/gpu/pack_fleet_carry.sh
# (CUDA build and the shared libraries the GPU image lacks), or BIN_DIR.
#
# Steps, each timestamped in $OUT/log.txt (also on stdout, unbuffered):
#  a. fixture: zkfleet-dev gen-circuit --curve bn128 --domain-power $POWER --seed 7,
#     setup --insecure --seed 7, zkprove export-vk; the engine's own rate with the
#     key resident (zkprove --timings --repeat $ENGINE_REPEAT --no-key-check).
#     gen-circuit writes one witness per circuit (another seed is another circuit),
#     so every job proves that same witness under its own request id.
#  b. zkbroker (CURVE keys from bench/fleet/keys.sh, journal on the local disk,
#     --accept-unrouted; witness size limits raised where the binaries need it:
#     --max-witness-bytes when they have it, else --max-message-bytes).
#  c. one job is queued first, then the worker(s) start: start -> READY (worker
#     log) and start -> first proof (that job's result) are measured.
#  d. JOBS jobs submitted without waiting (SUBMIT_PARALLEL zkctl submits at a
#     time), then awaited: proofs/s over first result -> last result and over
#     first submit -> last result; per-phase timings from the results and the
#     worker's metrics.
#  e. every proof checked with zkverify (failures must be 0); three samples with
#     the verification key in $OUT/samples.tar.gz for snarkjs on another machine.
#  f. zkctl drain --wait: DRAINING and RELEASING durations (and the worker log's).
#  g. unless SKIP_KILL9=1: a fresh worker with the same pool, READY and its pool
#     pinned, kill -9, MemAvailable polled every 50 ms until it is back within
#     2 GiB of its value before that worker started.
#  h. $OUT/summary.md: date, commit, GPU, every figure next to its target
#     (rewritten after each step, so a run cut short still leaves one).
# $OUT holds log.txt, summary.md, samples.tar.gz and logs.tar.gz (worker and
# broker logs, metrics scrapes, job results): four files.
#
# Environment (defaults in brackets):
#   POWER [22]  JOBS [32]  POOL [96GiB] (--pinned-budget)  CAPACITY [4]  WORKERS [1]
#   GPUS []          --gpus for every worker: all, or a list like 0,1 (one worker driving several GPUs,
#                    each with its own key copy and lanes); empty: one GPU per worker, worker i on
#                    CUDA_VISIBLE_DEVICES=(i-1) mod GPUs as before. bench/gpu/multi_gpu_bench.sh runs
#                    this script with GPUS=0 and GPUS=all and prints the ratio. Dry run on the CPU:
#                    BACKEND=cpu GPUS=all WORKER_FLAGS="--test-fake-devices 2"
#                    With ZKFLEET_FAULT_INJECT=device_lost:1 (and ENGINE_REPEAT=0 SKIP_KILL9=1) one
#                    device leaves the set at the first proof: the devices row of the summary
#                    shows it, and every job must still succeed on the other.
#   BACKEND [cuda]   WORKER_FLAGS [] extra zkworker flags (e.g. --no-key-check: the
#                    point checks of a 2^22 key take ~20 s of the start-up)
#   BIN_DIR          use the binaries there instead of the carry (dry runs: BACKEND=cpu)
#   CARRY_DIR [.carry/gpu-fleet]   OUT [/tmp/zkfleet-gpu-out]
#   WORK_DIR         fixture, journal, results (default: a fresh dir in ${TMPDIR:-/tmp}, removed at exit)
#   SKIP_KILL9 [0]   ENGINE_REPEAT [5] (0: skip the engine rate)   SUBMIT_PARALLEL [8]
#   POOL_CHUNK [the worker's default] (--pool-chunk)   BROKER_FLAGS [] extra zkbroker flags
#   TIME_LIMIT [540] s: later steps are skipped past it
#   COMMIT           recorded when there is no git checkout (else the carry's COMMIT file)
#   SECURITY [curve] (plaintext: no CURVE keys)
#
# Witnesses by reference (WITNESS=ref; default WITNESS=inline, the witness bytes in the SUBMIT):
#   after a., one DISTINCT object per job is written, $W/w/job-0.wtns (the first job) and
#   job-1..JOBS.wtns (copies of the fixture's witness: same bytes, its sha256 computed once; no
#   object is fetched for two jobs), public.json derived from the witness (checked against
#   zkprove's where a'. ran); nginx (the carry's, else NGINX or PATH) serves them on 127.0.0.1
#   with a config of its own (types inline, no /etc/nginx); the worker gets --fetch-allow for
#   that prefix and every job is submitted as zkctl submit --witness-url URL --sha256 HEX
#   --size N --public-signals public.json. The summary adds: proofs/s against the engine's rate
#   of the same run (ratio), zkfleet_worker_fetch_bytes_total against (JOBS+1) x witness size
#   (PASS/FAIL), the broker's bytes received per job (byte_relay.py in front of its two ports:
#   TCP payload from the clients and from the worker) and CPU seconds per job
#   (/proc/PID/stat utime+stime), and its journal's growth per job; $OUT/summary.json and one
#   "SUMMARY_JSON {...}" line on stdout hold the figures (in both modes).
#   FETCH_SCHEME [http] https (a test CA made with the carry's openssl; the worker gets
#                    --fetch-ca-bundle) or file (file:// URLs, no nginx)
#   FETCH_THREADS [] (--fetch-threads; the worker's default 4)   FETCH_FLAGS [] more worker flags
#   NGINX_WORKERS [4]   BROKER_BYTES [relay with WITNESS=ref, else none] (relay: count as above;
#                    with inline witnesses the relay's hop costs throughput)
#   OBJ_DIR [$W/w]   where the objects go ((JOBS+1) x witness size: 4.4 GB at 2^22, JOBS=32)
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
POWER=${POWER:-22}
JOBS=${JOBS:-32}
POOL=${POOL:-96GiB}
POOL_CHUNK=${POOL_CHUNK:-}
BROKER_FLAGS=${BROKER_FLAGS:-}
CAPACITY=${CAPACITY:-4}
WORKERS=${WORKERS:-1}
BACKEND=${BACKEND:-cuda}
WORKER_FLAGS=${WORKER_FLAGS:-}
GPUS=${GPUS:-}
SKIP_KILL9=${SKIP_KILL9:-0}
ENGINE_REPEAT=${ENGINE_REPEAT:-5}
SUBMIT_PARALLEL=${SUBMIT_PARALLEL:-8}
TIME_LIMIT=${TIME_LIMIT:-540}
CARRY_DIR=${CARRY_DIR:-.carry/gpu-fleet}
OUT=${OUT:-/tmp/zkfleet-gpu-out}
WITNESS=${WITNESS:-inline}
FETCH_SCHEME=${FETCH_SCHEME:-http}
FETCH_THREADS=${FETCH_THREADS:-}
FETCH_FLAGS=${FETCH_FLAGS:-}
NGINX_WORKERS=${NGINX_WORKERS:-4}
if [[ "$WITNESS" == ref ]]; then BROKER_BYTES=${BROKER_BYTES:-relay}; else BROKER_BYTES=${BROKER_BYTES:-none}; fi
[[ "$WITNESS" == inline || "$WITNESS" == ref ]] || { echo "WITNESS must be inline or ref" >&2; exit 2; }
[[ "$FETCH_SCHEME" =~ ^(http|https|file)$ ]] || { echo "FETCH_SCHEME must be http, https or file" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT/summary.json"
LOG=$OUT/log.txt
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1
T0=$EPOCHREALTIME
W=${WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/zkfleet-fleetbench.XXXXXX")}
mkdir -p "$W/logs" "$W/res"
PIDS=()
cleanup() {
  # nginx first, gently: its workers outlive a master killed with -9 (and keep the port).
  if [[ -n "${NGINX_PID:-}" ]] && kill -TERM "$NGINX_PID" 2>/dev/null; then
    for _ in $(seq 40); do gone "$NGINX_PID" && break; sleep 0.05; done
  fi
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done  # not a bare wait: the log's tee is a child too
  [[ -n "${WORK_DIR:-}" ]] || rm -rf "$W"
}
trap cleanup EXIT

# ---------------------------------------------------------------- helpers
LB=""; command -v stdbuf >/dev/null && LB="stdbuf -oL -eL"  # line-buffered output of the fixture tools
elapsed() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
say() { printf '[%s +%6ss] %s\n' "$(date +%T.%3N)" "$(elapsed)" "$*"; }
step() { echo; say "=== $*"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
over_time() { awk -v e="$(elapsed)" -v l="$TIME_LIMIT" 'BEGIN { exit !(e > l) }'; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mem_available() { awk '/^MemAvailable:/ {printf "%.0f\n", $2 * 1024}' /proc/meminfo; }
gib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1073741824 }'; }
source "$ROOT/bench/fleet/metrics.sh"  # metric PORT SERIES -> value, or -1
scrape() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$1/metrics', timeout=2).read().decode())" >"$2" 2>/dev/null; }
# Unix time of the first log line matching a regex (spdlog local time), or "".
log_time() {
  python3 - "$1" "$2" <<'PY'
import re, sys, datetime
try:
    lines = open(sys.argv[1], errors="replace").read().splitlines()
except OSError:
    sys.exit()
for line in lines:
    if re.search(sys.argv[2], line):
        print("%.3f" % datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()); break
PY
}
# The "(after N s)" of the worker log's "state FROM -> TO" line.
state_after() { grep -m1 -oP "state $2 -> \\S+ \\(after \\K[0-9.]+" "$1"; }
gone() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [[ -z "$s" || "$s" == Z ]]; }  # exited (a zombie counts)
wait_for() {  # wait_for SECONDS COMMAND...: polls every 50 ms
  local until
  until=$(awk -v n="$EPOCHREALTIME" -v s="$1" 'BEGIN { printf "%.3f", n + s }'); shift
  while ! "$@"; do
    awk -v n="$EPOCHREALTIME" -v u="$until" 'BEGIN { exit !(n > u) }' && return 1
    sleep 0.05
  done
}
to_bytes() {  # 96GiB, 512MiB, 2GB, 1073741824 -> bytes; "" for shares like 25%
  python3 - "$1" <<'PY'
import re, sys
m = re.fullmatch(r"\s*([0-9.]+)\s*([KMGT]?i?B?)?\s*", sys.argv[1], re.I)
if not m: sys.exit()
unit = (m.group(2) or "").upper().rstrip("B")
mult = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}[unit]
print(int(float(m.group(1)) * mult))
PY
}
# Summary values, filled in as the steps run; "-" until measured.
declare -A R
for k in gen_s setup_s engine_ms engine_load_s rate_steady rate_e2e rate_steady_n1 start_ready start_first \
         drain_draining drain_releasing drain_exit kill9_back verify_fail verify_n jobs_ok ready_states \
         phases pool_ready_s kill9_pool kill9_mem_before kill9_mem_ready pool_line drain_memback devices \
         device_proofs engine_rate fleet_vs_engine witness_bytes fetch_bytes fetch_expected fetch_check fetches \
         fetch_retries fetch_mean_s nginx broker_cpu_per_job broker_rx_clients_per_job broker_rx_worker_per_job \
         broker_tx_worker_per_job broker_journal_per_job worker_cpu_per_job; do R[$k]="-"; done
SIZE_FLAGS=()
NOTES=()
write_summary() {
  {
    echo "# Fleet end to end, BN254 2^$POWER, $WORKERS worker(s), backend $BACKEND${GPUS:+, --gpus $GPUS}"
    echo
    echo "| | |"
    echo "|---|---|"
    echo "| date | $(date -u +%FT%TZ) (run started $RUN_DATE) |"
    echo "| commit (binaries) | $BIN_COMMIT |"
    echo "| commit (script tree) | $TREE_COMMIT |"
    echo "| GPU | $GPU |"
    echo "| host | $(nproc) cores, $(gib "$(awk '/^MemTotal:/ {print $2 * 1024}' /proc/meminfo)") GiB RAM |"
    echo "| fixture | zkfleet-dev gen-circuit --curve bn128 --domain-power $POWER --seed 7; setup --insecure --seed 7 (gen ${R[gen_s]} s, setup ${R[setup_s]} s); one witness, every job a distinct request id |"
    echo "| worker | --backend $BACKEND ${GPUS:+--gpus $GPUS }--capacity $CAPACITY --pinned-budget $POOL ${POOL_CHUNK:+--pool-chunk $POOL_CHUNK} ${SIZE_FLAGS[*]} $WORKER_FLAGS; ${R[pool_line]} |"
    echo "| broker | ${SIZE_FLAGS[*]} --accept-unrouted $BROKER_FLAGS |"
    echo "| jobs | $JOBS (${R[jobs_ok]} succeeded), submitted $SUBMIT_PARALLEL at a time without waiting, CURVE ${SECURITY:-curve} |"
    if [[ "$WITNESS" == ref ]]; then
      echo "| witnesses | by reference, $FETCH_SCHEME, one distinct object per job ($((JOBS + 1)) of ${R[witness_bytes]} B), worker ${FETCH_ARGS[*]:-} |"
    else
      echo "| witnesses | inline (in the SUBMIT), ${R[witness_bytes]} B |"
    fi
    echo "| devices per worker (zkfleet_worker_devices after the stream) | ${R[devices]} |"
    echo "| proofs per device in the stream (zkfleet_worker_device_proofs_total, after - before; whole run in brackets) | ${R[device_proofs]} |"
    echo
    echo "| measure | target | measured |"
    echo "|---|---|---|"
    echo "| fleet end to end, proofs/s, first result -> last result: JOBS / span ((JOBS-1) / span) | ≥ 4.5 | ${R[rate_steady]} (${R[rate_steady_n1]}) |"
    echo "| fleet end to end, proofs/s, first submit -> last result | - | ${R[rate_e2e]} |"
    echo "| worker with $POOL pool: start -> READY (s) | - | ${R[start_ready]} (${R[ready_states]}) |"
    echo "| worker with $POOL pool: start -> first proof (s) | ≤ 10 | ${R[start_first]} |"
    echo "| fleet throughput, two GPUs (GPUS=all) vs one (GPUS=0): bench/gpu/multi_gpu_bench.sh | ≥ 1.9x | - (this run: ${GPUS:-one GPU per worker}) |"
    echo "| drain: DRAINING (s) | - | ${R[drain_draining]} |"
    echo "| drain: RELEASING of the pool (s) | ≤ 3 | ${R[drain_releasing]} |"
    echo "| drain: zkctl drain --wait -> worker process exited (s) | - | ${R[drain_exit]} |"
    echo "| drain: zkctl drain --wait -> memory back (s; MemAvailable within 2 GiB of before the worker started) | - | ${R[drain_memback]} |"
    echo "| memory back after kill -9 (s; MemAvailable within 2 GiB of before start) | ≤ 3 | ${R[kill9_back]} |"
    echo "| proofs checked with zkverify: failures | 0 | ${R[verify_fail]} of ${R[verify_n]} |"
    echo "| engine alone, key resident (zkprove --repeat $ENGINE_REPEAT, median of runs 2..N), ms per proof | - | ${R[engine_ms]} (load ${R[engine_load_s]} s, --no-key-check) |"
    echo "| fleet proofs/s (first -> last result) / engine alone proofs/s (${R[engine_rate]}), same run | - | ${R[fleet_vs_engine]} |"
    echo "| broker CPU s per job in the stream (/proc/PID/stat utime+stime) | - | ${R[broker_cpu_per_job]} |"
    echo "| broker bytes received per job in the stream: from clients / from the worker (BROKER_BYTES=$BROKER_BYTES; relay: TCP payload through byte_relay.py) | - | ${R[broker_rx_clients_per_job]} / ${R[broker_rx_worker_per_job]} |"
    echo "| broker bytes sent to the worker per job (JOBs) | - | ${R[broker_tx_worker_per_job]} |"
    echo "| broker journal growth per job in the stream (du -sb of --data-dir; LMDB reuses freed pages: a rough figure) | - | ${R[broker_journal_per_job]} |"
    echo "| worker CPU s per job in the stream | - | ${R[worker_cpu_per_job]} |"
    if [[ "$WITNESS" == ref ]]; then
      echo "| zkfleet_worker_fetch_bytes_total (all workers) vs (JOBS+1) x witness size | equal | ${R[fetch_bytes]} vs ${R[fetch_expected]}: ${R[fetch_check]} |"
      echo "| fetches by outcome; retries; mean fetch s | - | ${R[fetches]}; ${R[fetch_retries]}; ${R[fetch_mean_s]} |"
      echo "| nginx (access log) | - | ${R[nginx]} |"
    fi
    echo
    echo "Per-phase medians over the stream's results (s): ${R[phases]}"
    echo
    echo "kill -9 worker: pool pinned ${R[kill9_pool]} after ${R[pool_ready_s]} s; MemAvailable before start ${R[kill9_mem_before]} GiB, at READY ${R[kill9_mem_ready]} GiB"
    for n in "${NOTES[@]}"; do echo; echo "- $n"; done
  } >"$OUT/summary.md"
  # The same figures, one "key value" a line, for scripts (multi_gpu_bench.sh).
  for k in "${!R[@]}"; do printf '%s %s\n' "$k" "${R[$k]}"; done | sort >"$OUT/figures.txt"
}
write_json() {  # one JSON object: the run's settings and every figure ("-" -> null, numbers as numbers)
  python3 - "$OUT/figures.txt" "$1" "$WITNESS" "$FETCH_SCHEME" "$POWER" "$JOBS" "$BACKEND" "$BIN_COMMIT" \
    "$BROKER_BYTES" >"$OUT/summary.json" <<'PY'
import json, sys
fig, rc, witness, scheme, power, jobs, backend, commit, bb = sys.argv[1:10]
out = {"bench": "fleet_gpu", "exit": int(rc), "witness": witness, "fetch_scheme": scheme if witness == "ref" else None,
       "power": int(power), "jobs": int(jobs), "backend": backend, "commit": commit, "broker_bytes": bb}
def val(v):
    if v == "-":
        return None
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v
try:
    for line in open(fig):
        k, _, v = line.rstrip("\n").partition(" ")
        out[k] = val(v)
except OSError:
    pass
print(json.dumps(out, sort_keys=True))
PY
}
finish() {
  step "finish"
  (cd "$W" && tar czf "$OUT/logs.tar.gz" logs $(ls res/*.json res/*.txt 2>/dev/null))
  write_summary
  cat "$OUT/summary.md"
  write_json "$1"
  echo "SUMMARY_JSON $(cat "$OUT/summary.json")"
  say "exit status $1; $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
  exit "$1"
}

# ---------------------------------------------------------------- binaries
RUN_DATE=$(date -u +%FT%TZ)
step "setup: POWER=$POWER JOBS=$JOBS POOL=$POOL CAPACITY=$CAPACITY WORKERS=$WORKERS BACKEND=$BACKEND GPUS='$GPUS' WORKER_FLAGS='$WORKER_FLAGS' work dir $W"
if [[ -n "${BIN_DIR:-}" ]]; then
  B=$(cd "$BIN_DIR" && pwd)
  BIN_COMMIT="${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)} (BIN_DIR=$BIN_DIR)"
else
  untar() {  # untar ARCHIVE DIR: tar, or python3 where xz is missing
    mkdir -p "$2"
    if [[ "$1" == *.gz ]] || command -v xz >/dev/null; then tar xf "$1" -C "$2"
    else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; fi
  }
  for part in bin lib; do
    a=$(ls "$CARRY_DIR/$part".tar.* 2>/dev/null | head -n 1)
    [[ -n "$a" ]] || { say "no $CARRY_DIR/$part.tar.xz: run bench/gpu/pack_fleet_carry.sh and carry $CARRY_DIR (or set BIN_DIR)"; exit 1; }
    untar "$a" "$W/carry/$part" || { say "cannot unpack $a"; exit 1; }
  done
  export LD_LIBRARY_PATH=$W/carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  B=$W/carry/bin
  BIN_COMMIT="$(cat "$CARRY_DIR/COMMIT" 2>/dev/null || echo unknown) ($CARRY_DIR)"
  say "carry: $(head -n 2 "$CARRY_DIR/MANIFEST" 2>/dev/null | tr '\n' ' ')"
fi
TREE_COMMIT=$(git rev-parse HEAD 2>/dev/null || echo "${COMMIT:-unknown (no git here; set COMMIT)}")
for b in zkbroker zkworker zkctl zkfleet-dev zkverify zkprove; do
  [[ -x "$B/$b" ]] || { say "missing $B/$b"; exit 1; }
done
if ldd "$B/zkworker" "$B/zkbroker" "$B/zkctl" | grep "not found"; then say "unresolved shared libraries"; exit 1; fi
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | paste -sd ';' || true)
GPU=${GPU:-none}
say "GPU: $GPU; $(nproc) cores; MemAvailable $(gib "$(mem_available)") GiB; work dir on $(df --output=fstype "$W" | tail -n 1)"
POOL_BYTES=$(to_bytes "$POOL")
if [[ -n "$POOL_BYTES" ]] && (( POOL_BYTES < (4 << 30) )); then
  NOTES+=("the pool ($POOL) is under 4 GiB: the kill -9 check's 2 GiB tolerance makes its figure meaningless")
fi
write_summary

# ---------------------------------------------------------------- a. fixture
step "a. fixture: bn128 2^$POWER, seed 7"
FX=$W/fx
t=$EPOCHREALTIME
$LB "$B/zkfleet-dev" gen-circuit --curve bn128 --domain-power "$POWER" --seed 7 --out "$FX" || { say "gen-circuit failed"; finish 1; }
R[gen_s]=$(sub "$t" "$EPOCHREALTIME")
say "gen-circuit: ${R[gen_s]} s"
t=$EPOCHREALTIME
$LB "$B/zkfleet-dev" setup --insecure --seed 7 "$FX/circuit.r1cs" "$FX/circuit.zkey"
[[ -s "$FX/circuit.zkey" ]] || { say "setup failed"; finish 1; }
R[setup_s]=$(sub "$t" "$EPOCHREALTIME")
say "setup: ${R[setup_s]} s; zkey $(stat -c %s "$FX/circuit.zkey") B, witness $(stat -c %s "$FX/witness.wtns") B"
"$B/zkprove" export-vk "$FX/circuit.zkey" "$FX/verification_key.json" || { say "export-vk failed"; finish 1; }
WTNS_BYTES=$(stat -c %s "$FX/witness.wtns")
# The application limit (frames above are dropped): the witness plus room, at least the 64 MiB default.
# Size limits for the witness: binaries that send witnesses in frames of their
# own have --max-witness-bytes (default 1 GiB); older ones need --max-message-bytes.
MAX_MSG=$(( WTNS_BYTES * 5 / 4 + (1 << 20) )); (( MAX_MSG < (64 << 20) )) && MAX_MSG=$((64 << 20))
if "$B/zkbroker" --help 2>&1 | grep -q -- --max-witness-bytes; then
  SIZE_FLAGS=(); (( MAX_MSG > (1 << 30) )) && SIZE_FLAGS=(--max-witness-bytes "$MAX_MSG")
else
  SIZE_FLAGS=(--max-message-bytes "$MAX_MSG")
fi
write_summary
if (( ENGINE_REPEAT > 0 )); then
  step "a'. engine alone: zkprove --backend $BACKEND --timings --repeat $ENGINE_REPEAT --no-key-check"
  $LB "$B/zkprove" --backend "$BACKEND" --timings --repeat "$ENGINE_REPEAT" --no-key-check \
    "$FX/circuit.zkey" "$FX/witness.wtns" "$W/res/engine-proof.json" "$W/res/engine-public.json" 2>&1 | tee "$W/logs/zkprove.log"
  R[engine_ms]=$(grep -oP "total=\K[0-9.]+" "$W/logs/zkprove.log" | tail -n +2 | sort -n |
    awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", 1000 * (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  [[ -n "${R[engine_ms]}" ]] || R[engine_ms]="- (ENGINE_REPEAT >= 2 needed)"
  R[engine_load_s]=$(grep -m1 -oP "load=\K[0-9.]+" "$W/logs/zkprove.log")
  say "engine: ${R[engine_ms]} ms per proof, key load ${R[engine_load_s]} s"
  write_summary
fi

R[witness_bytes]=$WTNS_BYTES
if [[ -n "${R[engine_ms]}" && "${R[engine_ms]}" != -* ]]; then
  R[engine_rate]=$(awk -v m="${R[engine_ms]}" 'BEGIN { printf "%.2f", 1000 / m }')
fi

# ---------------------------------------------------------------- a''. witnesses by reference
FETCH_ARGS=()
if [[ "$WITNESS" == ref ]]; then
  OBJ_DIR=$(mkdir -p "${OBJ_DIR:-$W/w}" && cd "${OBJ_DIR:-$W/w}" && pwd -P)
  step "a''. witnesses by reference: $((JOBS + 1)) distinct objects in $OBJ_DIR, $FETCH_SCHEME"
  t=$EPOCHREALTIME
  for i in $(seq 0 "$JOBS"); do
    cp "$FX/witness.wtns" "$OBJ_DIR/job-$i.wtns" || { say "cannot write $OBJ_DIR/job-$i.wtns (disk: $(df -h --output=avail "$OBJ_DIR" | tail -n 1))"; finish 1; }
  done
  WTNS_SHA=$(sha256sum "$FX/witness.wtns" | cut -d' ' -f1)
  say "objects: $(ls "$OBJ_DIR" | wc -l) x $WTNS_BYTES B in $(sub "$t" "$EPOCHREALTIME") s, sha256 $WTNS_SHA (one witness, copied)"
  # public.json: the witness's values 1..nPublic (outputs then public inputs, circom's order), as
  # decimal strings; the r1cs header says how many.
  python3 - "$FX/circuit.r1cs" "$FX/witness.wtns" >"$FX/public.json" <<'PY' || { say "cannot derive public.json"; finish 1; }
import json, struct, sys
def sections(path, magic):
    b = open(path, "rb").read()
    assert b[:4] == magic, path
    n = struct.unpack_from("<I", b, 8)[0]
    off, out = 12, {}
    for _ in range(n):
        typ, size = struct.unpack_from("<IQ", b, off)
        out.setdefault(typ, b[off + 12:off + 12 + size])
        off += 12 + size
    return out
h = sections(sys.argv[1], b"r1cs")[1]
n8 = struct.unpack_from("<I", h, 0)[0]
_wires, pub_out, pub_in = struct.unpack_from("<III", h, 4 + n8)
w = sections(sys.argv[2], b"wtns")
wn8 = struct.unpack_from("<I", w[1], 0)[0]
data = w[2]
print(json.dumps([str(int.from_bytes(data[i * wn8:(i + 1) * wn8], "little")) for i in range(1, 1 + pub_out + pub_in)]))
PY
  if [[ -s "$W/res/engine-public.json" ]]; then
    if python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' "$FX/public.json" "$W/res/engine-public.json"; then
      say "public.json: $(cat "$FX/public.json") (= zkprove's)"
    else
      say "public.json derived from the witness differs from zkprove's: using zkprove's"; cp "$W/res/engine-public.json" "$FX/public.json"
    fi
  else
    say "public.json: $(head -c 200 "$FX/public.json") (derived from the witness; not checked: ENGINE_REPEAT=0)"
  fi
  # nginx and openssl: the carry's, else NGINX/OPENSSL, else PATH (and /usr/sbin for nginx).
  NGINX=${NGINX:-$( [[ -x "$B/nginx" ]] && echo "$B/nginx" || command -v nginx || echo /usr/sbin/nginx )}
  OPENSSL=${OPENSSL:-$( [[ -x "$B/openssl" ]] && echo "$B/openssl" || command -v openssl || echo openssl )}
  if [[ "$FETCH_SCHEME" == file ]]; then
    URL_BASE="file://$OBJ_DIR"
    R[nginx]="none (file://)"
  else
    [[ -x "$NGINX" ]] || { say "no nginx ($NGINX): carry it (pack_fleet_carry.sh) or set NGINX"; finish 1; }
    NP=$(port)
    NG=$W/nginx; mkdir -p "$NG/tmp" "$NG/tls"
    SSL_LINES=""
    if [[ "$FETCH_SCHEME" == https ]]; then
      cat >"$NG/tls/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
CN = zkfleet bench
[v3_ca]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[v3_srv]
basicConstraints = CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
CNF
      export OPENSSL_CONF=$NG/tls/openssl.cnf
      {
        "$OPENSSL" req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$NG/tls/ca.key" \
          -out "$NG/tls/ca.pem" -days 2 -subj "/CN=zkfleet bench CA" -config "$OPENSSL_CONF" -extensions v3_ca &&
        "$OPENSSL" req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$NG/tls/server.key" \
          -out "$NG/tls/server.csr" -subj "/CN=127.0.0.1" -config "$OPENSSL_CONF" &&
        "$OPENSSL" x509 -req -in "$NG/tls/server.csr" -CA "$NG/tls/ca.pem" -CAkey "$NG/tls/ca.key" -CAcreateserial \
          -out "$NG/tls/server.pem" -days 2 -extfile "$OPENSSL_CONF" -extensions v3_srv
      } >"$W/logs/openssl.log" 2>&1 || { say "test CA with $OPENSSL failed"; tail -n 5 "$W/logs/openssl.log"; finish 1; }
      unset OPENSSL_CONF
      SSL_LINES="ssl_certificate $NG/tls/server.pem; ssl_certificate_key $NG/tls/server.key; ssl_protocols TLSv1.2 TLSv1.3;"
      FETCH_ARGS+=(--fetch-ca-bundle "$NG/tls/ca.pem")
      say "test CA: $NG/tls/ca.pem ($("$OPENSSL" version 2>/dev/null)); server certificate for 127.0.0.1"
    fi
    # Its own config: no /etc/nginx (no mime.types: the types inline), logs and temp dirs in $W.
    USER_LINE=""; (( $(id -u) == 0 )) && USER_LINE="user $(id -un) $(id -gn);"
    cat >"$NG/nginx.conf" <<CONF
$USER_LINE
worker_processes $NGINX_WORKERS;
pid $NG/nginx.pid;
error_log $W/logs/nginx-error.log warn;
events { worker_connections 1024; }
http {
  types { application/octet-stream wtns; application/json json; }
  default_type application/octet-stream;
  log_format bench '\$request_method \$uri \$status \$body_bytes_sent \$request_time \$http_range';
  access_log $W/logs/nginx-access.log bench;
  client_body_temp_path $NG/tmp/body; proxy_temp_path $NG/tmp/proxy; fastcgi_temp_path $NG/tmp/fastcgi;
  uwsgi_temp_path $NG/tmp/uwsgi; scgi_temp_path $NG/tmp/scgi;
  sendfile on; tcp_nopush on; keepalive_timeout 65; keepalive_requests 100000;
  server {
    listen 127.0.0.1:$NP$( [[ "$FETCH_SCHEME" == https ]] && echo " ssl" );
    $SSL_LINES
    root $OBJ_DIR;
    location / { }
  }
}
CONF
    env -u NGINX "$NGINX" -t -p "$NG/" -c "$NG/nginx.conf" >"$W/logs/nginx-t.log" 2>&1 || { say "nginx -t failed:"; cat "$W/logs/nginx-t.log"; finish 1; }
    env -u NGINX "$NGINX" -p "$NG/" -c "$NG/nginx.conf" -g 'daemon off;' >>"$W/logs/nginx-error.log" 2>&1 &
    NGINX_PID=$!; PIDS+=($NGINX_PID)
    URL_BASE="$FETCH_SCHEME://127.0.0.1:$NP"
    # Up when it serves job-0's bytes in full (python3: no curl on the GPU image).
    nginx_serves() {
      python3 - "$URL_BASE/job-0.wtns" "$WTNS_BYTES" "${NG}/tls/ca.pem" <<'PY' 2>/dev/null
import ssl, sys, urllib.request
url, size, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context(cafile=ca) if url.startswith("https") else None
req = urllib.request.Request(url, method="HEAD")
r = urllib.request.urlopen(req, timeout=2, context=ctx)
sys.exit(not (r.status == 200 and int(r.headers["Content-Length"]) == size))
PY
    }
    wait_for 10 nginx_serves || { say "nginx does not serve $URL_BASE/job-0.wtns"; tail -n 5 "$W/logs/nginx-error.log"; finish 1; }
    : >"$W/logs/nginx-access.log"  # the stream's requests only (job-0's HEAD check out)
    say "nginx $("$NGINX" -v 2>&1 | sed 's/^nginx version: //') (pid $NGINX_PID, $NGINX_WORKERS workers) serves $OBJ_DIR at $URL_BASE/"
  fi
  FETCH_ARGS+=(--fetch-allow "$URL_BASE/")
  [[ -n "$FETCH_THREADS" ]] && FETCH_ARGS+=(--fetch-threads "$FETCH_THREADS")
  # shellcheck disable=SC2206
  FETCH_ARGS+=($FETCH_FLAGS)
  "$B/zkworker" --help 2>&1 | grep -q -- --fetch-allow || { say "this zkworker has no --fetch-allow: binaries from before witnesses by reference"; finish 1; }
  "$B/zkctl" submit --help 2>&1 | grep -q -- --witness-url || { say "this zkctl has no submit --witness-url: binaries from before witnesses by reference"; finish 1; }
  say "worker fetch flags: ${FETCH_ARGS[*]}"
  write_summary
fi
# The arguments of one SUBMIT's witness: job I's object, or the fixture's witness inline.
witness_args() {
  if [[ "$WITNESS" == ref ]]; then
    echo "--witness-url $URL_BASE/job-$1.wtns --sha256 $WTNS_SHA --size $WTNS_BYTES --public-signals $FX/public.json"
  else
    echo "$FX/witness.wtns"
  fi
}
proc_cpu() {  # utime + stime of PID in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null
}
relay_bytes() {  # relay_bytes NAME -> "up down" (bytes through byte_relay.py NAME so far)
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["up"], d["down"])' "$W/res/relay-$1.json" 2>/dev/null || echo "0 0"
}

# ---------------------------------------------------------------- b. broker
step "b. broker (journal in $W/journal; ${SIZE_FLAGS[*]:-default size limits} $BROKER_FLAGS)"
source "$ROOT/bench/fleet/keys.sh"
make_fleet_keys "$W/keys" "$B/zkctl"
CP=$(port); WP=$(port); BMP=$(port)
# The broker verifies every proof against the circuit's key (issue 27).
VK=""
"$B/zkprove" export-vk "$FX/circuit.zkey" "$W/verification_key.json" >/dev/null 2>&1 && VK="$W/verification_key.json"
broker_check_args "$B/zkbroker" c "$VK"
"$B/zkbroker" --clients "tcp://127.0.0.1:$CP" --workers "tcp://127.0.0.1:$WP" --data-dir "$W/journal" \
  "${BROKER_SECURITY[@]}" "${BROKER_CHECK[@]}" "${SIZE_FLAGS[@]}" --accept-unrouted --result-ttl 3600 $BROKER_FLAGS \
  --metrics-listen "127.0.0.1:$BMP" >"$W/logs/broker.log" 2>&1 &
BROKER_PID=$!; PIDS+=($BROKER_PID)
CPZ=$CP; WPZ=$WP  # the ports clients and workers dial: the broker's, or byte relays in front of them
if [[ "$BROKER_BYTES" == relay ]]; then
  CPZ=$(port); WPZ=$(port)
  python3 "$ROOT/bench/gpu/byte_relay.py" "$CPZ" "$CP" "$W/res/relay-clients.json" 2>"$W/logs/relay-clients.err" &
  PIDS+=($!)
  python3 "$ROOT/bench/gpu/byte_relay.py" "$WPZ" "$WP" "$W/res/relay-workers.json" 2>"$W/logs/relay-workers.err" &
  PIDS+=($!)
  wait_for 10 test -s "$W/res/relay-clients.json" -a -s "$W/res/relay-workers.json" || { say "byte relays did not start"; finish 1; }
  say "byte relays: clients :$CPZ -> :$CP, workers :$WPZ -> :$WP"
fi
ZK=("$B/zkctl" --broker "tcp://127.0.0.1:$CPZ" "${CLIENT_SECURITY[@]}" --timeout 300)
wait_for 20 "$B/zkctl" --broker "tcp://127.0.0.1:$CPZ" "${CLIENT_SECURITY[@]}" --timeout 1 status >/dev/null 2>&1 || { say "broker does not answer"; tail "$W/logs/broker.log"; finish 1; }
say "broker up (pid $BROKER_PID)"

# ---------------------------------------------------------------- c. worker start
start_worker() {  # start_worker ID INDEX: sets WPID, WSTART, WMP
  local id=$1 i=$2 gpus
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  WMP=$(port)
  local env=() gpu_flags=()
  if [[ -n "$GPUS" ]]; then
    gpu_flags=(--gpus "$GPUS")  # the worker drives the devices GPUS names, of all it sees
  elif (( gpus > 1 )); then
    env=(env CUDA_VISIBLE_DEVICES=$(( (i - 1) % gpus )))
  fi
  WSTART=$EPOCHREALTIME
  # shellcheck disable=SC2086
  "${env[@]}" "$B/zkworker" --id "$id" --broker "tcp://127.0.0.1:$WPZ" "${WORKER_SECURITY[@]}" "${FETCH_ARGS[@]}" \
    --circuit "c=$FX/circuit.zkey" --backend "$BACKEND" "${gpu_flags[@]}" --capacity "$CAPACITY" --pinned-budget "$POOL" \
    ${POOL_CHUNK:+--pool-chunk "$POOL_CHUNK"} "${SIZE_FLAGS[@]}" --metrics-listen "127.0.0.1:$WMP" $WORKER_FLAGS \
    >"$W/logs/$id.log" 2>&1 &
  WPID=$!; PIDS+=($WPID)
}
submit() {  # submit REQUEST_ID OBJECT -> job_seq on stdout
  # shellcheck disable=SC2046
  "${ZK[@]}" --json submit --circuit c --request-id "$1" --busy-timeout 300 $(witness_args "$2") |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["job_seq"])'
}
step "c. worker start: one job queued first, then $WORKERS worker(s) with --pinned-budget $POOL"
FIRST_SEQ=$(submit fleetbench-first 0) || { say "first submit failed"; finish 1; }
say "job $FIRST_SEQ queued (no worker yet)"
WIDS=(); WPIDS=(); WMPS=(); WSTARTS=()
MEM_BEFORE_WORKERS=$(mem_available)
for i in $(seq 1 "$WORKERS"); do
  start_worker "w$i" "$i"
  WIDS+=("w$i"); WPIDS+=("$WPID"); WMPS+=("$WMP"); WSTARTS+=("$WSTART")
  say "worker w$i started (pid $WPID, metrics :$WMP)"
done
"${ZK[@]}" --wait-timeout 300 --json await "$FIRST_SEQ" --out "$W/res/first" >"$W/res/first.json" 2>"$W/logs/first-await.err" &
AWAIT_PID=$!
workers_gone() { local p; for p in "${WPIDS[@]}"; do gone "$p" || return 1; done; }
# Fail fast when every worker died (a key that does not load, a CUDA error) instead of waiting 300 s.
while ! gone "$AWAIT_PID"; do
  if workers_gone; then say "every worker exited before the first proof"; kill "$AWAIT_PID"; break; fi
  sleep 0.05
done
wait "$AWAIT_PID" || { say "first job failed"; cat "$W/logs/first-await.err"; tail -n 20 "$W/logs/w1.log"; finish 1; }
first_done=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["finished_unix_s"])' "$W/res/first.json")
first_worker=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["partitions"][0]["worker_id"])' "$W/res/first.json")
say "first proof: job $FIRST_SEQ by $first_worker"
for i in $(seq 0 $((WORKERS - 1))); do
  id=${WIDS[$i]}
  wait_for 60 grep -q -- "-> READY" "$W/logs/$id.log" || say "$id: no READY line"
  ready=$(log_time "$W/logs/$id.log" "-> READY")
  r=$(sub "${WSTARTS[$i]}" "$ready")
  states="STARTING $(state_after "$W/logs/$id.log" STARTING) s"
  for s in WAITING_FOR_MEMORY LOADING; do
    v=$(state_after "$W/logs/$id.log" "$s"); [[ -n "$v" ]] && states+=", $s $v s"
  done
  pl=$(grep -m1 -E "pinned pool[: (]|no pinned pool" "$W/logs/$id.log" | cut -c 25- | sed 's/^info \[zkworker\] //')
  say "$id: start -> READY $r s ($states); $pl"
  if [[ $id == "$first_worker" ]]; then
    R[start_ready]=$r; R[ready_states]=$states; R[pool_line]=$pl
    R[start_first]=$(sub "${WSTARTS[$i]}" "$first_done")
    say "$id: start -> first proof ${R[start_first]} s"
  fi
done
"${ZK[@]}" workers
write_summary

# ---------------------------------------------------------------- d. the stream
step "d. stream: $JOBS jobs, $SUBMIT_PARALLEL submits at a time, none waiting"
for i in $(seq 1 "$WORKERS"); do scrape "${WMPS[$((i - 1))]}" "$W/logs/w$i-before-stream.prom"; done
# The broker's (and the worker's) costs over the stream: CPU, bytes through the relays, journal size.
B_CPU0=$(proc_cpu "$BROKER_PID"); W_CPU0=$(proc_cpu "${WPIDS[0]}")
read -r RC_UP0 _ < <(relay_bytes clients); read -r RW_UP0 RW_DOWN0 < <(relay_bytes workers)
JOURNAL0=$(du -sb "$W/journal" | cut -f1)
SUBMIT_T0=$(python3 -c 'import time; print("%.3f" % time.time())')
export FX ZK_STR="${ZK[*]}" WITNESS URL_BASE="${URL_BASE:-}" WTNS_SHA="${WTNS_SHA:-}" WTNS_BYTES
seq 1 "$JOBS" | xargs -P "$SUBMIT_PARALLEL" -I{} bash -c \
  'if [[ $WITNESS == ref ]]; then w="--witness-url $URL_BASE/job-{}.wtns --sha256 $WTNS_SHA --size $WTNS_BYTES --public-signals $FX/public.json"
   else w=$FX/witness.wtns; fi
   seq=$($ZK_STR --json submit --circuit c --request-id fleetbench-{} --busy-timeout 300 $w |
     python3 -c "import json, sys; print(json.load(sys.stdin)[\"job_seq\"])") && echo "{} $seq"' >"$W/res/seqs.txt" \
  2>"$W/logs/submit.err"
SUBMIT_T1=$(python3 -c 'import time; print("%.3f" % time.time())')
say "submitted $(wc -l <"$W/res/seqs.txt") of $JOBS in $(sub "$SUBMIT_T0" "$SUBMIT_T1") s$( [[ -s $W/logs/submit.err ]] && echo "; errors: $(head -c 300 "$W/logs/submit.err")")"
ok=0
while read -r i seq; do
  if "${ZK[@]}" --wait-timeout 300 --json await "$seq" --out "$W/res/job-$i" >"$W/res/job-$i.json" 2>>"$W/logs/await.err"; then
    ok=$((ok + 1))
  else
    say "job $seq (request fleetbench-$i) did not succeed: $(tail -n 1 "$W/logs/await.err")"
  fi
done < <(sort -n "$W/res/seqs.txt")
R[jobs_ok]=$ok
say "$ok of $JOBS jobs succeeded"
B_CPU1=$(proc_cpu "$BROKER_PID"); W_CPU1=$(proc_cpu "${WPIDS[0]}")
read -r RC_UP1 _ < <(relay_bytes clients); read -r RW_UP1 RW_DOWN1 < <(relay_bytes workers)
JOURNAL1=$(du -sb "$W/journal" | cut -f1)
per_job() { awk -v a="$1" -v b="$2" -v n="$JOBS" -v f="$3" 'BEGIN { printf f, (b - a) / n }'; }
R[broker_cpu_per_job]=$(per_job "$B_CPU0" "$B_CPU1" "%.4f")
R[worker_cpu_per_job]=$(per_job "$W_CPU0" "$W_CPU1" "%.4f")
R[broker_journal_per_job]=$(per_job "$JOURNAL0" "$JOURNAL1" "%.0f")
if [[ "$BROKER_BYTES" == relay ]]; then
  R[broker_rx_clients_per_job]=$(per_job "$RC_UP0" "$RC_UP1" "%.0f")
  R[broker_rx_worker_per_job]=$(per_job "$RW_UP0" "$RW_UP1" "%.0f")
  R[broker_tx_worker_per_job]=$(per_job "$RW_DOWN0" "$RW_DOWN1" "%.0f")
fi
say "broker per job: CPU ${R[broker_cpu_per_job]} s, received ${R[broker_rx_clients_per_job]} B from clients (submits and awaits) and ${R[broker_rx_worker_per_job]} B from the worker, sent ${R[broker_tx_worker_per_job]} B to the worker, journal +${R[broker_journal_per_job]} B; worker CPU ${R[worker_cpu_per_job]} s per job"
python3 - "$W/res" "$SUBMIT_T0" "$JOBS" >"$W/res/stream.txt" <<'PY'
import glob, json, statistics, sys
res, t0, jobs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
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
    span = done[-1] - done[0]
    print("rate_steady %.2f" % (jobs / span))
    print("rate_steady_n1 %.2f" % ((len(done) - 1) / span))
if done:
    print("rate_e2e %.2f" % (jobs / (done[-1] - t0)))
    print("first_result_s %.3f" % (done[0] - t0))
    print("last_result_s %.3f" % (done[-1] - t0))
print("phases " + ", ".join("%s %.3f" % (k.replace("_s", ""), statistics.median(v)) for k, v in sorted(phases.items())))
PY
cat "$W/res/stream.txt"
for k in rate_steady rate_steady_n1 rate_e2e phases; do
  v=$(grep -m1 "^$k " "$W/res/stream.txt" | cut -d' ' -f2-); [[ -n "$v" ]] && R[$k]=$v
done
(( ok == JOBS )) || NOTES+=("only $ok of $JOBS jobs succeeded: the rates count JOBS, so they are too high")
for i in $(seq 1 "$WORKERS"); do scrape "${WMPS[$((i - 1))]}" "$W/logs/w$i-after-stream.prom"; done
if [[ -n "${R[engine_rate]}" && "${R[engine_rate]}" != - && "${R[rate_steady]}" != - ]]; then
  R[fleet_vs_engine]=$(awk -v f="${R[rate_steady]}" -v e="${R[engine_rate]}" 'BEGIN { printf "%.3f", f / e }')
fi
say "fleet ${R[rate_steady]} proofs/s, engine alone ${R[engine_rate]} proofs/s: ratio ${R[fleet_vs_engine]}"
if [[ "$WITNESS" == ref ]]; then
  # The fetcher's counters, all workers together, after the stream (JOBS + the first job).
  while read -r k v; do R[$k]=$v; done < <(python3 - "$WORKERS" "$W/logs" <<'PY'
import re, sys
workers, logs = int(sys.argv[1]), sys.argv[2]
b = retries = fsum = fcount = 0.0
outcomes, seen = {}, False
for i in range(1, workers + 1):
    try:
        lines = open(f"{logs}/w{i}-after-stream.prom").read().splitlines()
    except OSError:
        continue
    for line in lines:
        m = re.match(r'(zkfleet_worker_fetch\w*?)(\{[^}]*\})? ([-0-9.e+]+)$', line)
        if not m:
            continue
        name, labels, v = m.group(1), m.group(2) or "", float(m.group(3))
        if name == "zkfleet_worker_fetch_bytes_total":
            b += v; seen = True
        elif name == "zkfleet_worker_fetches_total":
            o = re.search(r'outcome="([^"]*)"', labels)
            outcomes[o.group(1) if o else "?"] = outcomes.get(o.group(1) if o else "?", 0) + v
        elif name == "zkfleet_worker_fetch_retries_total":
            retries += v
        elif name == "zkfleet_worker_fetch_seconds_sum":
            fsum += v
        elif name == "zkfleet_worker_fetch_seconds_count":
            fcount += v
print("fetch_bytes", "%.0f" % b if seen else "-")
print("fetches", " ".join("%s=%d" % kv for kv in sorted(outcomes.items())) or "-")
print("fetch_retries", "%d" % retries)
print("fetch_mean_s", "%.4f" % (fsum / fcount) if fcount else "-")
PY
)
  R[fetch_expected]=$(( (JOBS + 1) * WTNS_BYTES ))
  if [[ "${R[fetch_bytes]}" == "${R[fetch_expected]}" ]]; then R[fetch_check]=PASS; else R[fetch_check]=FAIL; fi
  say "zkfleet_worker_fetch_bytes_total ${R[fetch_bytes]}, expected $((JOBS + 1)) x $WTNS_BYTES = ${R[fetch_expected]}: ${R[fetch_check]}"
  say "fetches by outcome: ${R[fetches]}; retries ${R[fetch_retries]}; mean fetch ${R[fetch_mean_s]} s"
  if [[ -n "${NGINX_PID:-}" ]]; then
    R[nginx]=$(awk '{ n++; if ($3 ~ /^2/) { ok++; bytes += $4; obj[$2] = 1 } }
      END { printf "%d requests, %d 2xx, %.0f body bytes, %d distinct objects", n, ok, bytes, length(obj) }' "$W/logs/nginx-access.log")
    say "nginx: ${R[nginx]}"
  fi
fi
# Per device: proofs in the stream (after - before) and in the whole run, every worker's devices.
R[device_proofs]=$(python3 - "$W/logs" "$WORKERS" <<'PY'
import re, sys
logs, workers = sys.argv[1], int(sys.argv[2])
def counts(path):
    out = {}
    try:
        for line in open(path):
            m = re.match(r'zkfleet_worker_device_proofs_total\{device="([^"]*)"\} ([0-9.e+]+)', line)
            if m: out[m.group(1)] = float(m.group(2))
    except OSError:
        pass
    return out
parts = []
for i in range(1, workers + 1):
    before, after = counts(f"{logs}/w{i}-before-stream.prom"), counts(f"{logs}/w{i}-after-stream.prom")
    for dev in sorted(after):
        parts.append("w%d device %s: %d (%d)" % (i, dev, after[dev] - before.get(dev, 0), after[dev]))
print(", ".join(parts) if parts else "- (no zkfleet_worker_device_proofs_total: binaries before --gpus)")
PY
)
R[devices]=$(for i in $(seq 1 "$WORKERS"); do
  printf 'w%s: %s ok, %s faulted; ' "$i" "$(metric "${WMPS[$((i - 1))]}" 'zkfleet_worker_devices{state="ok"}')" \
    "$(metric "${WMPS[$((i - 1))]}" 'zkfleet_worker_devices{state="faulted"}')"
done)
say "per device: ${R[device_proofs]}; ${R[devices]}"
grep -E '^zkfleet_job_phase_seconds_(sum|count)' "$W/logs/w1-after-stream.prom" | sed 's/^/  /'
scrape "$BMP" "$W/logs/broker-after-stream.prom"
"${ZK[@]}" status | tail -n 6
write_summary

# ---------------------------------------------------------------- e. verification
step "e. zkverify every proof; samples for snarkjs"
nfail=0; n=0
for d in "$W/res/first" "$W"/res/job-*/; do
  d=${d%/}; [[ -d "$d" ]] || continue
  n=$((n + 1))
  if ! "$B/zkverify" "$FX/verification_key.json" "$d/public_0.json" "$d/proof_0.json" >>"$W/logs/zkverify.log" 2>&1; then
    nfail=$((nfail + 1)); say "zkverify rejects $d"
  fi
done
R[verify_fail]=$nfail; R[verify_n]=$n
say "zkverify: $nfail failures of $n proofs"
mkdir -p "$W/samples"
cp "$FX/verification_key.json" "$W/samples/"
for i in 1 $(( (JOBS + 1) / 2 )) "$JOBS"; do
  [[ -f "$W/res/job-$i/proof_0.json" ]] || continue
  mkdir -p "$W/samples/job-$i"
  cp "$W/res/job-$i/proof_0.json" "$W/samples/job-$i/proof.json"
  cp "$W/res/job-$i/public_0.json" "$W/samples/job-$i/public.json"
done
(cd "$W/samples" && tar czf "$OUT/samples.tar.gz" .)
say "samples.tar.gz: $(tar tzf "$OUT/samples.tar.gz" | grep -c proof.json) proofs + verification_key.json"
write_summary

# ---------------------------------------------------------------- f. drain
step "f. drain: zkctl drain --wait"
for i in $(seq 0 $((WORKERS - 1))); do
  id=${WIDS[$i]}
  mem0=$(mem_available)
  # Memory back: MemAvailable within 2 GiB of its value before the workers started (last worker only).
  MEMBACK=""
  if (( i == WORKERS - 1 )); then
    MEMBACK=$W/res/drain-memback.txt
    python3 - "$MEM_BEFORE_WORKERS" "$MEMBACK" <<'PY' &
import sys, time
before, out = int(sys.argv[1]), sys.argv[2]
def avail():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
open(out + ".ready", "w").write("%.3f\n" % avail())
t0 = time.time()
while time.time() - t0 < 120:
    if avail() >= before - (2 << 30):
        open(out, "w").write("%.3f\n" % time.time()); break
    time.sleep(0.05)
else:
    open(out, "w").write("never\n")
PY
    MEMBACK_PID=$!
    wait_for 10 test -s "$MEMBACK.ready"  # polling before the drain starts
  fi
  t=$EPOCHREALTIME
  "${ZK[@]}" --json --wait-timeout 300 drain "$id" --wait >"$W/res/drain-$id.json" 2>"$W/logs/drain-$id.err"
  rc=$?
  t_ret=$EPOCHREALTIME
  wait_for 60 gone "${WPIDS[$i]}" || say "$id still runs 60 s after the drain"
  t_exit=$EPOCHREALTIME
  wait "${WPIDS[$i]}" 2>/dev/null; wrc=$?
  say "$id: zkctl drain rc=$rc returned after $(sub "$t" "$t_ret") s, process exited (rc $wrc) after $(sub "$t" "$t_exit") s; MemAvailable $(gib "$mem0") -> $(gib "$(mem_available)") GiB"
  python3 - "$W/res/drain-$id.json" <<'PY' | tee "$W/res/drain-$id.txt"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no drain reply:", e); sys.exit()
for p in d["phases"]:
    print("phase %s %.3f" % (p["state"], p["duration_s"]))
PY
  grep -E "state (DRAINING|RELEASING) -> |pinned pool (released|grown)|background growth|released .* bytes of proving keys" "$W/logs/$id.log" | cut -c 25- | sed 's/^/  log: /'
  if [[ $i == 0 ]]; then
    R[drain_draining]=$(awk '$2 == "DRAINING" {print $3}' "$W/res/drain-$id.txt")
    R[drain_releasing]=$(awk '$2 == "RELEASING" {print $3}' "$W/res/drain-$id.txt")
    l=$(state_after "$W/logs/$id.log" RELEASING)
    [[ -n "$l" ]] && R[drain_releasing]="${R[drain_releasing]:--} (worker log: $l)"
    R[drain_exit]=$(sub "$t" "$t_exit")
  fi
  if [[ -n "$MEMBACK" ]]; then
    wait "$MEMBACK_PID"; m=$(cat "$MEMBACK")
    if [[ "$m" == never ]]; then R[drain_memback]="> 120"; else R[drain_memback]=$(sub "$t" "$m"); fi
    [[ "${R[drain_memback]}" == -* ]] && R[drain_memback]="0 (within 2 GiB before the drain began)"
    say "drain: memory back (MemAvailable within 2 GiB of before the workers started) ${R[drain_memback]} s after zkctl drain began"
  fi
done
write_summary

# ---------------------------------------------------------------- g. kill -9
if [[ "$SKIP_KILL9" == 1 ]]; then
  say "g. kill -9: skipped (SKIP_KILL9=1)"
elif over_time; then
  say "g. kill -9: skipped, past TIME_LIMIT=$TIME_LIMIT s"; NOTES+=("kill -9 step skipped: past TIME_LIMIT")
else
  step "g. kill -9: a fresh worker with --pinned-budget $POOL"
  sleep 1
  mem_before=$(mem_available)
  R[kill9_mem_before]=$(gib "$mem_before")
  start_worker w-kill 1
  KPID=$WPID
  say "w-kill started (pid $KPID); MemAvailable before: ${R[kill9_mem_before]} GiB"
  wait_for 240 grep -q -- "-> READY" "$W/logs/w-kill.log" || say "w-kill: no READY within 240 s"
  say "w-kill READY after $(sub "$WSTART" "$(log_time "$W/logs/w-kill.log" "-> READY")") s"
  # Its pool fully pinned: zkfleet_pinned_pool_bytes at the pool's target (zkfleet_worker_pool_target_bytes
  # where the worker exports it: a pool may grow in the background after READY; else POOL; a share of
  # the memory without either: stable for 1 s), or its background growth given up (log).
  pool_full() {
    local v t; v=$(metric "$WMP" zkfleet_pinned_pool_bytes); v=${v%.*}
    grep -q "background growth stopped" "$W/logs/w-kill.log" && return 0
    t=$(metric "$WMP" zkfleet_worker_pool_target_bytes); t=${t%.*}
    (( t > 0 )) || t=${POOL_BYTES:-0}
    if (( t > 0 )); then (( v >= t )); else
      [[ "$v" -gt 0 && "$v" == "${last_pool:-}" ]] && return 0; last_pool=$v; sleep 1; return 1; fi
  }
  if [[ "$POOL_BYTES" == 0 ]] || wait_for 240 pool_full; then
    R[pool_ready_s]=$(sub "$WSTART" "$EPOCHREALTIME")
  else
    say "w-kill: pool not at its target after 240 s"; NOTES+=("kill -9 worker: its pool was not fully pinned when killed")
  fi
  R[kill9_pool]="$(gib "$(metric "$WMP" zkfleet_pinned_pool_bytes)") GiB"
  mem_ready=$(mem_available); R[kill9_mem_ready]=$(gib "$mem_ready")
  say "w-kill: pool ${R[kill9_pool]} pinned after ${R[pool_ready_s]} s; MemAvailable ${R[kill9_mem_ready]} GiB; kill -9"
  R[kill9_back]=$(python3 - "$KPID" "$mem_before" <<'PY'
import os, signal, sys, time
pid, before = int(sys.argv[1]), int(sys.argv[2])
def avail():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
t0 = time.time()
os.kill(pid, signal.SIGKILL)
while time.time() - t0 < 120:
    if avail() >= before - (2 << 30):
        print("%.3f" % (time.time() - t0)); break
    time.sleep(0.05)
else:
    print("> 120 (MemAvailable %.2f GiB, before %.2f GiB)" % (avail() / 2**30, before / 2**30))
PY
)
  kill -9 "$KPID" 2>/dev/null; wait "$KPID" 2>/dev/null
  say "memory back after kill -9: ${R[kill9_back]} s (MemAvailable now $(gib "$(mem_available)") GiB)"
fi
write_summary

# ---------------------------------------------------------------- h. summary
kill "$BROKER_PID" 2>/dev/null; wait "$BROKER_PID" 2>/dev/null
rc=0
[[ "${R[verify_fail]}" == 0 && "${R[jobs_ok]}" == "$JOBS" ]] || rc=1
[[ "$WITNESS" != ref || "${R[fetch_check]}" == PASS ]] || rc=1
finish $rc
