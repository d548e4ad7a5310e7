"""Builds the zkfleet package (metadata: pyproject.toml).

The one addition to setuptools: the protobuf module
``zkfleet/_generated/zkfleet_pb2.py`` is generated while the package is built,
by ``protoc`` from the repository's single schema, ``schema/zkfleet.proto``
(``../../schema`` from here), into the build directory; no copy of it is
committed. ``$PROTOC`` names the compiler if it is not ``protoc`` on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.errors import ExecError, FileError

HERE = Path(__file__).resolve().parent
SCHEMA_DIR = HERE.parent.parent / "schema"
PROTO = SCHEMA_DIR / "zkfleet.proto"


class BuildPyWithProtoc(build_py):
    """build_py, then ``protoc --python_out`` into the built package."""

    def run(self) -> None:
        if not getattr(self, "editable_mode", False):
            # The build directory (clients/python/build: pip builds in the
            # tree) is reused: start the package afresh, so that a module
            # removed from the source is not installed from an older build.
            shutil.rmtree(Path(self.build_lib) / "zkfleet", ignore_errors=True)
        super().run()
        self.generate_protobuf_module()
        self.generate_grpc_modules()

    def generate_protobuf_module(self) -> None:
        if not PROTO.is_file():
            raise FileError(
                f"zkfleet: the protocol schema {PROTO} is missing: build the Python client from a checkout of the "
                "zkfleet repository (pip install ./clients/python from its root), whose schema/zkfleet.proto it "
                "compiles into zkfleet/_generated/zkfleet_pb2.py")
        wanted = os.environ.get("PROTOC") or "protoc"
        protoc = shutil.which(wanted)
        if not protoc:
            raise ExecError(
                f"zkfleet: {wanted}, the protobuf compiler, is not found (PATH, or $PROTOC): it generates "
                "zkfleet/_generated/zkfleet_pb2.py from schema/zkfleet.proto while the package is built. Install "
                "it (Debian: apt-get install protobuf-compiler; scripts/install-deps.sh does) or set PROTOC to it")
        if getattr(self, "editable_mode", False):
            out = HERE / "zkfleet" / "_generated"   # an editable install imports the source tree
        else:
            out = Path(self.build_lib) / "zkfleet" / "_generated"
        out.mkdir(parents=True, exist_ok=True)
        command = [protoc, f"-I{SCHEMA_DIR}", f"--python_out={out}", str(PROTO)]
        self.announce("zkfleet: " + " ".join(command), level=2)
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0 or not (out / "zkfleet_pb2.py").is_file():
            raise ExecError(f"zkfleet: {' '.join(command)} failed (exit {run.returncode}): "
                            f"{(run.stderr or run.stdout).strip()}")

    def generate_grpc_modules(self) -> None:
        """The zkfleet.v1 gRPC modules (zkfleet.grpc_client) next to
        zkfleet_pb2.py, by grpc_codegen.py. Optional: without Debian's
        grpc_python_plugin (protobuf-compiler-grpc, or $GRPC_PYTHON_PLUGIN)
        the package is built without them, saying so, and importing
        zkfleet.grpc_client says what is missing."""
        import sys
        sys.path.insert(0, str(HERE))
        try:
            import grpc_codegen
        finally:
            sys.path.pop(0)
        plugin = grpc_codegen.find_plugin()
        if not plugin:
            self.warn("zkfleet: grpc_python_plugin not found (PATH, or $GRPC_PYTHON_PLUGIN; Debian: "
                      "protobuf-compiler-grpc): building without the gRPC modules (zkfleet.grpc_client)")
            return
        protoc = shutil.which(os.environ.get("PROTOC") or "protoc")
        out = (HERE / "zkfleet" / "_generated" if getattr(self, "editable_mode", False)
               else Path(self.build_lib) / "zkfleet" / "_generated")
        try:
            command = grpc_codegen.generate(out, protoc, plugin)
        except grpc_codegen.CodegenError as e:
            raise ExecError(f"zkfleet: {e}") from None
        self.announce("zkfleet: " + " ".join(command), level=2)


setup(cmdclass={"build_py": BuildPyWithProtoc})
