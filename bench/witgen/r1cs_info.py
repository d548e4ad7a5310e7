#!/usr/bin/env python3
"""Print the header of a circom .r1cs file as one JSON line.

usage: r1cs_info.py FILE.r1cs
"""
import json
import struct
import sys

PRIMES = {
    21888242871839275222246405745257275088548364400416034343698204186575808495617: "bn128",
    52435875175126190479447740508185965837690552500527637822603658699938581184513: "bls12381",
}


def info(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"r1cs":
        raise SystemExit(f"{path}: not an r1cs file")
    _version, nsec = struct.unpack_from("<II", data, 4)
    pos = 12
    for _ in range(nsec):
        stype, ssize = struct.unpack_from("<IQ", data, pos)
        pos += 12
        if stype == 1:
            (n8,) = struct.unpack_from("<I", data, pos)
            prime = int.from_bytes(data[pos + 4:pos + 4 + n8], "little")
            q = pos + 4 + n8
            nwires, npubout, npubin, nprvin = struct.unpack_from("<IIII", data, q)
            (nlabels,) = struct.unpack_from("<Q", data, q + 16)
            (nconstraints,) = struct.unpack_from("<I", data, q + 24)
            return {
                "file": path,
                "curve": PRIMES.get(prime, str(prime)),
                "constraints": nconstraints,
                "wires": nwires,
                "public_outputs": npubout,
                "public_inputs": npubin,
                "private_inputs": nprvin,
                "public_signals": npubout + npubin,
                "labels": nlabels,
            }
        pos += ssize
    raise SystemExit(f"{path}: no header section")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(json.dumps(info(p)))
