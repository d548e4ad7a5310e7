#!/usr/bin/env python3
"""Writes a Go workspace (go.work) that builds the zkfleet Go module offline
from Debian's Go packages (/usr/share/gocode/src).

    offline_workspace.py WORKDIR MODULE_DIR [--gocode DIR] [--go GO]

The module (clients/go) requires what any Go program would (grpc-go,
golang/protobuf); a consumer such as Curio resolves those from its proxy as
usual. Here there is no network: WORKDIR/go.work uses MODULE_DIR and
replaces every module of the build's module graph with a directory, found by
asking `go list` what it cannot find until it can find everything:
  - Debian's source of the module where it has one with a go.mod;
  - Debian's source without a go.mod: a copy of its directory (symlinks)
    with a go.mod naming the module;
  - a module Debian does not have: a directory with only a go.mod. Such
    modules are in the graph (their requirers' go.mod files name them) but
    no package of theirs is compiled (grpc-go's xDS and test dependencies);
    a build that needs one of their packages fails naming it.
Prints the environment to build with (GOWORK, GOPROXY=off, ...) as shell
assignments. The go.work is in WORKDIR, never in the source tree.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

_MISSING = re.compile(r"([\w./~+-]+)@(v[\w.+-]+): module lookup disabled")


def environment(work: Path, go_cache: Path) -> dict:
    return {"GOWORK": str(work / "go.work"), "GOPROXY": "off", "GOSUMDB": "off", "GOFLAGS": "",
            "GO111MODULE": "on", "GOCACHE": str(go_cache), "GOPATH": str(work / "gopath"),
            "GOTOOLCHAIN": "local"}


def resolve(work: Path, module: Path, gocode: Path, go: str) -> dict:
    stubs = work / "modules"
    replaces: dict = {}
    env = dict(os.environ, **environment(work, work / "go-cache"))

    def write() -> None:
        lines = ["go 1.19", "", f"use {module}", ""]
        lines += [f"replace {path} => {target}" for path, target in sorted(replaces.items())]
        (work / "go.work").write_text("\n".join(lines) + "\n")

    for _ in range(500):
        write()
        listed = subprocess.run([go, "list", "-m", "all"], cwd=module, env=env, capture_output=True, text=True)
        if listed.returncode == 0:
            return replaces
        missing = {path for path, _ in _MISSING.findall(listed.stderr)} - set(replaces)
        if not missing:
            raise SystemExit(f"offline_workspace: go list failed, and not for a missing module:\n{listed.stderr}")
        for path in missing:
            source = gocode / path
            if (source / "go.mod").is_file():
                replaces[path] = str(source)
                continue
            stub = stubs / path
            stub.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                for entry in source.iterdir():
                    if not (stub / entry.name).exists():
                        (stub / entry.name).symlink_to(entry)
            (stub / "go.mod").write_text(f"module {path}\n")
            replaces[path] = str(stub)
    raise SystemExit("offline_workspace: the module graph did not close after 500 rounds")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("module", type=Path)
    parser.add_argument("--gocode", type=Path, default=Path(os.environ.get("GOCODE", "/usr/share/gocode")) / "src")
    parser.add_argument("--go", default=os.environ.get("GO", "go"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    work, module = args.work.resolve(), args.module.resolve()
    replaces = resolve(work, module, args.gocode, args.go)
    print(f"# offline_workspace: {len(replaces)} modules replaced by directories", file=sys.stderr)
    for name, value in environment(work, work / "go-cache").items():
        print(f"export {name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
