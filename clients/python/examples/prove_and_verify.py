#!/usr/bin/env python3
"""Submits the bundled witness to a zkfleet broker and checks the proof with snarkjs.

With a broker and a worker holding the bundled BN254 circuit as "demo-bn128"
(scripts/demo.sh starts such a fleet; the README's two-worker fleet serves it
as "transfer": pass --circuit transfer) and zkfleet installed (docs/clients.md:
python3 -m venv --system-site-packages .venv && .venv/bin/python -m pip
install ./clients/python), from any directory:

    export ZKFLEET_CURVE_SECRET_KEY=/path/to/me.secret ZKFLEET_BROKER_PUBLIC_KEY=/path/to/broker.pub
    export ZKFLEET_BROKER=tcp://127.0.0.1:5555     # or --broker
    .venv/bin/python clients/python/examples/prove_and_verify.py

The witness, verification key and snarkjs default to the checkout's (found
from this file's path); the proof is checked in a temporary directory, nothing
is written elsewhere. Exits 0 when snarkjs says OK, 1 otherwise (the reason on
stderr).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import zkfleet

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "fixtures" / "bn128_k12"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--broker", default=None,
                        help="the broker's client endpoint (default: $ZKFLEET_BROKER, else tcp://127.0.0.1:5555)")
    parser.add_argument("--circuit", default="demo-bn128", help="circuit id the worker announces")
    parser.add_argument("--witness", default=str(FIXTURE / "witness.wtns"))
    parser.add_argument("--vk", default=str(FIXTURE / "verification_key.json"))
    parser.add_argument("--snarkjs", default=str(REPO / "node_modules" / ".bin" / "snarkjs"))
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for the proof")
    args = parser.parse_args()
    if not Path(args.snarkjs).exists():
        # Checked first: without it the proof could not be checked here.
        print(f"prove_and_verify: no snarkjs at {args.snarkjs}: run `npm ci` in the checkout "
              "(scripts/install-deps.sh does) or give --snarkjs", file=sys.stderr)
        return 1

    # Keys from $ZKFLEET_CURVE_SECRET_KEY and $ZKFLEET_BROKER_PUBLIC_KEY.
    try:
        with zkfleet.Client(args.broker) as client:
            job = client.submit(args.circuit, [args.witness], priority="high")
            print(f"job {job.job_seq} submitted (request {job.request_id})")
            result = job.result(timeout=args.timeout)
    except zkfleet.ZkfleetError as e:
        print(f"prove_and_verify: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    proof = result.partitions[0]
    print(f"job {job.job_seq} {result.state} on {proof.worker_id} in {proof.timings['prove_total_s']:.3f} s")

    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "proof.json").write_text(json.dumps(proof.proof))
        (Path(scratch) / "public.json").write_text(json.dumps(proof.public))
        verify = subprocess.run([args.snarkjs, "groth16", "verify", args.vk, f"{scratch}/public.json",
                                 f"{scratch}/proof.json"], capture_output=True, text=True)
    print(verify.stdout.strip())
    if verify.returncode != 0 or "OK" not in verify.stdout:
        print(f"prove_and_verify: snarkjs did not verify the proof: {verify.stderr.strip()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
