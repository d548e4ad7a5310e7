#!/usr/bin/env python3
"""Write N distinct valid input files for the bench circuit (bench/witgen/make_bench_circuit.sh).

usage: make_inputs.py N SEED OUTDIR
writes OUTDIR/input_0000.json .. input_{N-1}.json, each {"in": [a, b, c], "salt": s} with random
field elements below the BN254 scalar prime as decimal strings; the same SEED gives the same files.
"""
import json
import os
import random
import sys

P = 21888242871839275222246405745257275088548364400416034343698204186575808495617


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    n, seed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    seen = set()
    width = max(4, len(str(n - 1)))
    i = 0
    while i < n:
        vals = tuple(rng.randrange(P) for _ in range(4))
        if vals in seen:
            continue
        seen.add(vals)
        doc = {"in": [str(v) for v in vals[:3]], "salt": str(vals[3])}
        with open(os.path.join(out, f"input_{i:0{width}d}.json"), "w") as f:
            json.dump(doc, f)
            f.write("\n")
        i += 1


if __name__ == "__main__":
    main()
