"""docs/clients.md's examples run as written, against a real broker and worker
holding the bundled BN254 circuit as "demo-bn128"; their proofs verify with snarkjs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD, FIXTURE, REPO, scaled, snarkjs_verifies

DOC = REPO / "docs" / "clients.md"


def blocks(language: str) -> list:
    return re.findall(rf"^```{language}\n(.*?)^```\n", DOC.read_text(), flags=re.S | re.M)


@pytest.fixture(scope="module")
def demo(request):
    from conftest import _new_fleet
    fleet = _new_fleet(request, "docs")
    fleet.start_broker()
    fleet.start_worker("demo-worker", "--circuit", f"demo-bn128={FIXTURE / 'circuit_final.zkey'}", "--threads", "1",
                       "--capacity", "32")
    fleet.wait_ready("demo-worker")
    return fleet


def example_env(fleet) -> dict:
    secret, broker_pub = fleet.keys()
    env = dict(os.environ, ZKFLEET_BROKER=fleet.endpoint, ZKFLEET_CURVE_SECRET_KEY=secret,
               ZKFLEET_BROKER_PUBLIC_KEY=broker_pub)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "clients" / "python"), env.get("PYTHONPATH", "")])
    return env


def test_python_examples(demo, tmp_path):
    examples = blocks("python")
    assert len(examples) == 2, "docs/clients.md should hold the blocking and the asyncio example"
    # Neither needs the repository as its working directory nor writes into
    # it: they run in an empty directory, the witness (an absolute path) and
    # the output directory given as arguments, the broker from $ZKFLEET_BROKER.
    scripts, cwd, out = tmp_path / "scripts", tmp_path / "cwd", tmp_path / "out"
    scripts.mkdir()
    cwd.mkdir()
    outputs = []
    for i, code in enumerate(examples):
        script = scripts / f"example_{i}.py"
        script.write_text(code)
        run = subprocess.run([sys.executable, str(script), str(FIXTURE / "witness.wtns"), str(out)], cwd=cwd,
                             env=example_env(demo), capture_output=True, text=True, timeout=scaled(240))
        assert run.returncode == 0, f"example {i} failed:\n{run.stdout}\n{run.stderr}"
        outputs.append(run.stdout)
    assert re.search(rf"^job \d+ proved by demo-worker into {re.escape(str(out))}$", outputs[0], re.M), outputs[0]
    proof = json.loads((out / "proof.json").read_text())
    public = json.loads((out / "public.json").read_text())
    assert "OK" in snarkjs_verifies(proof, public, tmp_path / "verify")
    assert outputs[1].strip() == "20 of 20 proved", outputs[1]
    assert list(cwd.iterdir()) == [], "an example wrote into its working directory"


def test_cpp_example_is_the_built_program(demo, tmp_path):
    [code] = blocks("cpp")
    source = REPO / "clients" / "cpp" / "examples" / "submit_and_wait.cc"
    assert code == source.read_text(), "docs/clients.md's C++ example must be clients/cpp/examples/submit_and_wait.cc"
    program = BUILD / "clients" / "cpp" / "zkfleet_client_example"
    assert program.exists(), f"{program} is not built"
    secret, broker_pub = demo.keys()
    run = subprocess.run([str(program), demo.endpoint, secret, broker_pub, "demo-bn128",
                          str(FIXTURE / "witness.wtns")], cwd=tmp_path, capture_output=True, text=True,
                         timeout=scaled(240))
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.fullmatch(r"job \d+ proved\n", run.stdout), run.stdout
    proof = json.loads((tmp_path / "proof.json").read_text())
    public = json.loads((tmp_path / "public.json").read_text())
    assert "OK" in snarkjs_verifies(proof, public, tmp_path / "verify")
    # Its errors are values, printed with their code.
    run = subprocess.run([str(program), demo.endpoint, secret, broker_pub, "nope", str(FIXTURE / "witness.wtns")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=scaled(60))
    assert run.returncode == 1 and run.stderr.startswith("UNKNOWN_CIRCUIT: broker: UNKNOWN_CIRCUIT:"), run.stderr


def test_prove_and_verify_example(demo, tmp_path):
    # From another directory, the broker from $ZKFLEET_BROKER (no --broker).
    script = REPO / "clients" / "python" / "examples" / "prove_and_verify.py"
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=example_env(demo),
                         capture_output=True, text=True, timeout=scaled(240))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCEEDED on demo-worker" in run.stdout and "OK" in run.stdout, run.stdout
    assert list(tmp_path.iterdir()) == []


def test_prove_and_verify_example_without_snarkjs_says_so(tmp_path):
    # Issue 49, item 10: without node_modules it died with a traceback after proving.
    script = REPO / "clients" / "python" / "examples" / "prove_and_verify.py"
    run = subprocess.run([sys.executable, str(script), "--snarkjs", str(tmp_path / "no-snarkjs")], cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(REPO / "clients" / "python")),
                         capture_output=True, text=True, timeout=scaled(60))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "no snarkjs at" in run.stderr and "npm ci" in run.stderr and "Traceback" not in run.stderr, run.stderr


def test_import_after_install_deps():
    """`python3 -c 'import zkfleet'` from the repository root, as the README's
    install command leaves it: the generated module is in place and
    install-deps.sh's .pth (or PYTHONPATH) points python3 at clients/python."""
    assert (REPO / "clients" / "python" / "zkfleet" / "_generated" / "zkfleet_pb2.py").exists()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    pth_ok = subprocess.run([sys.executable, "-c", "import zkfleet, sys; print(zkfleet.__file__)"], cwd=REPO, env=env,
                            capture_output=True, text=True)
    if pth_ok.returncode != 0:
        pytest.fail("python3 -c 'import zkfleet' fails without PYTHONPATH: run scripts/install-deps.sh "
                    f"(it installs the zkfleet.pth):\n{pth_ok.stderr}")
    assert Path(pth_ok.stdout.strip()).resolve() == (REPO / "clients" / "python" / "zkfleet" / "__init__.py").resolve()
