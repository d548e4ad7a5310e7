"""The committed protobuf and gRPC modules of the Python package
(clients/python/zkfleet/_generated) are what clients/python/regenerate.py makes
from today's schema with Debian's protoc and grpc_python_plugin: a .proto
changed without regenerating them fails here, naming the file."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import REPO

CLIENT = REPO / "clients" / "python"


def test_generated_modules_match_the_schema(tmp_path):
    protoc, plugin = shutil.which("protoc"), shutil.which("grpc_python_plugin")
    assert protoc and plugin, "protoc and grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc) are needed"
    run = subprocess.run([sys.executable, str(CLIENT / "regenerate.py"), str(tmp_path), "--protoc", protoc,
                          "--plugin", plugin], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    sys.path.insert(0, str(CLIENT))
    try:
        import regenerate
    finally:
        sys.path.pop(0)
    stale = [name for name in regenerate.GENERATED
             if (tmp_path / name).read_bytes() != (CLIENT / "zkfleet" / "_generated" / name).read_bytes()]
    assert not stale, (f"clients/python/zkfleet/_generated/{stale} differ from what the schema makes: run "
                       "python3 clients/python/regenerate.py and commit the result")
