"""The Python client against a real broker and workers (CPU backend)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest

import zkfleet
from conftest import FIXTURE, scaled, snarkjs_verifies


def test_submit_result_status_workers(fleet, witness, tmp_path):
    with fleet.client() as client:
        before = client.status().jobs_completed
        job = client.submit("bn128", [str(FIXTURE / "witness.wtns")], priority="high")
        assert job.job_seq > 0 and not job.duplicate and job.request_id
        result = job.result(timeout=scaled(120))
        assert result.state == "SUCCEEDED" and result.job_seq == job.job_seq and result.circuit == "bn128"
        [proof] = result.partitions
        assert proof.worker_id == "prover"
        assert proof.proof["protocol"] == "groth16" and len(proof.proof["pi_a"]) == 3
        assert isinstance(proof.public, list) and all(isinstance(s, str) for s in proof.public)
        assert "OK" in snarkjs_verifies(proof.proof, proof.public, tmp_path)
        assert client.status().jobs_completed == before + 1
        assert {"prover", "sleeper"} <= {w.worker_id for w in client.workers()}


def test_await_job_from_another_connection(fleet, witness):
    with fleet.client() as submitter, fleet.client() as other:
        job = submitter.submit("bn128", [witness])
        first = job.result(timeout=scaled(120))
        again = other.await_job(job.job_seq, timeout=scaled(30))
        assert again.job_seq == job.job_seq and again.state == "SUCCEEDED"
        assert again.partitions[0].proof == first.partitions[0].proof
        with pytest.raises(zkfleet.UnknownJob, match="UNKNOWN_JOB"):
            other.await_job(10**12, timeout=scaled(10))


def test_cancel_a_running_job(fleet, witness):
    with fleet.client() as client:
        job = client.submit("slow", [witness])
        # Running, not merely queued: the sleeper has started it (its proof
        # takes 3 s), so the cancel is of a job a worker holds.
        fleet.wait_started(job.job_seq)
        cancelled = client.cancel(job.job_seq)
        assert cancelled.cancelled and cancelled.state == "CANCELLED"
        with pytest.raises(zkfleet.JobFailed) as failed:
            job.result(timeout=scaled(30))
        assert failed.value.state == "CANCELLED" and failed.value.job_seq == job.job_seq
        again = client.cancel(job.job_seq)  # already ended: nothing to cancel
        assert not again.cancelled and again.state == "CANCELLED"


def test_unknown_circuit(fleet, witness):
    with fleet.client() as client:
        with pytest.raises(zkfleet.UnknownCircuit, match="no-such-circuit"):
            client.submit("no-such-circuit", [witness])


def test_malformed_witness_fails_the_job_with_the_reason(fleet):
    with fleet.client() as client:
        job = client.submit("bn128", [b"this is not a .wtns file"])
        with pytest.raises(zkfleet.JobFailed) as failed:
            job.result(timeout=scaled(60))
        assert failed.value.state == "FAILED"
        # The broker reads the public signals out of each witness before it
        # leases it (it holds bn128's verification key): these bytes fail there,
        # at the magic, and the job ends with that reason. A failure anywhere
        # else (a worker, a timeout, another check) reads otherwise.
        assert failed.value.reason == (
            "the witness of partition 0 does not fit circuit 'bn128' (witness: bad magic: expected \"wtns\")")
        assert failed.value.reason in str(failed.value)


def test_request_ids_make_submits_idempotent(fleet, witness):
    request_id = f"idem-{uuid.uuid4().hex}"
    with fleet.client() as client:
        first = client.submit("fast", [witness], request_id=request_id)
        second = client.submit("fast", [witness], request_id=request_id)
        assert second.job_seq == first.job_seq and second.duplicate and not first.duplicate
        # The broker sends the result to each submit of the request: this
        # connection hands it out once and drops the copy.
        assert first.result(timeout=scaled(30)).succeeded
        deadline = time.monotonic() + scaled(30)
        while client._async.duplicate_results_dropped < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert client._async.duplicate_results_dropped == 1
        with pytest.raises(zkfleet.Timeout):
            second.result(timeout=0.3)  # already handed out
        with pytest.raises(zkfleet.RequestIdReused):
            client.submit("fast", [witness + b"x"], request_id=request_id)


def test_auth_errors(fleet, witness):
    with fleet.client("stranger", reply_timeout=scaled(30)) as stranger:  # in no allow-list
        with pytest.raises(zkfleet.AuthError, match="refused this client's key"):
            stranger.status()
    with fleet.client("watcher") as watcher:  # observe role: may not submit
        assert watcher.workers()
        with pytest.raises(zkfleet.AuthError, match="FORBIDDEN"):
            watcher.submit("fast", [witness])


def test_a_send_that_never_completes_ends_within_the_reply_timeout(fleet):
    """A connection whose CURVE handshake the broker refused leaves the socket
    without a pipe: a send then waits for one for ever. When the request went
    out before the client had seen the refusal, status() hung (CI, once in a
    fresh-clone run: test_auth_errors past ctest's 300 s). The send is under
    the reply timeout now."""
    with fleet.client("stranger", reply_timeout=1.0) as stranger:
        async def never_sent(*args, **kwargs):
            await asyncio.Event().wait()
        stranger._async._send = never_sent
        stranger._async._handshake_problem = lambda: ""  # the refusal not seen yet
        started = time.monotonic()
        with pytest.raises(zkfleet.Timeout):
            stranger.status()
        assert time.monotonic() - started < scaled(10)


def test_a_wrong_broker_public_key_is_reported_at_once_saying_so(fleet):
    """Another key as the broker's: the handshake never completes. Said within
    a few failed handshakes, not after the 60 s reply timeout."""
    secret, _ = fleet.keys("app")
    wrong = str(fleet.dir / "keys" / "app.pub")  # a public key, but not the broker's
    with zkfleet.Client(fleet.endpoint, keys=(secret, wrong), reply_timeout=60) as client:
        started = time.monotonic()
        with pytest.raises(zkfleet.AuthError, match="broker public key") as raised:
            client.status()
        assert time.monotonic() - started < 30, "waited out the reply timeout"
        assert "is zkbroker running there" not in str(raised.value)


def test_bad_key_files_are_refused_before_connecting(fleet, tmp_path):
    loose = tmp_path / "loose.secret"
    loose.write_text((fleet.dir / "keys" / "app.secret").read_text())
    loose.chmod(0o644)
    with pytest.raises(zkfleet.KeyFileError, match="chmod 600"):
        zkfleet.Client(fleet.endpoint, keys=(str(loose), str(fleet.dir / "keys" / "broker.pub")))
    with pytest.raises(zkfleet.KeyFileError, match="cannot read"):
        zkfleet.Client(fleet.endpoint, keys=(str(tmp_path / "missing.secret"), str(fleet.dir / "keys" / "broker.pub")))


def test_many_concurrent_jobs_from_asyncio(fleet, witness):
    async def main():
        async with zkfleet.AsyncClient(fleet.endpoint, keys=fleet.keys(), reply_timeout=scaled(30)) as client:
            async def one(i):
                circuit = "bn128" if i % 25 == 0 else "fast"
                job = await client.submit(circuit, [witness], request_id=f"many-{uuid.uuid4().hex}-{i}")
                return job, await job.result(timeout=scaled(180))
            return await asyncio.gather(*(one(i) for i in range(100)))

    done = asyncio.run(main())
    assert len({job.job_seq for job, _ in done}) == 100
    for job, result in done:
        assert result.job_seq == job.job_seq and result.request_id == job.request_id
        assert result.state == "SUCCEEDED" and len(result.partitions) == 1
    real = [r for _, r in done if r.circuit == "bn128"]
    assert len(real) == 4 and all(r.partitions[0].proof["protocol"] == "groth16" for r in real)


def test_a_result_wait_that_runs_out_on_a_running_broker_says_the_job_may_still_run(own_fleet, witness):
    """Issue 49, item 8: it said "is zkbroker running there?" of a running broker."""
    own_fleet.start_broker("--accept-unrouted")
    with own_fleet.client(reply_timeout=scaled(30)) as client:
        job = client.submit("nobody-holds-it", [witness])
        for wait in (lambda: job.result(timeout=1), lambda: client.await_job(job.job_seq, timeout=1)):
            with pytest.raises(zkfleet.Timeout, match=f"job {job.job_seq} did not end within 1 s") as raised:
                wait()
            assert "may still be queued or running" in str(raised.value)
            assert "is zkbroker running there" not in str(raised.value)


def test_broker_down_at_submit_then_resubmit_makes_one_job(own_fleet, witness):
    request_id = f"down-{uuid.uuid4().hex}"
    with own_fleet.client(reply_timeout=scaled(1.5)) as client:
        with pytest.raises(zkfleet.Timeout, match="is zkbroker running there"):
            client.submit("fast", [witness], request_id=request_id)
        own_fleet.start_broker()
        own_fleet.start_worker("prover", "--instant", "--circuit", "fast")
        own_fleet.wait_ready("prover")
        # The SUBMIT queued while the broker was down may have reached it when
        # it started (refused then: no worker held "fast" yet, or accepted):
        # the same request id never makes a second job.
        job = client.submit("fast", [witness], request_id=request_id)
        assert job.result(timeout=scaled(30)).state == "SUCCEEDED"
        again = client.submit("fast", [witness], request_id=request_id)
        assert again.job_seq == job.job_seq and again.duplicate
        assert client.status().jobs_submitted == 1


def test_broker_restarted_mid_wait(own_fleet, witness):
    own_fleet.start_broker()
    own_fleet.start_worker("sleeper", "--instant", "--circuit", "slow", "--instant-delay-ms", str(int(scaled(3000))))
    own_fleet.wait_ready("sleeper")
    with own_fleet.client() as client:
        job = client.submit("slow", [witness])
        own_fleet.wait_started(job.job_seq)
        own_fleet.kill_broker()  # SIGKILL mid-proof: the job is in its journal, the result not yet
        own_fleet.start_broker()
        result = job.result(timeout=scaled(120))
        assert result.state == "SUCCEEDED" and result.job_seq == job.job_seq
        assert client.reconnections >= 1
        status = client.status()
        assert status.jobs_recovered == 1 and status.jobs_submitted == 0  # nothing new after the restart


def test_busy_is_retried_with_backoff_until_the_busy_timeout(own_fleet, witness):
    own_fleet.start_broker("--max-live-items-per-client", "1", "--busy-retry-after", "0.2")
    own_fleet.start_worker("sleeper", "--instant", "--circuit", "slow", "--instant-delay-ms", str(int(scaled(2000))))
    own_fleet.wait_ready("sleeper")
    with own_fleet.client(busy_timeout=0.5) as impatient, own_fleet.client(busy_timeout=scaled(60)) as patient:
        first = impatient.submit("slow", [witness])
        with pytest.raises(zkfleet.Busy) as busy:
            impatient.submit("slow", [witness])
        assert busy.value.retry_after_ms > 0
        # Retried (same request id) until the first job ended and made room.
        second = patient.submit("slow", [witness])
        assert second.job_seq > first.job_seq
        assert first.result(timeout=scaled(60)).succeeded and second.result(timeout=scaled(60)).succeeded
        assert patient.status().submits_busy >= 2


def test_one_blocking_client_shared_by_threads(fleet, witness):
    from concurrent.futures import ThreadPoolExecutor
    with fleet.client() as client:
        def one(i):
            job = client.submit("fast", [witness], request_id=f"thread-{uuid.uuid4().hex}-{i}")
            return job.job_seq, job.result(timeout=scaled(60)).job_seq
        with ThreadPoolExecutor(max_workers=8) as pool:
            pairs = list(pool.map(one, range(40)))
    assert all(submitted == finished for submitted, finished in pairs)
    assert len({seq for seq, _ in pairs}) == 40


def test_deadline_expires_a_job_not_proved_in_time(fleet, witness):
    with fleet.client() as client:
        job = client.submit("slow", [witness], deadline=0.5)  # each "slow" proof takes 3 s
        with pytest.raises(zkfleet.JobFailed) as failed:
            job.result(timeout=scaled(30))
        assert failed.value.state == "EXPIRED"


def test_expected_public_signals_are_checked_by_the_broker(fleet, witness):
    # The broker holds bn128's verification key (nPublic): a witness whose
    # public signals are not the ones the client expects is refused at once.
    public = (FIXTURE / "public.json").read_text()
    with fleet.client() as client:
        with pytest.raises(zkfleet.BadRequest, match="other public signals"):
            client.submit("bn128", [witness], expected_public=[["1", "2"]])
        with pytest.raises(zkfleet.InvalidRequest, match="one per witness"):
            client.submit("bn128", [witness], expected_public=[public, public])
        with pytest.raises(zkfleet.InvalidRequest, match="decimal"):
            client.submit("bn128", [witness], expected_public=[["0x21"]])
        job = client.submit("bn128", [witness], expected_public=[public])
        result = job.result(timeout=scaled(120))
        assert result.partitions[0].public == json.loads(public)


def test_a_witness_by_reference_is_fetched_by_the_worker_and_proved(own_fleet):
    """Witnesses by reference end to end: the worker fetches the file://
    witness under its --fetch-allow prefix."""
    witness = (FIXTURE / "witness.wtns").resolve()  # the worker checks the real path against its prefix
    public = (FIXTURE / "public.json").read_text()
    own_fleet.start_broker()  # holds bn128's verification key
    own_fleet.start_worker("prover", "--circuit", f"bn128={FIXTURE / 'circuit_final.zkey'}", "--threads", "1",
                           "--fetch-allow", witness.parent.as_uri() + "/")
    own_fleet.wait_ready("prover")
    ref = zkfleet.witness_ref_of_file(witness)
    with own_fleet.client() as client:
        # The broker cannot read the witness: without the expected public signals it refuses.
        with pytest.raises(zkfleet.BadRequest):
            client.submit("bn128", witness_refs=[ref])
        result = client.submit("bn128", witness_refs=[ref], expected_public=[public]).result(timeout=scaled(120))
        assert result.partitions[0].public == json.loads(public)
        # Bytes that are not the ones referenced: the job fails on the digest, as the client's error.
        wrong = zkfleet.WitnessRef(ref.url, ref.size, bytes(32))
        with pytest.raises(zkfleet.JobFailed) as failed:
            client.submit("bn128", witness_refs=[wrong], expected_public=[public]).result(timeout=scaled(120))
        assert failed.value.state == "FAILED", failed.value
        # The worker's refusal, not retried, naming the URL, size and digest the
        # job asked for, and not which check failed: a client cannot probe the
        # store for other objects or their sizes (issue 47, item 10).
        assert failed.value.reason == (
            f"partition 0 failed on worker prover: its witness could not be used: {ref.url}: "
            f"no object of {ref.size} bytes with sha256 {'0' * 64} is there "
            f"(missing, unreadable, another size or other bytes)"), failed.value
        # Another size, and a file that is not there: the same words.
        for probe in (zkfleet.WitnessRef(ref.url, ref.size + 1, ref.sha256),
                      zkfleet.WitnessRef(ref.url + ".absent", ref.size, ref.sha256)):
            with pytest.raises(zkfleet.JobFailed) as probed:
                client.submit("bn128", witness_refs=[probe], expected_public=[public]).result(timeout=scaled(120))
            assert probed.value.reason == (
                f"partition 0 failed on worker prover: its witness could not be used: {probe.url}: "
                f"no object of {probe.size} bytes with sha256 {probe.sha256.hex()} is there "
                f"(missing, unreadable, another size or other bytes)"), probed.value
