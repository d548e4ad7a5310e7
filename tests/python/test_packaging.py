"""The Python client as a package (docs/clients.md, "Python"): pip installs
it offline into a virtual environment with what the venv has (its own build
backend, committed generated modules: no setuptools, wheel or protoc), the
dependencies from Debian's packages; and a Python without pyzmq or protobuf
is told which package to install. No broker needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO, scaled

CLIENT = REPO / "clients" / "python"


def offline_env(tmp_path: Path) -> dict:
    """No index, no pip cache and no user site of $HOME (its zkfleet.pth, from
    scripts/install-deps.sh, must not decide what the venv imports)."""
    env = dict(os.environ, PIP_NO_CACHE_DIR="1", PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONUSERBASE=str(tmp_path / "userbase"))
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    return env


def run(argv, cwd: Path, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=scaled(timeout))


def make_venv(tmp_path: Path, env: dict, name: str, system_site: bool) -> Path:
    venv = tmp_path / name
    made = run([sys.executable, "-m", "venv", *(["--system-site-packages"] if system_site else []), venv], REPO, env)
    assert made.returncode == 0, made.stdout + made.stderr
    return venv


def test_pip_installs_the_package_into_a_venv_offline_with_what_the_venv_has(tmp_path):
    """The documented command, `pip install ./clients/python`, with pip's
    default build isolation and no index: the build needs nothing (its own
    backend, committed generated modules), the dependencies come from
    Debian's python3-zmq and python3-protobuf (a --system-site-packages
    venv), and the package imports from the venv, in any directory."""
    env = offline_env(tmp_path)
    venv = make_venv(tmp_path, env, "venv", system_site=True)
    install = run([venv / "bin" / "python", "-m", "pip", "install", "./clients/python"], REPO, env, timeout=120)
    assert install.returncode == 0, install.stdout + install.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported = run([venv / "bin" / "python", "-c",
                    "import zkfleet, zkfleet._generated.zkfleet_pb2 as pb, zkfleet.grpc_client\n"
                    "print(zkfleet.__file__); print(pb.__file__); print(pb.ERROR_KIND_RESULT_EXPIRED)\n"
                    "print(zkfleet.ResultExpired.__mro__[1].__name__)"], elsewhere, env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    package, generated, kind, base = imported.stdout.split()
    site = Path(package).resolve().parent.parent
    assert site.is_relative_to(venv.resolve()), f"zkfleet imported from {package}, not from the venv"
    assert Path(generated).resolve() == site / "zkfleet" / "_generated" / "zkfleet_pb2.py"
    assert kind == "13" and base == "BrokerError"  # the schema as it is now
    shown = run([venv / "bin" / "python", "-m", "pip", "show", "zkfleet"], elsewhere, env)
    assert "Requires: protobuf, pyzmq" in shown.stdout, shown.stdout

    # An editable install imports the source tree.
    editable = make_venv(tmp_path, env, "editable", system_site=True)
    install = run([editable / "bin" / "python", "-m", "pip", "install", "-e", "./clients/python"], REPO, env,
                  timeout=120)
    assert install.returncode == 0, install.stdout + install.stderr
    imported = run([editable / "bin" / "python", "-c", "import zkfleet; print(zkfleet.__file__)"], elsewhere, env)
    assert imported.returncode == 0, imported.stderr
    assert Path(imported.stdout.strip()).resolve() == CLIENT / "zkfleet" / "__init__.py"


def test_the_build_needs_no_setuptools_wheel_or_protoc(tmp_path):
    """A venv of its own (no system packages) without setuptools or wheel,
    and no protoc on PATH: the wheel still builds and installs (--no-deps:
    offline, pyzmq and protobuf would come from an index)."""
    env = offline_env(tmp_path)
    env["PATH"] = "/usr/bin/no-such-dir"  # no protoc, no grpc_python_plugin
    venv = make_venv(tmp_path, dict(env, PATH=os.environ["PATH"]), "bare", system_site=False)
    run([venv / "bin" / "python", "-m", "pip", "uninstall", "-y", "setuptools", "wheel"], REPO, env)
    bare = run([venv / "bin" / "python", "-c", "import setuptools"], REPO, env)
    assert bare.returncode != 0, "setuptools is still in the venv"
    install = run([venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "./clients/python"], REPO, env,
                  timeout=120)
    assert install.returncode == 0, install.stdout + install.stderr
    listed = run([venv / "bin" / "python", "-m", "pip", "show", "-f", "zkfleet"], REPO, env)
    assert "zkfleet/_generated/zkfleet_v1_pb2_grpc.py" in listed.stdout, listed.stdout
    # An sdist, and a wheel built from it, carry the same package.
    out = tmp_path / "dist"
    out.mkdir()
    sdist = run([venv / "bin" / "python", "-c",
                 "import sys; sys.path.insert(0, 'clients/python/_build'); import zkfleet_build as b;"
                 f"print(b.build_sdist({str(out)!r}))"], REPO, env)
    assert sdist.returncode == 0, sdist.stderr
    from_sdist = run([venv / "bin" / "python", "-m", "pip", "install", "--no-deps", "--force-reinstall",
                      out / sdist.stdout.strip()], tmp_path, env, timeout=120)
    assert from_sdist.returncode == 0, from_sdist.stdout + from_sdist.stderr


def _import_zkfleet_isolated(tmp_path: Path, extra_paths) -> subprocess.CompletedProcess:
    """``import zkfleet`` (the source tree) in a Python that sees only the
    standard library (-I -S: no site-packages, no PYTHONPATH) and ``extra_paths``."""
    paths = [str(CLIENT), *map(str, extra_paths)]
    code = f"import sys; sys.path[:0] = {paths!r}; import zkfleet"
    return run([sys.executable, "-I", "-S", "-c", code], tmp_path, offline_env(tmp_path), timeout=30)


def test_a_python_without_zmq_or_protobuf_is_told_what_to_install(tmp_path):
    # Neither pyzmq nor protobuf: the first missing one is named.
    run_ = _import_zkfleet_isolated(tmp_path, [])
    assert run_.returncode != 0
    assert "ImportError: zkfleet needs the Python module 'zmq'" in run_.stderr, run_.stderr
    assert "install Debian's python3-zmq" in run_.stderr and "pip install pyzmq" in run_.stderr, run_.stderr

    # pyzmq alone (its package, linked into an otherwise empty directory).
    import zmq
    only_zmq = tmp_path / "only-zmq"
    only_zmq.mkdir()
    (only_zmq / "zmq").symlink_to(Path(zmq.__file__).resolve().parent, target_is_directory=True)
    run_ = _import_zkfleet_isolated(tmp_path, [only_zmq])
    assert run_.returncode != 0
    assert "ImportError: zkfleet needs the Python module 'google.protobuf'" in run_.stderr, run_.stderr
    assert "install Debian's python3-protobuf" in run_.stderr and "pip install protobuf" in run_.stderr, run_.stderr

    # With both (this Python's own), it imports.
    import google.protobuf
    both = Path(google.protobuf.__file__).resolve().parent.parent.parent
    run_ = _import_zkfleet_isolated(tmp_path, [only_zmq, both])
    assert run_.returncode == 0, run_.stderr
