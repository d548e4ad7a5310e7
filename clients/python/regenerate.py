"""Regenerates the package's protobuf and gRPC modules from the schema.

    python3 clients/python/regenerate.py [OUT_DIR] [--protoc PROTOC] [--plugin GRPC_PYTHON_PLUGIN]

Writes ``zkfleet_pb2.py`` (from ``schema/zkfleet.proto``), ``zkfleet_v1_pb2.py``
and ``zkfleet_v1_pb2_grpc.py`` (from ``schema/grpc/zkfleet_v1.proto``) into
OUT_DIR (default: ``zkfleet/_generated`` next to this file). They are committed,
so that building or importing the package needs no compiler:
run this after changing a .proto and commit what it writes;
``tests/python/test_generated_modules.py`` fails while they differ from what
this makes.

The modules come from Debian's ``protoc`` (protobuf-compiler) and
``grpc_python_plugin`` (protobuf-compiler-grpc), not from grpcio-tools. protoc
writes ``import zkfleet_pb2 as ...``: an absolute import of a top-level module,
which does not exist here (the modules live in the package
``zkfleet._generated``). Importing it under a second name would also register
``zkfleet.proto`` twice in protobuf's descriptor pool. So those imports are
rewritten to relative ones.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCHEMA_DIR = HERE.parent.parent / "schema"
PROTO = SCHEMA_DIR / "grpc" / "zkfleet_v1.proto"
OUTPUTS = ("zkfleet_v1_pb2.py", "zkfleet_v1_pb2_grpc.py")  # besides zkfleet_pb2.py
GENERATED = ("zkfleet_pb2.py",) + OUTPUTS
DEFAULT_OUT = HERE / "zkfleet" / "_generated"
PLUGIN_DEFAULT = "grpc_python_plugin"

# `import zkfleet_pb2 as zkfleet__pb2` -> `from . import zkfleet_pb2 as zkfleet__pb2`
_ABSOLUTE_IMPORT = re.compile(r"^import (zkfleet(?:_v1)?_pb2) as ", re.MULTILINE)


class CodegenError(RuntimeError):
    pass


def find_plugin(wanted: str | None = None) -> str | None:
    """The grpc_python_plugin to use: ``wanted``, else $GRPC_PYTHON_PLUGIN,
    else grpc_python_plugin on PATH; None when there is none."""
    import os
    wanted = wanted or os.environ.get("GRPC_PYTHON_PLUGIN") or PLUGIN_DEFAULT
    return shutil.which(wanted)


def generate(out: Path, protoc: str, plugin: str) -> list[str]:
    """Runs protoc into ``out`` and fixes the imports; the gRPC command it ran."""
    out.mkdir(parents=True, exist_ok=True)
    base = [protoc, f"-I{SCHEMA_DIR}", f"--python_out={out}", str(SCHEMA_DIR / "zkfleet.proto")]
    run = subprocess.run(base, capture_output=True, text=True)
    if run.returncode != 0:
        raise CodegenError(f"{' '.join(base)} failed (exit {run.returncode}): {(run.stderr or run.stdout).strip()}")
    # schema/grpc first: the file is then "zkfleet_v1.proto", next to its
    # import "zkfleet.proto" (as the C++ build names them).
    command = [protoc, f"-I{SCHEMA_DIR / 'grpc'}", f"-I{SCHEMA_DIR}", f"--python_out={out}",
               f"--grpc_python_out={out}", f"--plugin=protoc-gen-grpc_python={plugin}", str(PROTO)]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise CodegenError(f"{' '.join(command)} failed (exit {run.returncode}): {(run.stderr or run.stdout).strip()}")
    for name in OUTPUTS:
        path = out / name
        if not path.is_file():
            raise CodegenError(f"{' '.join(command)} did not write {path}")
        text = _ABSOLUTE_IMPORT.sub(r"from . import \1 as ", path.read_text())
        if re.search(r"^\s*(import|from)\s+zkfleet\w*_pb2\b", text, re.MULTILINE):
            # protoc changed how it writes imports: fail rather than ship a
            # module that imports a top-level zkfleet_pb2.
            raise CodegenError(f"{path}: an import of a top-level zkfleet module is left; check the generated imports")
        path.write_text(text)
    return command


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=DEFAULT_OUT)
    parser.add_argument("--protoc", default="protoc")
    parser.add_argument("--plugin", default=None)
    args = parser.parse_args()
    plugin = find_plugin(args.plugin)
    protoc = shutil.which(args.protoc)
    if not plugin or not protoc:
        print(f"regenerate: needs protoc ({args.protoc}: {protoc or 'not found'}) and grpc_python_plugin "
              f"({args.plugin or PLUGIN_DEFAULT}: {plugin or 'not found'}; Debian: protobuf-compiler-grpc)",
              file=sys.stderr)
        return 1
    try:
        generate(args.out, protoc, plugin)
    except CodegenError as e:
        print(f"regenerate: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
