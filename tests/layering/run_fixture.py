#!/usr/bin/env python3
"""Runs scripts/check_layers.py on tests/layering/fixtures/clean with one
planted violation laid over it (fixtures/planted/<name>), in a scratch copy.

  run_fixture.py --planted NAME --expect TEXT   passes only when the check
      fails (exit 1) and a finding names the planted file and contains TEXT;
  run_fixture.py                                passes only when the clean
      tree passes (so the check cannot fail on everything either).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "..", "scripts", "check_layers.py")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--planted")
    parser.add_argument("--expect", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="zkfleet-layering-") as scratch:
        tree = os.path.join(scratch, "tree")
        shutil.copytree(os.path.join(HERE, "fixtures", "clean"), tree)
        planted_files = []
        if args.planted:
            planted = os.path.join(HERE, "fixtures", "planted", args.planted)
            shutil.copytree(planted, tree, dirs_exist_ok=True)
            for dirpath, _, names in os.walk(planted):
                planted_files += [os.path.relpath(os.path.join(dirpath, n), planted) for n in names]
        run = subprocess.run([sys.executable, CHECK, "--root", tree], capture_output=True, text=True)
        sys.stdout.write(run.stdout)
        sys.stderr.write(run.stderr)
        if not args.planted:
            if run.returncode != 0:
                print("FAIL: the clean fixture tree must pass the check")
                return 1
            return 0
        if run.returncode != 1:
            print(f"FAIL: the check exited {run.returncode} on a tree with {args.planted} planted; expected 1")
            return 1
        hits = [line for line in run.stdout.splitlines()
                if args.expect in line and any(line.startswith(p + ":") for p in planted_files)]
        if not hits:
            print(f"FAIL: no finding on the planted file(s) {planted_files} says '{args.expect}'")
            return 1
        print(f"ok: the planted {args.planted} was found: {hits[0]}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
