"""A blocking client of the broker's gRPC front door (zkfleet.v1,
``schema/grpc/zkfleet_v1.proto``; docs/clients.md, "gRPC").

>>> from zkfleet.grpc_client import GrpcClient
>>> with GrpcClient("broker:7443", ca="ca.pem", cert="alice.pem", key="alice.key") as client:
...     job_seq = client.submit("transfer", inputs=[{"a": "3", "b": "11"}])
...     result = client.await_result(job_seq, timeout=300)
...     result.partitions[0].proof        # proof.json, parsed

The caller is named by its TLS client certificate's CN, which the broker
looks up in its allow-list (the same NAME, role and jobs as that CURVE key).
``insecure=True`` speaks plaintext to a broker run with
``--grpc-insecure-plaintext``; ``client_id`` then names the caller (metadata
``zkfleet-client-id``).

Retries: :meth:`GrpcClient.submit` resends the same request (same request
id, so the broker makes one job) on UNAVAILABLE and RESOURCE_EXHAUSTED;
:meth:`GrpcClient.await_result` calls AwaitJob again on UNAVAILABLE (a
broker restart ends the stream so) until its timeout: a restart while
waiting loses no result. Every other gRPC error is :class:`GrpcError`, at
once. Needs Debian's python3-grpcio (or pip's grpcio) and the generated
modules zkfleet/_generated/zkfleet_v1_pb2*.py (the package build makes
them with grpc_python_plugin).
"""

from __future__ import annotations

import random
import socket
import time
import uuid
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

try:
    import grpc
except ImportError as e:  # the ZeroMQ client does not need grpcio: say what this module needs
    raise ImportError("zkfleet.grpc_client needs the Python module 'grpc': install Debian's python3-grpcio "
                      "(a venv sees it when made with --system-site-packages), or pip install grpcio",
                      name="grpc") from e
try:
    from ._generated import zkfleet_v1_pb2 as v1
    from ._generated import zkfleet_v1_pb2_grpc as v1_grpc
except ImportError as e:
    raise ImportError("zkfleet.grpc_client: the generated modules zkfleet/_generated/zkfleet_v1_pb2.py and "
                      "zkfleet_v1_pb2_grpc.py are missing from this copy of the package (they are committed: "
                      "clients/python/regenerate.py remakes them)") from e

from ._wire import priority_value
from .errors import InvalidRequest, JobFailed, Timeout, ZkfleetError
from .inputs import input_json_bytes
from .limits import MAX_CLIENT_ID_BYTES, check_name, check_submit, public_signals_digest
from .refs import WitnessRef
from .results import CancelResult, JobResult

CLIENT_ID_METADATA = "zkfleet-client-id"
RETRY_AFTER_TRAILER = "retry-after-ms"
# A standby broker's UNAVAILABLE names the leader's gRPC address here.
LEADER_TRAILER = "zkfleet-leader"

# Our own backoff between retries (doubling, jittered). The channel's
# reconnect backoff is capped too (below): grpc's default grows to 120 s,
# far longer than a broker restart takes. "grpc.min_reconnect_backoff_ms" is
# left at grpc's default on purpose: despite its name it is the shortest
# time a connection attempt is given (20 s), and 100 ms there made every
# attempt after a broker's restart time out on a busy host.
_BACKOFF_FIRST_S = 0.1
_BACKOFF_MAX_S = 5.0
_CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.max_receive_message_length", 64 << 20),   # results of many partitions
    ("grpc.max_send_message_length", 64 << 20),      # inline witnesses (the broker bounds them)
]


class GrpcError(ZkfleetError):
    """A gRPC call failed. ``code`` is the :class:`grpc.StatusCode` (e.g.
    ``PERMISSION_DENIED``, ``NOT_FOUND``, ``UNAVAILABLE``), ``message`` the
    broker's (or gRPC's) details, ``method`` the RPC, ``retry_after_ms`` the
    broker's hint with RESOURCE_EXHAUSTED (else 0). ``leader``: set when a
    standby broker answered (UNAVAILABLE, "stands by"): the leader's gRPC
    address; give it, or every broker's address."""

    def __init__(self, method: str, code: "grpc.StatusCode", message: str, retry_after_ms: int = 0,
                 leader: str = "") -> None:
        self.method = method
        self.code = code
        self.message = message
        self.retry_after_ms = retry_after_ms
        self.leader = leader
        super().__init__(f"{method}: {code.name}: {message}")


def _error(method: str, e: "grpc.RpcError") -> GrpcError:
    retry_after = 0
    leader = ""
    for key, value in (e.trailing_metadata() or ()):
        if key == RETRY_AFTER_TRAILER:
            try:
                retry_after = int(value)
            except ValueError:
                pass
        if key == LEADER_TRAILER:
            leader = value
    return GrpcError(method, e.code(), e.details() or "", retry_after, leader)


def _read(path: Union[str, Path, None], what: str) -> Optional[bytes]:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise InvalidRequest(f"{what} {path}: cannot read it ({e.strerror})") from None


class _Backoff:
    def __init__(self) -> None:
        self.delay = _BACKOFF_FIRST_S

    def next(self, at_least_s: float = 0.0) -> float:
        """The next pause: jittered, doubling up to the cap, never below the broker's hint."""
        pause = max(self.delay * random.uniform(0.8, 1.2), at_least_s)
        self.delay = min(self.delay * 2, _BACKOFF_MAX_S)
        return pause


def _target(addr: str) -> Tuple[str, str]:
    """gRPC's target for ``addr`` and the host of its first entry. One
    ``host:port`` is its own target; a list becomes one ``ipv4:``/``ipv6:``
    target of every broker's addresses (resolved now), over which gRPC's
    pick_first connects to the first that answers."""
    if "," not in addr:  # one address, or any target gRPC takes (dns:///..., unix:...), as given
        return addr, addr.rpartition(":")[0].strip("[]")
    entries = [entry.strip() for entry in addr.split(",")]
    hosts = []
    for number, entry in enumerate(entries, 1):
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise InvalidRequest(f"GrpcClient: addr {addr!r}: entry {number} is not host:port")
        hosts.append((host.strip("[]"), int(port)))
    v4: List[str] = []
    v6: List[str] = []
    every_v4 = every_v6 = True
    for host, port in hosts:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise InvalidRequest(f"GrpcClient: addr {addr!r}: cannot resolve {host}: {e}") from None
        mine4 = [f"{info[4][0]}:{port}" for info in infos if info[0] == socket.AF_INET]
        mine6 = [f"[{info[4][0]}]:{port}" for info in infos if info[0] == socket.AF_INET6]
        every_v4, every_v6 = every_v4 and bool(mine4), every_v6 and bool(mine6)
        v4 += mine4
        v6 += mine6
    # One scheme per target: IPv4 where every broker has an IPv4 address.
    if every_v4:
        target = "ipv4:" + ",".join(dict.fromkeys(v4))
    elif every_v6:
        target = "ipv6:" + ",".join(dict.fromkeys(v6))
    else:
        raise InvalidRequest(f"GrpcClient: addr {addr!r}: some brokers have only IPv4 addresses, others only IPv6 "
                             "(one channel takes one kind)")
    return target, hosts[0][0]


class GrpcClient:
    """One channel to the broker's gRPC front door.

    ``addr``: ``host:port``, or every broker's, comma-separated (brokers on
    etcd: only the leader listens; one channel over all of them connects to
    the one that answers, and again when it goes). TLS (the default): ``ca``
    is the CA that signed the broker's certificate; ``cert``/``key`` the
    client certificate and its key (PEM), whose CN names the caller.
    ``server_name`` overrides the name checked in the broker's certificate
    (default: the host of ``addr``, the first one's of a list). ``insecure=True``: plaintext, and ``client_id`` names the
    caller. ``retry_timeout``: how long :meth:`submit` keeps retrying
    UNAVAILABLE and RESOURCE_EXHAUSTED."""

    def __init__(self, addr: str, ca: Union[str, Path, None] = None, cert: Union[str, Path, None] = None,
                 key: Union[str, Path, None] = None, insecure: bool = False, client_id: Optional[str] = None,
                 server_name: Optional[str] = None, retry_timeout: float = 30.0) -> None:
        self.addr = addr
        self.retry_timeout = retry_timeout
        self._metadata: Tuple[Tuple[str, str], ...] = ()
        # Brokers on etcd: every broker's address, in the order tried (a
        # standby's answer puts the leader it names first).
        self._entries = [entry.strip() for entry in addr.split(",")] if "," in addr else [addr]
        options = list(_CHANNEL_OPTIONS)
        target, first_host = _target(addr)
        if target != addr:  # a list: the name a certificate is checked against is not the target's
            options.append(("grpc.default_authority", first_host))
            if not insecure and not server_name:
                server_name = first_host
        if insecure:
            if ca or cert or key:
                raise InvalidRequest("GrpcClient: insecure=True takes no ca, cert or key")
            if client_id is not None:
                check_name("client id", client_id, MAX_CLIENT_ID_BYTES, "MAX_CLIENT_ID_BYTES")
                self._metadata = ((CLIENT_ID_METADATA, client_id),)
            credentials = None
        else:
            if client_id is not None:
                # Over TLS the certificate names the caller: a declared id
                # would be ignored, and silently ignoring it misleads.
                raise InvalidRequest("GrpcClient: client_id counts only with insecure=True; over TLS the client "
                                     "certificate's CN names the caller")
            if ca is None:
                raise InvalidRequest("GrpcClient: TLS needs ca= (the CA of the broker's certificate), or insecure=True")
            if (cert is None) != (key is None):
                raise InvalidRequest("GrpcClient: cert= and key= go together (the client certificate and its key)")
            credentials = grpc.ssl_channel_credentials(root_certificates=_read(ca, "ca"),
                                                       private_key=_read(key, "key"),
                                                       certificate_chain=_read(cert, "cert"))
            if server_name:
                options.append(("grpc.ssl_target_name_override", server_name))
        self._credentials = credentials
        self._options = options
        self._connect(target)

    def _connect(self, target: str) -> None:
        if self._credentials is None:
            self._channel = grpc.insecure_channel(target, options=self._options)
        else:
            self._channel = grpc.secure_channel(target, self._credentials, options=self._options)
        self._stub = v1_grpc.FleetStub(self._channel)

    def _follow(self, error: GrpcError) -> bool:
        """A standby answered ``error``: with a list, the leader it names (or,
        when it names none of ours, the next broker) is tried first from now
        on (True: call again). Given one address there is nowhere to go."""
        if not error.leader or len(self._entries) < 2:
            return False
        if error.leader in self._entries:
            # Even when it is first: the channel may have settled on the
            # standby while the leader was out of reach. A new one tries the
            # addresses in order again.
            self._entries.remove(error.leader)
            self._entries.insert(0, error.leader)
        else:
            self._entries.append(self._entries.pop(0))
        self._channel.close()
        self._connect(_target(",".join(self._entries))[0])
        return True

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "GrpcClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ calls

    def _pause(self, seconds: float, until_connected: bool) -> None:
        """Waits ``seconds`` between retries while the channel keeps
        connecting (``until_connected``: no longer than until it is
        connected). grpc's Python channel advances a connection attempt only
        while something waits on the channel; across a bare sleep every
        attempt timed out unseen, and a broker down for 8 s was never
        reached again (tests/python/test_grpc_clients.py, the outage case)."""
        started = time.monotonic()
        ready = grpc.channel_ready_future(self._channel)   # subscribes, asking to connect
        try:
            if until_connected:
                ready.result(timeout=seconds)
            else:
                time.sleep(seconds)
        except grpc.FutureTimeoutError:
            pass
        finally:
            ready.cancel()
        # A channel that has not yet seen its connection drop reads as ready:
        # never retry sooner than the first backoff step.
        time.sleep(max(min(seconds, _BACKOFF_FIRST_S) - (time.monotonic() - started), 0))

    def _call(self, method: str, request: Any, timeout: Optional[float]) -> Any:
        for _ in self._entries:  # a standby's answer sends the call on, once per broker at most
            try:
                return getattr(self._stub, method)(request, timeout=timeout, metadata=self._metadata)
            except grpc.RpcError as e:
                error = _error(method, e)
                if not self._follow(error):
                    raise error from None
        raise error

    def submit(self, circuit_id: str, inputs: Optional[Sequence[Any]] = None,
               witness_refs: Optional[Sequence[WitnessRef]] = None,
               request_id: Optional[str] = None, witnesses: Optional[Sequence[Union[bytes, str, Path]]] = None,
               priority: str = "normal", deadline_unix_s: float = 0.0,
               expected_public: Optional[Sequence[Union[str, bytes, Sequence[str]]]] = None) -> int:
        """Submits a job; its job_seq once the broker holds it durably.

        Exactly one of ``inputs`` (input.json per partition: a dict, its JSON
        text as bytes, or a path; :mod:`zkfleet.inputs`), ``witness_refs`` (:class:`~zkfleet.WitnessRef` per
        partition) or ``witnesses`` (.wtns bytes, or a path, per partition;
        inline, so small). ``request_id`` (default: a new random one) makes a
        resubmission return the same job. ``expected_public``: none, or
        public.json (text or list) per partition."""
        kinds = [name for name, value in (("inputs", inputs), ("witness_refs", witness_refs),
                                          ("witnesses", witnesses)) if value]
        if len(kinds) != 1:
            raise InvalidRequest(f"submit: give exactly one of inputs, witness_refs or witnesses (got "
                                 f"{', '.join(kinds) or 'none'}); nothing was sent")
        request_id = request_id if request_id is not None else f"grpc-{uuid.uuid4().hex}"
        check_submit(request_id, circuit_id)
        request = v1.SubmitJobRequest(request_id=request_id, circuit_id=circuit_id,
                                      priority=priority_value(priority), deadline_unix_s=deadline_unix_s)
        if inputs:
            request.inputs.extend(input_json_bytes(value, i) for i, value in enumerate(inputs))
        elif witness_refs:
            for ref in witness_refs:
                if not isinstance(ref, WitnessRef):
                    raise InvalidRequest(f"witness_refs: expected zkfleet.WitnessRef, not {type(ref).__name__}")
                request.witness_refs.add(url=ref.url, size=ref.size, sha256=ref.sha256)
        else:
            request.witnesses.extend(w if isinstance(w, (bytes, bytearray, memoryview)) else _read(w, "witness")
                                     for w in witnesses)
        if expected_public:
            request.public_signals_sha256.extend(public_signals_digest(p) for p in expected_public)
        reply = self._retrying("SubmitJob", request)
        return reply.job_seq

    def _retrying(self, method: str, request: Any) -> Any:
        """A unary call resent (the same request) on UNAVAILABLE and
        RESOURCE_EXHAUSTED until ``retry_timeout``: safe for SubmitJob, whose
        request id makes it idempotent."""
        deadline = time.monotonic() + self.retry_timeout
        backoff = _Backoff()
        while True:
            try:
                return self._call(method, request, max(deadline - time.monotonic(), 0.001))
            except GrpcError as e:
                if e.code not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
                    raise
                if e.leader and len(self._entries) < 2:
                    raise  # a standby, the only address given: it names the leader
                pause = backoff.next(e.retry_after_ms / 1000)
                if time.monotonic() + pause >= deadline:
                    raise
                self._pause(pause, until_connected=e.code == grpc.StatusCode.UNAVAILABLE)

    def get(self, job_seq: int, timeout: Optional[float] = 30) -> "v1.JobInfo":
        """The job's state (zkfleet.proto.JobInfo): live, or ended within the broker's --result-ttl."""
        return self._call("GetJob", v1.GetJobRequest(job_seq=job_seq), timeout)

    def await_result(self, job_seq: int, timeout: float = 300) -> JobResult:
        """Waits for the job to end; its :class:`~zkfleet.JobResult` when it
        SUCCEEDED (each partition's proof and public signals parsed).

        Raises :class:`~zkfleet.JobFailed` when it ended otherwise (FAILED,
        CANCELLED, ...), :class:`~zkfleet.InvalidResult` for a SUCCEEDED
        result without proofs or whose texts are not JSON, :class:`Timeout`
        when ``timeout`` passes first, :class:`GrpcError` for a gRPC error
        other than UNAVAILABLE. UNAVAILABLE (the broker restarting or out of
        reach), or a stream that ends without the result, is waited out:
        AwaitJob again, with backoff."""
        deadline = time.monotonic() + timeout
        backoff = _Backoff()
        last_problem = "no reply"
        while True:
            unavailable = False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout(f"job {job_seq}: no result within {timeout:g} s (last: {last_problem})")
            stream = self._stub.AwaitJob(v1.AwaitJobRequest(job_seq=job_seq), timeout=remaining,
                                         metadata=self._metadata)
            try:
                for update in stream:
                    backoff = _Backoff()   # the broker answered: start the backoff afresh next time
                    if update.WhichOneof("update") == "result":
                        result = JobResult.from_proto(update.result)   # InvalidResult for a proof that is not JSON
                        if not result.succeeded:
                            raise JobFailed(result)
                        return result
                last_problem = "the stream ended without a result"
            except grpc.RpcError as e:
                error = _error("AwaitJob", e)
                if error.code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    raise Timeout(f"job {job_seq}: no result within {timeout:g} s (last: {last_problem})") from None
                if error.code != grpc.StatusCode.UNAVAILABLE:
                    raise error from None
                if error.leader and not self._follow(error) and len(self._entries) < 2:
                    raise error from None  # a standby, the only address given: it names the leader
                last_problem = str(error)
                unavailable = True
            finally:
                stream.cancel()
            pause = min(backoff.next(), max(deadline - time.monotonic(), 0))
            self._pause(pause, until_connected=unavailable)

    def cancel(self, job_seq: int, timeout: Optional[float] = 30) -> CancelResult:
        """Cancels the job; ``cancelled`` is False when it had already ended."""
        reply = self._call("CancelJob", v1.CancelJobRequest(job_seq=job_seq), timeout)
        return CancelResult(job_seq=job_seq, cancelled=reply.cancelled,
                            state=v1.JobState.Name(reply.state).removeprefix("JOB_STATE_"))

    def status(self, timeout: Optional[float] = 30) -> "v1.StatusReply":
        """Queues, counters and workers (observe and admin roles)."""
        return self._call("GetStatus", v1.GetStatusRequest(), timeout)

    def workers(self, timeout: Optional[float] = 30) -> List["v1.WorkerInfo"]:
        """The workers the broker knows (observe and admin roles)."""
        return list(self._call("ListWorkers", v1.ListWorkersRequest(), timeout).workers)

    def list_jobs(self, states: Sequence[str] = (), circuit_id: str = "", client_id: str = "",
                  submitted_after_unix_s: float = 0.0, submitted_before_unix_s: float = 0.0,
                  page_size: int = 100, timeout: Optional[float] = 30) -> List["v1.JobInfo"]:
        """Every job the filters match, newest first, page after page
        (ListJobs): a submit key's own; observe and admin keys', everyone's.
        ``states``: names such as "failed", "dead_lettered", "queued"."""
        request = v1.ListJobsRequest(circuit_id=circuit_id, client_id=client_id,
                                     submitted_after_unix_s=submitted_after_unix_s,
                                     submitted_before_unix_s=submitted_before_unix_s, page_size=page_size)
        for name in states:
            key = name.upper() if name.upper().startswith("JOB_STATE_") else "JOB_STATE_" + name.upper()
            if key not in v1.JobState.keys():
                raise InvalidRequest(f"list_jobs: unknown job state {name!r}; nothing was sent")
            request.states.append(v1.JobState.Value(key))
        jobs: List["v1.JobInfo"] = []
        while True:
            reply = self._call("ListJobs", request, timeout)
            jobs.extend(reply.jobs)
            if not reply.next_page_token:
                return jobs
            request.page_token = reply.next_page_token

    def retry(self, job_seq: int, attempt: Optional[int] = None, timeout: Optional[float] = 30) -> "v1.JobInfo":
        """RetryJob: a new round of a FAILED or DEAD_LETTERED job, same
        job_seq; ``attempt`` (default: the next one) makes it idempotent.
        Then :meth:`await_result`."""
        if attempt is None:
            attempt = self.get(job_seq, timeout).retries + 1
        return self._call("RetryJob", v1.RetryJobRequest(job_seq=job_seq, attempt=attempt), timeout)

    def drain(self, worker_id: str, wait: bool = False, timeout: Optional[float] = None) -> "v1.DrainWorkerReply":
        """Admin: stops routing to the worker and asks it to drain; with
        ``wait``, returns when it has left (``finished``, with its phases)."""
        return self._call("DrainWorker", v1.DrainWorkerRequest(worker_id=worker_id, wait=wait), timeout)


__all__ = ["CLIENT_ID_METADATA", "GrpcClient", "GrpcError"]
