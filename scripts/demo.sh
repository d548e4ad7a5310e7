#!/usr/bin/env bash
# The main job on an embedded default: build zkfleet, prove the bundled
# BN254 circuit with zkprove (CUDA when a GPU is present, else CPU), and have
# snarkjs verify the proof.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
FX=tests/fixtures/bn128_k12
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
echo "demo: proving $FX with zkprove"
build/release/cmd/zkprove/zkprove "$FX/circuit_final.zkey" "$FX/witness.wtns" "$OUT/proof.json" "$OUT/public.json" --timings
echo "demo: verifying with snarkjs"
node_modules/.bin/snarkjs groth16 verify "$FX/verification_key.json" "$OUT/public.json" "$OUT/proof.json"
echo "demo: OK — proof accepted by snarkjs"
