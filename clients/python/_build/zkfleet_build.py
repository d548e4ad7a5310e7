"""The build backend of the zkfleet Python package (PEP 517 and PEP 660).

pyproject.toml names it with ``backend-path = ["_build"]`` and requires
nothing, so ``pip install ./clients/python`` works in a virtual environment of
any CPython >= 3.9 (Debian's, pyenv's, conda's), with build isolation and
without network, whether or not setuptools or wheel are there: the package
is pure Python, its protobuf and gRPC modules are committed
(zkfleet/_generated, checked against the schema by
tests/python/test_generated_modules.py), so a wheel is a zip of its files and
metadata, which the standard library writes.

The metadata is here and only here (METADATA below); pyproject.toml holds the
build-system table.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent.parent  # clients/python
PACKAGE = "zkfleet"
NAME = "zkfleet"
VERSION = "0.1.0"
SUMMARY = "Client of a zkfleet broker: submit Groth16 proving jobs, get proofs back"
REQUIRES_PYTHON = ">=3.9"
# pip's pyzmq and protobuf where there is an index; Debian's python3-zmq and
# python3-protobuf satisfy them in a venv made with --system-site-packages.
REQUIRES = ["pyzmq>=22", "protobuf>=3.20"]
EXTRAS = {"grpc": ["grpcio>=1.51"]}  # zkfleet.GrpcClient
TAG = "py3-none-any"


def _metadata() -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {VERSION}", f"Summary: {SUMMARY}",
             f"Requires-Python: {REQUIRES_PYTHON}"]
    lines += [f"Requires-Dist: {r}" for r in REQUIRES]
    for extra, requirements in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requirements]
    readme = HERE / "README.md"
    if readme.is_file():
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + readme.read_text(encoding="utf-8")
    return "\n".join(lines) + "\n"


def _package_files() -> List[Tuple[str, Path]]:
    """(path in the wheel, file) for every module of the package."""
    files = []
    for path in sorted((HERE / PACKAGE).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        files.append((path.relative_to(HERE).as_posix(), path))
    generated = {name for name, _ in files if name.startswith(f"{PACKAGE}/_generated/")}
    if f"{PACKAGE}/_generated/zkfleet_pb2.py" not in generated:
        raise RuntimeError(f"{HERE / PACKAGE / '_generated'} lacks zkfleet_pb2.py: this is not a complete checkout "
                           "(the generated modules are committed; clients/python/regenerate.py remakes them)")
    return files


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, contents: List[Tuple[str, bytes]]) -> str:
    dist_info = f"{NAME}-{VERSION}.dist-info"
    wheel_meta = f"Wheel-Version: 1.0\nGenerator: zkfleet_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    contents = contents + [(f"{dist_info}/METADATA", _metadata().encode()),
                           (f"{dist_info}/WHEEL", wheel_meta.encode()),
                           (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode())]
    record = [_record_line(name, data) for name, data in contents] + [f"{dist_info}/RECORD,,"]
    contents.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    filename = f"{NAME}-{VERSION}-{TAG}.whl"
    path = Path(wheel_directory) / filename
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in contents:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return filename


# ---- PEP 517 ----------------------------------------------------------------

def get_requires_for_build_wheel(config_settings: Optional[Dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Dict] = None) -> str:
    dist_info = Path(metadata_directory) / f"{NAME}-{VERSION}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(_metadata(), encoding="utf-8")
    return dist_info.name


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[Dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(name, path.read_bytes()) for name, path in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """A wheel whose one file is a .pth naming this directory: the source
    tree is what gets imported."""
    _package_files()  # the same completeness check
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", (str(HERE) + os.linesep).encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict] = None) -> str:
    base = f"{NAME}-{VERSION}"
    members = [("pyproject.toml", HERE / "pyproject.toml"), ("README.md", HERE / "README.md"),
               ("_build/zkfleet_build.py", Path(__file__).resolve())]
    members += _package_files()
    filename = f"{base}.tar.gz"
    with tarfile.open(Path(sdist_directory) / filename, "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for name, path in members:
            if path.is_file():
                sdist.add(path, arcname=f"{base}/{name}")
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        sdist.addfile(info, io.BytesIO(pkg_info))
    return filename
