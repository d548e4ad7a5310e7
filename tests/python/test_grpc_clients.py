"""The gRPC clients (zkfleet.grpc_client and the Go example zkfleet-example)
against a real zkbroker serving its gRPC front door with mTLS (a test CA,
tests/testutil/make_test_ca.sh) and real CPU workers: jobs from inputs and
from inline witnesses proved and checked by snarkjs, a broker restart while
a client awaits, and certificates the broker must refuse."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import grpc
import pytest

import zkfleet
from conftest import FIXTURE, WITGEN_FIXTURES, binary, free_port, go_example, scaled, snarkjs_verifies, start_etcd
from zkfleet.grpc_client import GrpcError


def arrays_input(a: int) -> dict:
    """The arrays fixture's input.json with its public input ``a`` set: distinct jobs."""
    return {**json.loads((WITGEN_FIXTURES / "arrays" / "input.json").read_text()), "a": str(a)}


def test_python_client_proves_from_inputs_and_inline_witnesses(grpc_fleet, tmp_path):
    with grpc_fleet.grpc_client("alice") as client:
        from_inputs = client.submit("arrays", inputs=[arrays_input(101), arrays_input(102)])
        from_witness = client.submit("bn128", witnesses=[FIXTURE / "witness.wtns"], request_id="py-wtns-1")
        assert client.submit("bn128", witnesses=[FIXTURE / "witness.wtns"], request_id="py-wtns-1") == from_witness

        result = client.await_result(from_inputs, timeout=scaled(180))
        assert result.state == "SUCCEEDED" and result.job_seq == from_inputs and len(result.partitions) == 2
        for p in result.partitions:
            assert p.proof["protocol"] == "groth16"
            verdict = snarkjs_verifies(p.proof, p.public, tmp_path / f"in{p.partition}", vk=grpc_fleet.arrays["vk"])
            assert "OK" in verdict, verdict
        assert result.partitions[0].public != result.partitions[1].public   # a = 101, a = 102

        result = client.await_result(from_witness, timeout=scaled(180))
        [p] = result.partitions
        assert p.public == json.loads((FIXTURE / "public.json").read_text())
        assert "OK" in snarkjs_verifies(p.proof, p.public, tmp_path / "wtns")

        info = client.get(from_inputs)
        assert info.job_seq == from_inputs and info.client_id == "alice" and info.partitions == 2
        assert info.state == zkfleet._wire.pb.JOB_STATE_SUCCEEDED and info.partitions_done == 2
        # What it was submitted with, though its inputs left the journal when it ended.
        assert info.payload == zkfleet._wire.pb.JobInfo.PAYLOAD_INPUTS
        assert client.get(from_witness).payload == zkfleet._wire.pb.JobInfo.PAYLOAD_WITNESSES

        # Roles: alice's key is a submit key (observe and admin calls refused).
        with pytest.raises(GrpcError) as e:
            client.status()
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
    with grpc_fleet.grpc_client("watcher") as watcher:   # an observe key: may read, not submit
        assert {"prover", "sleeper"} <= {w.worker_id for w in watcher.workers()}
        assert watcher.status().jobs_completed >= 2
        with pytest.raises(GrpcError) as e:
            watcher.submit("bn128", witnesses=[FIXTURE / "witness.wtns"])
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED


def test_go_client_submits_from_input_and_awaits_the_proof(grpc_fleet, tmp_path):
    (tmp_path / "input.json").write_text(json.dumps(arrays_input(201)))
    go = grpc_fleet.go_argv("alice")
    submit = subprocess.run([*go, "submit", "--circuit", "arrays", "--input", str(tmp_path / "input.json"),
                             "--request-id", "go-e2e-1"], capture_output=True, text=True, timeout=scaled(60))
    assert submit.returncode == 0, submit.stderr
    job_seq = int(submit.stdout.strip())

    wait = subprocess.run([*go, "--timeout", f"{int(scaled(180))}s", "await", str(job_seq)], capture_output=True,
                          text=True, timeout=scaled(240))
    assert wait.returncode == 0, wait.stderr
    out = json.loads(wait.stdout)
    assert out["state"] == "SUCCEEDED" and out["job_seq"] == job_seq and out["request_id"] == "go-e2e-1"
    [p] = out["partitions"]
    verdict = snarkjs_verifies(p["proof"], p["public"], tmp_path / "check", vk=grpc_fleet.arrays["vk"])
    assert "OK" in verdict, verdict

    get = subprocess.run([*go, "get", str(job_seq)], capture_output=True, text=True, timeout=scaled(60))
    assert get.returncode == 0, get.stderr
    info = json.loads(get.stdout)
    assert info["client_id"] == "alice" and info["state"] == "JOB_STATE_SUCCEEDED"
    # An admin ("app") sees every client's job; a job that does not exist is NOT_FOUND (exit 5).
    other = subprocess.run([*grpc_fleet.go_argv("app"), "get", str(job_seq)], capture_output=True, text=True,
                           timeout=scaled(60))
    assert other.returncode == 0 and json.loads(other.stdout)["client_id"] == "alice", other.stderr
    unknown = subprocess.run([*go, "await", str(10**12)], capture_output=True, text=True, timeout=scaled(60))
    assert unknown.returncode == 5, unknown.stderr
    workers = subprocess.run([*grpc_fleet.go_argv("watcher"), "workers"], capture_output=True, text=True,
                             timeout=scaled(60))
    assert workers.returncode == 0 and "prover" in {w["worker_id"] for w in json.loads(workers.stdout)["workers"]}


def test_a_failed_job_is_not_a_success_for_either_client(grpc_fleet):
    with grpc_fleet.grpc_client("alice") as client:
        job_seq = client.submit("bn128", witnesses=[b"this is not a witness"])
        with pytest.raises(zkfleet.JobFailed) as e:
            client.await_result(job_seq, timeout=scaled(120))
        assert e.value.state == "FAILED" and e.value.reason
    wait = subprocess.run([*grpc_fleet.go_argv("alice"), "await", str(job_seq)], capture_output=True, text=True,
                          timeout=scaled(120))
    assert wait.returncode == 3, wait.stderr
    assert json.loads(wait.stdout)["state"] == "FAILED"
    with grpc_fleet.grpc_client("alice") as client:
        # Listed among alice's failed jobs; FAILED by its own witness, it is not retried (its
        # bytes were not kept): the broker says to submit a new request.
        assert job_seq in [job.job_seq for job in client.list_jobs(states=["failed"])]
        with pytest.raises(GrpcError) as e:
            client.retry(job_seq)
        assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION and "submit a new request" in e.value.message
        assert client.get(job_seq).retries == 0
    # The Go client's view: listed among alice's failed jobs; its retry refused likewise (exit 1, the reason).
    listed = subprocess.run([*grpc_fleet.go_argv("alice"), "jobs", "--state", "failed"], capture_output=True,
                            text=True, timeout=scaled(60))
    assert listed.returncode == 0, listed.stderr
    assert str(job_seq) in [job["job_seq"] for job in json.loads(listed.stdout)["jobs"]]
    retried = subprocess.run([*grpc_fleet.go_argv("alice"), "retry", str(job_seq)], capture_output=True, text=True,
                             timeout=scaled(60))
    assert retried.returncode == 1 and "submit a new request" in retried.stderr, retried.stderr


@pytest.mark.parametrize("cert", ["stranger", "expired"])
def test_a_certificate_from_another_ca_or_expired_is_refused(grpc_fleet, cert):
    """stranger.pem: CN=alice signed by another CA; expired.pem: CN=alice,
    the test CA's, valid in 2000 only. Both are refused at the handshake,
    while alice's own certificate gets through (NOT_FOUND for a job that
    does not exist: the call reached the broker)."""
    with grpc_fleet.grpc_client("alice") as client:
        with pytest.raises(GrpcError) as e:
            client.get(10**12)
        assert e.value.code == grpc.StatusCode.NOT_FOUND
    with grpc_fleet.grpc_client("alice", cert=cert) as client:
        with pytest.raises(GrpcError) as e:
            client.get(10**12, timeout=scaled(10))
        assert e.value.code == grpc.StatusCode.UNAVAILABLE, e.value
    run = subprocess.run([*grpc_fleet.go_argv("alice", cert=cert), "--rpc-timeout", "10s", "get", str(10**12)],
                         capture_output=True, text=True, timeout=scaled(60))
    assert run.returncode == 1 and "Unavailable" in run.stderr, run.stderr


def test_a_certificate_naming_no_client_is_unauthenticated(grpc_fleet):
    """bob's certificate is the test CA's, but no client key "bob" is in the allow-list."""
    with grpc_fleet.grpc_client("bob") as client:
        with pytest.raises(GrpcError) as e:
            client.get(1)
        assert e.value.code == grpc.StatusCode.UNAUTHENTICATED


def _both_await_through(fleet, client, go_argv, job_seq, outage) -> str:
    """The Python ``client`` and the Go client (``go_argv``) both await the
    running job ``job_seq`` while ``outage()`` takes the broker away and
    brings one back; both must get its SUCCEEDED result. Returns the Go
    client's stderr."""
    go = subprocess.Popen([*go_argv, "--timeout", f"{int(scaled(120))}s", "await", str(job_seq)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outcome = {}

    def python_await():
        try:
            outcome["result"] = client.await_result(job_seq, timeout=scaled(120))
        except Exception as e:  # reported by the assertion below
            outcome["error"] = e

    waiter = threading.Thread(target=python_await)
    waiter.start()
    fleet.wait_started(job_seq)
    outage()
    waiter.join(timeout=scaled(150))
    stdout, stderr = go.communicate(timeout=scaled(150))
    assert not waiter.is_alive()
    assert "result" in outcome, outcome.get("error")
    assert outcome["result"].state == "SUCCEEDED" and outcome["result"].job_seq == job_seq
    assert go.returncode == 0, stderr
    assert json.loads(stdout)["state"] == "SUCCEEDED"
    return stderr


def test_await_rides_out_a_broker_restart(own_grpc_fleet):
    """SIGKILL of the broker while both clients await a running job, then,
    8 s later, a restart on the same ports: both get the result. (Down for
    8 s, the Python client's channel once never connected again: its
    connection attempts had 100 ms and nothing drove them between calls.)"""
    fleet = own_grpc_fleet
    fleet.start_broker()
    fleet.start_worker("sleeper", "--instant", "--circuit", "slow", "--instant-delay-ms", str(int(scaled(4000))))
    fleet.wait_ready("sleeper")

    def restart():
        fleet.kill_broker()
        time.sleep(8)
        fleet.start_broker()

    with fleet.grpc_client("alice") as client:
        job_seq = client.submit("slow", witnesses=[(FIXTURE / "witness.wtns").read_bytes()])
        stderr = _both_await_through(fleet, client, fleet.go_argv("alice"), job_seq, restart)
    assert "UNAVAILABLE" in stderr   # the Go client did lose the stream and called again


def test_clients_given_every_brokers_address_follow_the_one_that_serves(own_grpc_fleet):
    """Brokers at addresses of their own (brokers on etcd: only the leader
    listens): both clients are given both gRPC addresses. The broker at the
    first is killed while they await a running job; one at the second, on
    the same journal, takes over as a standby that comes to lead would: both
    get the result from it."""
    from zkfleet._wire import job_state_name
    from zkfleet.grpc_client import GrpcClient
    fleet = own_grpc_fleet
    first, second = fleet.grpc_port, free_port()
    both = f"127.0.0.1:{first}, 127.0.0.1:{second}"
    fleet.start_broker()
    fleet.start_worker("sleeper", "--instant", "--circuit", "slow", "--instant-delay-ms", str(int(scaled(4000))))
    fleet.wait_ready("sleeper")

    def failover():
        fleet.kill_broker()
        fleet.grpc_port = second  # the next broker listens at the second address only
        fleet.start_broker()

    with GrpcClient(both, **fleet.tls("alice")) as client:
        job_seq = client.submit("slow", witnesses=[(FIXTURE / "witness.wtns").read_bytes()])
        go_argv = fleet.go_argv("alice")
        go_argv[go_argv.index("--addr") + 1] = both
        _both_await_through(fleet, client, go_argv, job_seq, failover)
        # A new call goes to the broker that serves now, at the second address.
        assert job_state_name(client.get(job_seq).state) == "SUCCEEDED"


def test_a_standby_answers_grpc_callers_not_the_leader_naming_it(own_grpc_fleet):
    """Brokers on etcd at addresses of their own (issue 48): the standby's
    gRPC port answers every call UNAVAILABLE, saying it stands by, with the
    leader's gRPC address in the trailer zkfleet-leader. Both clients given
    only the standby say where the leader is, at once; given the standby's
    address first and then the leader's, they are served by the leader. When
    the leader is killed the standby serves on the ports it answered on."""
    from zkfleet.grpc_client import GrpcClient
    fleet = own_grpc_fleet
    etcd, etcd_proc = start_etcd(fleet.dir / "etcd")
    fleet.processes["etcd"] = etcd_proc   # killed with the fleet
    journal = ("--journal", f"etcd://{etcd}/fleet/", "--etcd-lease-ttl", "2")
    fleet.start_broker(*journal, "--accept-unrouted")
    leader = fleet.grpc_addr
    standby = f"127.0.0.1:{free_port()}"
    fleet._spawn("standby", [binary("zkbroker"), "--clients", f"tcp://127.0.0.1:{free_port()}",
                             "--workers", f"tcp://127.0.0.1:{free_port()}",
                             "--curve-secret-key", str(fleet.dir / "keys" / "broker.secret"),
                             "--allow-dir", str(fleet.dir / "keys" / "allow"), "--unverified-circuits=*",
                             "--grpc-listen", standby, "--grpc-cert", str(fleet.ca / "server.pem"),
                             "--grpc-key", str(fleet.ca / "server.key"), "--grpc-client-ca", str(fleet.ca / "ca.pem"),
                             *journal])
    deadline = time.monotonic() + scaled(20)
    while "are told that" not in fleet.log("standby"):
        assert time.monotonic() < deadline, fleet.log("standby")
        time.sleep(0.05)
    assert "gRPC callers on " + standby in fleet.log("standby")

    with GrpcClient(standby, **fleet.tls("alice")) as client:
        with pytest.raises(GrpcError) as refused:
            client.get(1, timeout=scaled(10))
    assert refused.value.code == grpc.StatusCode.UNAVAILABLE and refused.value.leader == leader, refused.value
    assert "stands by" in refused.value.message
    go_argv = fleet.go_argv("alice")
    go_argv[go_argv.index("--addr") + 1] = standby
    go = subprocess.run([*go_argv, "get", "1"], capture_output=True, text=True, timeout=scaled(60))
    assert go.returncode != 0 and leader in go.stderr and "stands by" in go.stderr, go.stderr

    with GrpcClient(f"{standby},{leader}", **fleet.tls("alice")) as client:
        job_seq = client.submit("c1", witnesses=[b"instant"], request_id="sent-on")
        assert client.get(job_seq).job_seq == job_seq
    go_argv[go_argv.index("--addr") + 1] = f"{standby},{leader}"
    go = subprocess.run([*go_argv, "get", str(job_seq)], capture_output=True, text=True, timeout=scaled(60))
    assert go.returncode == 0 and f'"job_seq": "{job_seq}"' in go.stdout, go.stdout + go.stderr

    # The leader dies: the standby closes its answering ports and serves on
    # them as the leader, the job read back from etcd.
    fleet.kill_broker()
    deadline = time.monotonic() + scaled(30)
    while "broker serving" not in fleet.log("standby"):
        assert time.monotonic() < deadline, fleet.log("standby")
        time.sleep(0.05)
    with GrpcClient(standby, **fleet.tls("alice"), retry_timeout=scaled(30)) as client:
        assert client.get(job_seq, timeout=scaled(10)).job_seq == job_seq


def test_a_bad_address_list_is_refused_in_words():
    from zkfleet.errors import InvalidRequest
    from zkfleet.grpc_client import GrpcClient
    for bad in ("127.0.0.1:1,", "127.0.0.1:1,nohost", "127.0.0.1:1,:5"):
        with pytest.raises(InvalidRequest, match="is not host:port"):
            GrpcClient(bad, insecure=True)
    go = subprocess.run([go_example(), "--addr", "127.0.0.1:1,nohost", "--insecure", "status"],
                        capture_output=True, text=True, timeout=scaled(30))
    assert go.returncode == 2 and "entry 2 is not host:port" in go.stderr, go.stderr


def test_cancel_and_drain(own_grpc_fleet):
    """cancel (the job's owner) and drain (admin only; with wait, the reply
    comes once the worker has left)."""
    fleet = own_grpc_fleet
    fleet.start_broker()
    fleet.start_worker("sleeper", "--instant", "--circuit", "slow", "--instant-delay-ms", str(int(scaled(3000))))
    fleet.wait_ready("sleeper")
    with fleet.grpc_client("alice") as alice, fleet.grpc_client("app") as admin:
        job_seq = alice.submit("slow", witnesses=[(FIXTURE / "witness.wtns").read_bytes()])
        cancelled = alice.cancel(job_seq)
        assert cancelled.cancelled and cancelled.state == "CANCELLED"
        with pytest.raises(zkfleet.JobFailed) as e:
            alice.await_result(job_seq, timeout=scaled(30))
        assert e.value.state == "CANCELLED"
        assert not alice.cancel(job_seq).cancelled   # already ended

        with pytest.raises(GrpcError) as e:
            alice.drain("sleeper")
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(GrpcError) as e:
            admin.drain("no-such-worker")
        assert e.value.code == grpc.StatusCode.NOT_FOUND
        reply = admin.drain("sleeper", wait=True, timeout=scaled(60))
        assert reply.worker_id == "sleeper" and reply.finished and reply.phases
        assert "sleeper" not in {w.worker_id for w in admin.workers()
                                 if w.state == zkfleet._wire.pb.WORKER_STATE_READY}
