"""Bounds the broker puts on the names in requests, checked before sending.

The broker is the authority: it refuses a request whose request id, circuit
id or declared client id is longer than these, or holds a control byte,
with ``BAD_REQUEST``. The client checks the same bounds first, so such a
request fails at once with :class:`~zkfleet.InvalidRequest` naming the
limit, and is never sent. Keep these equal to the broker's (its
``FieldLimits``; the C++ clients' copy: ``zkfleet::client::kMaxRequestIdBytes``
... in clients/cpp/include/zkfleet/client.h).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Sequence, Union

from .errors import InvalidRequest

_DECIMAL = re.compile(r"0|[1-9][0-9]*")

MAX_REQUEST_ID_BYTES = 128   # SubmitRequest.request_id, UTF-8 bytes
MAX_CIRCUIT_ID_BYTES = 128   # SubmitRequest.circuit_id
MAX_CLIENT_ID_BYTES = 128    # Envelope.client_id (counts in plaintext mode only)
MAX_WORKER_ID_BYTES = 128    # a worker id in an admin request


def check_name(what: str, value: str, limit: int, limit_name: str) -> None:
    """Raises :class:`~zkfleet.InvalidRequest` when ``value`` (the ``what``,
    e.g. "request id") is not a str, is longer than ``limit`` UTF-8 bytes (the
    constant ``limit_name``) or holds a control byte. Empty passes."""
    if not isinstance(value, str):
        raise InvalidRequest(f"{what} must be a str, not {type(value).__name__}")
    size = len(value.encode("utf-8"))
    if size > limit:
        raise InvalidRequest(f"{what} of {size} bytes is longer than the broker's limit of {limit} bytes "
                             f"(zkfleet.limits.{limit_name}); nothing was sent")
    for offset, char in enumerate(value):
        if ord(char) < 0x20 or ord(char) == 0x7f:
            raise InvalidRequest(f"{what} holds a control character ({ord(char):#04x}) at offset {offset}, which "
                                 "the broker refuses; nothing was sent")


def check_submit(request_id: str, circuit: str) -> None:
    """:func:`check_name` of a submit's request id and circuit id."""
    check_name("request id", request_id, MAX_REQUEST_ID_BYTES, "MAX_REQUEST_ID_BYTES")
    check_name("circuit id", circuit, MAX_CIRCUIT_ID_BYTES, "MAX_CIRCUIT_ID_BYTES")


def public_signals_digest(public: Union[str, bytes, Sequence[str]]) -> bytes:
    """The digest a SUBMIT carries for a partition's expected public signals
    (``SubmitRequest.public_signals_sha256``): SHA-256 of the signals as
    decimal strings joined with ``,``. ``public`` is snarkjs' public.json text,
    or its list of decimal strings. Raises :class:`InvalidRequest` for anything
    else."""
    signals = json.loads(public) if isinstance(public, (str, bytes)) else public
    if not isinstance(signals, (list, tuple)):
        raise InvalidRequest("expected public signals: not a JSON array (snarkjs' public.json is one)")
    for i, value in enumerate(signals):
        if not isinstance(value, str) or not _DECIMAL.fullmatch(value):
            raise InvalidRequest(f"expected public signal {i} is not a decimal string: {value!r:.80}")
    return hashlib.sha256(",".join(signals).encode()).digest()
