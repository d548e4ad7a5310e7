"""The wire format (docs/protocol.md): the Envelope frame, witness frames.

The protobuf module is generated from schema/zkfleet.proto into
``zkfleet/_generated/`` and committed (clients/python/regenerate.py).
"""

from __future__ import annotations

from typing import List, Sequence

try:
    from ._generated import zkfleet_pb2 as pb
except ImportError as e:  # pragma: no cover - only without the generated module
    raise ImportError(
        "zkfleet: the protobuf module zkfleet/_generated/zkfleet_pb2.py is missing from this copy of the package "
        "(it is committed in the repository; clients/python/regenerate.py remakes it from schema/zkfleet.proto)"
    ) from e

PROTOCOL_VERSION = pb.PROTOCOL_VERSION_CURRENT
# Senders cut each witness into frames of this size (receivers accept up to 16 MiB).
WITNESS_CHUNK_BYTES = 4 << 20

PRIORITIES = {"low": pb.PRIORITY_LOW, "normal": pb.PRIORITY_NORMAL, "high": pb.PRIORITY_HIGH,
              "critical": pb.PRIORITY_CRITICAL}


def priority_value(priority: str) -> int:
    try:
        return PRIORITIES[priority.lower()]
    except KeyError:
        raise ValueError(f"priority {priority!r}: expected low, normal, high or critical") from None


def job_state_name(state: int) -> str:
    """``"SUCCEEDED"`` for ``JOB_STATE_SUCCEEDED``, and so on."""
    return pb.JobState.Name(state).removeprefix("JOB_STATE_")


def error_kind_name(kind: int) -> str:
    try:
        return pb.ErrorKind.Name(kind).removeprefix("ERROR_KIND_")
    except ValueError:
        return f"KIND_{kind}"


def witness_frames(witnesses: Sequence[bytes]) -> List[memoryview]:
    """Every witness cut into chunks (views, no copies), witness after witness."""
    frames: List[memoryview] = []
    for witness in witnesses:
        view = memoryview(witness)
        for offset in range(0, len(view), WITNESS_CHUNK_BYTES):
            frames.append(view[offset:offset + WITNESS_CHUNK_BYTES])
    return frames
