"""The asyncio client: many jobs in flight on one connection.

One :class:`AsyncClient` owns one ZeroMQ DEALER socket connected to the
broker's client endpoint, a reader task that routes every reply to the
request waiting for it (by correlation id) and every pushed result to the job
it belongs to, and a task watching the connection. It is the only
implementation: :class:`zkfleet.Client` runs one on a private event loop.

Guarantees (docs/protocol.md, "Guarantees"; docs/clients.md):

* BUSY and UNAVAILABLE refusals of a SUBMIT are retried with the same
  request id after the broker's ``retry_after_ms``, doubling per refusal up
  to 30 s, with +-25 % jitter, until ``busy_timeout``; then
  :class:`~zkfleet.Busy` / :class:`~zkfleet.Unavailable`.
* When the connection is established again (a broker restart, a network
  cut), every SUBMIT still without a reply is resent, unchanged (same request
  id and correlation id: the broker returns the existing job if it had made
  it durable), and every job whose result is still awaited is awaited again.
  A result that arrives twice is handed out once. A wait the broker answers
  UNAVAILABLE (its journal could not be written in the turn that held the
  job's result or the AWAIT's answer) goes on: the job is awaited again after
  the broker's hint. A request the broker answered (accepted or refused:
  BAD_REQUEST, TOO_LARGE, FORBIDDEN, REQUEST_ID_REUSED, ...) is never
  resent: a refusal is raised once, typed.
* A SUCCEEDED result whose proof or public signals are not JSON raises
  :class:`~zkfleet.InvalidResult` instead of being handed out as text.
* Request ids and circuit ids above the broker's bounds
  (:mod:`zkfleet.limits`) raise :class:`~zkfleet.InvalidRequest` unsent.
* A key the broker does not admit fails the waiting requests with
  :class:`~zkfleet.AuthError` as soon as the handshake is refused.

Thread-safety: an AsyncClient belongs to the event loop it was created in;
use it only from coroutines of that loop.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from . import keys as _keys
from ._wire import PROTOCOL_VERSION, error_kind_name, job_state_name, pb, priority_value, witness_frames
from .errors import (AuthError, Busy, InvalidRequest, JobFailed, NotLeader, ResultExpired, Timeout, Unavailable, ZkfleetError,
                     broker_error)
from .limits import MAX_CLIENT_ID_BYTES, check_name, check_submit, public_signals_digest
from .inputs import InputJson, input_json_bytes
from .refs import WitnessRef
from .results import CancelResult, JobResult

WitnessInput = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]"]

DEFAULT_ENDPOINT = "tcp://127.0.0.1:5555"
MAX_BROKER_ENDPOINTS = 16  # as the C++ client (fleet/broker_endpoints.hpp)
_MAX_BACKOFF_S = 30.0
_MAX_MESSAGE_BYTES = 64 << 20


@dataclass
class Security:
    """How the connection is protected: CURVE (the default) or plaintext."""

    public_key: Optional[bytes] = None   # this client's keypair, Z85
    secret_key: Optional[bytes] = None
    broker_public_key: Optional[bytes] = None
    plaintext: bool = False
    # Brokers with key pairs of their own: one key per endpoint, in order
    # (``broker_public_key`` is the first).
    broker_public_keys: List[bytes] = field(default_factory=list)

    def key_for(self, index: int, endpoints: int) -> bytes:
        """The public key of broker endpoint ``index`` of ``endpoints``."""
        keys = self.broker_public_keys or [self.broker_public_key]
        if len(keys) not in (1, endpoints):
            raise ValueError(f"{len(keys)} broker public keys for {endpoints} broker endpoints: give one key "
                             "(brokers sharing a key pair) or one per endpoint, in the endpoints' order")
        return keys[0 if len(keys) == 1 else index]

    @classmethod
    def load(cls, keys: Union[None, str, Tuple[str, str]], insecure_plaintext: bool) -> "Security":
        """From ``keys=(client_secret_file, broker_public_file)``, or ``None``
        for ``$ZKFLEET_CURVE_SECRET_KEY`` / ``$ZKFLEET_BROKER_PUBLIC_KEY``."""
        if insecure_plaintext:
            return cls(plaintext=True)
        if keys is None:
            secret_file = os.environ.get("ZKFLEET_CURVE_SECRET_KEY", "")
            broker_file = os.environ.get("ZKFLEET_BROKER_PUBLIC_KEY", "")
        elif isinstance(keys, (tuple, list)) and len(keys) == 2:
            secret_file, broker_file = keys
        else:
            raise ValueError("keys: expected (client_secret_key_file, broker_public_key_file)")
        if not secret_file or not broker_file:
            raise ValueError("CURVE needs this client's NAME.secret and the broker's NAME.pub: pass "
                             "keys=(secret, broker_pub) or set ZKFLEET_CURVE_SECRET_KEY and "
                             "ZKFLEET_BROKER_PUBLIC_KEY (or insecure_plaintext=True against a plaintext broker)")
        public, secret = _keys.read_secret_key(secret_file)
        # One file, or one per broker endpoint: FILE,FILE,... (or a list).
        files = broker_file.split(",") if isinstance(broker_file, str) else list(broker_file)
        if any(not f for f in files):
            raise ValueError(f"broker public key files {broker_file!r}: an empty entry "
                             "(a list is FILE,FILE,... in the endpoints' order)")
        brokers = [_keys.read_public_key(f) for f in files]
        return cls(public_key=public, secret_key=secret, broker_public_key=brokers[0], broker_public_keys=brokers)


class AsyncJob:
    """A job the broker accepted. ``await job.result()`` for its proofs."""

    def __init__(self, client: "AsyncClient", reply: "pb.SubmitReply", request_id: str) -> None:
        self._client = client
        self.job_seq: int = reply.job_seq
        self.request_id: str = request_id
        self.duplicate: bool = reply.duplicate          # the request id was known: the existing job
        self.state: str = job_state_name(reply.state)   # at acknowledgement
        self.result_expired: bool = reply.result_expired  # it ran; its proofs passed the retention

    async def result(self, timeout: Optional[float] = None) -> JobResult:
        """The job's result once it ends (raises :class:`JobFailed` unless it
        SUCCEEDED, :class:`Timeout` if it has not ended within ``timeout`` s,
        :class:`ResultExpired` at once if the broker acknowledged it with
        ``result_expired``: submit it again with its witnesses)."""
        return await self._client.wait_result(self.job_seq, timeout)

    def __repr__(self) -> str:
        return f"AsyncJob(job_seq={self.job_seq}, request_id={self.request_id!r}, state={self.state})"


class AsyncClient:
    """Client of a zkfleet broker for asyncio code.

    Construct it inside a coroutine (it starts tasks on the running loop).

    Args:
        endpoint: the broker's client endpoint, e.g. ``"tcp://broker:5555"``,
            or every broker's of a fleet whose brokers share an etcd journal
            (comma-separated, or a list): the client follows whichever leads;
            ``None`` reads ``$ZKFLEET_BROKER``, else ``tcp://127.0.0.1:5555``.
        keys: ``(client_secret_key_file, broker_public_key_file)`` as written by
            ``zkctl keygen`` (brokers with keys of their own: one file per
            endpoint, comma-separated); ``None`` reads ``$ZKFLEET_CURVE_SECRET_KEY`` and
            ``$ZKFLEET_BROKER_PUBLIC_KEY``.
        insecure_plaintext: no CURVE (only against a broker run so).
        client_id: plaintext mode only: the declared identity (at most
            ``MAX_CLIENT_ID_BYTES``; with CURVE none is sent: the key is the identity).
        reply_timeout: seconds a request waits for its reply.
        busy_timeout: seconds BUSY and UNAVAILABLE refusals of a submit are retried.
    """

    def __init__(self, endpoint: Optional[str] = None, keys: Union[None, Tuple[str, str]] = None, *,
                 insecure_plaintext: bool = False, client_id: str = "", reply_timeout: float = 10.0,
                 busy_timeout: float = 300.0) -> None:
        endpoints = parse_endpoints(default_endpoint(endpoint))
        self.endpoint = ",".join(endpoints)
        self._endpoints = endpoints
        # Following a list: one DEALER per broker (as the C++ client), each
        # with ZMQ_IMMEDIATE; each request to the broker that answered last
        # (the leader), else to the next connected one not known to stand by;
        # a standby's NOT_LEADER sends it on. What no broker can take waits
        # for the next connection.
        self._following = len(endpoints) > 1
        self.reply_timeout = reply_timeout
        self.busy_timeout = busy_timeout
        security = Security.load(keys, insecure_plaintext)
        if security.plaintext:
            check_name("client id", client_id, MAX_CLIENT_ID_BYTES, "MAX_CLIENT_ID_BYTES")
        self.client_id = client_id if security.plaintext else ""
        self._loop = asyncio.get_running_loop()  # construct it in a coroutine of its loop
        self._context = zmq.asyncio.Context()
        self._sockets: List[zmq.asyncio.Socket] = []   # one DEALER per endpoint
        self._monitors: List[zmq.asyncio.Socket] = []
        for index, address in enumerate(endpoints):
            socket = self._context.socket(zmq.DEALER)
            socket.setsockopt(zmq.LINGER, 0)
            socket.setsockopt(zmq.SNDHWM, 20000)
            socket.setsockopt(zmq.RCVHWM, 20000)
            socket.setsockopt(zmq.MAXMSGSIZE, 2 * _MAX_MESSAGE_BYTES + (1 << 20))
            if self._following:
                socket.setsockopt(zmq.IMMEDIATE, 1)
            if not security.plaintext:  # CURVE takes the server key in force at connect()
                socket.curve_publickey = security.public_key
                socket.curve_secretkey = security.secret_key
                socket.curve_serverkey = security.key_for(index, len(endpoints))
            self._monitors.append(socket.get_monitor_socket(
                zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
                | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL))
            socket.connect(address)
            self._sockets.append(socket)
        self._live: Set[int] = set()        # endpoints (indices) with a completed handshake
        self._unsent = False                # a request waits for a connection (following a list)
        # Following a list: who answered last with anything but NOT_LEADER,
        # where the next request goes, who stood by since the connections
        # changed, requests other than SUBMIT and AWAIT not yet answered, and
        # what a standby said last (for the timeout's message).
        self._leader: Optional[int] = None
        self._cursor = 0
        self._standbys: Set[int] = set()
        self._calls: Dict[int, List[object]] = {}
        self._retry_scheduled = False
        self._last_not_leader = ""

        self._next_id = 1
        self._pending: Dict[int, asyncio.Future] = {}             # correlation id -> reply
        self._pending_bodies: Dict[int, str] = {}                 # correlation id -> request kind
        self._unanswered: Dict[int, List[object]] = {}            # SUBMITs to resend: id -> frames
        self._awaited: Dict[int, int] = {}                        # job_seq -> correlation id
        self._results: Dict[int, asyncio.Future] = {}             # job_seq -> pushed JobResult
        self._delivered: Set[int] = set()                         # results already handed out
        self._expired: Dict[int, ResultExpired] = {}              # job_seq -> acknowledged result_expired
        self._handshakes = 0
        self.reconnections = 0              # times the connection came back and requests were resent
        self.duplicate_results_dropped = 0  # result copies dropped (delivered once)
        self._auth_refused = False
        self._handshakes_failed = 0          # in a row, since the last success
        self._last_handshake_failure = 0     # its zmq event
        self._closed = False
        self._tasks = [self._loop.create_task(self._read(index)) for index in range(len(endpoints))]
        self._tasks += [self._loop.create_task(self._watch(index)) for index in range(len(endpoints))]

    # ------------------------------------------------------------------ API

    async def submit(self, circuit: str, witnesses: Sequence[WitnessInput] = (), priority: str = "normal",
                     request_id: Optional[str] = None, deadline: Optional[float] = None,
                     expected_public: Optional[Sequence[Union[str, bytes, Sequence[str]]]] = None,
                     witness_refs: Optional[Sequence[WitnessRef]] = None,
                     inputs: Optional[Sequence[InputJson]] = None) -> AsyncJob:
        """Submits a job: one witness (a .wtns file's path or bytes) per partition.

        Or, instead of ``witnesses``, ``inputs``: one circom input.json per
        partition (a dict, its JSON text as bytes, or a file's path; see
        :mod:`zkfleet.inputs`), from which the workers compute the witnesses.
        The broker sends the job only to workers that generate the circuit's
        witnesses (:class:`UnknownCircuit` when none does). ``expected_public``
        is optional then (none, or one per input): without it a broker
        holding the circuit's key verifies each proof for the public signals
        it carries, but cannot tell whether they came from these inputs.
        A submit carries witnesses, references or inputs, one of them
        (:class:`InvalidRequest`, nothing sent).

        Or, instead of ``witnesses``, ``witness_refs``: one
        :class:`~zkfleet.WitnessRef` per partition (:func:`~zkfleet.witness_ref_of_file`
        makes one), which the workers fetch themselves; no witness byte is
        sent. A submit carries witnesses or references, never both
        (:class:`InvalidRequest`, nothing sent). A broker holding the
        circuit's verification key cannot read a referenced witness: it then
        requires ``expected_public`` (one per reference) and refuses the
        submit (:class:`BadRequest`) without it.

        Returns when the broker has made the job durable. ``request_id`` makes
        the submit idempotent (default: a random one, in ``job.request_id``);
        ``deadline`` is seconds from now after which the broker expires the
        job instead of proving it. ``expected_public``, none or one per
        witness, is the public signals each proof must carry (public.json
        text, or its list of decimal strings): their digests go with the
        SUBMIT, and a broker holding the circuit's verification key refuses
        (:class:`BadRequest`) a witness committing to others. Raises :class:`UnknownCircuit`,
        :class:`Busy` / :class:`Unavailable` (after ``busy_timeout``),
        :class:`Timeout`, :class:`AuthError`, :class:`RequestIdReused`,
        :class:`BadRequest`, :class:`TooLarge` or :class:`BrokerError`; and
        :class:`InvalidRequest` (nothing sent) for a request id or circuit id
        above the broker's bounds (:mod:`zkfleet.limits`).

        No witnesses: only looks ``request_id`` up (the job it made). If that
        job's result passed the broker's retention the job comes back with
        ``result_expired`` set and its ``result()`` raises
        :class:`ResultExpired`; with the same witnesses the broker proves it
        again instead, as a new job.
        """
        request_id = request_id or f"py-{uuid.uuid4().hex}"
        check_submit(request_id, circuit)
        request = pb.SubmitRequest(request_id=request_id, circuit_id=circuit, priority=priority_value(priority))
        if deadline:
            request.deadline_unix_s = time.time() + deadline
        witnesses = list(witnesses or ())
        refs = list(witness_refs or ())
        if isinstance(inputs, (Mapping, bytes, bytearray, memoryview, str, os.PathLike)):
            raise InvalidRequest("inputs is one input, not a list of them: pass inputs=[...], one per partition; "
                                 "nothing was sent")
        input_list = list(inputs or ())
        if input_list and (witnesses or refs):
            raise InvalidRequest(f"{len(input_list)} inputs with "
                                 + (f"{len(refs)} witness_refs" if refs else f"{len(witnesses)} witnesses")
                                 + ": a submit carries witnesses, references or inputs, one of them; nothing was sent")
        if any(isinstance(w, WitnessRef) for w in witnesses):
            raise InvalidRequest("a WitnessRef among the witnesses: pass references as witness_refs=[...]; "
                                 "nothing was sent")
        if refs and witnesses:
            raise InvalidRequest(f"{len(witnesses)} witnesses and {len(refs)} witness_refs: a submit carries "
                                 "witnesses or references, not both; nothing was sent")
        for p, ref in enumerate(refs):
            if not isinstance(ref, WitnessRef):
                raise InvalidRequest(f"witness_refs[{p}] is a {type(ref).__name__}, not a zkfleet.WitnessRef; "
                                     "nothing was sent")
            WitnessRef(ref.url, ref.size, ref.sha256)  # checked again: raises InvalidRequest
        partitions, units, unit = ((len(refs), "witness references", "reference") if refs
                                   else (len(input_list), "inputs", "input") if input_list
                                   else (len(witnesses), "witnesses", "witness"))
        request.inputs.extend(input_json_bytes(value, p) for p, value in enumerate(input_list))
        if expected_public:
            if len(expected_public) != partitions:
                raise InvalidRequest(f"{len(expected_public)} expected public signal sets for {partitions} "
                                     f"{units}: give one per {unit}, or none; nothing was sent")
            request.public_signals_sha256.extend(public_signals_digest(p) for p in expected_public)
        for ref in refs:
            request.witness_refs.add(url=ref.url, size=ref.size, sha256=ref.sha256)
        blobs = [_witness_bytes(w) for w in witnesses]
        request.witness_bytes.extend(len(b) for b in blobs)
        frames = witness_frames(blobs)  # none for references
        give_up = time.monotonic() + self.busy_timeout
        backoff = 0.0
        while True:
            envelope = pb.Envelope()
            envelope.submit.CopyFrom(request)
            try:
                reply = await self._call(envelope, frames)
            except (Busy, Unavailable, NotLeader) as busy:
                if isinstance(busy, NotLeader) and busy.leader:
                    raise  # another broker leads: the caller goes there
                # Nothing was accepted (over a limit, or the journal cannot be
                # written): the same request again after the broker's hint.
                backoff = min(_MAX_BACKOFF_S, max(busy.retry_after_ms / 1000.0, backoff * 2, 0.1))
                wait = backoff * random.uniform(0.75, 1.25)
                if time.monotonic() + wait >= give_up:
                    raise
                await asyncio.sleep(wait)
                continue
            if reply.WhichOneof("body") != "submit_reply":
                raise ZkfleetError(f"broker answered SUBMIT with {reply.WhichOneof('body')}")
            job = AsyncJob(self, reply.submit_reply, request.request_id)
            if job.result_expired:
                # No result will come: wait_result() says so at once.
                self._expired[job.job_seq] = ResultExpired.of_job(job.job_seq, job.request_id, job.state)
            return job

    async def wait_result(self, job_seq: int, timeout: Optional[float] = None) -> JobResult:
        """The result of a job this client submitted or awaited (see :meth:`AsyncJob.result`)."""
        expired = self._expired.get(job_seq)
        if expired is not None:
            raise ResultExpired(expired.kind, expired.broker_message, expired.job_seq, expired.request_id,
                                expired.state)
        future = self._result_future(job_seq)
        try:
            message = await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            raise self._result_timeout(job_seq, timeout) from None
        self._results.pop(job_seq, None)
        result = JobResult.from_proto(message)
        if not result.succeeded:
            raise JobFailed(result)
        return result

    async def await_job(self, job_seq: int, timeout: Optional[float] = None) -> JobResult:
        """Asks for a job's result (e.g. one submitted by an earlier process
        with the same key) and waits for it until ``timeout`` s (None: no limit).
        :class:`ResultExpired` if its result passed the broker's retention,
        :class:`UnknownJob` if there is no such job of this client's."""
        envelope = pb.Envelope()
        getattr(envelope, "await").job_seq = job_seq  # `await` is a Python keyword
        self._delivered.discard(job_seq)  # asked again: deliver again
        try:
            reply = await self._call(envelope, timeout=timeout, what=f"no result for job {job_seq}")
        except Timeout:
            raise self._result_timeout(job_seq, timeout) from None
        if reply.WhichOneof("body") != "job_result":
            raise ZkfleetError(f"broker answered AWAIT with {reply.WhichOneof('body')}")
        self._results.pop(job_seq, None)
        result = JobResult.from_proto(reply.job_result)
        if not result.succeeded:
            raise JobFailed(result)
        return result

    async def cancel(self, job_seq: int) -> CancelResult:
        """Cancels a job this client submitted (``cancelled`` False: it had already ended)."""
        envelope = pb.Envelope()
        envelope.cancel.job_seq = job_seq
        reply = await self._call(envelope)
        return CancelResult(job_seq=job_seq, cancelled=reply.cancel_reply.cancelled,
                            state=job_state_name(reply.cancel_reply.state))

    async def status(self) -> "pb.StatusReply":
        """Queues, workers and counters: the broker's ``StatusReply`` message
        (observe or admin role)."""
        envelope = pb.Envelope()
        envelope.status.SetInParent()
        return (await self._call(envelope)).status_reply

    async def workers(self) -> List["pb.WorkerInfo"]:
        """The registered workers (``WorkerInfo`` messages)."""
        return list((await self.status()).workers)

    async def close(self) -> None:
        """Closes the connection; requests still waiting raise ZkfleetError."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for future in list(self._pending.values()) + list(self._results.values()):
            if not future.done():
                future.set_exception(ZkfleetError("client closed"))
                future.exception()  # marks it retrieved: nobody may be waiting for it
        for socket, monitor in zip(self._sockets, self._monitors):
            socket.disable_monitor()
            monitor.close(linger=0)
            socket.close(linger=0)
        self._context.term()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------- internals

    def _result_future(self, job_seq: int) -> asyncio.Future:
        future = self._results.get(job_seq)
        if future is None:
            future = self._results[job_seq] = self._loop.create_future()
        return future

    # One failed handshake may be a broker restarting mid-handshake; this many
    # in a row, with no success, are not (the C++ client's rule too).
    _HANDSHAKE_FAILURES_TO_GIVE_UP = 3

    def _handshake_problem(self) -> str:
        """Why the connection cannot work ("" while it may)."""
        if self._auth_refused:
            return ("it refused this client's key at the CURVE handshake: is this key's public half in the "
                    "broker's allow-list (zkbroker --allow-dir)?")
        # A protocol failure (one side plaintext, the other CURVE) is final at
        # once: libzmq does not retry it.
        protocol = self._last_handshake_failure == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
        if self._handshakes_failed == 0 or (not protocol and
                                            self._handshakes_failed < self._HANDSHAKE_FAILURES_TO_GIVE_UP):
            return ""
        if protocol:
            return ("the CURVE handshake failed on the protocol: is the broker run with --insecure-plaintext, or "
                    "is something else listening there?")
        return (f"it closed the connection during the CURVE handshake {self._handshakes_failed} times in a row: is "
                "the broker public key the one of the broker listening there (its broker.pub)?")

    def _result_timeout(self, job_seq: int, timeout: Optional[float]) -> ZkfleetError:
        """A wait for a job's result that ran out. The broker answers when the
        job ends: from a broker this client is connected to, silence is a job
        still running, not a broker gone."""
        if self._handshakes == 0 or self._handshake_problem():
            return self._no_reply(f"no result for job {job_seq}", timeout)
        return Timeout(f"job {job_seq} did not end within {timeout} s; the broker at {self.endpoint} is connected and "
                       f"the job may still be queued or running (zkctl job {job_seq} shows it; a longer timeout waits)")

    def _no_reply(self, what: str, timeout: Optional[float]) -> ZkfleetError:
        problem = self._handshake_problem()
        if problem:
            return AuthError("AUTH", f"{what} from the broker at {self.endpoint}: {problem}")
        if self._last_not_leader:
            return Timeout(f"{what} from the broker at {self.endpoint} within {timeout} s: no broker of the list "
                           f"leads; the last standby to answer said: {self._last_not_leader}")
        return Timeout(f"{what} from the broker at {self.endpoint} within {timeout} s (is zkbroker running there?)")

    async def _send(self, envelope: "pb.Envelope", frames: Sequence[object] = ()) -> None:
        parts: List[object] = [envelope.SerializeToString(), *frames]
        await self._send_parts(parts)

    async def _send_parts(self, parts: List[object]) -> bool:
        """Sends; following a list with no broker leading, notes that the
        request waits for the next connection instead and returns False."""
        if not self._following:
            await self._sockets[0].send_multipart(parts, copy=False)
            return True
        if await self._send_to_brokers(parts, any_broker=True):
            return True
        self._unsent = True
        self._retry_later(0.1)  # a connection just made may not take requests yet
        return False

    async def _send_to_brokers(self, parts: List[object], any_broker: bool) -> bool:
        """Following a list: to the leader, else the next connected broker not
        known to stand by (``any_broker``: one that stood by too)."""
        async def send_to(index: int) -> bool:
            try:
                await self._sockets[index].send_multipart(parts, copy=False, flags=zmq.NOBLOCK)
                return True
            except zmq.Again:  # not connected (ZMQ_IMMEDIATE), or its queue is full
                return False
        if self._leader is not None:
            if await send_to(self._leader):
                return True
            self._leader = None
        count = len(self._endpoints)
        for k in range(count):
            index = (self._cursor + k) % count
            if not any_broker and index in self._standbys:
                continue
            if await send_to(index):
                self._cursor = index
                return True
        return False

    def _retry_later(self, delay: float) -> None:
        """Following a list: every request goes again after ``delay`` s."""
        if self._retry_scheduled or self._closed:
            return
        self._retry_scheduled = True

        def fire() -> None:
            self._retry_scheduled = False
            if self._closed:
                return
            self._standbys.clear()  # they may lead now
            self._tasks.append(self._loop.create_task(self._resend()))
            self._tasks = [t for t in self._tasks if not t.done()]
        self._loop.call_later(delay, fire)

    async def _on_not_leader(self, index: int, envelope: "pb.Envelope") -> None:
        """Following a list: a standby answered; the request goes on."""
        error = envelope.error
        self._last_not_leader = error.message
        self._standbys.add(index)
        if self._leader == index:
            self._leader = None
        if error.leader in self._endpoints:
            self._cursor = self._endpoints.index(error.leader)
        cid = envelope.correlation_id
        parts: Optional[List[object]] = None
        if cid in self._unanswered:
            parts = list(self._unanswered[cid])
        elif cid in self._calls:
            parts = list(self._calls[cid])
        else:
            for job_seq, awaited_cid in self._awaited.items():
                if awaited_cid == cid and job_seq not in self._delivered:
                    parts = [self._await_envelope(job_seq, cid).SerializeToString()]
                    break
        if parts is None or await self._send_to_brokers(parts, any_broker=False):
            return
        # Every connected broker stands by: ask again after the standby's hint.
        self._retry_later(max(error.retry_after_ms / 1000.0, 0.5))

    async def _call(self, envelope: "pb.Envelope", frames: Sequence[object] = (), timeout: Optional[float] = -1.0,
                    what: str = "no reply") -> "pb.Envelope":
        """Sends a request and waits for the reply with its correlation id."""
        if self._closed:
            raise ZkfleetError("client closed")
        if timeout == -1.0:
            timeout = self.reply_timeout
        cid = self._next_id
        self._next_id += 1
        envelope.version = PROTOCOL_VERSION
        envelope.correlation_id = cid
        envelope.client_id = self.client_id
        future = self._pending[cid] = self._loop.create_future()
        body = envelope.WhichOneof("body")
        self._pending_bodies[cid] = body
        if body == "submit":
            self._unanswered[cid] = [envelope.SerializeToString(), *frames]
        elif body == "await":
            self._awaited[getattr(envelope, "await").job_seq] = cid
        elif self._following:
            self._calls[cid] = [envelope.SerializeToString()]
        send: Optional[asyncio.Future] = None
        try:
            if self._handshake_problem():
                raise self._no_reply(what, timeout)
            # The send is under the timeout too: a connection whose handshake
            # the broker refused leaves the socket without a pipe, and a send
            # then waits for one for ever. The watcher fails `future` as soon
            # as the refusal is seen, which ends the wait either way.
            deadline = None if timeout is None else self._loop.time() + timeout
            send = asyncio.ensure_future(self._send(envelope, frames))
            await asyncio.wait_for(asyncio.wait({send, future}, return_when=asyncio.FIRST_COMPLETED), timeout)
            if not future.done():
                send.result()  # sent (or its error)
                remaining = None if deadline is None else max(deadline - self._loop.time(), 0.0)
                reply = await asyncio.wait_for(asyncio.shield(future), remaining)
            else:
                reply = future.result()
        except asyncio.TimeoutError:
            # The request may still reach the broker later (a queued SUBMIT when
            # it starts): the caller decides, with the same request id.
            raise self._no_reply(what, timeout) from None
        finally:
            if send is not None and not send.done():
                send.cancel()
            self._pending.pop(cid, None)
            self._pending_bodies.pop(cid, None)
            self._unanswered.pop(cid, None)
            self._calls.pop(cid, None)
        if reply.WhichOneof("body") == "error":
            error = reply.error
            raise broker_error(error_kind_name(error.kind), error.message, error.retry_after_ms, error.leader)
        return reply

    async def _read(self, sender: int) -> None:
        """Routes every message from broker ``sender``."""
        while True:
            parts = await self._sockets[sender].recv_multipart(copy=True)
            if len(parts) != 1:  # the broker sends single-frame messages; anything else is not ours
                continue
            envelope = pb.Envelope()
            try:
                envelope.ParseFromString(parts[0])
            except Exception:  # noqa: BLE001 - a frame that does not decode is dropped
                continue
            if envelope.version != PROTOCOL_VERSION:
                continue
            if self._following:
                if envelope.WhichOneof("body") == "error" and envelope.error.kind == pb.ERROR_KIND_NOT_LEADER:
                    await self._on_not_leader(sender, envelope)
                    continue
                self._leader = self._cursor = sender
                self._last_not_leader = ""
            self._route(envelope)

    def _route(self, envelope: "pb.Envelope") -> None:
        cid = envelope.correlation_id
        body = envelope.WhichOneof("body")
        self._calls.pop(cid, None)
        if body == "submit_reply":
            self._unanswered.pop(cid, None)
            if not envelope.submit_reply.result_expired:
                self._awaited.setdefault(envelope.submit_reply.job_seq, cid)
        if body == "job_result":
            job_seq = envelope.job_result.job_seq
            self._awaited.pop(job_seq, None)
            waiter = self._pending.get(cid)
            if waiter is not None and not waiter.done():  # the reply to an AWAIT
                self._delivered.add(job_seq)
                waiter.set_result(envelope)
                return
            if job_seq in self._delivered:  # a copy (re-AWAIT after a reconnect): once only
                self.duplicate_results_dropped += 1
                return
            self._delivered.add(job_seq)
            future = self._result_future(job_seq)
            if not future.done():
                future.set_result(envelope.job_result)
            return
        none_leads = body == "error" and envelope.error.kind == pb.ERROR_KIND_NOT_LEADER and not envelope.error.leader
        if body == "error" and (envelope.error.kind == pb.ERROR_KIND_UNAVAILABLE or none_leads) and cid != 0:
            for job_seq, awaited_cid in self._awaited.items():
                if awaited_cid == cid:
                    # Nothing of the turn that answered this wait stood (the
                    # job's pushed result, or the AWAIT's answer), or a
                    # standby answered while none leads: wait on.
                    delay = max(envelope.error.retry_after_ms / 1000.0, 0.1)
                    self._loop.call_later(delay, self._await_again, job_seq, cid)
                    return
        waiter = self._pending.get(cid)
        if waiter is None and body == "error" and cid == 0 and self._pending:
            # The broker could not read a request: it answers with id 0.
            cid = self._unreadable_request()
            waiter = self._pending[cid]
        if waiter is not None:
            # Answered (accepted or refused): a refused SUBMIT leaves the
            # resend set now, before its caller wakes, so a reconnect in
            # between cannot send it again; a refused AWAIT is not re-sent.
            self._unanswered.pop(cid, None)
            if body == "error":
                self._forget_awaits(cid)
            if not waiter.done():
                waiter.set_result(envelope)
            return
        if body == "error":  # the answer to a re-AWAIT of a job being waited for
            for job_seq, awaited_cid in list(self._awaited.items()):
                if awaited_cid == cid:
                    del self._awaited[job_seq]
                    future = self._result_future(job_seq)
                    if not future.done():
                        future.set_exception(broker_error(error_kind_name(envelope.error.kind),
                                                          envelope.error.message))
                    break

    def _unreadable_request(self) -> int:
        """The request an ErrorReply with correlation id 0 answers: the oldest
        waiting request other than an AWAIT (whose reply may take as long as
        its job: it is rarely the one just refused), else the oldest."""
        for cid in sorted(self._pending):
            if self._pending_bodies.get(cid) != "await":
                return cid
        return min(self._pending)

    def _await_again(self, job_seq: int, cid: int) -> None:
        if self._closed or self._awaited.get(job_seq) != cid or job_seq in self._delivered:
            return
        self._tasks.append(self._loop.create_task(self._send(self._await_envelope(job_seq, cid))))
        self._tasks = [t for t in self._tasks if not t.done()]

    def _await_envelope(self, job_seq: int, cid: int) -> "pb.Envelope":
        """The AWAIT of ``job_seq`` under correlation id ``cid`` (a wait sent again)."""
        envelope = pb.Envelope(version=PROTOCOL_VERSION, correlation_id=cid, client_id=self.client_id)
        getattr(envelope, "await").job_seq = job_seq
        return envelope

    def _forget_awaits(self, cid: int) -> None:
        for job_seq, awaited_cid in list(self._awaited.items()):
            if awaited_cid == cid:
                del self._awaited[job_seq]

    async def _watch(self, index: int) -> None:
        """Resends after a reconnect to broker ``index``; fails waiting requests on an auth refusal."""
        while True:
            event = parse_monitor_message(await self._monitors[index].recv_multipart())
            kind = event["event"]
            if kind in (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL):
                self._handshakes_failed += 1
                self._last_handshake_failure = kind
            if kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                self._auth_refused = True
            if kind == zmq.EVENT_DISCONNECTED:
                # Following a list, the leader's connection gone (or one while
                # no leader is known) while another lives: what it held goes
                # again, to the ones that live.
                if index in self._live:
                    self._live.discard(index)
                    self._standbys.discard(index)
                    if self._following and self._leader in (None, index):
                        self._leader = None
                        if self._live:
                            self.reconnections += 1
                            await self._resend()
                continue
            if kind != zmq.EVENT_HANDSHAKE_SUCCEEDED:
                # Nothing will be answered over a handshake that keeps failing: say so now.
                if self._handshake_problem():
                    for future in list(self._pending.values()):
                        if not future.done():
                            future.set_exception(self._no_reply("no reply", self.reply_timeout))
                continue
            self._auth_refused = False
            self._handshakes_failed = 0
            self._handshakes += 1
            self._live.add(index)
            self._standbys.discard(index)  # a broker (re)started: it may lead now
            if self._handshakes == 1 and not self._unsent:
                continue
            if self._following and self._leader is not None and not self._unsent:
                continue  # a standby came back; the leader is known
            # A new connection: the broker may have restarted (or a standby
            # now leads) and know nothing of this one. Unanswered SUBMITs go
            # again, as does every wait.
            self.reconnections += 1
            await self._resend()

    async def _resend(self) -> None:
        self._unsent = False
        for frames in list(self._unanswered.values()):
            if not await self._send_parts(list(frames)):
                return  # no broker leads: the rest waits for the next connection too
        for job_seq, cid in list(self._awaited.items()):
            if job_seq in self._delivered:
                continue
            if not await self._send_parts([self._await_envelope(job_seq, cid).SerializeToString()]):
                return
        for parts in list(self._calls.values()):
            if not await self._send_parts(list(parts)):
                return


def parse_endpoints(endpoint: Union[str, Sequence[str]]) -> List[str]:
    """One endpoint or several (comma-separated, or a list), checked as the
    C++ client checks them: TRANSPORT://ADDRESS each, none empty or twice,
    at most ``MAX_BROKER_ENDPOINTS``."""
    entries = endpoint.split(",") if isinstance(endpoint, str) else list(endpoint)
    endpoints: List[str] = []
    for number, entry in enumerate(entries, 1):
        entry = entry.strip()
        if not entry:
            raise ValueError(f"broker endpoint {endpoint!r}: entry {number} is empty "
                             "(a list is ENDPOINT,ENDPOINT,... with no empty entries)")
        scheme, sep, address = entry.partition("://")
        if not sep or not scheme or not address:
            raise ValueError(f"broker endpoint {entry!r} is not an endpoint: expected TRANSPORT://ADDRESS, "
                             "e.g. tcp://broker-1:5555")
        if entry in endpoints:
            raise ValueError(f"broker endpoint {entry!r} is given twice")
        endpoints.append(entry)
    if len(endpoints) > MAX_BROKER_ENDPOINTS:
        raise ValueError(f"more than {MAX_BROKER_ENDPOINTS} broker endpoints (a fleet runs two or three)")
    return endpoints


def default_endpoint(endpoint: Optional[str]) -> str:
    """``endpoint`` if given, else ``$ZKFLEET_BROKER``, else ``tcp://127.0.0.1:5555``."""
    return endpoint or os.environ.get("ZKFLEET_BROKER") or DEFAULT_ENDPOINT


def _witness_bytes(witness: WitnessInput) -> bytes:
    if isinstance(witness, (bytes, bytearray, memoryview)):
        return bytes(witness) if not isinstance(witness, bytes) else witness
    with open(witness, "rb") as f:
        return f.read()
