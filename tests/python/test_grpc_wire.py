"""The gRPC clients (zkfleet.grpc_client and the Go example) against a fake
Fleet server in this process (grpcio, plaintext): what they send, and how
they take what a broker may answer: a stream cut by UNAVAILABLE (a broker
restart), a result that is not a success, a SUCCEEDED without proofs, a busy
broker. No broker needed; the real one: test_grpc_clients.py."""

from __future__ import annotations

import json
import subprocess
import threading
from concurrent import futures
from typing import List

import grpc
import pytest

import zkfleet
from conftest import FIXTURE, go_example, scaled
from zkfleet._generated import zkfleet_v1_pb2 as v1
from zkfleet._generated import zkfleet_v1_pb2_grpc as v1_grpc
from zkfleet.grpc_client import GrpcClient, GrpcError

PROOF = (FIXTURE / "proof.json").read_text()
PUBLIC = (FIXTURE / "public.json").read_text()


def succeeded(job_seq: int, partitions: int = 1) -> v1.JobResult:
    return v1.JobResult(job_seq=job_seq, request_id="r", circuit_id="c", state=v1.JOB_STATE_SUCCEEDED,
                        partitions=[v1.PartitionResult(partition=i, proof_json=PROOF, public_json=PUBLIC,
                                                       worker_id="w") for i in range(partitions)])


class FakeFleet(v1_grpc.FleetServicer):
    """Answers from a script: ``awaits`` is one entry per AwaitJob call,
    either a JobResult (sent after a JobInfo) or a StatusCode (sent after a
    JobInfo, as the stream's end); ``submits`` one StatusCode (refused) or
    None (accepted) per SubmitJob call."""

    def __init__(self) -> None:
        self.awaits: List[object] = []
        self.submits: List[object] = []
        self.calls: List[tuple] = []        # (method, request, client id metadata)
        self.lock = threading.Lock()

    def _record(self, method, request, context) -> None:
        client_id = dict(context.invocation_metadata()).get("zkfleet-client-id")
        with self.lock:
            self.calls.append((method, request, client_id))

    def SubmitJob(self, request, context):
        self._record("SubmitJob", request, context)
        refusal = self.submits.pop(0) if self.submits else None
        if refusal is not None:
            if refusal == grpc.StatusCode.RESOURCE_EXHAUSTED:
                context.set_trailing_metadata((("retry-after-ms", "50"),))
            context.abort(refusal, "fake refusal")
        return v1.SubmitJobReply(job_seq=41, state=v1.JOB_STATE_QUEUED)

    def AwaitJob(self, request, context):
        self._record("AwaitJob", request, context)
        step = self.awaits.pop(0)
        yield v1.JobUpdate(state=v1.JobInfo(job_seq=request.job_seq, state=v1.JOB_STATE_RUNNING, partitions=1))
        if isinstance(step, grpc.StatusCode):
            context.abort(step, "fake: broker restarting")
        yield v1.JobUpdate(result=step)

    def GetStatus(self, request, context):
        self._record("GetStatus", request, context)
        context.abort(grpc.StatusCode.PERMISSION_DENIED, "fake: the role submit may not read the status")


@pytest.fixture
def fake():
    servicer = FakeFleet()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    v1_grpc.add_FleetServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    servicer.addr = f"127.0.0.1:{port}"
    yield servicer
    server.stop(grace=None)


def go(fake, *args: str, client_id: str = "gopher") -> subprocess.CompletedProcess:
    return subprocess.run([go_example(), "--addr", fake.addr, "--insecure", "--client-id", client_id,
                           "--timeout", "20s", *args], capture_output=True, text=True, timeout=scaled(60))


def test_python_await_calls_again_after_unavailable_and_returns_the_result(fake):
    fake.awaits = [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, succeeded(7)]
    with GrpcClient(fake.addr, insecure=True, client_id="carol") as client:
        result = client.await_result(7, timeout=scaled(20))
    assert result.state == "SUCCEEDED" and result.job_seq == 7
    assert result.partitions[0].proof == json.loads(PROOF) and result.partitions[0].public == json.loads(PUBLIC)
    awaits = [c for c in fake.calls if c[0] == "AwaitJob"]
    assert len(awaits) == 3 and all(c[1].job_seq == 7 and c[2] == "carol" for c in awaits)


def test_go_await_calls_again_after_unavailable_and_prints_the_proofs(fake):
    fake.awaits = [grpc.StatusCode.UNAVAILABLE, succeeded(7, partitions=2)]
    run = go(fake, "await", "7")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["state"] == "SUCCEEDED" and out["job_seq"] == 7
    assert [p["proof"] for p in out["partitions"]] == [json.loads(PROOF)] * 2
    assert out["partitions"][1]["public"] == json.loads(PUBLIC)
    assert "UNAVAILABLE" in run.stderr   # it said why it called again
    awaits = [c for c in fake.calls if c[0] == "AwaitJob"]
    assert len(awaits) == 2 and all(c[2] == "gopher" for c in awaits)


def test_a_job_that_did_not_succeed_is_never_a_success(fake):
    failed = v1.JobResult(job_seq=8, state=v1.JOB_STATE_FAILED, error="bad witness")
    no_proof = v1.JobResult(job_seq=9, state=v1.JOB_STATE_SUCCEEDED)   # SUCCEEDED, but no partition
    not_json = succeeded(10)
    not_json.partitions[0].proof_json = "{not json"
    fake.awaits = [failed, no_proof, not_json, failed, no_proof, not_json]
    with GrpcClient(fake.addr, insecure=True) as client:
        with pytest.raises(zkfleet.JobFailed, match="bad witness") as e:
            client.await_result(8, timeout=scaled(10))
        assert e.value.state == "FAILED"
        with pytest.raises(zkfleet.InvalidResult, match="no partition"):
            client.await_result(9, timeout=scaled(10))
        with pytest.raises(zkfleet.InvalidResult, match="not JSON"):
            client.await_result(10, timeout=scaled(10))
    run = go(fake, "await", "8")
    assert run.returncode == 3 and json.loads(run.stdout)["state"] == "FAILED" and "bad witness" in run.stderr
    run = go(fake, "await", "9")
    assert run.returncode == 1 and "without a proof" in run.stderr
    run = go(fake, "await", "10")
    assert run.returncode == 1 and "not JSON" in run.stderr


def test_submit_sends_the_inputs_and_retries_with_the_same_request_id(fake, tmp_path):
    fake.submits = [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, None,
                    grpc.StatusCode.UNAVAILABLE, None]
    with GrpcClient(fake.addr, insecure=True, client_id="carol") as client:
        assert client.submit("arrays", inputs=[{"a": "3"}, b'{"a": "4"}'], priority="high") == 41
    sent = [c for c in fake.calls if c[0] == "SubmitJob"]
    assert len(sent) == 3 and len({c[1].request_id for c in sent}) == 1 and sent[0][1].request_id
    request = sent[0][1]
    assert request.circuit_id == "arrays" and request.priority == v1.PRIORITY_HIGH
    assert [json.loads(i) for i in request.inputs] == [{"a": "3"}, {"a": "4"}]
    assert not request.witnesses and not request.witness_refs and all(c[2] == "carol" for c in sent)

    (tmp_path / "input.json").write_text('{"a": "5"}')
    run = go(fake, "submit", "--circuit", "arrays", "--input", str(tmp_path / "input.json"), "--request-id", "go-1")
    assert run.returncode == 0 and run.stdout.strip() == "41", run.stderr
    sent = [c for c in fake.calls if c[0] == "SubmitJob"][3:]
    assert [c[1].request_id for c in sent] == ["go-1", "go-1"] and sent[0][1].inputs == [b'{"a": "5"}']
    assert sent[0][2] == "gopher"


def test_errors_carry_the_status_code_and_bad_arguments_send_nothing(fake, tmp_path):
    with GrpcClient(fake.addr, insecure=True) as client:
        with pytest.raises(GrpcError) as e:
            client.status()
        assert e.value.code == grpc.StatusCode.PERMISSION_DENIED and "may not read" in e.value.message
        with pytest.raises(zkfleet.InvalidRequest, match="exactly one"):
            client.submit("arrays")
    with pytest.raises(zkfleet.InvalidRequest, match="only with insecure"):
        GrpcClient(fake.addr, ca="ca.pem", client_id="x")
    run = go(fake, "status")
    assert run.returncode == 1 and "PermissionDenied" in run.stderr
    (tmp_path / "list.json").write_text("[1, 2]")
    run = go(fake, "submit", "--circuit", "arrays", "--input", str(tmp_path / "list.json"))
    assert run.returncode == 2 and "not a JSON object" in run.stderr
    assert [c[0] for c in fake.calls] == ["GetStatus", "GetStatus"]   # no SubmitJob went out
