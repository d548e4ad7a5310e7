#!/usr/bin/env python3
"""The engine's include rules (gpu/CMakeLists.txt): the floors inside gpu/,
the API headers, and that the engine's users include only the API.

Usage: include_floors_test.py SOURCE_DIR   (exit status 1 on a violation)
"""
import os
import re
import sys

# Folder of gpu/zkfleet -> the folders its files may include (besides
# zkfleet/common and the API's vocabulary headers, below). Floors, bottom up:
#   0 ff   1 runtime   2 io   3 curve, wtns, r1cs, zkey (zkey reads wtns)
#   4 msm, ntt, pairing   5 groth16   6 snarkjs   7 engine
ALLOWED = {
    "ff": {"ff"},
    "runtime": {"runtime", "ff"},
    "io": {"io"},
    "curve": {"curve", "ff", "runtime"},
    "wtns": {"wtns", "io"},
    "r1cs": {"r1cs", "io"},
    "zkey": {"zkey", "wtns", "io", "runtime"},
    "msm": {"msm", "curve", "ff", "runtime"},
    "ntt": {"ntt", "ff", "runtime"},
    "pairing": {"pairing", "curve", "ff"},
    "groth16": {"groth16", "msm", "ntt", "pairing", "curve", "ff", "runtime", "zkey", "wtns", "io"},
    "snarkjs": {"snarkjs", "groth16", "io"},
    "engine": {"engine", "snarkjs", "groth16", "msm", "ntt", "pairing", "curve", "ff", "runtime",
               "zkey", "wtns", "r1cs", "io"},
}
# API headers every floor may include: value types only (they include
# nothing but each other, std and zkfleet/common).
VOCABULARY = {"curve.hpp", "types.hpp", "verify.hpp", "witness.hpp"}
# The one file below engine/ implementing each other API header.
IMPLEMENTS = {
    "gpu/zkfleet/runtime/pinned_memory.cpp": "pinned_memory.hpp",
    "gpu/zkfleet/wtns/public_signals.cpp": "wtns.hpp",
}
ENGINE_FOLDERS = set(ALLOWED)
# The engine's users that link zkfleet::engine (the API only).
API_USERS = ["cmd/zkprove", "cmd/zkverify", "cmd/zkworker", "worker", "broker", "clients"]
# TRANSITIONAL: until broker_core.cpp includes zkfleet/engine/snarkjs.hpp.
EXEMPT = {"broker/zkfleet/broker/broker_core.cpp"}

INCLUDE = re.compile(r'\s*#\s*include\s+"zkfleet/([^/"]+)/([^"]+)"')


def includes(path):
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1), m.group(2)


def sources(root):
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith((".hpp", ".cpp", ".cu", ".cuh", ".h")):
                yield os.path.join(dirpath, name)


def main(src):
    os.chdir(src)
    bad = []
    for folder in sorted(os.listdir("gpu/zkfleet")):
        if folder not in ALLOWED:
            bad.append(f"gpu/zkfleet/{folder}: a folder without a floor (add it to ALLOWED)")
            continue
        for path in sources(f"gpu/zkfleet/{folder}"):
            for n, top, rest in includes(path):
                if top == "common":
                    continue
                if top == "engine" and folder != "engine":
                    if rest in VOCABULARY or IMPLEMENTS.get(path) == rest:
                        continue
                    bad.append(f"{path}:{n}: {folder} includes the API's zkfleet/engine/{rest}")
                elif top not in ALLOWED[folder]:
                    bad.append(f"{path}:{n}: {folder} includes zkfleet/{top}/{rest} (a floor above, or beside)")
    for path in sources("gpu/include"):
        for n, top, rest in includes(path):
            if top not in ("engine", "common"):
                bad.append(f"{path}:{n}: an API header includes zkfleet/{top}/{rest}")
    for user in API_USERS:
        if not os.path.isdir(user):
            continue
        for path in sources(user):
            if path in EXEMPT:
                continue
            for n, top, rest in includes(path):
                if top in ENGINE_FOLDERS - {"engine"}:
                    bad.append(f"{path}:{n}: includes the engine's internal zkfleet/{top}/{rest}")
    for line in bad:
        print(line)
    print(f"{len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
