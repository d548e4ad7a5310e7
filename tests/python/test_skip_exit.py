"""The skip_exit plugin: what ctest sees of a pytest run that skipped."""

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _pytest_exit(tmp_path: Path, body: str) -> int:
    (tmp_path / "test_sample.py").write_text("import pytest\n\n" + body)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "skip_exit",
                          str(tmp_path / "test_sample.py")], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(HERE), "PATH": "/usr/bin:/bin"}, timeout=120)
    return run.returncode


def test_only_skips_exit_77_a_pass_beside_a_skip_0_a_failure_1(tmp_path):
    assert _pytest_exit(tmp_path, "def test_a():\n    pytest.skip('nothing to check here')\n") == 77
    assert _pytest_exit(tmp_path, "def test_a():\n    pytest.skip('no')\n\ndef test_b():\n    assert True\n") == 0
    assert _pytest_exit(tmp_path, "def test_a():\n    pytest.skip('no')\n\ndef test_b():\n    assert False\n") == 1
