"""Typed errors of the zkfleet client.

Every error raised by :mod:`zkfleet` derives from :class:`ZkfleetError`.
Refusals by the broker are :class:`BrokerError` subclasses chosen by the
protocol's ``ErrorKind`` (docs/protocol.md, "Error kinds"); the message is
``"broker: <KIND>: <the broker's words>"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .results import JobResult


class ZkfleetError(Exception):
    """Base class of every error raised by the zkfleet client."""


class Timeout(ZkfleetError):
    """No reply (or no result) within the timeout.

    For a submit the outcome is unknown: the broker may have accepted it (for
    example a SUBMIT queued while the broker was down reaches it when it
    starts). Submit again with the same ``request_id`` to find out; the broker
    never makes two jobs of one request id.
    """


class JobFailed(ZkfleetError):
    """The job ended but did not succeed.

    Attributes:
        job_seq: the job.
        state: ``"FAILED"``, ``"DEAD_LETTERED"``, ``"CANCELLED"`` or ``"EXPIRED"``.
        reason: the broker's reason (e.g. why the witness was refused).
        result: the whole :class:`~zkfleet.JobResult`.
    """

    def __init__(self, result: "JobResult") -> None:
        self.job_seq = result.job_seq
        self.state = result.state
        self.reason = result.error
        self.result = result
        super().__init__(f"job {result.job_seq} ended {result.state}" + (f": {result.error}" if result.error else ""))


class InvalidRequest(ZkfleetError, ValueError):
    """A request this client refused to send: a field above the broker's
    bounds (:mod:`zkfleet.limits`). Nothing was sent."""


class InvalidResult(ZkfleetError):
    """The broker returned a SUCCEEDED result that is not a proof: a
    partition's ``proof_json`` or ``public_json`` does not parse as JSON (or
    the result holds no partition). Refused rather than handed out as text.

    Attributes:
        job_seq: the job.
        partition: the partition at fault (``None``: no partition at all).
        field: ``"proof_json"`` or ``"public_json"`` (``None`` with no partition).
        text: the text that did not parse.
    """

    def __init__(self, job_seq: int, partition: Optional[int], field: Optional[str], text: str, why: str) -> None:
        self.job_seq = job_seq
        self.partition = partition
        self.field = field
        self.text = text
        where = f"partition {partition}'s {field}" if field else "it"
        super().__init__(f"job {job_seq}: the broker's result is not a proof: {where} {why}")


class BrokerError(ZkfleetError):
    """The broker refused a request (an ``ErrorReply``).

    Attributes:
        kind: the ``ErrorKind`` name without its prefix, e.g. ``"UNKNOWN_JOB"``.
        broker_message: the broker's own words.
    """

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.broker_message = message
        super().__init__(f"broker: {kind}: {message}")


class Busy(BrokerError):
    """The broker stayed over its admission limits for longer than the busy
    timeout; nothing was queued. ``retry_after_ms`` is its last hint."""

    def __init__(self, kind: str, message: str, retry_after_ms: int = 0) -> None:
        super().__init__(kind, message)
        self.retry_after_ms = retry_after_ms


class Unavailable(BrokerError):
    """The broker could not make jobs durable (its journal cannot be written)
    for longer than the busy timeout; nothing was accepted. Retried like
    :class:`Busy` until then. ``retry_after_ms`` is its last hint."""

    def __init__(self, kind: str, message: str, retry_after_ms: int = 0) -> None:
        super().__init__(kind, message)
        self.retry_after_ms = retry_after_ms


class NotLeader(BrokerError):
    """A standby broker answered (brokers sharing an etcd journal): it did
    nothing with the request. ``leader`` is the leading broker's client
    endpoint ("" while none leads: then a submit is retried like
    :class:`Unavailable`). Give the client that endpoint, or every broker's
    (a list follows the leader)."""

    def __init__(self, kind: str, message: str, retry_after_ms: int = 0, leader: str = "") -> None:
        super().__init__(kind, message)
        self.retry_after_ms = retry_after_ms
        self.leader = leader


class BadRequest(BrokerError):
    """The broker could not accept the request (a malformed frame, a missing
    or over-long field). Never resent."""


class TooLarge(BrokerError):
    """A frame above the broker's size limits. Never resent."""


class UnknownCircuit(BrokerError):
    """No registered worker holds the circuit."""


class UnknownJob(BrokerError):
    """The job was never submitted, or it is another client's (or, from a
    broker before ``RESULT_EXPIRED``, its result passed the retention)."""


class ResultExpired(BrokerError):
    """The job ended, but its result passed the broker's retention
    (``--result-ttl``): its proofs can no longer be returned. What to do:
    submit the request again with its witnesses (the same request id is
    fine); the broker then proves it again as a new job.

    Raised by ``job.result()`` of a job whose submit reply said so (a lookup,
    a SUBMIT without witnesses, of such a request), at once rather than after
    its timeout; and for the broker's ``RESULT_EXPIRED`` answer to an AWAIT.

    Attributes:
        job_seq: the job (``None`` when only the broker's words tell).
        request_id: its request id (``None`` likewise).
        state: how it ended, e.g. ``"SUCCEEDED"`` (``None`` likewise).
    """

    WHAT_TO_DO = ("its result passed the broker's retention (--result-ttl); submit it again with its witnesses to "
                  "prove it again")

    def __init__(self, kind: str, message: str, job_seq: Optional[int] = None, request_id: Optional[str] = None,
                 state: Optional[str] = None) -> None:
        super().__init__(kind, message)
        self.job_seq = job_seq
        self.request_id = request_id
        self.state = state

    @classmethod
    def of_job(cls, job_seq: int, request_id: str, state: str) -> "ResultExpired":
        """The error for a job the broker acknowledged with ``result_expired``."""
        return cls("RESULT_EXPIRED", f"request {request_id} was job {job_seq} ({state}); {cls.WHAT_TO_DO}",
                   job_seq, request_id, state)


class ForeignJob(UnknownJob):
    """Another client's job (``FOREIGN_JOB``, sent only by older brokers:
    newer ones answer a job the caller may not see as ``UNKNOWN_JOB``). An
    :class:`UnknownJob`, so one ``except`` covers both."""


class RequestIdReused(BrokerError):
    """This client used the request id before with a different payload."""


class AuthError(BrokerError):
    """The broker refused this client: its key is in no allow-list (refused at
    the CURVE handshake), or its role does not allow the request (FORBIDDEN)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(kind, message)


_BY_KIND = {
    "BUSY": Busy,
    "UNAVAILABLE": Unavailable,
    "BAD_REQUEST": BadRequest,
    "TOO_LARGE": TooLarge,
    "FOREIGN_JOB": ForeignJob,
    "UNKNOWN_CIRCUIT": UnknownCircuit,
    "UNKNOWN_JOB": UnknownJob,
    "REQUEST_ID_REUSED": RequestIdReused,
    "RESULT_EXPIRED": ResultExpired,
    "FORBIDDEN": AuthError,
    "NOT_LEADER": NotLeader,
}


def broker_error(kind: str, message: str, retry_after_ms: Optional[int] = 0, leader: str = "") -> BrokerError:
    """The typed exception for an ``ErrorReply`` of ``kind``."""
    cls = _BY_KIND.get(kind, BrokerError)
    if cls is Busy or cls is Unavailable:
        return cls(kind, message, retry_after_ms or 0)
    if cls is NotLeader:
        return NotLeader(kind, message, retry_after_ms or 0, leader)
    return cls(kind, message)
