"""zkfleet: submit Groth16 proving jobs to a zkfleet broker.

>>> import zkfleet
>>> with zkfleet.Client("tcp://broker:5555", keys=("me.secret", "broker.pub")) as client:
...     result = client.submit("transfer", ["witness.wtns"]).result(timeout=300)
...     result.partitions[0].proof      # proof.json, parsed
...     result.partitions[0].public     # public.json, parsed

:class:`Client` blocks; :class:`AsyncClient` (asyncio) keeps many jobs in
flight on one connection. Errors: :class:`Busy`, :class:`UnknownCircuit`,
:class:`JobFailed`, :class:`ResultExpired`, :class:`Timeout`, :class:`AuthError`, and more in
:mod:`zkfleet.errors`; the broker's bounds on request fields are in
:mod:`zkfleet.limits`. Witnesses by reference (the workers fetch them):
:class:`WitnessRef`, :func:`witness_ref_of_file` (:mod:`zkfleet.refs`). Jobs from inputs (the workers compute
the witnesses): ``submit(circuit, inputs=[...])`` (:mod:`zkfleet.inputs`). The protocol: docs/protocol.md; this
package: docs/clients.md.

The broker's endpoint, when none is passed, is ``$ZKFLEET_BROKER`` (else
``tcp://127.0.0.1:5555``). Install: ``python -m pip install ./clients/python``
into a virtual environment, from the repository root (docs/clients.md).
"""


def _require(module: str, debian: str, pip: str) -> None:
    """Imports ``module``; without it, an ImportError saying how to get it."""
    import importlib
    import sys
    try:
        importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"zkfleet needs the Python module {module!r}, which this Python ({sys.executable}) "
            f"cannot import ({e}): install Debian's {debian} (apt-get install {debian}; a venv sees it when "
            f"made with --system-site-packages), or pip install {pip}", name=module) from e


_require("zmq", "python3-zmq", "pyzmq")
_require("google.protobuf", "python3-protobuf", "protobuf")
del _require

from .aio import AsyncClient, AsyncJob
from .client import Client, Job
from .errors import (AuthError, BadRequest, BrokerError, Busy, ForeignJob, InvalidRequest, InvalidResult, JobFailed,
                     NotLeader, RequestIdReused, ResultExpired, Timeout, TooLarge, Unavailable, UnknownCircuit, UnknownJob,
                     ZkfleetError)
from .inputs import MAX_INPUT_JSON_DEPTH
from .keys import KeyFileError, read_public_key, read_secret_key
from .limits import MAX_CIRCUIT_ID_BYTES, MAX_CLIENT_ID_BYTES, MAX_REQUEST_ID_BYTES, MAX_WORKER_ID_BYTES
from .refs import MAX_WITNESS_URL_BYTES, WitnessRef, redact_url, witness_ref_of_file
from .results import CancelResult, JobResult, Proof

__all__ = [
    "AsyncClient", "AsyncJob", "AuthError", "BadRequest", "BrokerError", "Busy", "CancelResult", "Client",
    "ForeignJob", "InvalidRequest", "InvalidResult", "Job", "JobFailed", "JobResult", "KeyFileError",
    "MAX_CIRCUIT_ID_BYTES", "MAX_CLIENT_ID_BYTES", "MAX_INPUT_JSON_DEPTH", "MAX_REQUEST_ID_BYTES", "MAX_WITNESS_URL_BYTES", "MAX_WORKER_ID_BYTES",
    "NotLeader", "Proof",
    "RequestIdReused", "ResultExpired", "Timeout", "TooLarge",
    "Unavailable", "UnknownCircuit", "UnknownJob", "WitnessRef", "ZkfleetError", "read_public_key", "read_secret_key",
    "redact_url", "witness_ref_of_file",
]
