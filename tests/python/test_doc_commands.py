"""Every command block of README.md, docs/clients.md and docs/operations.md
runs, as written, so that those documents say only what is true (issue 28).
One test per document (each a ctest entry, label python), plus one that every
fence of the three is classified.

Which fences run (by their info string):
  sh, bash, shell  shell commands: run, every one, as described below.
  console          commands are the lines starting "$ " (the others are their
                   output): run the same way. (None at present.)
  python, cpp      docs/clients.md's examples: run by test_docs_examples.py,
                   which must find exactly its 2 + 1; here they are counted.
  toml             a configuration file (docs/operations.md, "Configuration
                   files"): its first line is "# zkbroker" or "# zkworker",
                   and that program must read it (`--config FILE
                   --print-config`, test_config_files_are_read_by_their_program).
  cmake            a fragment of a CMakeLists.txt, not commands (its program,
                   clients/cpp/examples/out_of_tree, is built by the shell
                   block after it and by tests/install).
  (none)           output, a directory listing, a formula: never commands. A
                   line starting "$ " or with one of our programs' names fails.
  anything else    fails: a new kind of fence is classified here first.

How a block runs: `bash -euo pipefail` (a failing command, an unset variable
or a failing pipe stage fails the block), a fresh shell per block, in the
document's order, in one sandbox per document (files made by a block stay for
the next; shell variables do not: a block sets what it uses). Failures name
the block by file:line of its opening fence, show it and its output. A block
that fails fails the test; none is skipped. Each has a time limit (TIMEOUT_S,
scaled by ZKFLEET_TEST_TIME_SCALE); its leftover processes are killed after it.

The sandbox (a temporary directory, removed unless the test failed):
  repo/   the working directory of every block, standing for the repository
          root: each top-level entry of the checkout as a symlink, except
          clients/ (a copy, without build outputs: blocks build and install
          from it) and build/, where build/release and build/demo are
          symlinks to the build under test ($ZKFLEET_BUILD_DIR).
  home/   $HOME ($TMPDIR is tmp/). Nothing a block writes reaches the checkout.
  PATH:   shims/ (below), bin/ (the build's zkbroker, zkworker, zkctl,
          zkprove, zkverify, zkfleet-dev), then /usr/sbin:/usr/bin:/sbin:/bin
          (Debian's python3 first, as the docs mean it). The environment is
          otherwise empty but for LANG, USER, PIP_NO_INDEX=1 (no network) and
          what a document's fleet sets (below).

Leading variables: the assignment lines at the top of a block (`NAME=value`
or `export NAME=value`, before its first command) are its inputs, what a
reader changes to their own. The test substitutes its values for those in
OVERRIDES (endpoints on free ports; /etc and /opt paths inside the sandbox)
and fails if a value it means to substitute is in no block of the document.
After substitution no command may name /etc, /opt, /var, /srv or /usr/local
(a block must not write outside the sandbox).

Fleets: docs/clients.md's blocks get ZKFLEET_BROKER, ZKFLEET_CURVE_SECRET_KEY
and ZKFLEET_BROKER_PUBLIC_KEY of a broker the test starts (admin key), as the
document says its examples do. docs/operations.md's key-setup blocks run on
two emulated hosts (HOSTS: a block whose first line is "# On the GPU host:" or
"# On the broker host:" gets that host's $HOME and its own /etc/zkfleet/keys as
KEYS); the broker host's keys are those of a real zkbroker the test started, so
`systemctl reload zkbroker` (the shim sends it SIGHUP, as ExecReload does) must
load the new allow-list entries, and the test then uses the drain key (admin)
and the worker key the blocks made. README.md's fleet block starts its own
broker and worker (on the free ports substituted for its endpoints).

Shims (shims/, each appends "NAME ARGS..." to shims.log; the test checks
what matters):
  sudo       runs the command (as the same user).
  apt-get    succeeds, installs nothing (scripts/install-deps.sh calls it only
             for a package dpkg does not list; CI ran install-deps already).
  systemctl  succeeds; `reload zkbroker` sends SIGHUP to $ZKDOC_BROKER_PID;
             `restart zkworker@X` marks X restarted; `is-active` says inactive.
  chown      checks that the files exist, changes nothing.
  scp        copies between emulated hosts: HOST:/abs/path is that host's copy
             of the local path (the local host's root swapped for HOST's),
             HOST:rel is in HOST's home.
  curl       http://localhost:951N/ready answers READY once zkworker@gpuN was
             restarted, else fails as a refused connection; any other URL goes
             to the real curl.
  kubectl    succeeds, does nothing.
  cmake      a configure or build of this repository's tree (`--preset`,
             `-S .`, `--build build/...`) succeeds without doing anything: the
             build under test stands for it; every other call (the client's
             `--install`, the out-of-tree example) runs the real cmake.

The front door: README's `./scripts/install-deps.sh && ./scripts/demo.sh` runs
(install-deps with the shims above: dpkg-query and the .pth into the
sandbox's home are real; demo.sh with its build shimmed: a real broker, a worker
and snarkjs verifying the proof, on free ports). `./scripts/install-deps.sh &&
./scripts/test.sh` is not run here (it runs this test): it must be, exactly,
the command .ci/run runs, and both scripts must be executable and parse.
`./scripts/build.sh` runs with its cmake shimmed (checked: it configured and
built the release preset).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

from conftest import BUILD, FIXTURE, REPO, Fleet, binary, free_port, scaled

DOCS = ("README.md", "docs/clients.md", "docs/operations.md")
SHELL = {"sh", "bash", "shell", "console"}
ELSEWHERE = {"python": 2, "cpp": 1}  # docs/clients.md, run by test_docs_examples.py
NOT_COMMANDS = {"cmake", ""}
CONFIG_FILES = {"toml"}
PROGRAMS = ("zkbroker", "zkworker", "zkctl", "zkprove", "zkverify", "zkfleet-dev")
TIMEOUT_S = 120
OUTSIDE = re.compile(r"(?<![\w.~}/-])/(etc|opt|var|srv|usr/local)/")
HOSTS = {"# On the GPU host:": "gpu-host-1", "# On the broker host:": "broker"}


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    def commands(self) -> str:
        """The shell text to run (a console block: its "$ " lines)."""
        if self.lang != "console":
            return self.text
        return "".join(l[2:] + "\n" for l in self.text.splitlines() if l.startswith("$ "))


def fences(doc: str) -> List[Block]:
    """Every fenced block of ``doc``, indented ones (in lists) included."""
    blocks, lines = [], (REPO / doc).read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^( *)```(\S*)\s*$", lines[i])
        if not opening:
            i += 1
            continue
        indent, lang, start = opening.group(1), opening.group(2), i
        body = []
        i += 1
        while i < len(lines) and not re.match(rf"^{indent}```\s*$", lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        assert i < len(lines), f"{doc}:{start + 1}: fence never closed"
        blocks.append(Block(doc, start + 1, lang, "\n".join(body) + "\n"))
        i += 1
    return blocks


def shell_blocks(doc: str) -> List[Block]:
    return [b for b in fences(doc) if b.lang in SHELL]


ASSIGNMENT = re.compile(r"^(export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\S*)(\s+#.*)?$")


def substitute(block: Block, overrides: Dict[str, str], used: set) -> str:
    """The block's text with its leading variables set to ``overrides``."""
    out, leading = [], True
    for line in block.commands().splitlines():
        m = ASSIGNMENT.match(line)
        if leading and m and m.group(2) in overrides:
            used.add(m.group(2))
            line = f"{m.group(1) or ''}{m.group(2)}={shlex.quote(overrides[m.group(2)])}"
        elif leading and not (m or not line.strip() or line.lstrip().startswith("#")):
            leading = False
        out.append(line)
    text = "\n".join(out) + "\n"
    for line in text.splitlines():
        code = line.split(" #")[0] if not line.lstrip().startswith("#") else ""
        if OUTSIDE.search(code):
            pytest.fail(f"{block.where}: a command names a path outside the sandbox (make it a leading "
                        f"variable the test can set):\n{line}")
    return text


# --------------------------------------------------------------------------- sandbox

SHIMS = {
    "sudo": r'''exec "$@"''',
    "apt-get": r'''exit 0''',
    "kubectl": r'''exit 0''',
    "systemctl": r'''
case "${1:-}" in
  reload) [ "${2:-}" = zkbroker ] && [ -n "${ZKDOC_BROKER_PID:-}" ] && kill -HUP "$ZKDOC_BROKER_PID"; exit 0 ;;
  restart) for unit in "${@:2}"; do touch "$ZKDOC_SANDBOX/state/restarted-${unit#zkworker@}"; done; exit 0 ;;
  is-active) exit 3 ;;
  *) exit 0 ;;
esac''',
    "chown": r'''
for f in "${@:2}"; do [ -e "$f" ] || { echo "chown: cannot access '$f': No such file or directory" >&2; exit 1; }; done''',
    "scp": r'''
# HOST:/abs is HOST's copy of the local path (the local host's root swapped for
# HOST's), HOST:rel (or HOST:) is in HOST's home; other paths are local.
map() {
  case "$1" in
    *:*) local host=${1%%:*} path=${1#*:} root="$ZKDOC_SANDBOX/hosts/${1%%:*}"
         case "$path" in
           /*) [ -n "${ZKDOC_HOST_ROOT:-}" ] && [ "${path#"$ZKDOC_HOST_ROOT"}" != "$path" ] \
                 || { echo "scp: $path is outside this host's emulated root" >&2; exit 1; }
               echo "$root${path#"$ZKDOC_HOST_ROOT"}" ;;
           *) mkdir -p "$root/home"; echo "$root/home/$path" ;;
         esac ;;
    *) echo "$1" ;;
  esac
}
args=(); for a in "$@"; do case "$a" in -*) ;; *) args+=("$(map "$a")") ;; esac; done
cp -- "${args[@]}"''',
    "curl": r'''
for a in "$@"; do
  if [[ "$a" =~ ^(http://)?localhost:951([0-9])/ready$ ]]; then
    [ -e "$ZKDOC_SANDBOX/state/restarted-gpu${BASH_REMATCH[2]}" ] && { echo READY; exit 0; }
    exit 7
  fi
done
exec /usr/bin/curl "$@"''',
    "cmake": r'''
# This repository's tree: the build under test stands for it.
case " $* " in
  *" --preset "*|*" --preset="*|*" -S . "*|*" -S "$ZKDOC_REPO" "*|*" --build build/"*) exit 0 ;;
esac
exec /usr/bin/cmake "$@"''',
}


@dataclass
class Sandbox:
    root: Path
    env: Dict[str, str] = field(default_factory=dict)
    failed: bool = False

    @property
    def repo(self) -> Path:
        return self.root / "repo"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def shim_calls(self, name: Optional[str] = None) -> List[List[str]]:
        log = self.root / "shims.log"
        calls = [shlex.split(l) for l in log.read_text().splitlines()] if log.exists() else []
        return [c for c in calls if name is None or c[0] == name]


def make_sandbox(name: str) -> Sandbox:
    root = Path(tempfile.mkdtemp(prefix=f"zkfleet-doc-{name}-"))
    box = Sandbox(root)
    for d in ("repo", "home", "tmp", "bin", "shims", "state", "hosts", "blocks"):
        (root / d).mkdir()
    for entry in REPO.iterdir():
        if entry.name in (".git", "build", "clients"):
            continue
        (box.repo / entry.name).symlink_to(entry)
    shutil.copytree(REPO / "clients", box.repo / "clients", symlinks=True,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".venv"))
    (box.repo / "build").mkdir()
    for variant in ("release", "demo"):
        (box.repo / "build" / variant).symlink_to(BUILD.resolve())
    for program in PROGRAMS:
        (root / "bin" / program).symlink_to(binary(program))
    for shim, body in SHIMS.items():
        path = root / "shims" / shim
        path.write_text("#!/bin/bash\nset -uo pipefail\n"
                        f'printf "%q " {shim} "$@" >> "$ZKDOC_SANDBOX/shims.log"; echo >> "$ZKDOC_SANDBOX/shims.log"\n'
                        + body.lstrip("\n") + "\n")
        path.chmod(0o755)
    box.env = {
        "PATH": f"{root / 'shims'}:{root / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(box.home), "TMPDIR": str(root / "tmp"), "USER": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8", "TERM": "dumb", "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_CACHE_DIR": "1", "ZKDOC_SANDBOX": str(root), "ZKDOC_REPO": str(REPO),
    }
    return box


@pytest.fixture
def sandbox(request):
    made: List[Sandbox] = []

    def make(name: str) -> Sandbox:
        made.append(make_sandbox(name))
        return made[-1]

    yield make
    failed = getattr(request.session, "zkfleet_failed", False)
    for box in made:
        if failed:
            print(f"doc sandbox kept in {box.root}")
        else:
            shutil.rmtree(box.root, ignore_errors=True)


def run_block(box: Sandbox, block: Block, text: str, env: Dict[str, str], cwd: Optional[Path] = None,
              timeout: float = TIMEOUT_S) -> str:
    """Runs one block; fails the test, naming it by file:line, unless it exits 0."""
    slug = f"{Path(block.doc).stem}-{block.line}"
    script = box.root / "blocks" / f"{slug}.sh"
    script.write_text(text)
    output = box.root / "blocks" / f"{slug}.out"
    with open(output, "wb") as out:
        proc = subprocess.Popen(["/bin/bash", "-euo", "pipefail", str(script)], cwd=cwd or box.repo, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc: Optional[int] = proc.wait(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            try:  # what it left running (background servers)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    text_out = output.read_text(errors="replace")
    if rc != 0:
        box.failed = True
        why = f"timed out after {scaled(timeout):.0f} s" if rc is None else f"exit status {rc}"
        pytest.fail(f"{block.where}: the command block failed ({why}):\n{block.text}"
                    f"--- as run ({script}) ---\n{text}--- its output (last 6000 characters) ---\n{text_out[-6000:]}",
                    pytrace=False)
    return text_out


def run_doc(box: Sandbox, doc: str, overrides: Dict[str, str], env: Dict[str, str],
            per_block: Optional[Callable[[Block], Optional[dict]]] = None,
            skip: Callable[[Block], bool] = lambda b: False) -> Dict[int, str]:
    """Runs every shell block of ``doc`` in order; their outputs by line."""
    used: set = set()
    outputs = {}
    blocks = shell_blocks(doc)
    assert blocks, f"{doc} has no command blocks"
    for block in blocks:
        text = substitute(block, overrides, used)
        if skip(block):
            continue
        extra = (per_block(block) if per_block else None) or {}
        block_env = dict(env, **extra.get("env", {}))
        if "overrides" in extra:
            text = substitute(block, dict(overrides, **extra["overrides"]), used)
        outputs[block.line] = run_block(box, block, text, block_env, cwd=extra.get("cwd"))
    unused = set(overrides) - used
    assert not unused, f"{doc}: no block starts with {sorted(unused)}: the test would not set them (the doc changed?)"
    return outputs


def by_command(doc: str, needle: str) -> Block:
    found = [b for b in shell_blocks(doc) if needle in b.text]
    assert len(found) == 1, f"{doc}: expected one block holding {needle!r}, found {[b.where for b in found]}"
    return found[0]


# --------------------------------------------------------------------------- the tests

def test_config_files_are_read_by_their_program(tmp_path):
    """Each ```toml block is a --config file its program reads: every name
    known, every value converting (exit 0 from --print-config), and what it
    sets shows up as set."""
    seen = 0
    for doc in DOCS:
        for block in fences(doc):
            if block.lang not in CONFIG_FILES:
                continue
            seen += 1
            program = block.text.splitlines()[0][2:]
            path = tmp_path / f"{seen}.toml"
            path.write_text(block.text)
            run = subprocess.run([binary(program), "--config", str(path), "--print-config"], capture_output=True,
                                 text=True, timeout=60)
            assert run.returncode == 0, f"{block.where}: {program} refused it: {run.stderr}"
            names = [line.split("=")[0].strip() for line in block.text.splitlines()
                     if line.strip() and not line.startswith("#")]
            printed = [line.split("=")[0] for line in run.stdout.splitlines() if line and not line.startswith("#")]
            assert sorted(names) == sorted(printed), f"{block.where}: set {names}, printed {printed}"
    assert seen > 0, "no config file in the docs"


def test_every_error_kind_is_documented():
    """Each ErrorKind of schema/zkfleet.proto has its row in docs/protocol.md's
    "Error kinds" table."""
    proto = (REPO / "schema" / "zkfleet.proto").read_text()
    body = proto[proto.index("enum ErrorKind {"):]
    body = body[:body.index("}")]
    kinds = [k for k in re.findall(r"ERROR_KIND_(\w+) = \d+;", body) if k != "UNSPECIFIED"]
    doc = (REPO / "docs" / "protocol.md").read_text()
    table = doc[doc.index("| `ErrorKind` | when |"):]
    table = table[:table.index("\n\n")]
    missing = [k for k in kinds if f"| `{k}` |" not in table]
    assert len(kinds) >= 14 and not missing, f"ErrorKinds without a row in docs/protocol.md: {missing}"


def test_the_readme_times_a_recent_commit():
    """README's figure for its first command names the commit it was measured
    at: that commit is in this history and not far behind it, so the figure
    is re-measured as the code grows."""
    readme = (REPO / "README.md").read_text()
    found = re.search(r"Measured on a\s+fresh clone of `([0-9a-f]{7,40})`", readme)
    assert found, "README's first command has no 'Measured on a fresh clone of `COMMIT`'"
    behind = subprocess.run(["git", "rev-list", "--count", f"{found.group(1)}..HEAD"], cwd=REPO, capture_output=True,
                            text=True)
    assert behind.returncode == 0, f"README's commit {found.group(1)} is not in this history: {behind.stderr}"
    assert int(behind.stdout) <= 150, (f"README's figure was measured {behind.stdout.strip()} commits ago at "
                                       f"{found.group(1)}: time the first command again")


def test_every_fence_is_classified():
    count = {lang: 0 for lang in ELSEWHERE}
    for doc in DOCS:
        for block in fences(doc):
            if block.lang in SHELL:
                assert block.commands().strip(), f"{block.where}: an empty command block"
            elif block.lang in ELSEWHERE:
                assert doc == "docs/clients.md", f"{block.where}: a ```{block.lang} block that no test runs"
                count[block.lang] += 1
            elif block.lang in CONFIG_FILES:
                first = block.text.splitlines()[0] if block.text else ""
                assert first in ("# zkbroker", "# zkworker"), f"{block.where}: a config file names its program first"
            elif block.lang in NOT_COMMANDS:
                for line in block.text.splitlines():
                    first = line.split()[0] if line.split() else ""
                    assert not line.startswith("$ ") and first not in PROGRAMS + ("sudo", "systemctl", "kubectl"), \
                        f"{block.where}: commands in a ```{block.lang} fence, which is not run: use ```sh\n{line}"
            else:
                pytest.fail(f"{block.where}: a ```{block.lang} fence: classify it in {Path(__file__).name}")
    assert count == ELSEWHERE, f"docs/clients.md's examples changed ({count}): update test_docs_examples.py"


def test_readme_commands(sandbox):
    box = sandbox("readme")
    doc = "README.md"
    blocks = shell_blocks(doc)
    # The front door: command 2 is .ci/run's; it runs this test, so it is not run here.
    ci = [l.strip() for l in (REPO / ".ci" / "run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    test_cmd = by_command(doc, "scripts/test.sh")
    assert test_cmd.text.strip() == "./scripts/install-deps.sh && ./scripts/test.sh", test_cmd.where
    assert ci[-1] == test_cmd.text.strip(), f"{test_cmd.where}: .ci/run must run exactly this command, runs {ci[-1]!r}"
    for script in ("install-deps.sh", "test.sh", "demo.sh", "build.sh"):
        path = REPO / "scripts" / script
        assert path.stat().st_mode & stat.S_IXUSR, f"scripts/{script} is not executable"
        parsed = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert parsed.returncode == 0, f"scripts/{script} does not parse: {parsed.stderr}"

    ports = {"demo_clients": free_port(), "demo_workers": free_port()}
    env = dict(box.env, ZKFLEET_DEMO_CLIENT_PORT=str(ports["demo_clients"]),
               ZKFLEET_DEMO_WORKER_PORT=str(ports["demo_workers"]))
    overrides = {"ZKFLEET_BROKER": f"tcp://127.0.0.1:{free_port()}", "WORKERS": f"tcp://127.0.0.1:{free_port()}"}
    outputs = run_doc(box, doc, overrides, env, skip=lambda b: b.line == test_cmd.line)

    demo = re.sub(r"\x1b\[[0-9;]*m", "", outputs[by_command(doc, "scripts/demo.sh").line])  # snarkjs' colours
    assert "demo: OK" in demo and "snarkJS: OK!" in demo, demo[-3000:]
    cmake = [c[1:] for c in box.shim_calls("cmake")]
    assert any(c[:2] == ["--build", "build/demo"] and c[-3:] == ["zkbroker", "zkworker", "zkctl"] for c in cmake), cmake
    assert ["--preset", "release"] in cmake and any(c[:3] == ["--build", "--preset", "release"] for c in cmake), \
        f"scripts/build.sh did not configure and build the release preset: {cmake}"
    # install-deps put this checkout's (the sandbox's) clients/python on Debian's python3 path.
    imported = outputs[by_command(doc, "import zkfleet").line].strip().splitlines()[-1]
    assert Path(imported) == box.repo / "clients" / "python" / "zkfleet" / "__init__.py", imported
    fleet = outputs[by_command(doc, "zkbroker --clients").line]
    assert re.search(r"^OK", fleet, re.M), fleet          # zkverify of partition 1's proof
    assert "drained, released its memory and left" in fleet, fleet
    results = box.home / "zkfleet-example" / "results"
    assert sorted(p.name for p in results.iterdir()) == ["proof_0.json", "proof_1.json", "public_0.json",
                                                        "public_1.json"]
    assert json.loads((results / "public_0.json").read_text()) == json.loads((FIXTURE / "public.json").read_text())


def test_clients_commands(sandbox, request):
    box = sandbox("clients")
    from conftest import _new_fleet
    fleet = _new_fleet(request, "doc-commands")
    fleet.start_broker()
    secret, broker_pub = fleet.keys("app")
    env = dict(box.env, ZKFLEET_BROKER=fleet.endpoint, ZKFLEET_CURVE_SECRET_KEY=secret,
               ZKFLEET_BROKER_PUBLIC_KEY=broker_pub)
    prefix = box.root / "opt" / "zkfleet"
    outputs = run_doc(box, "docs/clients.md", {"PREFIX": str(prefix)}, env)
    doc = "docs/clients.md"
    venv = outputs[by_command(doc, "python3 -m venv").line]
    assert (box.repo / ".venv" / "bin" / "python").exists(), venv
    for needle in ("cmake --build ~/broker_status", "pkg-config --cflags"):
        out = outputs[by_command(doc, needle).line]
        assert re.search(r"^jobs submitted \d+, completed \d+, failed \d+; \d+ workers$", out, re.M), out
    assert (prefix / "include" / "zkfleet" / "client.h").exists()
    codes = outputs[by_command(doc, "await 424242").line]
    assert "'code': 'UNKNOWN_JOB'" in codes and "'exit_code': 5" in codes and "zkctl exited 5" in codes, codes


def start_ops_broker(box: Sandbox) -> tuple:
    """The broker host's zkbroker: its keys in hosts/broker/etc/zkfleet/keys,
    an admin client key "ops" in its allow-list, no worker key yet."""
    keys = box.root / "hosts" / "broker" / "etc" / "zkfleet" / "keys"
    (keys / "allow" / "workers").mkdir(parents=True)
    (keys / "allow" / "clients").mkdir(parents=True)
    (box.root / "hosts" / "broker" / "home").mkdir()
    # --verification-key-dir, and a key for "Adding and removing a circuit".
    (keys.parent / "vk").mkdir()
    shutil.copy(FIXTURE / "verification_key.json",
                box.root / "hosts" / "broker" / "home" / "transfer_vk.json")
    ops = box.root / "ops"
    for name, out in (("broker", keys / "broker"), ("ops", ops / "ops")):
        subprocess.run([binary("zkctl"), "keygen", "--out", str(out)], check=True, capture_output=True)
    (keys / "allow" / "clients" / "ops.pub").write_text((ops / "ops.pub").read_text() + "role = admin\n")
    clients, workers = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    log = open(box.root / "broker.log", "wb")
    proc = subprocess.Popen([binary("zkbroker"), "--clients", clients, "--workers", workers, "--heartbeat-ms", "100",
                             "--curve-secret-key", str(keys / "broker.secret"), "--allow-dir", str(keys / "allow"),
                             "--data-dir", str(box.root / "broker-data"), "--unverified-circuits=*",
                             "--verification-key-dir", str(keys.parent / "vk")],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    deadline = time.monotonic() + scaled(15)
    while "broker serving" not in (box.root / "broker.log").read_text():
        assert proc.poll() is None and time.monotonic() < deadline, (box.root / "broker.log").read_text()
        time.sleep(0.02)
    return proc, keys, clients, workers


def test_operations_commands(sandbox):
    box = sandbox("operations")
    doc = "docs/operations.md"
    broker, broker_keys, clients, workers = start_ops_broker(box)
    processes = [broker]
    try:
        gpu_root = box.root / "hosts" / "gpu-host-1"
        (gpu_root / "home").mkdir(parents=True)

        def on_host(block: Block) -> Optional[dict]:
            host = HOSTS.get(block.text.splitlines()[0].strip())
            if not host:
                return None
            root = box.root / "hosts" / host
            keys = root / "etc" / "zkfleet" / "keys"
            return {"cwd": root / "home", "overrides": {"KEYS": str(keys), "VK": str(keys.parent / "vk")},
                    "env": {"HOME": str(root / "home"), "ZKDOC_HOST_ROOT": str(root),
                            "ZKDOC_BROKER_PID": str(broker.pid)}}

        outputs = run_doc(box, doc, {"KEYS": str(box.root / "unused"), "VK": str(box.root / "unused")}, box.env,
                          per_block=on_host)
        assert outputs
        # The GPU host's files, made by the blocks.
        gpu_keys = gpu_root / "etc" / "zkfleet" / "keys"
        for name in ("worker-gpu0", "worker-gpu1", "drain"):
            assert (gpu_keys / f"{name}.secret").stat().st_mode & 0o077 == 0
        assert (gpu_keys / "broker.pub").read_text() == (broker_keys / "broker.pub").read_text()
        assert ["chown", "zkfleet:zkfleet", str(gpu_keys / "worker-gpu0.secret"), str(gpu_keys / "worker-gpu1.secret"),
                str(gpu_keys / "drain.secret")] in box.shim_calls("chown")
        # One key per worker: each GPU's public key under its worker's name.
        for gpu in (0, 1):
            assert (broker_keys / "allow" / "workers" / f"gpu-host-1-gpu{gpu}.pub").read_text() == \
                (gpu_keys / f"worker-gpu{gpu}.pub").read_text()
        entry = (broker_keys / "allow" / "clients" / "drain-gpu-host-1.pub").read_text()
        assert entry == (gpu_keys / "drain.pub").read_text() + "role = admin\n"
        # systemctl reload zkbroker reloaded the live broker's allow-lists...
        deadline = time.monotonic() + scaled(10)
        while "allow-lists reloaded" not in (box.root / "broker.log").read_text():
            assert time.monotonic() < deadline, (box.root / "broker.log").read_text()
            time.sleep(0.05)
        assert re.search(r"allow-lists reloaded from \S+: 2 worker keys, 2 client keys",
                         (box.root / "broker.log").read_text())
        # The key copied into --verification-key-dir was taken at the reload.
        deadline = time.monotonic() + scaled(10)
        while "verification key of circuit transfer added" not in (box.root / "broker.log").read_text():
            assert time.monotonic() < deadline, (box.root / "broker.log").read_text()
            time.sleep(0.05)
        # ... so the GPU host's worker key registers and its drain key is an admin.
        log = open(box.root / "worker.log", "wb")
        processes.append(subprocess.Popen(
            [binary("zkworker"), "--broker", workers, "--id", "gpu-host-1-gpu0", "--heartbeat-ms", "100",
             "--curve-secret-key", str(gpu_keys / "worker-gpu0.secret"), "--broker-public-key",
             str(gpu_keys / "broker.pub"),
             "--instant", "--circuit", "transfer"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        log.close()
        drain_key = ["--curve-secret-key", str(gpu_keys / "drain.secret"), "--broker-public-key",
                     str(gpu_keys / "broker.pub")]
        deadline = time.monotonic() + scaled(20)
        while True:
            listed = subprocess.run([binary("zkctl"), "--broker", clients, *drain_key, "--json", "workers"],
                                    capture_output=True, text=True, timeout=scaled(30))
            assert listed.returncode == 0, listed.stdout + listed.stderr
            if any(w["worker_id"] == "gpu-host-1-gpu0" and w["state"] == "READY" for w in json.loads(listed.stdout)):
                break
            assert time.monotonic() < deadline, listed.stdout + (box.root / "worker.log").read_text()
            time.sleep(0.1)
        # The rolling restart: one worker at a time, each READY before the next.
        order = [(c[0], c[-1]) for c in box.shim_calls() if
                 (c[0] == "systemctl" and c[1] == "restart") or (c[0] == "curl" and c[-1].endswith("/ready"))]
        expected = []
        for gpu in range(4):
            expected += [("systemctl", f"zkworker@gpu{gpu}"), ("curl", f"localhost:951{gpu}/ready")]
        assert order == expected, order
    finally:
        for proc in processes:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
