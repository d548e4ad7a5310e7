"""Harness of the Python client tests: a real zkbroker and zkworkers (CPU
backend) from this build, on 127.0.0.1 with free ports, CURVE keys made with
`zkctl keygen`, in a temporary directory that is removed unless a test failed.

Environment (ctest sets them; tests/python/CMakeLists.txt):
  ZKFLEET_BUILD_DIR        the build directory holding cmd/zkbroker, ... (default build/cpu)
  ZKFLEET_TEST_TIME_SCALE  multiplies every timeout (sanitizer builds run slower)
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "clients" / "python"))

import zkfleet  # noqa: E402

BUILD = Path(os.environ.get("ZKFLEET_BUILD_DIR", REPO / "build" / "cpu"))
SCALE = float(os.environ.get("ZKFLEET_TEST_TIME_SCALE", "1") or 1)
FIXTURE = REPO / "tests" / "fixtures" / "bn128_k12"
SNARKJS = REPO / "node_modules" / ".bin" / "snarkjs"


def scaled(seconds: float) -> float:
    return seconds * SCALE


def binary(name: str) -> str:
    path = BUILD / "cmd" / name / name
    if not path.exists():
        pytest.fail(f"{path} is not built (ZKFLEET_BUILD_DIR={BUILD})")
    return str(path)


def _ephemeral_low() -> int:
    """The low end of the kernel's ephemeral port range (32768 by default)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _can_bind(port: int) -> int:
    """Binds 127.0.0.1:port (0: any); the bound port, or 0 when refused."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return 0
        return s.getsockname()[1]


_port_rng = random.Random(os.getpid() ^ time.monotonic_ns())


def free_port() -> int:
    """A free port below the ephemeral range, as the C++ tests' FreePort: a
    port from that range (what binding port 0 gives) can be taken by any
    process's outgoing connection between this check and the broker's bind
    (seen in CI: "cannot bind the worker socket ...: Address already in
    use"); below it only another test's server can, and each picks at random."""
    low = _ephemeral_low()
    if low > 12000:
        for _ in range(200):
            port = _port_rng.randrange(10000, low)
            if _can_bind(port):
                return port
    return _can_bind(0)


def snarkjs_verifies(proof: object, public: object, scratch: Path, vk: Path = FIXTURE / "verification_key.json") -> str:
    """Runs `snarkjs groth16 verify` on parsed proof/public JSON; its output."""
    import json
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "proof.json").write_text(json.dumps(proof))
    (scratch / "public.json").write_text(json.dumps(public))
    run = subprocess.run([str(SNARKJS), "groth16", "verify", str(vk), str(scratch / "public.json"),
                          str(scratch / "proof.json")], capture_output=True, text=True, timeout=scaled(120))
    return run.stdout + run.stderr


class Fleet:
    """One broker and its workers in a temporary directory.

    Keys (in dir/keys, allow-lists in dir/keys/allow): the broker's, a worker
    key, clients "app" (admin), "alice" (submit), "watcher" (observe) and
    "stranger" (in no allow-list).
    """

    HEARTBEAT_MS = 100

    def __init__(self, name: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"zkfleet-py-{name}-"))
        self.client_port = free_port()
        self.worker_port = free_port()
        self.processes: Dict[str, subprocess.Popen] = {}
        self.broker_starts = 0
        keys = self.dir / "keys"
        (keys / "allow" / "workers").mkdir(parents=True)
        (keys / "allow" / "clients").mkdir(parents=True)
        for name_, kind, role in [("broker", None, None), ("worker", "workers", None), ("app", "clients", "admin"),
                                  ("alice", "clients", "submit"), ("watcher", "clients", "observe"),
                                  ("stranger", None, None)]:
            subprocess.run([binary("zkctl"), "keygen", "--out", str(keys / name_)], check=True, capture_output=True)
            if kind:
                entry = (keys / f"{name_}.pub").read_text() + (f"role = {role}\n" if role else "")
                (keys / "allow" / kind / f"{name_}.pub").write_text(entry)

    @property
    def endpoint(self) -> str:
        return f"tcp://127.0.0.1:{self.client_port}"

    def keys(self, name: str = "app") -> tuple:
        return (str(self.dir / "keys" / f"{name}.secret"), str(self.dir / "keys" / "broker.pub"))

    def client(self, name: str = "app", **options) -> zkfleet.Client:
        options.setdefault("reply_timeout", scaled(10))
        return zkfleet.Client(self.endpoint, keys=self.keys(name), **options)

    def _spawn(self, key: str, argv: List[str]) -> subprocess.Popen:
        log = open(self.dir / f"{key}.log", "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.processes[key] = proc
        return proc

    def log(self, key: str) -> str:
        path = self.dir / f"{key}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # The bundled BN254 circuit's ids in these tests: the broker verifies
    # their RESULTs with its verification key.
    PROVED_CIRCUITS = ("bn128", "demo-bn128")

    def start_broker(self, *extra: str) -> None:
        """Starts zkbroker. Unless ``extra`` names ``--verification-key`` or
        ``--unverified-circuits`` (as the C++ harness does): the bundled
        circuit's ids are verified with its key, every other circuit (the
        workers' --instant ones, which do not prove) runs unverified."""
        self.broker_starts += 1
        key = "broker" if self.broker_starts == 1 else f"broker-{self.broker_starts}"
        verification: List[str] = []
        if not any(arg.startswith(("--verification-key", "--unverified-circuits")) for arg in extra):
            for circuit in self.PROVED_CIRCUITS:
                verification += ["--verification-key", f"{circuit}={FIXTURE / 'verification_key.json'}"]
            verification.append("--unverified-circuits=*")
        # A journal in etcd (--journal etcd://...) instead of broker-data.
        journal = [] if any(arg.startswith("--journal") for arg in extra) else [
            "--data-dir", str(self.dir / "broker-data")]
        self._spawn(key, [binary("zkbroker"), "--clients", self.endpoint, "--workers",
                          f"tcp://127.0.0.1:{self.worker_port}", "--heartbeat-ms", str(self.HEARTBEAT_MS),
                          "--curve-secret-key", str(self.dir / "keys" / "broker.secret"),
                          "--allow-dir", str(self.dir / "keys" / "allow"),
                          *journal, *verification, *extra])
        deadline = time.monotonic() + scaled(15)
        while "broker serving" not in self.log(key):
            if self.processes[key].poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"broker did not start:\n{self.log(key)}")
            time.sleep(0.02)
        self.broker_key = key

    def wait_started(self, job_seq: int, timeout: float = 30) -> None:
        """Waits until the broker's journal holds a started attempt of the
        job's partition 0 (read with `zkctl journal`, read-only). Before that,
        killing the broker races the worker's STARTED: a lease the restarted
        broker did not know was started is redelivered, the worker ignores the
        duplicate and its result under the old lease is dropped as stale."""
        import json
        deadline = time.monotonic() + scaled(timeout)
        while time.monotonic() < deadline:
            run = subprocess.run([binary("zkctl"), "--json", "journal", "--data-dir", str(self.dir / "broker-data"),
                                  "--job", str(job_seq)], capture_output=True, text=True)
            if run.returncode == 0:
                items = json.loads(run.stdout).get("items", [])
                if items and items[0]["attempts"] >= 1 and items[0]["state"] == "STARTED":
                    return
            time.sleep(0.05)
        pytest.fail(f"job {job_seq} not STARTED in the journal")

    def kill_broker(self) -> None:
        proc = self.processes[self.broker_key]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def start_worker(self, worker_id: str, *args: str) -> None:
        self._spawn(worker_id, [binary("zkworker"), "--broker", f"tcp://127.0.0.1:{self.worker_port}",
                                "--id", worker_id, "--heartbeat-ms", str(self.HEARTBEAT_MS),
                                "--curve-secret-key", str(self.dir / "keys" / "worker.secret"),
                                "--broker-public-key", str(self.dir / "keys" / "broker.pub"),
                                "--key-check-cache", str(self.dir / "checked-keys"), *args])

    def wait_ready(self, *worker_ids: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + scaled(timeout)
        with self.client() as client:
            while True:
                ready = {w.worker_id for w in client.workers()
                         if w.state == zkfleet._wire.pb.WORKER_STATE_READY and w.credit > 0}
                if set(worker_ids) <= ready:
                    return
                if time.monotonic() > deadline:
                    logs = "\n".join(f"--- {w}\n{self.log(w)}" for w in worker_ids)
                    pytest.fail(f"workers {worker_ids} not READY (ready: {ready})\n{logs}")
                time.sleep(0.05)

    def close(self, keep: bool) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if keep:
            print(f"fleet logs kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


# Which tests failed, so that a fleet's logs stay for the post-mortem.
@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.session.zkfleet_failed = True


def _new_fleet(request, name: str) -> Fleet:
    fleet = Fleet(name)
    request.addfinalizer(lambda: fleet.close(keep=getattr(request.session, "zkfleet_failed", False)))
    return fleet


@pytest.fixture(scope="module")
def fleet(request) -> Fleet:
    """A shared broker with two workers: "prover" holds the bundled BN254
    circuit "bn128" (real CPU proofs) and an instant circuit "fast"; "sleeper"
    holds "slow", whose every proof takes 3 s (instant mode)."""
    fleet = _new_fleet(request, "shared")
    fleet.start_broker()
    fleet.start_worker("prover", "--circuit", f"bn128={FIXTURE / 'circuit_final.zkey'}", "--instant-circuit", "fast",
                       "--threads", "1", "--capacity", "64")
    fleet.start_worker("sleeper", "--instant", "--circuit", "slow", "--instant-delay-ms", str(int(scaled(3000))),
                       "--capacity", "8")
    fleet.wait_ready("prover", "sleeper")
    return fleet


@pytest.fixture
def own_fleet(request) -> Fleet:
    """A fleet of the test's own (not started): for broker restarts and limits."""
    return _new_fleet(request, request.node.name)


@pytest.fixture
def witness() -> bytes:
    return (FIXTURE / "witness.wtns").read_bytes()


# ---------------------------------------------------------------- gRPC front door

TEST_CA_SCRIPT = REPO / "tests" / "testutil" / "make_test_ca.sh"
WITGEN_FIXTURES = REPO / "tests" / "fixtures" / "witgen"
# Compiled witness generators, shared with the C++ tests (inputs_test.cpp):
# compiling one takes a while, a cached one is found by the wasm's digest.
WITGEN_CACHE = Path(os.environ.get("ZKFLEET_WITGEN_TEST_CACHE", REPO / "build" / ".witgen-test-cache"))
# Client certificates of the test CA: the names of Fleet's client keys
# (alice: submit, watcher: observe, app: admin), and bob, whose CN is in no
# allow-list.
GRPC_CLIENTS = ("alice", "watcher", "app", "bob")


def make_test_ca(out: Path) -> Path:
    """tests/testutil/make_test_ca.sh into ``out``: ca.pem, server.pem/key,
    NAME.pem/key per GRPC_CLIENTS (CN=NAME), expired.pem (CN=alice, expired)
    and stranger.pem (CN=alice, from another CA)."""
    run = subprocess.run(["bash", str(TEST_CA_SCRIPT), str(out), *GRPC_CLIENTS], capture_output=True, text=True)
    if run.returncode != 0 or not (out / "server.pem").exists():
        pytest.fail(f"{TEST_CA_SCRIPT} failed ({run.returncode}): {run.stderr}")
    return out


def arrays_circuit_keys() -> Dict[str, Path]:
    """The witgen fixture circuit "arrays" (BN254): its wasm, input.json, and
    a proving and verification key made once per build (zkfleet-dev setup,
    zkprove export-vk; as inputs_test.cpp's FixtureKeys)."""
    out = BUILD / "test-cache" / "py-grpc-arrays-bn128"
    zkey, vk = out / "circuit.zkey", out / "vk.json"
    if not (zkey.exists() and vk.exists()):
        scratch = Path(tempfile.mkdtemp(prefix="arrays-keys-", dir=out.parent if out.parent.exists() else None))
        for argv in ([binary("zkfleet-dev"), "setup", str(WITGEN_FIXTURES / "arrays" / "bn128" / "circuit.r1cs"),
                      str(scratch / "circuit.zkey"), "--insecure"],
                     [binary("zkprove"), "export-vk", str(scratch / "circuit.zkey"), str(scratch / "vk.json")]):
            run = subprocess.run(argv, capture_output=True, text=True)
            if run.returncode != 0:
                pytest.fail(f"{' '.join(argv)} failed: {run.stdout}{run.stderr}")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(out, ignore_errors=True)
        scratch.rename(out)   # whole or not at all: a concurrent test sees no half-made keys
    return {"zkey": zkey, "vk": vk, "wasm": WITGEN_FIXTURES / "arrays" / "bn128" / "circuit.wasm",
            "input": WITGEN_FIXTURES / "arrays" / "input.json"}


ETCD = Path("/usr/bin/etcd")


def start_etcd(directory: Path) -> Tuple[str, subprocess.Popen]:
    """One etcd member (Debian's etcd-server) with its data in ``directory``:
    its client URL and process (killed by the caller). Skips loudly without etcd."""
    if not ETCD.exists():
        pytest.skip("SKIPPED LOUDLY: etcd is not installed (scripts/install-deps.sh)")
    client, peer = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
    directory.mkdir(parents=True, exist_ok=True)
    log = open(directory / "etcd.log", "wb")
    proc = subprocess.Popen([str(ETCD), "--name", "m0", "--data-dir", str(directory / "data"),
                             "--listen-client-urls", client, "--advertise-client-urls", client,
                             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                             "--initial-cluster", f"m0={peer}", "--log-level", "warn"],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    host, port = client.rsplit("//", 1)[1].split(":")
    deadline = time.monotonic() + scaled(30)
    while True:
        with socket.socket() as s:
            if s.connect_ex((host, int(port))) == 0:
                return client.rsplit("//", 1)[1], proc
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"etcd did not start:\n{(directory / 'etcd.log').read_text(errors='replace')}")
        time.sleep(0.05)


def go_example() -> str:
    """The Go example client of this build (target zkfleet_go_example)."""
    path = BUILD / "clients" / "go" / "bin" / "zkfleet-example"
    if not path.exists():
        pytest.fail(f"{path} is not built (ninja -C {BUILD} zkfleet_go_example)")
    return str(path)


class GrpcFleet(Fleet):
    """A Fleet whose broker also serves the gRPC front door, with mTLS from a
    test CA (in dir/ca): ``grpc_addr`` is 127.0.0.1:PORT, the same port
    across restarts."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.grpc_port = free_port()
        self.ca = make_test_ca(self.dir / "ca")

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def start_broker(self, *extra: str) -> None:
        super().start_broker("--grpc-listen", self.grpc_addr, "--grpc-cert", str(self.ca / "server.pem"),
                             "--grpc-key", str(self.ca / "server.key"), "--grpc-client-ca", str(self.ca / "ca.pem"),
                             *extra)
        # "broker serving" may come before the gRPC port listens: wait for it.
        deadline = time.monotonic() + scaled(15)
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.grpc_port)) == 0:
                    return
            if self.processes[self.broker_key].poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"broker's gRPC port {self.grpc_addr} not listening:\n{self.log(self.broker_key)}")
            time.sleep(0.02)

    def tls(self, name: str, cert: Optional[str] = None) -> Dict[str, str]:
        """GrpcClient's TLS arguments for client ``name`` (``cert``: another
        certificate file stem of the CA dir, e.g. "expired", with its key)."""
        stem = cert or name
        return {"ca": str(self.ca / "ca.pem"), "cert": str(self.ca / f"{stem}.pem"), "key": str(self.ca / f"{stem}.key")}

    def grpc_client(self, name: str = "alice", cert: Optional[str] = None, **options):
        from zkfleet.grpc_client import GrpcClient
        return GrpcClient(self.grpc_addr, **self.tls(name, cert), **options)

    def go_argv(self, name: str = "alice", cert: Optional[str] = None) -> List[str]:
        """The Go client's command line up to the command, as client ``name``."""
        tls = self.tls(name, cert)
        return [go_example(), "--addr", self.grpc_addr, "--ca", tls["ca"], "--cert", tls["cert"], "--key", tls["key"]]


def _new_grpc_fleet(request, name: str) -> GrpcFleet:
    fleet = GrpcFleet(name)
    request.addfinalizer(lambda: fleet.close(keep=getattr(request.session, "zkfleet_failed", False)))
    return fleet


@pytest.fixture(scope="module")
def grpc_fleet(request) -> GrpcFleet:
    """A broker with the gRPC front door (mTLS) and one CPU worker "prover":
    the bundled BN254 circuit "bn128" (witness jobs), the witgen fixture
    "arrays" with its generator (jobs from inputs; the broker verifies its
    proofs with its key), and "slow", an instant circuit whose proofs take 3 s
    (instant mode: another worker "sleeper")."""
    keys = arrays_circuit_keys()
    fleet = _new_grpc_fleet(request, "grpc")
    fleet.arrays = keys
    fleet.start_broker("--verification-key", f"arrays={keys['vk']}",
                       *[f"--verification-key={c}={FIXTURE / 'verification_key.json'}" for c in Fleet.PROVED_CIRCUITS],
                       "--unverified-circuits=*")
    fleet.start_worker("prover", "--circuit", f"bn128={FIXTURE / 'circuit_final.zkey'}",
                       "--circuit", f"arrays={keys['zkey']}", "--generator", f"arrays={keys['wasm']}",
                       "--witgen-cache", str(WITGEN_CACHE), "--threads", "1", "--capacity", "8")
    fleet.start_worker("sleeper", "--instant", "--circuit", "slow", "--instant-delay-ms", str(int(scaled(3000))),
                       "--capacity", "8")
    fleet.wait_ready("prover", "sleeper", timeout=180)   # the first start compiles the generator
    return fleet


@pytest.fixture
def own_grpc_fleet(request) -> GrpcFleet:
    """A gRPC fleet of the test's own (not started): for broker restarts."""
    return _new_grpc_fleet(request, request.node.name)
