#!/usr/bin/env bash
# The main job on an embedded default: build zkfleet, start a local broker
# and one worker holding the bundled BN254 circuit (CUDA when a GPU is
# present, else CPU), submit a job with zkctl, wait for the proof and have
# snarkjs verify it. Everything runs on 127.0.0.1 and is stopped on exit.
#
# It builds only what it runs (zkbroker, zkworker, zkctl) in build/demo, and
# the CUDA kernels only where a GPU is present or when asked with
# ZKFLEET_CUDA=ON (ZKFLEET_CUDA=OFF forces the CPU backend).
#
# The broker's journal (LMDB store + witness files, --data-dir) is kept in
# ZKFLEET_DATA_DIR, default $XDG_STATE_HOME/zkfleet/broker
# (~/.local/state/zkfleet/broker): it outlives the demo, so a second run
# starts from the first one's journal. Remove the directory to start afresh.
#
# CURVE is on, as in production: the first run writes keypairs with the
# demo's `zkctl keygen` into ZKFLEET_DEMO_KEYS_DIR, default the keys/
# directory next to the data directory (~/.local/state/zkfleet/keys):
#   broker.{pub,secret}        the broker's keypair
#   demo-worker.{pub,secret}   the worker's, its .pub in allow/workers/
#   demo.{pub,secret}          zkctl's (client "demo", role admin), in allow/clients/
# Existing key files are kept between runs, never overwritten (see "Keys and
# allow-lists" in docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."

cuda="${ZKFLEET_CUDA:-}"
if [ -z "$cuda" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then cuda=ON; else cuda=OFF; fi
fi
echo "demo: building zkbroker, zkworker and zkctl in build/demo (CUDA backend: $cuda)"
# The demo proves one small job, and its build is most of its time: -O1
# (-O3 took 3 min 10 s of a 2-core machine, -O1 2 min 10-22 s), and a unity
# build (each target's sources compiled as a few large units, so the
# protobuf, gRPC and spdlog headers are parsed a few times instead of once per
# file: 1 min 14 s at -O1; docs/testing.md). Without CUDA only: the unity
# build is what the test of this command (test_readme_commands) checks, on a
# machine without a GPU.
unity=OFF
if [ "$cuda" = OFF ]; then unity=ON; fi
cmake -S . -B build/demo -G Ninja -DCMAKE_BUILD_TYPE=Release -DZKFLEET_CUDA="$cuda" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_UNITY_BUILD="$unity" \
  -DZKFLEET_BUILD_TESTS=OFF -DZKFLEET_BUILD_BENCH=OFF >/dev/null
# Ninja prints one "[n/N] ..." line per step: the newcomer sees it is alive.
cmake --build build/demo -j "$(nproc)" --target zkbroker zkworker zkctl
BIN=build/demo/cmd
FX=tests/fixtures/bn128_k12
WORK="$(mktemp -d)"
CLIENTS="tcp://127.0.0.1:${ZKFLEET_DEMO_CLIENT_PORT:-25555}"
WORKERS="tcp://127.0.0.1:${ZKFLEET_DEMO_WORKER_PORT:-25556}"
DATA_DIR="${ZKFLEET_DATA_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/zkfleet/broker}"
mkdir -p "$DATA_DIR"
KEYS="${ZKFLEET_DEMO_KEYS_DIR:-$(dirname "$DATA_DIR")/keys}"
ZKCTL="$BIN/zkctl/zkctl"

# keypair NAME: $KEYS/NAME.pub and NAME.secret (0600), written once.
keypair() {
  if [ ! -e "$KEYS/$1.secret" ]; then
    "$ZKCTL" keygen --out "$KEYS/$1" >/dev/null
    echo "demo: wrote the CURVE keypair $KEYS/$1.{pub,secret}"
  fi
}
# allow KIND NAME [ROLE]: copy NAME.pub into the broker's allow-list, once.
allow() {
  local file="$KEYS/allow/$1/$2.pub"
  if [ ! -e "$file" ]; then
    mkdir -p "$KEYS/allow/$1"
    { cat "$KEYS/$2.pub"; if [ -n "${3:-}" ]; then echo "role = $3"; fi; } >"$file"
  fi
}
mkdir -p "$KEYS"
chmod 700 "$KEYS"
keypair broker
keypair demo-worker
keypair demo
allow workers demo-worker
allow clients demo admin
BROKER_CURVE=(--curve-secret-key "$KEYS/broker.secret" --allow-dir "$KEYS/allow")
WORKER_CURVE=(--curve-secret-key "$KEYS/demo-worker.secret" --broker-public-key "$KEYS/broker.pub")
CLIENT_CURVE=(--curve-secret-key "$KEYS/demo.secret" --broker-public-key "$KEYS/broker.pub")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "demo: starting broker ($CLIENTS) and a worker holding circuit demo-bn128"
echo "demo: the broker's journal is in $DATA_DIR (kept after the demo; ZKFLEET_DATA_DIR=... to move it)"
echo "demo: CURVE keys and allow-lists in $KEYS (kept after the demo)"
# The broker verifies every proof against the circuit's verification key
# before it stores it (a worker's proof is never taken on trust).
"$BIN/zkbroker/zkbroker" --clients "$CLIENTS" --workers "$WORKERS" --data-dir "$DATA_DIR" "${BROKER_CURVE[@]}" \
  --verification-key "demo-bn128=$FX/verification_key.json" --log-level warn &
pids+=($!)
"$BIN/zkworker/zkworker" --broker "$WORKERS" "${WORKER_CURVE[@]}" --id demo-worker --circuit "demo-bn128=$FX/circuit_final.zkey" \
  --backend auto --pinned-budget 64MiB --log-level warn &
pids+=($!)

# Wait until the worker has announced the circuit (the broker refuses jobs
# for circuits nobody holds).
for _ in $(seq 100); do
  if "$ZKCTL" --broker "$CLIENTS" "${CLIENT_CURVE[@]}" --json workers 2>/dev/null | grep -q demo-bn128; then break; fi
  sleep 0.2
done
"$ZKCTL" --broker "$CLIENTS" "${CLIENT_CURVE[@]}" workers

echo "demo: submitting the bundled witness and waiting for the proof"
"$ZKCTL" --broker "$CLIENTS" "${CLIENT_CURVE[@]}" --wait-timeout 300 submit --circuit demo-bn128 --priority high \
  --out "$WORK/out" "$FX/witness.wtns"
ls "$WORK/out"

echo "demo: verifying with snarkjs"
node_modules/.bin/snarkjs groth16 verify "$FX/verification_key.json" "$WORK/out/public_0.json" "$WORK/out/proof_0.json"
echo "demo: OK — the fleet proved the job and snarkjs accepted the proof"
