"""The independent BLS12-381 Groth16 oracle, tests/js/bellman_verify.mjs
(@noble/curves), on bellperson-format files (issue 33): gnark's public vectors
(tests/fixtures/bellman/gnark) give their expected verdicts, tampered copies
are refused with the right exit status (1: does not verify, 2: malformed), and
multi-partition files made by tests/js/bellman_synth.mjs are checked per
partition. Needs node and node_modules/@noble/curves (scripts/install-deps.sh);
without them these tests fail, never skip."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional, Sequence

import pytest

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / "tests" / "js" / "bellman_verify.mjs"
SYNTH = REPO / "tests" / "js" / "bellman_synth.mjs"
VECTORS = REPO / "tests" / "fixtures" / "bellman" / "gnark"
NOBLE = REPO / "node_modules" / "@noble" / "curves" / "package.json"
R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
INSTALL = "run scripts/install-deps.sh in the repository root (npm ci installs the pinned @noble/curves)"


def node() -> str:
    path = shutil.which("node")
    if not path:
        pytest.fail(f"node is not on PATH; {INSTALL}")
    if not NOBLE.exists():
        pytest.fail(f"{NOBLE.parent} is missing; {INSTALL}")
    return path


def oracle(vk: Path, proof: Path, inputs: Optional[Path] = None, script: Path = ORACLE) -> subprocess.CompletedProcess:
    """Runs the oracle's CLI; the completed process (rc 0 valid, 1 invalid, 2 malformed, 3 cannot run)."""
    cmd = [node(), str(script), "--vk", str(vk), "--proof", str(proof)]
    if inputs is not None:
        cmd += ["--inputs", str(inputs)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def vector_names() -> List[str]:
    return sorted(p.name[: -len(".expect")] for p in VECTORS.glob("vector_*.expect"))


def vec(name: str, part: str) -> Path:
    return VECTORS / f"{name}.{part}"


def inputs_of(name: str) -> list:
    return json.loads(vec(name, "inputs.json").read_text())


def write(tmp: Path, fname: str, data) -> Path:
    path = tmp / fname
    if isinstance(data, (bytes, bytearray)):
        path.write_bytes(bytes(data))
    else:
        path.write_text(json.dumps(data))
    return path


def expect(run: subprocess.CompletedProcess, rc: int, what: str, out: Optional[str] = None) -> None:
    detail = f"{what}: exit {run.returncode} (wanted {rc}); stdout {run.stdout!r}; stderr {run.stderr!r}"
    assert run.returncode == rc, detail
    if out is not None:
        assert out in run.stdout + run.stderr, detail


def test_gnark_vectors_give_their_expected_verdicts():
    names = vector_names()
    assert len(names) == 12, names
    verdicts = {}
    for name in names:
        want = vec(name, "expect").read_text().strip()
        assert want in ("valid", "invalid"), (name, want)
        run = oracle(vec(name, "vk"), vec(name, "proof"), vec(name, "inputs.json"))
        # invalid ones must fail the equation (exit 1), not the decoding (2)
        expect(run, 0 if want == "valid" else 1, name, want)
        verdicts[name] = want
    assert sorted(verdicts.values()).count("valid") == 6


def test_a_flipped_proof_byte_is_refused(tmp_path):
    for name in ("vector_01", "vector_07"):
        good = vec(name, "proof").read_bytes()
        assert len(good) == 192
        # the sort bit of A, B or C names the other y: a valid point, a wrong proof
        for offset in (0, 48, 144):
            bad = bytearray(good)
            bad[offset] ^= 0x20
            run = oracle(vec(name, "vk"), write(tmp_path, "p", bad), vec(name, "inputs.json"))
            expect(run, 1, f"{name} sort bit at {offset}", "invalid: partition 0")
        # any other byte: not a point (2) or another point (1), never valid
        for offset in (1, 24, 47, 49, 95, 96, 143, 145, 191):
            bad = bytearray(good)
            bad[offset] ^= 0x01
            run = oracle(vec(name, "vk"), write(tmp_path, "p", bad), vec(name, "inputs.json"))
            assert run.returncode in (1, 2), (name, offset, run.returncode, run.stdout, run.stderr)
        # the compression flag cleared: malformed
        bad = bytearray(good)
        bad[0] &= 0x7F
        expect(oracle(vec(name, "vk"), write(tmp_path, "p", bad), vec(name, "inputs.json")), 2, f"{name} flag")


def test_a_point_at_infinity_in_the_proof_is_malformed(tmp_path):
    good = vec("vector_05", "proof").read_bytes()
    for offset, size in ((0, 48), (48, 96), (144, 48)):
        bad = bytearray(good)
        bad[offset: offset + size] = bytes([0xC0]) + bytes(size - 1)
        run = oracle(vec("vector_05", "vk"), write(tmp_path, "p", bad), vec("vector_05", "inputs.json"))
        expect(run, 2, f"infinity at {offset}", "point at infinity")


def test_a_changed_input_is_invalid(tmp_path):
    for name in ("vector_01", "vector_06", "vector_08"):
        for index in (0, -1):
            xs = inputs_of(name)
            xs[index] = str((int(xs[index]) + 1) % R)
            run = oracle(vec(name, "vk"), vec(name, "proof"), write(tmp_path, "in.json", xs))
            expect(run, 1, f"{name} input {index} + 1", "invalid: partition 0")


def test_truncated_or_padded_proof_is_malformed(tmp_path):
    good = vec("vector_01", "proof").read_bytes()
    for bad in (good[:-1], good[:96], b"", good + b"\0", good + good[:100]):
        run = oracle(vec("vector_01", "vk"), write(tmp_path, "p", bad), vec("vector_01", "inputs.json"))
        expect(run, 2, f"proof of {len(bad)} bytes", "malformed")


def test_wrong_input_count_is_malformed(tmp_path):
    xs = inputs_of("vector_06")
    for bad in (xs[:-1], xs + ["1"], [], [xs, xs]):
        run = oracle(vec("vector_06", "vk"), vec("vector_06", "proof"), write(tmp_path, "in.json", bad))
        expect(run, 2, f"{len(bad)} inputs for 15", "malformed")
    # vector_04 takes none: no --inputs and [] are both right, one input is not
    expect(oracle(vec("vector_04", "vk"), vec("vector_04", "proof")), 0, "no --inputs")
    expect(oracle(vec("vector_04", "vk"), vec("vector_04", "proof"), write(tmp_path, "in.json", [])), 0, "[]")
    expect(oracle(vec("vector_04", "vk"), vec("vector_04", "proof"), write(tmp_path, "in.json", ["0"])), 2, "['0']")
    # vector_01 takes one: leaving --inputs out is a count mismatch
    expect(oracle(vec("vector_01", "vk"), vec("vector_01", "proof")), 2, "no --inputs", "malformed")


def test_inputs_that_are_not_scalars_below_r_are_malformed(tmp_path):
    x = int(inputs_of("vector_01")[0])
    for bad in ([str(x + R)], [str(R)], ["-1"], ["0x1"], [" 1"], [1.5], [None], {"0": str(x)}, "x"):
        run = oracle(vec("vector_01", "vk"), vec("vector_01", "proof"), write(tmp_path, "in.json", bad))
        expect(run, 2, f"inputs {bad!r}", "malformed")
    (tmp_path / "junk.json").write_text("[1,")
    expect(oracle(vec("vector_01", "vk"), vec("vector_01", "proof"), tmp_path / "junk.json"), 2, "not JSON")


def test_a_damaged_vk_is_malformed(tmp_path):
    name = "vector_05"
    good = vec(name, "vk").read_bytes()
    assert len(good) == 868 + 2 * 96
    count_at = 3 * 96 + 3 * 192
    assert int.from_bytes(good[count_at: count_at + 4], "big") == 2

    def run_with(bad: bytes, what: str) -> None:
        expect(oracle(write(tmp_path, "vk", bad), vec(name, "proof"), vec(name, "inputs.json")), 2, what, "malformed")

    run_with(good[:-1], "truncated")
    run_with(good + b"\0", "trailing byte")
    run_with(good[:count_at] + (3).to_bytes(4, "big") + good[count_at + 4:], "IC count 3 for 2 points")
    for offset, what in ((95, "alpha_g1 y"), (2 * 96 + 10, "beta_g2"), (count_at + 4 + 50, "IC[0]")):
        bad = bytearray(good)
        bad[offset] ^= 0x01
        run_with(bytes(bad), f"{what} off the curve")
    bad = bytearray(good)
    bad[0] |= 0x80  # an uncompressed point marked compressed
    run_with(bytes(bad), "alpha_g1 compression flag")
    ic0 = count_at + 4
    run_with(good[:ic0] + bytes([0x40]) + bytes(95) + good[ic0 + 96:], "IC[0] at infinity")
    run_with(bytes([0x40]) + bytes(95) + good[96:], "alpha_g1 at infinity")


def test_partitions_are_checked_one_by_one(tmp_path):
    subprocess.run([node(), str(SYNTH), "--out", str(tmp_path), "--inputs", "4", "--partitions", "3", "--seed", "pytest"],
                   check=True, capture_output=True, timeout=120)
    vk, proof, inputs = tmp_path / "synth.vk", tmp_path / "synth.proof", tmp_path / "synth.inputs.json"
    xs = json.loads(inputs.read_text())
    assert len(proof.read_bytes()) == 3 * 192 and len(xs) == 3 and all(len(x) == 4 for x in xs)
    expect(oracle(vk, proof, inputs), 0, "synthetic", "valid (3 partitions)")

    changed = json.loads(json.dumps(xs))
    changed[1][2] = str((int(changed[1][2]) + 1) % R)
    expect(oracle(vk, proof, write(tmp_path, "in.json", changed)), 1, "partition 1's input", "invalid: partition 1 of 3")

    swapped = [xs[1], xs[0], xs[2]]
    expect(oracle(vk, proof, write(tmp_path, "in.json", swapped)), 1, "swapped inputs", "invalid: partition 0, 1 of 3")

    p = proof.read_bytes()
    two = p[:192] + p[384:]
    expect(oracle(vk, write(tmp_path, "two.proof", two), write(tmp_path, "in.json", [xs[0], xs[2]])), 0, "two of three")
    for bad in (xs[:2], xs + [xs[0]], xs[0], []):
        expect(oracle(vk, proof, write(tmp_path, "in.json", bad)), 2, f"inputs for {len(bad)}", "malformed")

    # a real vector twice: two partitions of the same proof
    name = "vector_06"
    doubled = write(tmp_path, "double.proof", vec(name, "proof").read_bytes() * 2)
    expect(oracle(vec(name, "vk"), doubled, write(tmp_path, "in.json", [inputs_of(name)] * 2)), 0, "vector_06 twice")
    expect(oracle(vec(name, "vk"), doubled, write(tmp_path, "in.json", inputs_of(name))), 2, "flat inputs for 2")


def test_usage_errors_are_malformed(tmp_path):
    for args in ([], ["--vk", str(vec("vector_01", "vk"))], ["--proof", "x", "--vk"], ["--frobnicate"]):
        run = subprocess.run([node(), str(ORACLE), *args], capture_output=True, text=True, timeout=120)
        expect(run, 2, f"args {args}")
    expect(oracle(tmp_path / "absent.vk", vec("vector_01", "proof")), 2, "absent vk", "malformed")


def test_without_noble_the_oracle_refuses_to_run(tmp_path):
    """A copy of the oracle where no node_modules can be found: exit 3 naming install-deps, never a verdict."""
    lonely = tmp_path / "bellman_verify.mjs"
    shutil.copy(ORACLE, lonely)
    run = oracle(vec("vector_01", "vk"), vec("vector_01", "proof"), vec("vector_01", "inputs.json"), script=lonely)
    expect(run, 3, "without @noble/curves", "install-deps.sh")
    assert "valid" not in run.stdout
