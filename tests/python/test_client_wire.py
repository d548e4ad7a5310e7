"""The Python client against a fake broker: a ZeroMQ ROUTER in the test,
plaintext, answering each request as the test says. For what a real broker
cannot be made to do on cue: refuse a SUBMIT it could not read, answer
UNAVAILABLE, send a result that is not a proof, restart at a chosen moment.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import List, Optional, Tuple

import pytest
import zmq
import zmq.asyncio

import zkfleet
from conftest import FIXTURE, free_port, scaled
from zkfleet._wire import PROTOCOL_VERSION, pb


class FakeBroker:
    """A ROUTER bound at a fixed endpoint; ``restart()`` closes it and binds a
    new one there (the clients' DEALERs reconnect, as to a restarted broker)."""

    def __init__(self, endpoint: Optional[str] = None) -> None:
        self.endpoint = endpoint or f"tcp://127.0.0.1:{free_port()}"
        self._context = zmq.asyncio.Context()
        self._socket: Optional[zmq.asyncio.Socket] = None
        self._bind()

    def _bind(self) -> None:
        deadline = time.monotonic() + scaled(5)
        while True:
            socket = self._context.socket(zmq.ROUTER)
            socket.setsockopt(zmq.LINGER, 0)
            try:
                socket.bind(self.endpoint)
            except zmq.ZMQError:  # the old socket's port is released asynchronously
                socket.close(linger=0)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
                continue
            self._socket = socket
            return

    async def restart(self) -> None:
        self._socket.close(linger=0)
        await asyncio.sleep(0.05)
        self._bind()

    def close(self) -> None:
        if self._context.closed:
            return
        self._socket.close(linger=0)
        self._context.term()

    async def receive(self, timeout: float) -> Optional[Tuple[bytes, "pb.Envelope", List[bytes]]]:
        """The next request: (peer identity, envelope, frames after it); None on timeout."""
        if not await self._socket.poll(timeout * 1000):
            return None
        parts = await self._socket.recv_multipart()
        envelope = pb.Envelope()
        envelope.ParseFromString(parts[1])
        return parts[0], envelope, parts[2:]

    async def expect(self, body: str, timeout: float = 10) -> Tuple[bytes, "pb.Envelope", List[bytes]]:
        got = await self.receive(scaled(timeout))
        assert got is not None, f"the client sent no {body}"
        assert got[1].WhichOneof("body") == body, f"expected {body}, got {got[1]}"
        return got

    async def expect_any(self, timeout: float = 10) -> Tuple[bytes, "pb.Envelope", List[bytes]]:
        got = await self.receive(scaled(timeout))
        assert got is not None, "the client sent nothing"
        return got

    async def bodies_within(self, seconds: float) -> List[str]:
        """Every request that arrives within ``seconds``, by kind."""
        bodies = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            got = await self.receive(left)
            if got is not None:
                bodies.append(got[1].WhichOneof("body"))
        return bodies

    async def send(self, identity: bytes, envelope: "pb.Envelope") -> None:
        envelope.version = PROTOCOL_VERSION
        await self._socket.send_multipart([identity, envelope.SerializeToString()])

    async def error(self, identity: bytes, correlation_id: int, kind: int, message: str,
                    retry_after_ms: int = 0, leader: str = "") -> None:
        envelope = pb.Envelope(correlation_id=correlation_id)
        envelope.error.kind = kind
        envelope.error.message = message
        envelope.error.retry_after_ms = retry_after_ms
        envelope.error.leader = leader
        await self.send(identity, envelope)

    async def submit_reply(self, identity: bytes, correlation_id: int, job_seq: int, state: int = pb.JOB_STATE_QUEUED,
                           duplicate: bool = False, result_expired: bool = False) -> None:
        envelope = pb.Envelope(correlation_id=correlation_id)
        envelope.submit_reply.job_seq = job_seq
        envelope.submit_reply.state = state
        envelope.submit_reply.duplicate = duplicate
        envelope.submit_reply.result_expired = result_expired
        await self.send(identity, envelope)

    async def job_result(self, identity: bytes, correlation_id: int, job_seq: int, proof_json: str,
                         public_json: str) -> None:
        envelope = pb.Envelope(correlation_id=correlation_id)
        result = envelope.job_result
        result.job_seq = job_seq
        result.request_id = f"r{job_seq}"
        result.circuit_id = "c1"
        result.state = pb.JOB_STATE_SUCCEEDED
        partition = result.partitions.add()
        partition.partition = 0
        partition.proof_json = proof_json
        partition.public_json = public_json
        partition.worker_id = "w1"
        await self.send(identity, envelope)


GOOD_PROOF = '{"pi_a": ["1", "2", "1"], "protocol": "groth16"}'


def run(scenario) -> None:
    """Runs ``scenario(broker)`` on a fresh event loop with a fake broker."""
    async def main() -> None:
        broker = FakeBroker()
        try:
            await scenario(broker)
        finally:
            broker.close()
    asyncio.run(main())


def test_a_refused_submit_is_raised_once_and_never_resent_after_a_reconnect():
    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(30)) as client:
            # Refusals answering the SUBMIT's correlation id: each raised once, typed.
            for kind, error in [(pb.ERROR_KIND_BAD_REQUEST, zkfleet.BadRequest),
                                (pb.ERROR_KIND_FORBIDDEN, zkfleet.AuthError),
                                (pb.ERROR_KIND_REQUEST_ID_REUSED, zkfleet.RequestIdReused)]:
                submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id=f"r-{kind}"))
                peer, envelope, _ = await broker.expect("submit")
                await broker.error(peer, envelope.correlation_id, kind, "refused")
                with pytest.raises(error, match="refused"):
                    await asyncio.wait_for(submit, scaled(10))

            # An AWAIT waits (its job runs); then a SUBMIT the broker could not
            # read: its refusal carries correlation id 0. It answers the
            # SUBMIT, not the older AWAIT.
            waiting = asyncio.ensure_future(client.await_job(7, timeout=None))
            await broker.expect("await")
            submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r-unreadable"))
            peer, _, _ = await broker.expect("submit")
            await broker.error(peer, 0, pb.ERROR_KIND_TOO_LARGE, "frame above the limit")
            with pytest.raises(zkfleet.TooLarge, match="frame above the limit"):
                await asyncio.wait_for(submit, scaled(10))
            assert not waiting.done()

            # The broker restarts: the client re-AWAITs job 7 and resends none
            # of the refused SUBMITs.
            await broker.restart()
            peer, envelope, _ = await broker.expect("await")
            assert getattr(envelope, "await").job_seq == 7
            assert await broker.bodies_within(scaled(1.5)) == []
            assert client.reconnections == 1
            await broker.job_result(peer, envelope.correlation_id, 7, GOOD_PROOF, '["5"]')
            result = await asyncio.wait_for(waiting, scaled(10))
            assert result.job_seq == 7 and result.partitions[0].public == ["5"]
    run(scenario)


def test_a_client_given_every_brokers_endpoint_follows_the_one_that_leads():
    """Brokers on etcd at addresses of their own: only the leader binds. When
    it dies, what it left unanswered (a SUBMIT, a wait) and what was asked
    while none led go to the broker that leads next, at the other address."""
    async def scenario(leader: FakeBroker) -> None:
        standby_endpoint = f"tcp://127.0.0.1:{free_port()}"  # binds nothing until it leads
        endpoints = f"{leader.endpoint}, {standby_endpoint}"
        async with zkfleet.AsyncClient(endpoints, insecure_plaintext=True, reply_timeout=scaled(30)) as client:
            first = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r1"))
            peer, envelope, _ = await leader.expect("submit")
            await leader.submit_reply(peer, envelope.correlation_id, 5)
            job = await asyncio.wait_for(first, scaled(10))
            waiting = asyncio.ensure_future(job.result(timeout=None))  # its result is pushed: no AWAIT yet
            unanswered = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r2"))
            await leader.expect("submit")
            leader.close()  # killed: r2 unanswered, job 5 still awaited
            await asyncio.sleep(scaled(0.3))
            meanwhile = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r3"))  # no broker leads
            await asyncio.sleep(scaled(0.3))
            successor = FakeBroker(standby_endpoint)
            try:
                got = {}
                for _ in range(3):
                    peer, envelope, _ = await successor.expect_any()
                    key = envelope.submit.request_id if envelope.WhichOneof("body") == "submit" else "await"
                    got[key] = (peer, envelope)
                assert sorted(got) == ["await", "r2", "r3"], got
                peer, envelope = got["r2"]
                await successor.submit_reply(peer, envelope.correlation_id, 6)
                peer, envelope = got["r3"]
                await successor.submit_reply(peer, envelope.correlation_id, 7)
                peer, envelope = got["await"]
                assert getattr(envelope, "await").job_seq == 5
                await successor.job_result(peer, envelope.correlation_id, 5, GOOD_PROOF, '["5"]')
                assert (await asyncio.wait_for(unanswered, scaled(10))).job_seq == 6
                assert (await asyncio.wait_for(meanwhile, scaled(10))).job_seq == 7
                result = await asyncio.wait_for(waiting, scaled(10))
                assert result.job_seq == 5 and result.partitions[0].public == ["5"]
                assert client.reconnections >= 1
            finally:
                successor.close()
    run(scenario)


def test_a_standbys_not_leader_sends_the_request_on_to_the_leader():
    """Brokers on etcd at addresses of their own: a standby binds its port and
    answers NOT_LEADER, naming the leader. A request that reached it goes on
    to the leader; the next goes to the leader directly. Given only the
    standby, the client raises NotLeader naming the leader, after retrying
    while none led."""
    async def scenario(leader: FakeBroker) -> None:
        standby = FakeBroker()
        try:
            async with zkfleet.AsyncClient(f"{standby.endpoint},{leader.endpoint}", insecure_plaintext=True,
                                           reply_timeout=scaled(30)) as client:
                await asyncio.sleep(scaled(0.3))  # both connections made: the first request goes to the standby
                first = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r1"))
                peer, envelope, _ = await standby.expect("submit")
                await standby.error(peer, envelope.correlation_id, pb.ERROR_KIND_NOT_LEADER,
                                    f"the broker at {standby.endpoint} stands by", leader=leader.endpoint)
                peer, envelope, _ = await leader.expect("submit")
                assert envelope.submit.request_id == "r1"
                await leader.submit_reply(peer, envelope.correlation_id, 5)
                assert (await asyncio.wait_for(first, scaled(10))).job_seq == 5
                status = asyncio.ensure_future(client.status())
                peer, envelope, _ = await leader.expect("status")
                await leader.send(peer, pb.Envelope(correlation_id=envelope.correlation_id,
                                                    status_reply=pb.StatusReply()))
                await asyncio.wait_for(status, scaled(10))
                assert await standby.bodies_within(scaled(0.5)) == []

            async with zkfleet.AsyncClient(standby.endpoint, insecure_plaintext=True, reply_timeout=scaled(30),
                                           busy_timeout=scaled(30)) as client:
                submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r2"))
                peer, envelope, _ = await standby.expect("submit")
                await standby.error(peer, envelope.correlation_id, pb.ERROR_KIND_NOT_LEADER,
                                    "no broker leads now", retry_after_ms=50)
                peer, envelope, _ = await standby.expect("submit")  # tried again: none led
                await standby.error(peer, envelope.correlation_id, pb.ERROR_KIND_NOT_LEADER,
                                    f"{leader.endpoint} leads", leader=leader.endpoint)
                with pytest.raises(zkfleet.NotLeader, match="leads") as refused:
                    await asyncio.wait_for(submit, scaled(10))
                assert refused.value.leader == leader.endpoint
        finally:
            standby.close()
    run(scenario)


def test_bad_endpoint_lists_and_key_counts_are_refused_in_words(tmp_path):
    from zkfleet.aio import Security, parse_endpoints
    assert parse_endpoints("tcp://a:1, tcp://b:2") == ["tcp://a:1", "tcp://b:2"]
    assert parse_endpoints(["tcp://a:1"]) == ["tcp://a:1"]
    for bad, says in [("tcp://a:1,,tcp://b:2", "entry 2 is empty"), ("tcp://a:1,", "entry 2 is empty"),
                      ("a:1", "expected TRANSPORT://ADDRESS"), ("tcp://a:1,tcp://a:1", "given twice"),
                      (",".join(f"tcp://h:{i}" for i in range(17)), "more than 16")]:
        with pytest.raises(ValueError, match=says):
            parse_endpoints(bad)
    with pytest.raises(ValueError, match="2 broker public keys for 3 broker endpoints"):
        Security(public_key=b"x", secret_key=b"y", broker_public_key=b"k1",
                 broker_public_keys=[b"k1", b"k2"]).key_for(0, 3)
    assert Security(broker_public_key=b"k1", broker_public_keys=[b"k1", b"k2"]).key_for(1, 2) == b"k2"
    assert Security(broker_public_key=b"k1", broker_public_keys=[b"k1"]).key_for(1, 2) == b"k1"


def test_unavailable_is_retried_with_the_same_request_id_then_succeeds():
    async def scenario(broker: FakeBroker) -> None:
        loop = asyncio.get_running_loop()
        client = zkfleet.Client(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10),
                                busy_timeout=scaled(30))
        try:
            submit = loop.run_in_executor(None, lambda: client.submit("c1", [b"witness"], request_id="r-u"))
            seen = []
            for _ in range(2):
                peer, envelope, frames = await broker.expect("submit")
                seen.append((envelope.submit.request_id, b"".join(frames)))
                await broker.error(peer, envelope.correlation_id, pb.ERROR_KIND_UNAVAILABLE,
                                   "the journal cannot be written", retry_after_ms=50)
            peer, envelope, frames = await broker.expect("submit")
            seen.append((envelope.submit.request_id, b"".join(frames)))
            await broker.submit_reply(peer, envelope.correlation_id, 11)
            job = await asyncio.wait_for(submit, scaled(10))
            assert job.job_seq == 11 and job.request_id == "r-u"
            assert seen == [("r-u", b"witness")] * 3
        finally:
            await loop.run_in_executor(None, client.close)
    run(scenario)


def test_unavailable_gives_up_after_the_busy_timeout():
    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10),
                                       busy_timeout=0.6) as client:
            submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r-down"))
            refusals = 0
            while not submit.done():
                got = await broker.receive(0.1)
                if got is not None:
                    refusals += 1
                    await broker.error(got[0], got[1].correlation_id, pb.ERROR_KIND_UNAVAILABLE,
                                       "the journal cannot be written", retry_after_ms=100)
            with pytest.raises(zkfleet.Unavailable, match="UNAVAILABLE: the journal cannot be written") as raised:
                await submit
            assert raised.value.retry_after_ms == 100
            assert refusals >= 2  # retried before giving up
    run(scenario)


def test_a_wait_answered_unavailable_goes_on():
    """The broker could not write its journal in the turn that held a job's
    pushed result (or an AWAIT's answer): it sends UNAVAILABLE under that
    correlation id instead. The client awaits the job again, same id."""
    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r-wait"))
            peer, envelope, _ = await broker.expect("submit")
            submit_cid = envelope.correlation_id
            await broker.submit_reply(peer, submit_cid, 5)
            job = await asyncio.wait_for(submit, scaled(10))
            waiting = asyncio.ensure_future(job.result(timeout=scaled(20)))
            await broker.error(peer, submit_cid, pb.ERROR_KIND_UNAVAILABLE, "the journal cannot be written",
                               retry_after_ms=50)
            peer, envelope, _ = await broker.expect("await")
            assert getattr(envelope, "await").job_seq == 5 and envelope.correlation_id == submit_cid
            assert not waiting.done()
            await broker.job_result(peer, submit_cid, 5, GOOD_PROOF, '["5"]')
            assert (await asyncio.wait_for(waiting, scaled(10))).partitions[0].public == ["5"]

            # An AWAIT answered UNAVAILABLE (twice) is sent again until answered.
            waiting = asyncio.ensure_future(client.await_job(6, timeout=scaled(20)))
            for _ in range(2):
                peer, envelope, _ = await broker.expect("await")
                await broker.error(peer, envelope.correlation_id, pb.ERROR_KIND_UNAVAILABLE, "still", retry_after_ms=50)
            peer, envelope, _ = await broker.expect("await")
            await broker.job_result(peer, envelope.correlation_id, 6, GOOD_PROOF, '["6"]')
            assert (await asyncio.wait_for(waiting, scaled(10))).partitions[0].public == ["6"]
    run(scenario)


def test_a_result_whose_proof_is_not_json_raises_invalid_result():
    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            # Pushed to the submitter: proof_json is not JSON.
            submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r-bad-proof"))
            peer, envelope, _ = await broker.expect("submit")
            await broker.submit_reply(peer, envelope.correlation_id, 5)
            job = await asyncio.wait_for(submit, scaled(10))
            await broker.job_result(peer, envelope.correlation_id, 5, "proof: not json {", '["1"]')
            with pytest.raises(zkfleet.InvalidResult, match="job 5.*partition 0's proof_json is not JSON") as raised:
                await job.result(timeout=scaled(10))
            assert raised.value.job_seq == 5 and raised.value.partition == 0 and raised.value.field == "proof_json"
            assert raised.value.text == "proof: not json {"

            # The answer to an AWAIT: public_json is not JSON; then one nested
            # deeper than any proof (valid JSON, but Python's parser gives up).
            for job_seq, proof, public, field in [(6, GOOD_PROOF, "1, 2", "public_json"),
                                                  (8, "[" * 5000 + "]" * 5000, "[]", "proof_json")]:
                waiting = asyncio.ensure_future(client.await_job(job_seq, timeout=scaled(10)))
                peer, envelope, _ = await broker.expect("await")
                await broker.job_result(peer, envelope.correlation_id, job_seq, proof, public)
                with pytest.raises(zkfleet.InvalidResult, match=f"job {job_seq}.*{field}") as raised:
                    await waiting
                assert raised.value.field == field

            # A well-formed one still comes through, parsed.
            waiting = asyncio.ensure_future(client.await_job(9, timeout=scaled(10)))
            peer, envelope, _ = await broker.expect("await")
            await broker.job_result(peer, envelope.correlation_id, 9, GOOD_PROOF, '["3"]')
            result = await waiting
            assert result.partitions[0].proof["protocol"] == "groth16" and result.partitions[0].public == ["3"]
    run(scenario)


def test_fields_above_the_brokers_bounds_are_refused_before_sending():
    assert zkfleet.MAX_REQUEST_ID_BYTES == 128 and zkfleet.MAX_CIRCUIT_ID_BYTES == 128

    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            with pytest.raises(zkfleet.InvalidRequest, match="request id of 129 bytes .* limit of 128 bytes"):
                await client.submit("c1", [b"w"], request_id="r" * 129)
            # Bytes, not characters: 65 two-byte characters are 130 bytes.
            with pytest.raises(zkfleet.InvalidRequest, match=r"circuit id of 130 bytes .*\.MAX_CIRCUIT_ID_BYTES"):
                await client.submit("\u00e9" * 65, [b"w"])
            with pytest.raises(ValueError):  # InvalidRequest is a ValueError too
                await client.submit("c1", [b"w"], request_id="\u00e9" * 65)
            with pytest.raises(zkfleet.InvalidRequest, match="control character \\(0x0a\\) at offset 4"):
                await client.submit("c1", [b"w"], request_id="line\nbreak")
            assert await broker.bodies_within(scaled(0.5)) == []  # nothing was sent
            # At the bound exactly, it goes.
            submit = asyncio.ensure_future(client.submit("c" * 128, [b"w"], request_id="r" * 128))
            peer, envelope, _ = await broker.expect("submit")
            assert envelope.submit.request_id == "r" * 128 and envelope.submit.circuit_id == "c" * 128
            await broker.submit_reply(peer, envelope.correlation_id, 3)
            assert (await asyncio.wait_for(submit, scaled(10))).job_seq == 3
        with pytest.raises(zkfleet.InvalidRequest, match="client id of 129 bytes .*MAX_CLIENT_ID_BYTES"):
            zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, client_id="i" * 129)
    run(scenario)


def test_foreign_job_from_an_older_broker_is_an_unknown_job():
    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            waiting = asyncio.ensure_future(client.await_job(4, timeout=scaled(10)))
            peer, envelope, _ = await broker.expect("await")
            await broker.error(peer, envelope.correlation_id, pb.ERROR_KIND_FOREIGN_JOB, "another client's job")
            with pytest.raises(zkfleet.UnknownJob, match="FOREIGN_JOB") as raised:
                await waiting
            assert isinstance(raised.value, zkfleet.ForeignJob) and raised.value.kind == "FOREIGN_JOB"
    run(scenario)


def test_a_job_acknowledged_with_result_expired_raises_result_expired_at_once():
    """A lookup (a SUBMIT without witnesses) of a request whose result passed
    the broker's retention: the SubmitReply says result_expired and no result
    will ever come. job.result() says so at once, typed, with what to do,
    instead of waiting out its timeout and raising Timeout."""
    what_to_do = r"its result passed the broker's retention \(--result-ttl\); submit it again with its witnesses"

    async def scenario(broker: FakeBroker) -> None:
        loop = asyncio.get_running_loop()
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            submit = asyncio.ensure_future(client.submit("c1", [], request_id="r-old"))
            peer, envelope, frames = await broker.expect("submit")
            assert frames == [] and list(envelope.submit.witness_bytes) == []
            await broker.submit_reply(peer, envelope.correlation_id, 12, state=pb.JOB_STATE_SUCCEEDED,
                                      duplicate=True, result_expired=True)
            job = await asyncio.wait_for(submit, scaled(10))
            assert job.result_expired and job.duplicate and job.state == "SUCCEEDED"
            started = time.monotonic()
            with pytest.raises(zkfleet.ResultExpired, match=f"request r-old was job 12 \\(SUCCEEDED\\); {what_to_do}") \
                    as raised:
                await asyncio.wait_for(job.result(timeout=scaled(60)), scaled(5))
            assert time.monotonic() - started < scaled(2)
            assert isinstance(raised.value, zkfleet.BrokerError) and raised.value.kind == "RESULT_EXPIRED"
            assert raised.value.job_seq == 12 and raised.value.request_id == "r-old"
            with pytest.raises(zkfleet.ResultExpired):  # and again, the same
                await asyncio.wait_for(client.wait_result(12, timeout=None), scaled(5))
            assert await broker.bodies_within(scaled(0.3)) == []  # nothing awaited

        # The blocking client's job: the same.
        client = zkfleet.Client(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10))
        try:
            submit = loop.run_in_executor(None, lambda: client.submit("c1", [], request_id="r-old"))
            peer, envelope, _ = await broker.expect("submit")
            await broker.submit_reply(peer, envelope.correlation_id, 12, state=pb.JOB_STATE_SUCCEEDED,
                                      duplicate=True, result_expired=True)
            job = await asyncio.wait_for(submit, scaled(10))
            assert job.result_expired
            waiting = loop.run_in_executor(None, lambda: job.result(timeout=scaled(60)))
            with pytest.raises(zkfleet.ResultExpired, match=what_to_do):
                await asyncio.wait_for(waiting, scaled(5))
        finally:
            await loop.run_in_executor(None, client.close)
    run(scenario)


def test_result_expired_answering_an_await_is_result_expired():
    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            # The answer to an AWAIT.
            waiting = asyncio.ensure_future(client.await_job(4, timeout=scaled(30)))
            peer, envelope, _ = await broker.expect("await")
            await broker.error(peer, envelope.correlation_id, pb.ERROR_KIND_RESULT_EXPIRED,
                               "job 4's result passed the retention")
            with pytest.raises(zkfleet.ResultExpired, match="broker: RESULT_EXPIRED: job 4's result passed") as raised:
                await asyncio.wait_for(waiting, scaled(10))
            assert raised.value.kind == "RESULT_EXPIRED" and not isinstance(raised.value, zkfleet.UnknownJob)

            # The answer to the re-AWAIT of a job being waited for, after a
            # reconnect (the broker was down past the retention).
            submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r-long-ago"))
            peer, envelope, _ = await broker.expect("submit")
            await broker.submit_reply(peer, envelope.correlation_id, 5)
            job = await asyncio.wait_for(submit, scaled(10))
            waiting = asyncio.ensure_future(job.result(timeout=scaled(30)))
            await broker.restart()
            peer, envelope, _ = await broker.expect("await")
            assert getattr(envelope, "await").job_seq == 5
            await broker.error(peer, envelope.correlation_id, pb.ERROR_KIND_RESULT_EXPIRED, "passed the retention")
            with pytest.raises(zkfleet.ResultExpired, match="RESULT_EXPIRED: passed the retention"):
                await asyncio.wait_for(waiting, scaled(10))
    run(scenario)


def test_the_endpoint_defaults_to_zkfleet_broker(monkeypatch):
    monkeypatch.delenv("ZKFLEET_BROKER", raising=False)

    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(insecure_plaintext=True) as client:
            assert client.endpoint == "tcp://127.0.0.1:5555"  # neither given nor set
        monkeypatch.setenv("ZKFLEET_BROKER", broker.endpoint)
        async with zkfleet.AsyncClient(insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            assert client.endpoint == broker.endpoint
            submit = asyncio.ensure_future(client.submit("c1", [b"w"], request_id="r-env"))
            peer, envelope, _ = await broker.expect("submit")  # it went to $ZKFLEET_BROKER
            await broker.submit_reply(peer, envelope.correlation_id, 21)
            assert (await asyncio.wait_for(submit, scaled(10))).job_seq == 21
        # An endpoint passed wins over the variable.
        async with zkfleet.AsyncClient("tcp://127.0.0.1:1", insecure_plaintext=True) as client:
            assert client.endpoint == "tcp://127.0.0.1:1"
        client = zkfleet.Client(insecure_plaintext=True)
        try:
            assert client.endpoint == broker.endpoint
        finally:
            client.close()
        client = zkfleet.Client("tcp://127.0.0.1:1", insecure_plaintext=True)
        try:
            assert client.endpoint == "tcp://127.0.0.1:1"
        finally:
            client.close()
    run(scenario)


# --------------------------------------------------------------------------- witnesses by reference

def test_a_submit_by_reference_sends_the_references_and_digests_and_no_frame():
    witness = FIXTURE / "witness.wtns"
    data = witness.read_bytes()
    ref = zkfleet.witness_ref_of_file(witness)
    assert ref.url == witness.resolve().as_uri() and ref.url.startswith("file:///")
    assert ref.size == len(data) and ref.sha256 == hashlib.sha256(data).digest()
    # Another URL for the same bytes (served over HTTPS, presigned): the query is a credential.
    secret_url = "https://key:pw@s3.example/bucket/w.wtns?X-Amz-Signature=SIGNATURE&X-Amz-Expires=600"
    served = zkfleet.witness_ref_of_file(str(witness), url=secret_url)
    assert served.size == ref.size and served.sha256 == ref.sha256
    assert "SIGNATURE" not in repr(served) and "pw" not in repr(served)
    assert "https://s3.example/bucket/w.wtns" in repr(served)
    public = (FIXTURE / "public.json").read_text()

    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            submit = asyncio.ensure_future(client.submit("bn128", witness_refs=[ref, served], request_id="r-ref",
                                                         expected_public=[public, json.loads(public)]))
            peer, envelope, frames = await broker.expect("submit")
            assert frames == []  # no witness frame follows a reference SUBMIT
            request = envelope.submit
            assert request.request_id == "r-ref" and list(request.witness_bytes) == []
            assert [(r.url, r.size, r.sha256) for r in request.witness_refs] == [
                (ref.url, len(data), hashlib.sha256(data).digest()),
                (secret_url, len(data), hashlib.sha256(data).digest())]  # the URL goes whole: the worker needs it
            digest = hashlib.sha256(",".join(json.loads(public)).encode()).digest()
            assert list(request.public_signals_sha256) == [digest, digest]
            await broker.submit_reply(peer, envelope.correlation_id, 12)
            assert (await asyncio.wait_for(submit, scaled(10))).job_seq == 12
    run(scenario)


def test_the_blocking_client_submits_by_reference_too():
    ref = zkfleet.WitnessRef("file:///shared/w.wtns", 10, b"\x01" * 32)

    async def scenario(broker: FakeBroker) -> None:
        loop = asyncio.get_running_loop()
        client = zkfleet.Client(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10))
        try:
            submit = loop.run_in_executor(None, lambda: client.submit("c1", witness_refs=[ref], request_id="r-sync",
                                                                      expected_public=[["7"]]))
            peer, envelope, frames = await broker.expect("submit")
            assert frames == [] and len(envelope.submit.witness_refs) == 1
            assert envelope.submit.witness_refs[0].url == "file:///shared/w.wtns"
            assert envelope.submit.public_signals_sha256[0] == hashlib.sha256(b"7").digest()
            await broker.submit_reply(peer, envelope.correlation_id, 5)
            assert (await asyncio.wait_for(submit, scaled(10))).job_seq == 5
            # Bad input raises in the caller's thread, unsent.
            with pytest.raises(zkfleet.InvalidRequest, match="not both"):
                await loop.run_in_executor(None, lambda: client.submit("c1", [b"w"], witness_refs=[ref]))
            assert await broker.bodies_within(scaled(0.3)) == []
        finally:
            await loop.run_in_executor(None, client.close)
    run(scenario)


def test_bad_references_raise_before_sending(tmp_path):
    good = b"\x00" * 32
    secret = "https://s3.example/w.wtns?X-Amz-Signature=SECRET"
    for args, message in [
        ((secret, 10, b"\x00" * 31), "sha256 of 31 bytes; a SHA-256 digest is 32"),
        ((secret, 10, "ab" * 32), "raw bytes of the digest, not a str"),
        ((secret, 0, good), "size 0"),
        ((secret, -1, good), "size -1"),
        ((secret, True, good), "size True"),
        (("", 10, good), "without a URL"),
        (("ftp://s.example/w", 10, good), r"not file://, http:// or https://"),
        (("https://s.example/a b", 10, good), "space or a control character"),
        (("https://s.example/" + "a" * 4096, 10, good), "at most 4096"),
    ]:
        with pytest.raises(zkfleet.InvalidRequest, match=message) as raised:
            zkfleet.WitnessRef(*args)
        assert "SECRET" not in str(raised.value), str(raised.value)
    assert zkfleet.MAX_WITNESS_URL_BYTES == 4096
    (tmp_path / "empty.wtns").write_bytes(b"")
    with pytest.raises(zkfleet.InvalidRequest, match="empty"):
        zkfleet.witness_ref_of_file(tmp_path / "empty.wtns")
    assert zkfleet.redact_url("https://u:p@h.example:8443/a/b.wtns?sig=1#f") == "https://h.example:8443/a/b.wtns"
    assert zkfleet.redact_url("HTTPS://h/x?q@evil") == "https://h/x"
    assert zkfleet.redact_url("no scheme at all?secret") == "<url>"

    ref = zkfleet.WitnessRef("https://s.example/w.wtns", 10, good)

    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            with pytest.raises(zkfleet.InvalidRequest, match="1 witnesses and 1 witness_refs: .* not both"):
                await client.submit("c1", [b"w"], witness_refs=[ref])
            with pytest.raises(zkfleet.InvalidRequest, match="pass references as witness_refs"):
                await client.submit("c1", [ref])
            with pytest.raises(zkfleet.InvalidRequest, match="not a zkfleet.WitnessRef"):
                await client.submit("c1", witness_refs=[("https://s.example/w", 10, good)])
            with pytest.raises(zkfleet.InvalidRequest, match="1 expected public signal sets for 2 witness references"):
                await client.submit("c1", witness_refs=[ref, ref], expected_public=['["1"]'])
            with pytest.raises(zkfleet.InvalidRequest, match="not a decimal string"):
                await client.submit("c1", witness_refs=[ref], expected_public=[["0x1"]])
            assert await broker.bodies_within(scaled(0.5)) == []  # nothing was sent
    run(scenario)


# --------------------------------------------------------------------------- jobs from inputs (issue 31)

INPUT_TEXT = b'{\n  "a": "3",\n  "b": ["1", "2"],\n  "name": "caf\xc3\xa9"\n}\n'


def test_a_submit_of_inputs_sends_each_input_json_unchanged_and_no_frame(tmp_path):
    path = tmp_path / "input.json"
    path.write_bytes(INPUT_TEXT)
    as_dict = {"b": ["21888242871839275222246405745257275088548364400416034343698204186575808495616", 0],
               "a": 5, "name": "café"}
    public = (FIXTURE / "public.json").read_text()
    assert json.loads(zkfleet.inputs.input_json_bytes({"a": 2**53 + 1, "b": [-(2**60), 2**53, True]}, 0)) == {
        "a": str(2**53 + 1), "b": [str(-(2**60)), 2**53, True]}

    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            # A path (str and PathLike), the text as bytes, a dict: one partition each.
            submit = asyncio.ensure_future(client.submit(
                "mult", inputs=[str(path), path, bytearray(INPUT_TEXT), as_dict], request_id="r-in"))
            peer, envelope, frames = await broker.expect("submit")
            assert frames == []  # no frame follows a SUBMIT of inputs
            request = envelope.submit
            assert request.request_id == "r-in" and request.circuit_id == "mult"
            assert list(request.witness_bytes) == [] and list(request.witness_refs) == []
            assert list(request.inputs)[:3] == [INPUT_TEXT, INPUT_TEXT, INPUT_TEXT]  # byte for byte
            assert json.loads(request.inputs[3]) == as_dict
            # A Python int too large for a JavaScript double goes as a string
            # (snarkjs would round a JSON number that large).
            assert list(request.inputs[3][:5]) == list(b'{"b":')  # compact, keys in the dict's order
            assert list(request.public_signals_sha256) == []  # optional for inputs
            await broker.submit_reply(peer, envelope.correlation_id, 3)
            assert (await asyncio.wait_for(submit, scaled(10))).job_seq == 3

            # With the expected public signals: their digests go along.
            submit = asyncio.ensure_future(client.submit("mult", inputs=[as_dict], expected_public=[public],
                                                         request_id="r-in-2"))
            peer, envelope, frames = await broker.expect("submit")
            assert json.loads(envelope.submit.inputs[0]) == as_dict
            digest = hashlib.sha256(",".join(json.loads(public)).encode()).digest()
            assert list(envelope.submit.public_signals_sha256) == [digest]
            await broker.submit_reply(peer, envelope.correlation_id, 4)
            assert (await asyncio.wait_for(submit, scaled(10))).job_seq == 4
    run(scenario)


def test_the_blocking_client_submits_inputs_too():
    async def scenario(broker: FakeBroker) -> None:
        loop = asyncio.get_running_loop()
        client = zkfleet.Client(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10))
        try:
            submit = loop.run_in_executor(None, lambda: client.submit("c1", inputs=[{"x": "7"}], request_id="r-s"))
            peer, envelope, frames = await broker.expect("submit")
            assert frames == [] and list(envelope.submit.inputs) == [b'{"x":"7"}']
            await broker.submit_reply(peer, envelope.correlation_id, 5)
            assert (await asyncio.wait_for(submit, scaled(10))).job_seq == 5
            with pytest.raises(zkfleet.InvalidRequest, match="one of them"):
                await loop.run_in_executor(None, lambda: client.submit("c1", [b"w"], inputs=[{"x": "7"}]))
            assert await broker.bodies_within(scaled(0.3)) == []
        finally:
            await loop.run_in_executor(None, client.close)
    run(scenario)


def test_bad_inputs_raise_before_sending(tmp_path):
    (tmp_path / "array.json").write_text("[1, 2]")
    ref = zkfleet.WitnessRef("https://s.example/w.wtns", 10, b"\x00" * 32)
    deep = {"a": "1"}
    for _ in range(40):
        deep = {"a": deep}
    assert zkfleet.MAX_INPUT_JSON_DEPTH == 32

    async def scenario(broker: FakeBroker) -> None:
        async with zkfleet.AsyncClient(broker.endpoint, insecure_plaintext=True, reply_timeout=scaled(10)) as client:
            for kwargs, message in [
                (dict(inputs=[{"a": "1"}, b"[1, 2]"]), r"inputs\[1\] is not an input.json: its top-level value"),
                (dict(inputs=[tmp_path / "array.json"]), r"inputs\[0\] is not an input.json"),
                (dict(inputs=[b'{"a": '] ), "not valid JSON"),
                (dict(inputs=[b'{"a": NaN}']), "not valid JSON"),
                (dict(inputs=[b'{"a": "\xff"}']), "not UTF-8"),
                (dict(inputs=[b""]), "empty"),
                (dict(inputs=[deep]), "deeper than 32"),
                (dict(inputs=[b'{"a": ' + b"[" * 100000 + b"]" * 100000 + b"}"]), "deeper than 32"),
                (dict(inputs=[{"a": float("nan")}]), "cannot be written as JSON"),
                (dict(inputs=[{"a": object()}]), "cannot be written as JSON"),
                (dict(inputs=['{"a": "1"}']), "a str is a path"),
                (dict(inputs=[str(tmp_path / "missing.json")]), "cannot read input file"),
                (dict(inputs=[42]), r"inputs\[0\] is a int"),
                (dict(inputs={"a": "1"}), "one input, not a list"),
                (dict(inputs=[{"a": "1"}], witnesses=[b"w"]), "1 inputs with 1 witnesses"),
                (dict(inputs=[{"a": "1"}], witness_refs=[ref]), "1 inputs with 1 witness_refs"),
                (dict(inputs=[{"a": "1"}, {"a": "2"}], expected_public=['["1"]']),
                 "1 expected public signal sets for 2 inputs"),
            ]:
                with pytest.raises(zkfleet.InvalidRequest, match=message):
                    await client.submit("c1", **kwargs)
            assert await broker.bodies_within(scaled(0.5)) == []  # nothing was sent
    run(scenario)
