"""The blocking client: the asyncio client run on a private event-loop thread.

:class:`Client` starts one daemon thread with its own event loop and an
:class:`~zkfleet.aio.AsyncClient` on it; every method hands a coroutine to
that loop and blocks until it is done, so both clients behave the same.

Thread-safety: a Client may be used from several threads at once (calls are
serialized onto its loop, where they interleave like coroutines). Close it
(or use ``with``) to stop its thread.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine, List, Optional, Sequence, Tuple, TypeVar, Union

from ._wire import pb
from .aio import AsyncClient, AsyncJob, WitnessInput
from .inputs import InputJson
from .refs import WitnessRef
from .results import CancelResult, JobResult

T = TypeVar("T")


class Job:
    """A job the broker accepted. ``job.result(timeout)`` for its proofs."""

    def __init__(self, client: "Client", job: AsyncJob) -> None:
        self._client = client
        self.job_seq: int = job.job_seq
        self.request_id: str = job.request_id
        self.duplicate: bool = job.duplicate
        self.state: str = job.state
        self.result_expired: bool = job.result_expired

    def result(self, timeout: Optional[float] = None) -> JobResult:
        """Blocks until the job ends; its proofs and public signals as parsed
        JSON. Raises :class:`~zkfleet.JobFailed` unless it SUCCEEDED,
        :class:`~zkfleet.Timeout` if it has not ended within ``timeout`` s,
        :class:`~zkfleet.ResultExpired` at once if the broker acknowledged it
        with ``result_expired`` (submit it again with its witnesses)."""
        return self._client._run(self._client._async.wait_result(self.job_seq, timeout))

    def __repr__(self) -> str:
        return f"Job(job_seq={self.job_seq}, request_id={self.request_id!r}, state={self.state})"


class Client:
    """Blocking client of a zkfleet broker (same arguments as
    :class:`~zkfleet.aio.AsyncClient`; no ``endpoint``: ``$ZKFLEET_BROKER``,
    else ``tcp://127.0.0.1:5555``).

    >>> with Client("tcp://broker:5555", keys=("me.secret", "broker.pub")) as client:
    ...     job = client.submit("transfer", ["w.wtns"])
    ...     proof = job.result(timeout=300).partitions[0].proof
    """

    def __init__(self, endpoint: Optional[str] = None, keys: Union[None, Tuple[str, str]] = None,
                 **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="zkfleet-client", daemon=True)
        self._thread.start()

        async def make() -> AsyncClient:
            return AsyncClient(endpoint, keys, **options)

        try:
            self._async = self._run(make())
        except BaseException:
            self._stop_loop()
            raise
        self.endpoint: str = self._async.endpoint

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def submit(self, circuit: str, witnesses: Sequence[WitnessInput] = (), priority: str = "normal",
               request_id: Optional[str] = None, deadline: Optional[float] = None,
               expected_public: Optional[Sequence[Union[str, bytes, Sequence[str]]]] = None,
               witness_refs: Optional[Sequence[WitnessRef]] = None,
               inputs: Optional[Sequence[InputJson]] = None) -> Job:
        """See :meth:`zkfleet.aio.AsyncClient.submit` (``witness_refs``: one
        :class:`~zkfleet.WitnessRef` per partition instead of ``witnesses``;
        ``inputs``: one input.json per partition instead, see :mod:`zkfleet.inputs`)."""
        return Job(self, self._run(self._async.submit(circuit, witnesses, priority, request_id, deadline,
                                                      expected_public, witness_refs, inputs)))

    def await_job(self, job_seq: int, timeout: Optional[float] = None) -> JobResult:
        """See :meth:`zkfleet.aio.AsyncClient.await_job`."""
        return self._run(self._async.await_job(job_seq, timeout))

    def cancel(self, job_seq: int) -> CancelResult:
        """See :meth:`zkfleet.aio.AsyncClient.cancel`."""
        return self._run(self._async.cancel(job_seq))

    def status(self) -> "pb.StatusReply":
        """See :meth:`zkfleet.aio.AsyncClient.status`."""
        return self._run(self._async.status())

    def workers(self) -> List["pb.WorkerInfo"]:
        """See :meth:`zkfleet.aio.AsyncClient.workers`."""
        return self._run(self._async.workers())

    @property
    def reconnections(self) -> int:
        """Times the connection came back and requests were resent."""
        return self._async.reconnections

    def close(self) -> None:
        """Closes the connection and stops the client's thread."""
        if self._loop.is_closed():
            return
        self._run(self._async.close())
        self._stop_loop()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
